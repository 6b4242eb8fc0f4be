// The on-disk cache of compiled JIT kernels (src/runtime/jit/disk_cache.hpp): entries round
// trip, anything damaged is a miss that deletes the file, directories that another user could
// write are refused, an unusable directory degrades to memory-only with one warning, concurrent
// writers of one key leave one whole entry, and the size cap evicts least recently used first.
// Every test works in its own mkdtemp directory. CI runs as root, which can write any directory;
// the unwritable cases use paths that refuse root too, plus one non-root-only variant.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <thread>

#include "runtime/jit/disk_cache.hpp"
#include "test_support.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mxq::test {
namespace {

namespace fs = std::filesystem;
using runtime::jit::content_hash;
using runtime::jit::DiskCache;
using runtime::jit::Key128;

constexpr uint64_t kHeaderBytes = 48;  // the entry header of disk_cache.cpp

Key128 hash_of(std::initializer_list<std::string_view> parts) { return content_hash({parts.begin(), parts.size()}); }
Key128 key_of(std::string_view name) { return hash_of({name}); }

std::vector<uint8_t> make_payload(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = uint8_t(rng.next());
  return v;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}
bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}
unsigned mode_of(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? unsigned(st.st_mode & 07777) : 0xFFFFu;
}
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mxq-disk-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    root_ = tmpl;
    dir_ = root_ + "/cache";
  }
  void TearDown() override {
    // A test may leave a directory read-only (the non-root variant); give it back first.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    fs::remove_all(root_, ec);
  }
  // A cache on `dir` that records its warnings in warnings_.
  std::unique_ptr<DiskCache> open(const std::string& dir, uint64_t max_bytes = 0) {
    return std::make_unique<DiskCache>(dir, max_bytes, [this](const std::string& m) { warnings_.push_back(m); });
  }
  std::string entry(const Key128& key) const { return dir_ + "/" + key.hex() + ".cubin"; }
  // The cache is memory-only: one warning naming `path`, load and store do nothing.
  void expect_memory_only(DiskCache& cache, const std::string& path, const std::string& reason) {
    EXPECT_FALSE(cache.usable());
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find(path), std::string::npos) << warnings_[0];
    EXPECT_NE(warnings_[0].find(reason), std::string::npos) << warnings_[0];
    EXPECT_NE(cache.why().find(reason), std::string::npos) << cache.why();
    const std::vector<uint8_t> payload = make_payload(64, 1);
    EXPECT_FALSE(cache.store(key_of("k"), payload, "label"));
    EXPECT_FALSE(cache.load(key_of("k")).has_value());
    EXPECT_TRUE(cache.list().empty());
    EXPECT_EQ(cache.clear(), 0u);
    EXPECT_EQ(warnings_.size(), 1u) << "a memory-only cache warns once";
  }

  std::string root_, dir_;
  std::vector<std::string> warnings_;
};

// ================================ keys =========================================================
TEST(DiskCacheKey, ContentHashIsXxh3OfLengthPrefixedParts) {
  // The reference: XXH3-128 of the concatenation, each part behind its little-endian u64 length.
  const std::vector<std::string_view> parts = {"sm_90a", "", "template<int N> __global__ void k();"};
  std::string framed;
  for (std::string_view p : parts) {
    for (int i = 0; i < 8; ++i) framed.push_back(char(uint64_t(p.size()) >> (8 * i)));
    framed += p;
  }
  const XXH128_hash_t ref = XXH3_128bits(framed.data(), framed.size());
  EXPECT_EQ(content_hash(parts), (Key128{ref.high64, ref.low64}));
}

TEST(DiskCacheKey, ContentHashSeesEveryChangeAndBoundary) {
  const Key128 base = hash_of({"recipe=mxfp8", "dtype=bf16"});
  EXPECT_EQ(base, hash_of({"recipe=mxfp8", "dtype=bf16"}));
  EXPECT_NE(base, hash_of({"recipe=mxfp8", "dtype=bf17"}));      // a changed byte
  EXPECT_NE(base, hash_of({"recipe=mxfp", "8dtype=bf16"}));      // a moved boundary
  EXPECT_NE(base, hash_of({"recipe=mxfp8dtype=bf16"}));          // a removed boundary
  EXPECT_NE(base, hash_of({"recipe=mxfp8", "dtype=bf16", ""}));  // an empty part counts
  EXPECT_NE(base, hash_of({"dtype=bf16", "recipe=mxfp8"}));      // order
  EXPECT_NE(hash_of({}), hash_of({""}));
}

