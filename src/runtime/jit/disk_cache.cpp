#include "runtime/jit/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <system_error>
#include <tuple>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mxq::runtime::jit {
namespace {

// Entry file layout, integers little-endian:
//   0  magic "MXQJIT\0\1"      8 bytes
//   8  format version          u32
//  12  label length            u32
//  16  key hi, key lo          u64, u64
//  32  payload size            u64
//  40  XXH3-64 of the payload  u64
//  48  label, then payload
constexpr char kMagic[8] = {'M', 'X', 'Q', 'J', 'I', 'T', '\0', '\1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 48;
constexpr size_t kMaxLabelBytes = 4096;
constexpr std::string_view kEntrySuffix = ".cubin";
constexpr std::string_view kTempPrefix = ".tmp-";
// A temporary file this old belongs to a writer that died between mkstemp and rename.
constexpr int64_t kStaleTempNs = int64_t(3600) * 1000000000;

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

timespec now_ts() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}
int64_t mtime_ns(const struct stat& st) { return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec; }

// Sets atime and mtime to now from the fine-grained clock: the kernel's own timestamps come
// from a clock that advances once per tick, too coarse to order a store and a load made
// within a few milliseconds of each other.
void touch(int fd) {
  const timespec now = now_ts();
  const timespec times[2] = {now, now};
  futimens(fd, times);  // utimensat on the open file; a failure only weakens the LRU order
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int close() {  // the close whose error matters (a deferred write error)
    const int r = ::close(fd_);
    fd_ = -1;
    return r;
  }

 private:
  int fd_;
};

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

bool pread_all(int fd, void* data, size_t n, off_t offset) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
    offset += r;
  }
  return true;
}

