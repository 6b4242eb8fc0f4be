// Internal: the on-disk cache of compiled JIT kernels (cubins), shared by every process of a
// user. An entry is one file `<key hex>.cubin` whose key is a content hash of everything that
// determines the binary (source, options, compiler and driver versions, ...); the caller builds
// the parts, this file only hashes, stores and finds them.
//
// The cache never fails a quantize call: a directory it cannot trust or write makes it
// memory-only (usable() false, one warning), and an entry it cannot verify is deleted and
// reported as a miss, so the caller compiles again and stores the kernel anew.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mxq::runtime::jit {

struct Key128 {
  uint64_t hi = 0, lo = 0;
  std::string hex() const;  // 32 lowercase hex digits, hi first
  bool operator==(const Key128&) const = default;
};

// XXH3-128 over the parts, each prefixed by its length as a 64-bit little-endian integer, so
// part boundaries matter: {"ab", "c"} and {"a", "bc"} hash differently.
Key128 content_hash(std::span<const std::string_view> parts);

// $MXQ_CACHE_DIR, else $XDG_CACHE_HOME/mxq (an absolute one), else $HOME/.cache/mxq; "" when
// none of these is set. The one place that reads MXQ_CACHE_DIR.
std::string default_cache_dir();

// Thread-safe, and safe for several processes sharing one directory: an entry is written to a
// temporary file and renamed over its final name, so a reader sees a whole entry or none.
// Neither copyable nor movable (it holds a mutex); keep it behind a pointer or in place.
class DiskCache {
 public:
  // `dir` is created (with its missing parents) with mode 0700. It is refused when it is a
  // symbolic link, not a directory, owned by another user or writable by group or others; a
  // directory that cannot be created or written degrades the cache to memory-only. `warn` is
  // called at most once per DiskCache for the problem that makes it memory-only, and once for
  // the first failed write after a successful one; messages name the path and the reason.
  // `max_bytes` caps the total size of the entries (0: no cap).
  DiskCache(std::string dir, uint64_t max_bytes, std::function<void(const std::string&)> warn);
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  bool usable() const { return usable_.load(std::memory_order_acquire); }  // false: memory-only
  const std::string& why() const { return why_; }                          // the reason when not usable, else ""
  const std::string& dir() const { return dir_; }                          // as given, without trailing slashes

  // The payload of an intact entry (its mtime becomes now: eviction is least recently used
  // first), else nullopt. An entry that fails any check (magic, version, key, sizes, payload
  // hash) is deleted.
  std::optional<std::vector<uint8_t>> load(const Key128& key);
  // Writes the entry atomically, then evicts down to max_bytes. `label` is human-readable config
  // text kept in the entry's header for list() (at most 4096 bytes are kept). False when the
  // entry was not written (the kernel then lives in memory only).
  bool store(const Key128& key, std::span<const uint8_t> payload, std::string_view label);

  struct Entry {
    std::string file;   // the file name in dir(): "<key hex>.cubin"
    std::string label;  // "" when the header cannot be read
    uint64_t bytes;     // the whole file: header, label and payload
    int64_t mtime_ns;   // the last store or load
  };
  std::vector<Entry> list() const;  // most recently used first; {} when memory-only
  uint64_t clear();                 // entries removed (also removes stale temporary files)

 private:
  void degrade(std::string why);
  bool write_failed(const std::string& what);
  void evict(const std::string& keep);
  std::string entry_path(const Key128& key) const;

  std::string dir_;
  uint64_t max_bytes_;
  std::function<void(const std::string&)> warn_;
  std::string why_;  // written once, before usable_ turns false
  std::atomic<bool> usable_{true};
  std::atomic<bool> stored_{false};  // a store has succeeded: later write failures only warn
  std::mutex mu_;                    // guards the transitions below and why_
  bool write_warned_ = false;
};

}  // namespace mxq::runtime::jit