TEST(DiskCacheKey, HexIsHiThenLo) {
  EXPECT_EQ((Key128{0x0123456789abcdefull, 0xfedcba9876543210ull}.hex()), "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(Key128{}.hex(), std::string(32, '0'));
}

TEST(DiskCacheKey, DefaultCacheDirFollowsTheEnvironment) {
  // Saved and restored: the process environment is shared by every test.
  std::vector<std::pair<const char*, std::optional<std::string>>> saved;
  for (const char* name : {"MXQ_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    const char* v = std::getenv(name);
    saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    ::unsetenv(name);
  }
  EXPECT_EQ(runtime::jit::default_cache_dir(), "");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(runtime::jit::default_cache_dir(), "/home/u/.cache/mxq");
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);  // ignored: XDG paths must be absolute
  EXPECT_EQ(runtime::jit::default_cache_dir(), "/home/u/.cache/mxq");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(runtime::jit::default_cache_dir(), "/xdg/mxq");
  ::setenv("MXQ_CACHE_DIR", "/explicit", 1);
  EXPECT_EQ(runtime::jit::default_cache_dir(), "/explicit");
  for (const auto& [name, value] : saved) {
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
}

// ================================ entries ======================================================
TEST_F(DiskCacheTest, RoundTrip) {
  auto cache = open(dir_);
  ASSERT_TRUE(cache->usable()) << cache->why();
  EXPECT_EQ(cache->dir(), dir_);
  const Key128 key = key_of("round trip");
  const std::vector<uint8_t> payload = make_payload(10007, 2);
  const std::string label = "mxfp8 bf16 rows 1x32";
  EXPECT_FALSE(cache->load(key).has_value());
  ASSERT_TRUE(cache->store(key, payload, label));
  EXPECT_EQ(cache->load(key), payload);
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{key.hex() + ".cubin"});  // no temporary file left
  EXPECT_EQ(read_file(entry(key)).size(), kHeaderBytes + label.size() + payload.size());
  EXPECT_EQ(mode_of(entry(key)), 0600u);
  // A second cache on the same directory (another process) finds it.
  EXPECT_EQ(open(dir_)->load(key), payload);
  // An empty payload is an entry too.
  ASSERT_TRUE(cache->store(key_of("empty"), {}, ""));
  EXPECT_EQ(cache->load(key_of("empty")), std::vector<uint8_t>{});
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(DiskCacheTest, DistinctKeys) {
  auto cache = open(dir_);
  const Key128 a = key_of("a"), b = key_of("b");
  const std::vector<uint8_t> pa = make_payload(300, 3), pb = make_payload(500, 4), pa2 = make_payload(200, 5);
  ASSERT_TRUE(cache->store(a, pa, "a"));
  ASSERT_TRUE(cache->store(b, pb, "b"));
  EXPECT_EQ(cache->load(a), pa);
  EXPECT_EQ(cache->load(b), pb);
  EXPECT_FALSE(cache->load(key_of("c")).has_value());
  ASSERT_TRUE(cache->store(a, pa2, "a again"));  // a store replaces the entry
  EXPECT_EQ(cache->load(a), pa2);
  EXPECT_EQ(cache->load(b), pb);
  EXPECT_EQ(names_in(dir_).size(), 2u);
}

TEST_F(DiskCacheTest, CorruptPayloadByteIsDeletedThenRestored) {
  auto cache = open(dir_);
  const Key128 key = key_of("corrupt");
  const std::vector<uint8_t> payload = make_payload(4096, 6);
  ASSERT_TRUE(cache->store(key, payload, "label"));
  std::vector<uint8_t> bytes = read_file(entry(key));
  bytes[bytes.size() - 100] ^= 0x01;
  write_file(entry(key), bytes);
  EXPECT_FALSE(cache->load(key).has_value());
  EXPECT_FALSE(exists(entry(key)));
  ASSERT_TRUE(cache->store(key, payload, "label"));  // the caller compiles again and stores
  EXPECT_EQ(cache->load(key), payload);
  EXPECT_TRUE(warnings_.empty()) << "a damaged entry is a miss, not a problem of the directory";
}

TEST_F(DiskCacheTest, TruncatedEntryIsDeleted) {
  auto cache = open(dir_);
  const Key128 key = key_of("truncated");
  const std::vector<uint8_t> payload = make_payload(1000, 7);
  // Cut the payload, the label, the header; an empty file.
  for (uint64_t size : {kHeaderBytes + 5 + 999, kHeaderBytes + 2, kHeaderBytes - 1, uint64_t(0)}) {
    SCOPED_TRACE(size);
    ASSERT_TRUE(cache->store(key, payload, "label"));
    ASSERT_EQ(::truncate(entry(key).c_str(), off_t(size)), 0);
    EXPECT_FALSE(cache->load(key).has_value());
    EXPECT_FALSE(exists(entry(key)));
  }
  // Bytes appended after the payload break the size check as well.
  ASSERT_TRUE(cache->store(key, payload, "label"));
  std::vector<uint8_t> bytes = read_file(entry(key));
  bytes.push_back(0);
  write_file(entry(key), bytes);
  EXPECT_FALSE(cache->load(key).has_value());
  EXPECT_FALSE(exists(entry(key)));
}

TEST_F(DiskCacheTest, WrongMagicIsDeleted) {
  auto cache = open(dir_);
  const Key128 key = key_of("magic");
  ASSERT_TRUE(cache->store(key, make_payload(100, 8), ""));
  std::vector<uint8_t> bytes = read_file(entry(key));
  ASSERT_EQ(std::string(bytes.begin(), bytes.begin() + 8), std::string("MXQJIT\0\1", 8));
  bytes[0] = 'X';
  write_file(entry(key), bytes);
  EXPECT_FALSE(cache->load(key).has_value());
  EXPECT_FALSE(exists(entry(key)));
}

TEST_F(DiskCacheTest, EveryHeaderFieldIsChecked) {
  auto cache = open(dir_);
  const Key128 key = key_of("header");
  const std::vector<uint8_t> payload = make_payload(100, 9);
  // magic end, version, label length, key hi, key lo, payload size, payload hash
  for (size_t offset : {7, 8, 12, 16, 24, 32, 40}) {
    SCOPED_TRACE(offset);
    ASSERT_TRUE(cache->store(key, payload, "label"));
    std::vector<uint8_t> bytes = read_file(entry(key));
    bytes[offset] ^= 0x01;
    write_file(entry(key), bytes);
    EXPECT_FALSE(cache->load(key).has_value());
    EXPECT_FALSE(exists(entry(key)));
  }
  // An intact entry under another key's name (a renamed file) is not that key's kernel.
  const Key128 other = key_of("other");
  ASSERT_TRUE(cache->store(key, payload, "label"));
  ASSERT_EQ(::rename(entry(key).c_str(), entry(other).c_str()), 0);
  EXPECT_FALSE(cache->load(other).has_value());
  EXPECT_FALSE(exists(entry(other)));
}

TEST_F(DiskCacheTest, SymbolicLinkEntryIsNotFollowed) {
  auto cache = open(dir_);
  const Key128 key = key_of("link"), target = key_of("target");
  const std::vector<uint8_t> payload = make_payload(100, 10);
  ASSERT_TRUE(cache->store(target, payload, ""));
  ASSERT_EQ(::symlink(entry(target).c_str(), entry(key).c_str()), 0);
  EXPECT_FALSE(cache->load(key).has_value());
  EXPECT_FALSE(exists(entry(key)));
  EXPECT_EQ(cache->load(target), payload);
}

// ================================ the directory ================================================
TEST_F(DiskCacheTest, MissingDirectoryIsCreatedWith0700) {
  const std::string dir = root_ + "/a/b/c";
  const mode_t old_umask = ::umask(0);  // 0700 must come from the cache, not from the umask
  auto cache = open(dir);
  ::umask(old_umask);
  ASSERT_TRUE(cache->usable()) << cache->why();
  for (const std::string& d : {root_ + "/a", root_ + "/a/b", dir}) EXPECT_EQ(mode_of(d), 0700u) << d;
  EXPECT_TRUE(cache->store(key_of("k"), make_payload(10, 11), ""));
  EXPECT_TRUE(warnings_.empty());
  // An existing directory keeps its mode when that is safe (0755 is not writable by others).
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_TRUE(open(dir)->usable());
  EXPECT_EQ(mode_of(dir), 0755u);
}

TEST_F(DiskCacheTest, SymbolicLinkDirectoryIsRefused) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  const std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  auto cache = open(link);
  expect_memory_only(*cache, link, "symbolic link");
  EXPECT_TRUE(names_in(dir_).empty());
  // "link/" would make a plain stat follow the link.
  warnings_.clear();
  auto slash = open(link + "/");
  expect_memory_only(*slash, link, "symbolic link");
  EXPECT_TRUE(names_in(dir_).empty());
}

TEST_F(DiskCacheTest, GroupOrWorldWritableDirectoryIsRefused) {
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  for (mode_t mode : {0770, 0720, 0702, 0777, 01777}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(dir_.c_str(), mode), 0);
    warnings_.clear();
    auto cache = open(dir_);
    expect_memory_only(*cache, dir_, "writable by group or others");
    EXPECT_TRUE(names_in(dir_).empty());
  }
}