bool is_entry_name(std::string_view name) {
  if (name.size() != 32 + kEntrySuffix.size() || !name.ends_with(kEntrySuffix)) return false;
  return std::all_of(name.begin(), name.begin() + 32,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct Header {
  uint32_t version;
  uint32_t label_bytes;
  Key128 key;
  uint64_t payload_bytes;
  uint64_t payload_hash;
};

std::array<uint8_t, kHeaderBytes> encode_header(const Header& h) {
  std::array<uint8_t, kHeaderBytes> b{};
  std::memcpy(b.data(), kMagic, sizeof(kMagic));
  put_le(b.data() + 8, h.version, 4);
  put_le(b.data() + 12, h.label_bytes, 4);
  put_le(b.data() + 16, h.key.hi, 8);
  put_le(b.data() + 24, h.key.lo, 8);
  put_le(b.data() + 32, h.payload_bytes, 8);
  put_le(b.data() + 40, h.payload_hash, 8);
  return b;
}

// The header of the entry open at `fd` when its magic matches, else nullopt.
std::optional<Header> read_header(int fd) {
  std::array<uint8_t, kHeaderBytes> b;
  if (!pread_all(fd, b.data(), b.size(), 0) || std::memcmp(b.data(), kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  return Header{uint32_t(get_le(b.data() + 8, 4)), uint32_t(get_le(b.data() + 12, 4)),
                Key128{get_le(b.data() + 16, 8), get_le(b.data() + 24, 8)}, get_le(b.data() + 32, 8),
                get_le(b.data() + 40, 8)};
}

// The payload of the entry open at `fd` (described by `st`) when every check passes.
std::optional<std::vector<uint8_t>> read_payload(int fd, const struct stat& st, const Key128& key) {
  if (!S_ISREG(st.st_mode) || uint64_t(st.st_size) < kHeaderBytes) return std::nullopt;
  const std::optional<Header> h = read_header(fd);
  if (!h || h->version != kFormatVersion || h->key != key) return std::nullopt;
  const uint64_t file_bytes = uint64_t(st.st_size);
  if (h->payload_bytes > file_bytes || file_bytes != kHeaderBytes + h->label_bytes + h->payload_bytes)
    return std::nullopt;
  std::vector<uint8_t> payload(h->payload_bytes);
  if (!pread_all(fd, payload.data(), payload.size(), off_t(kHeaderBytes + h->label_bytes))) return std::nullopt;
  if (XXH3_64bits(payload.data(), payload.size()) != h->payload_hash) return std::nullopt;
  return payload;
}

// The entries of `dir` (label read when asked); temporary files older than kStaleTempNs are
// removed on the way when asked.
std::vector<DiskCache::Entry> scan(const std::string& dir, bool read_labels, bool remove_stale) {
  std::vector<DiskCache::Entry> entries;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return entries;
  const int dfd = ::dirfd(d);
  const timespec now = now_ts();
  const int64_t now_ns = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
  while (const dirent* de = ::readdir(d)) {
    const std::string_view name = de->d_name;
    struct stat st;
    if (remove_stale && name.starts_with(kTempPrefix)) {
      if (::fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && now_ns - mtime_ns(st) > kStaleTempNs)
        ::unlinkat(dfd, de->d_name, 0);
      continue;
    }
    if (!is_entry_name(name) || ::fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    DiskCache::Entry e{std::string(name), "", uint64_t(st.st_size), mtime_ns(st)};
    if (read_labels) {
      Fd fd(::openat(dfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      const std::optional<Header> h = fd.get() >= 0 ? read_header(fd.get()) : std::nullopt;
      if (h && h->label_bytes <= kMaxLabelBytes && kHeaderBytes + h->label_bytes <= e.bytes) {
        std::string label(h->label_bytes, '\0');
        if (pread_all(fd.get(), label.data(), label.size(), off_t(kHeaderBytes))) e.label = std::move(label);
      }
    }
    entries.push_back(std::move(e));
  }
  ::closedir(d);
  return entries;
}

// Creates `path` and its missing parents with mode 0700; 0 or the errno of the failure.
int make_dirs(const std::string& path) {
  size_t pos = 0;
  do {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      ::chmod(prefix.c_str(), 0700);  // whatever the umask
    } else if (errno != EEXIST) {
      return errno;
    }
  } while (pos != std::string::npos);
  return 0;
}

// Creates `dir` when missing and checks that this user alone can write it; "" when it is
// usable, else why not.
std::string prepare_directory(const std::string& dir) {
  if (dir.empty()) return "no JIT cache directory (none of MXQ_CACHE_DIR, XDG_CACHE_HOME, HOME is set)";
  const std::string where = "JIT cache directory " + dir;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    // ENOTDIR: a parent is a file; make_dirs names that as the reason it cannot be created.
    if (errno != ENOENT && errno != ENOTDIR) return where + " cannot be examined: " + errno_text(errno);
    if (const int err = make_dirs(dir); err != 0) return where + " cannot be created: " + errno_text(err);
    if (::lstat(dir.c_str(), &st) != 0) return where + " cannot be examined: " + errno_text(errno);
  }
  // Whoever else can write here could plant a cubin that this process would then run.
  if (S_ISLNK(st.st_mode)) return where + " is a symbolic link (refused; point the cache at a real directory)";
  if (!S_ISDIR(st.st_mode)) return where + " is not a directory";
  if (st.st_uid != ::geteuid())
    return where + " is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::geteuid()) + ")";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
    return where + " is writable by group or others (mode " + mode + "; expected 0700)";
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return where + " is not writable: " + errno_text(errno);
  return "";
}

}  // namespace

std::string Key128::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = kDigits[(hi >> (4 * i)) & 15];
    s[31 - i] = kDigits[(lo >> (4 * i)) & 15];
  }
  return s;
}

Key128 content_hash(std::span<const std::string_view> parts) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  for (const std::string_view part : parts) {
    uint8_t length[8];
    put_le(length, part.size(), 8);
    XXH3_128bits_update(&state, length, sizeof(length));
    XXH3_128bits_update(&state, part.data(), part.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return Key128{h.high64, h.low64};
}

std::string default_cache_dir() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (std::string d = env("MXQ_CACHE_DIR"); !d.empty()) {
    // relative: to the working directory at first use, not wherever a later chdir() leads
    if (!d.starts_with('/'))
      if (char cwd[4096]; ::getcwd(cwd, sizeof cwd) != nullptr) return std::string(cwd) + "/" + d;
    return d;
  }
  // The XDG base directory specification: a relative path is invalid and ignored.
  if (std::string d = env("XDG_CACHE_HOME"); d.starts_with('/')) return d + "/mxq";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/mxq";
  return "";
}

DiskCache::DiskCache(std::string dir, uint64_t max_bytes, std::function<void(const std::string&)> warn)
    : dir_(std::move(dir)), max_bytes_(max_bytes), warn_(std::move(warn)) {
  // "dir/" would make lstat follow a symbolic link.
  while (dir_.size() > 1 && dir_.ends_with('/')) dir_.pop_back();
  if (std::string why = prepare_directory(dir_); !why.empty()) degrade(std::move(why));
}

void DiskCache::degrade(std::string why) {
  {
    std::lock_guard lock(mu_);
    if (!usable_.load(std::memory_order_relaxed)) return;
    why_ = std::move(why);
    usable_.store(false, std::memory_order_release);
  }
  if (warn_) warn_(why_ + "; compiled kernels are cached in memory only");
}

bool DiskCache::write_failed(const std::string& what) {
  // A directory that refuses the very first write is as unusable as one access() rejects.
  if (!stored_.load(std::memory_order_acquire)) {
    degrade(what);
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (write_warned_) return false;
    write_warned_ = true;
  }
  if (warn_) warn_(what + "; this kernel is cached in memory only (further write failures are not reported)");
  return false;
}

std::string DiskCache::entry_path(const Key128& key) const {
  return dir_ + "/" + key.hex() + std::string(kEntrySuffix);
}

std::optional<std::vector<uint8_t>> DiskCache::load(const Key128& key) {
  if (!usable()) return std::nullopt;
  const std::string path = entry_path(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ELOOP) ::unlink(path.c_str());  // a symbolic link is no entry of ours
    return std::nullopt;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return std::nullopt;
  std::optional<std::vector<uint8_t>> payload = read_payload(fd.get(), st, key);
  if (!payload) {
    // Only the file that was read: another process may have renamed a good entry over it since.
    struct stat now;
    if (::lstat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) ::unlink(path.c_str());
    return std::nullopt;
  }
  touch(fd.get());
  return payload;
}

bool DiskCache::store(const Key128& key, std::span<const uint8_t> payload, std::string_view label) {
  if (!usable()) return false;
  label = label.substr(0, kMaxLabelBytes);
  const std::string path = entry_path(key);
  std::string tmp = dir_ + "/" + std::string(kTempPrefix) + "XXXXXX";
  Fd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (fd.get() < 0)
    return write_failed("cannot create a file in JIT cache directory " + dir_ + ": " + errno_text(errno));
  const auto abandon = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return write_failed(what + ": " + errno_text(err));
  };

  const auto header = encode_header(
      {kFormatVersion, uint32_t(label.size()), key, payload.size(), XXH3_64bits(payload.data(), payload.size())});
  if (!write_all(fd.get(), header.data(), header.size()) || !write_all(fd.get(), label.data(), label.size()) ||
      !write_all(fd.get(), payload.data(), payload.size()))
    return abandon("cannot write " + tmp, errno);
  touch(fd.get());
  if (::fsync(fd.get()) != 0) return abandon("cannot sync " + tmp, errno);
  if (fd.close() != 0) return abandon("cannot write " + tmp, errno);
  // rename() replaces atomically: concurrent writers of one key each install a whole entry.
  if (::rename(tmp.c_str(), path.c_str()) != 0) return abandon("cannot rename " + tmp + " to " + path, errno);
  // The rename itself reaches the disk only with the directory; a failure here (some file
  // systems cannot sync directories) leaves a valid entry, so it is not reported.
  if (Fd d(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); d.get() >= 0) ::fsync(d.get());
  stored_.store(true, std::memory_order_release);
  if (max_bytes_ > 0) evict(key.hex() + std::string(kEntrySuffix));
  return true;
}

void DiskCache::evict(const std::string& keep) {
  std::vector<Entry> entries = scan(dir_, false, true);
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.bytes;
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.mtime_ns, a.file) < std::tie(b.mtime_ns, b.file); });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.file == keep) continue;
    // ENOENT: another process evicted it first.
    if (::unlink((dir_ + "/" + e.file).c_str()) == 0 || errno == ENOENT) total -= e.bytes;
  }
}

std::vector<DiskCache::Entry> DiskCache::list() const {
  if (!usable()) return {};
  std::vector<Entry> entries = scan(dir_, true, false);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(b.mtime_ns, a.file) < std::tie(a.mtime_ns, b.file); });
  return entries;
}

uint64_t DiskCache::clear() {
  if (!usable()) return 0;
  uint64_t removed = 0;
  for (const Entry& e : scan(dir_, false, true))
    if (::unlink((dir_ + "/" + e.file).c_str()) == 0) ++removed;
  return removed;
}

}  // namespace mxq::runtime::jit
