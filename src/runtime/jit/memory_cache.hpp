// The JIT's in-memory cache: one value per integer key, made once. Concurrent requests for the
// same key wait for the one that makes it (N threads compile a configuration once); a make()
// that throws is cached as that error and rethrown to every later caller (negative entries),
// except a Retryable one (a module load out of device memory), which is rethrown and not kept:
// the next caller makes the value again;
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

// Thrown by a make() whose failure may not recur (out of memory): the cache rethrows `error`
// and keeps no entry, so the next get() makes the value again.
struct Retryable {
  std::exception_ptr error;
};

template <class V>
class MemoryCache {
 public:
  template <class Make>
  const V& get(uint64_t key, Make&& make) {
    Local* set = local_set(key);
    int way = -1;  // where this thread remembers the slot: its way, else an empty one, else in turn
    for (int w = 0; w < kWays; ++w) {
      if (set[w].id == id_ && set[w].key == key) {
        Slot* hit = static_cast<Slot*>(set[w].slot);
        if (hit->ready.load(std::memory_order_acquire)) {
          if (hit->error) std::rethrow_exception(hit->error);
          return *hit->value;
        }
        way = w;
      }
      if (way < 0 && !set[w].slot) way = w;
    }
    if (way < 0) way = int(next_way()++ % kWays);
    Slot* s = find(key);
    if (!s) {
      std::unique_lock<std::shared_mutex> lock(mu_);
      auto& p = map_[key];
      if (!p) p = std::make_unique<Slot>();
      s = p.get();
    }
    if (!s->ready.load(std::memory_order_acquire)) {
      std::exception_ptr again;  // a Retryable failure: rethrown, not kept
      {
        std::lock_guard<std::mutex> making(s->make_mu);  // one make at a time; the others wait, then hit
        if (!s->ready.load(std::memory_order_relaxed)) {
          try {
            s->value.emplace(make());
          } catch (const Retryable& r) {
            again = r.error;
          } catch (...) {
            s->error = std::current_exception();
          }
          if (!again) s->ready.store(true, std::memory_order_release);
        }
      }
      if (again) std::rethrow_exception(again);
    }
    set[way] = {id_, key, s};
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
    std::mutex make_mu;
    std::atomic<bool> ready{false};
    std::optional<V> value;
    std::exception_ptr error;
  };
  Slot* find(uint64_t key) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : it->second.get();
  }
  // Per-thread, set-associative: (cache id, key) -> slot, kSets sets of kWays ways, so that the
  // handful of configurations a process uses never evict one another into the shared lock (a
  // direct-mapped table with one collision cost 300 ns a hit with 16 threads on the H200).
  // Slots live as long as their cache, and ids are never reused, so an entry of a destroyed
  // cache can never match.
  struct Local {
    uint64_t id = 0, key = 0;
    void* slot = nullptr;
  };
  static constexpr int kWays = 4, kSetBits = 6;
  static Local* local_set(uint64_t key) {
    static thread_local Local table[(1 << kSetBits) * kWays];
    return &table[((key * 0x9E3779B97F4A7C15ull) >> (64 - kSetBits)) * kWays];
  }
  static unsigned& next_way() {
    static thread_local unsigned n = 0;
    return n;
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