TEST_F(DiskCacheTest, RegularFileIsRefused) {
  write_file(dir_, {1, 2, 3});
  auto cache = open(dir_);
  expect_memory_only(*cache, dir_, "is not a directory");
  EXPECT_EQ(read_file(dir_), (std::vector<uint8_t>{1, 2, 3}));
}

TEST_F(DiskCacheTest, DirectoryOfAnotherUserIsRefused) {
  std::string dir = dir_;
  if (::geteuid() == 0) {
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    ASSERT_EQ(::chown(dir_.c_str(), 12345, uid_t(-1)), 0);
  } else {
    dir = "/";  // root's: safe from its mode alone, and not ours
  }
  auto cache = open(dir);
  expect_memory_only(*cache, dir, "owned by uid");
}

TEST_F(DiskCacheTest, UncreatableDirectoryIsMemoryOnly) {
  // A parent that is a regular file: mkdir fails with ENOTDIR, for root too.
  const std::string file = root_ + "/file";
  write_file(file, {42});
  const std::string dir = file + "/cache";
  auto cache = open(dir);
  expect_memory_only(*cache, dir, "Not a directory");  // lstat of the path fails with ENOTDIR
  EXPECT_EQ(read_file(file), std::vector<uint8_t>{42});
}

TEST_F(DiskCacheTest, EmptyDirectoryNameIsMemoryOnly) {
  auto cache = open("");
  expect_memory_only(*cache, "", "MXQ_CACHE_DIR");
}

