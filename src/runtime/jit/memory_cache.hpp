// The JIT's in-memory cache: one value per integer key, made once. Concurrent requests for the
// same key wait for the one that makes it (N threads compile a configuration once); a make()
// that throws is cached as that error and rethrown to every later caller (negative entries);
// the map lock is never held while a value is made, so a cold compile of one configuration
// does not block hits on others. A hit is a lookup in a small per-thread table (no shared
// cache line is written) and an acquire load; a miss there takes the shared map lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

namespace mxq::runtime::jit {

template <class V>
class MemoryCache {
 public:
  template <class Make>
  const V& get(uint64_t key, Make&& make) {
    Local& l = local(key);
    Slot* s = l.id == id_ && l.key == key ? static_cast<Slot*>(l.slot) : find(key);
    if (!s) {
      std::unique_lock<std::shared_mutex> lock(mu_);
      auto& p = map_[key];
      if (!p) p = std::make_unique<Slot>();
      s = p.get();
    }
    if (!s->ready.load(std::memory_order_acquire)) {
      std::call_once(s->once, [&] {
        try {
          s->value.emplace(make());
        } catch (...) {
          s->error = std::current_exception();
        }
        s->ready.store(true, std::memory_order_release);
      });
    }
    l = {id_, key, s};
    if (s->error) std::rethrow_exception(s->error);
    return *s->value;
  }

  // The value if it was made successfully, else nullptr (never makes one).
  const V* peek(uint64_t key) const {
    const Slot* s = find(key);
    return s && s->ready.load(std::memory_order_acquire) && !s->error ? &*s->value : nullptr;
  }

  size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return map_.size();
  }

 private:
  struct Slot {
    std::once_flag once;
    std::atomic<bool> ready{false};
    std::optional<V> value;
    std::exception_ptr error;
  };
  Slot* find(uint64_t key) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second.get();
  }
  // Per-thread, direct-mapped: (cache id, key) -> slot. Slots live as long as their cache, and
  // ids are never reused, so an entry of a destroyed cache can never match.
  struct Local {
    uint64_t id = 0, key = 0;
    void* slot = nullptr;
  };
  static Local& local(uint64_t key) {
    static thread_local Local table[64];
    return table[(key * 0x9E3779B97F4A7C15ull) >> 58];
  }
  static uint64_t next_id() {
    static std::atomic<uint64_t> n{0};
    return ++n;
  }
  const uint64_t id_ = next_id();
  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Slot>> map_;  // slots are never erased: stable
};

}  // namespace mxq::runtime::jit