TEST_F(DiskCacheTest, UnwritableDirectoryIsMemoryOnlyEvenForRoot) {
  // Root passes access(W_OK) on most directories, but no one creates files in /proc. For root,
  // /proc passes every check of the constructor and the first write fails (mkstemp: ENOENT);
  // /proc/sys/kernel is refused by access() (or by its owner in a user namespace), as both are
  // for other users. Each way: memory-only after the first store, exactly one warning.
  for (const std::string dir : {"/proc", "/proc/sys/kernel"}) {
    SCOPED_TRACE(dir);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) continue;
    warnings_.clear();
    auto cache = open(dir);
    const bool passed_checks = cache->usable();
    const Key128 key = key_of("k");
    EXPECT_FALSE(cache->store(key, make_payload(64, 1), "label"));
    EXPECT_FALSE(cache->usable());
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find(dir), std::string::npos) << warnings_[0];
    if (passed_checks) {
      EXPECT_NE(warnings_[0].find("cannot create a file"), std::string::npos) << warnings_[0];
    }
    EXPECT_FALSE(cache->store(key, make_payload(64, 1), "label"));
    EXPECT_FALSE(cache->load(key).has_value());
    EXPECT_EQ(warnings_.size(), 1u);
    EXPECT_FALSE(exists(dir + "/" + key.hex() + ".cubin"));
  }
  struct stat proc;
  struct statvfs proc_fs;
  if (::geteuid() == 0 && ::stat("/proc", &proc) == 0 && proc.st_uid == 0 && ::statvfs("/proc", &proc_fs) == 0 &&
      (proc_fs.f_flag & ST_RDONLY) == 0) {
    // Root on a read-write /proc it owns: the failing first write above was really taken.
    auto cache = open("/proc");
    EXPECT_TRUE(cache->usable()) << cache->why();
  }
}

TEST_F(DiskCacheTest, ReadOnlyDirectoryIsMemoryOnlyForNonRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes a mode 0500 directory; the test above covers root";
  ASSERT_EQ(::mkdir(dir_.c_str(), 0500), 0);
  auto cache = open(dir_);
  expect_memory_only(*cache, dir_, "is not writable");
  EXPECT_TRUE(names_in(dir_).empty());
}

TEST_F(DiskCacheTest, WriteFailureAfterSuccessWarnsOnce) {
  auto cache = open(dir_);
  ASSERT_TRUE(cache->store(key_of("a"), make_payload(10, 12), ""));
  // The directory disappears under a working cache (a `rm -rf` by the user, root included).
  std::error_code ec;
  fs::remove_all(dir_, ec);
  ASSERT_FALSE(ec);
  EXPECT_FALSE(cache->store(key_of("b"), make_payload(10, 13), ""));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find(dir_), std::string::npos) << warnings_[0];
  EXPECT_FALSE(cache->store(key_of("c"), make_payload(10, 14), ""));
  EXPECT_EQ(warnings_.size(), 1u);
  EXPECT_TRUE(cache->usable()) << "one failed write after a good one is not a broken directory";
  EXPECT_FALSE(exists(dir_)) << "the cache does not re-create a directory it was given";
}

// ================================ several processes ============================================
TEST_F(DiskCacheTest, ConcurrentStoresOfOneKeyLeaveOneIntactEntry) {
  constexpr int kProcesses = 8, kRounds = 10;
  const Key128 key = key_of("concurrent");
  const std::vector<uint8_t> payload = make_payload(1 << 20, 15);  // large enough for writes to overlap
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Each child waits for the pipe to close: all of them start at once. Each opens its own
      // cache (the directory does not exist yet: they race to create it too), then stores and
      // loads the key repeatedly. No gtest assertions here: the exit code is the result.
      ::close(start[1]);
      char c;
      while (::read(start[0], &c, 1) < 0 && errno == EINTR) {
      }
      int warnings = 0;
      DiskCache cache(dir_, 0, [&](const std::string&) { ++warnings; });
      bool ok = cache.usable();
      for (int round = 0; round < kRounds && ok; ++round) {
        ok = cache.store(key, payload, "concurrent");
        const std::optional<std::vector<uint8_t>> got = cache.load(key);
        ok = ok && got == payload;
      }
      ::_exit(ok && warnings == 0 ? 0 : 1);
    }
    if (pid < 0) break;
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);  // the start signal
  ASSERT_EQ(children.size(), size_t(kProcesses)) << "fork failed";
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " status " << status;
  }
  auto cache = open(dir_);
  EXPECT_EQ(cache->load(key), payload);
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{key.hex() + ".cubin"});  // no temporary files
  EXPECT_TRUE(warnings_.empty());
}

// ================================ eviction =====================================================
TEST_F(DiskCacheTest, EvictsLeastRecentlyUsedFirst) {
  constexpr size_t kPayload = 1000;
  constexpr uint64_t kEntry = kHeaderBytes + kPayload;  // empty labels
  auto cache = open(dir_, 3 * kEntry + kEntry / 2);
  const Key128 a = key_of("a"), b = key_of("b"), c = key_of("c"), d = key_of("d"), e = key_of("e");
  // Timestamps have nanoseconds here; the pauses keep the order on coarser file systems.
  const auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
  for (const Key128& k : {a, b, c}) {
    ASSERT_TRUE(cache->store(k, make_payload(kPayload, k.lo), ""));
    pause();
  }
  ASSERT_TRUE(cache->load(a).has_value());  // a becomes the most recently used: b is now the oldest
  pause();
  ASSERT_TRUE(cache->store(d, make_payload(kPayload, 16), ""));
  // Checked through the files: a load would change the order.
  EXPECT_TRUE(exists(entry(a)));
  EXPECT_FALSE(exists(entry(b)));
  EXPECT_TRUE(exists(entry(c)));
  EXPECT_TRUE(exists(entry(d)));
  pause();
  // An entry of two and a half: the two oldest (c, then a) go, d stays.
  ASSERT_TRUE(cache->store(e, make_payload(2 * kEntry + kEntry / 2 - kHeaderBytes, 17), ""));
  EXPECT_FALSE(exists(entry(a)));
  EXPECT_FALSE(exists(entry(c)));
  EXPECT_TRUE(exists(entry(d)));
  EXPECT_TRUE(exists(entry(e)));
  EXPECT_EQ(names_in(dir_).size(), 2u);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(DiskCacheTest, CapNeverEvictsTheEntryJustStored) {
  auto cache = open(dir_, 100);  // smaller than any entry
  const std::vector<uint8_t> payload = make_payload(1000, 18);
  ASSERT_TRUE(cache->store(key_of("a"), payload, ""));
  EXPECT_EQ(cache->load(key_of("a")), payload);
  ASSERT_TRUE(cache->store(key_of("b"), payload, ""));
  EXPECT_FALSE(exists(entry(key_of("a"))));
  EXPECT_EQ(cache->load(key_of("b")), payload);
}

TEST_F(DiskCacheTest, ZeroCapKeepsEverything) {
  auto cache = open(dir_, 0);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(cache->store(key_of(std::to_string(i)), make_payload(10000, 19), ""));
  EXPECT_EQ(cache->list().size(), 20u);
}

// ================================ list and clear ================================================
TEST_F(DiskCacheTest, ListAndClear) {
  auto cache = open(dir_);
  const std::vector<std::string> labels = {"mxfp8 bf16 1x32", "nvfp4 f16 16x16", "fp8_block_128x128 f32"};
  std::vector<Key128> keys;
  for (size_t i = 0; i < labels.size(); ++i) {
    keys.push_back(key_of(labels[i]));
    ASSERT_TRUE(cache->store(keys[i], make_payload(100 * (i + 1), i), labels[i]));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(cache->load(keys[0]).has_value());  // the most recently used now
  // Files that are not entries: a stray file, a temporary of a writer that died an hour ago
  // and one of a writer at work.
  write_file(dir_ + "/notes.txt", {1});
  write_file(dir_ + "/.tmp-stale1", {2});
  write_file(dir_ + "/.tmp-fresh1", {3});
  const timespec old_time = {::time(nullptr) - 2 * 3600, 0};
  const timespec times[2] = {old_time, old_time};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ + "/.tmp-stale1").c_str(), times, 0), 0);

  const std::vector<DiskCache::Entry> list = cache->list();
  ASSERT_EQ(list.size(), 3u);
  const std::vector<size_t> order = {0, 2, 1};  // most recently used first
  for (size_t i = 0; i < list.size(); ++i) {
    const size_t k = order[i];
    EXPECT_EQ(list[i].file, keys[k].hex() + ".cubin");
    EXPECT_EQ(list[i].label, labels[k]);
    EXPECT_EQ(list[i].bytes, kHeaderBytes + labels[k].size() + 100 * (k + 1));
    if (i > 0) {
      EXPECT_GT(list[i - 1].mtime_ns, list[i].mtime_ns);
    }
  }
  // A long label is cut to 4096 bytes.
  ASSERT_TRUE(cache->store(key_of("long"), make_payload(10, 20), std::string(5000, 'x')));
  EXPECT_EQ(cache->list().front().label, std::string(4096, 'x'));

  EXPECT_EQ(cache->clear(), 4u);
  EXPECT_TRUE(cache->list().empty());
  EXPECT_FALSE(cache->load(keys[0]).has_value());
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{".tmp-fresh1", "notes.txt"}));
  EXPECT_TRUE(warnings_.empty());
}

}  // namespace
}  // namespace mxq::test
