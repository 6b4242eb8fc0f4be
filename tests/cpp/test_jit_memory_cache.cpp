// The JIT's memory cache: one make() per key across threads, failures cached as failures (but
// Retryable ones not), and a slow make() of one key does not block hits on another.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/jit/memory_cache.hpp"

namespace mxq::runtime::jit {
namespace {

using namespace std::chrono_literals;

TEST(JitMemoryCache, ManyThreadsMakeOneKeyOnce) {
  MemoryCache<int> c;
  std::atomic<int> makes{0};
  std::vector<std::thread> pool;
  std::vector<int> got(16, 0);
  for (int t = 0; t < 16; ++t)
    pool.emplace_back([&, t] {
      got[size_t(t)] = c.get(42, [&] {
        ++makes;
        std::this_thread::sleep_for(50ms);  // a compile
        return 7;
      });
    });
  for (auto& t : pool) t.join();
  EXPECT_EQ(makes.load(), 1);
  for (int v : got) EXPECT_EQ(v, 7);
}

TEST(JitMemoryCache, FailuresAreCachedAndRethrown) {
  MemoryCache<int> c;
  int makes = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(c.get(1, [&]() -> int {
      ++makes;
      throw std::runtime_error("compile failed");
    }),
                 std::runtime_error);
  }
  EXPECT_EQ(makes, 1);
  EXPECT_EQ(c.peek(1), nullptr);
}

// A Retryable failure (a module load out of device memory) is rethrown as the error it carries
// and not kept: the next get() makes the value again, and keeps it.
TEST(JitMemoryCache, RetryableFailuresAreNotKept) {
  MemoryCache<int> c;
  int makes = 0;
  auto make = [&]() -> int {
    if (++makes < 3) throw Retryable{std::make_exception_ptr(std::runtime_error("out of memory"))};
    return 5;
  };
  for (int i = 0; i < 2; ++i) {
    EXPECT_THROW(c.get(4, make), std::runtime_error);
    EXPECT_EQ(c.peek(4), nullptr);
  }
  EXPECT_EQ(c.get(4, make), 5);
  EXPECT_EQ(c.get(4, make), 5);
  EXPECT_EQ(makes, 3);
  ASSERT_NE(c.peek(4), nullptr);
  // Threads waiting on a make that fails Retryable make it again themselves; exactly one succeeds.
  std::atomic<int> tries{0}, ok{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&] {
      try {
        c.get(6, [&]() -> int {
          std::this_thread::sleep_for(5ms);
          if (++tries < 4) throw Retryable{std::make_exception_ptr(std::runtime_error("out of memory"))};
          return 6;
        });
        ++ok;
      } catch (const std::runtime_error&) {
        ++failed;
      }
    });
  for (auto& t : pool) t.join();
  EXPECT_EQ(tries.load(), 4);
  EXPECT_EQ(failed.load(), 3);
  EXPECT_EQ(ok.load(), 5);
}

TEST(JitMemoryCache, ColdMakeDoesNotBlockHitsOnOtherKeys) {
  MemoryCache<int> c;
  c.get(2, [] { return 2; });
  std::atomic<bool> started{false}, release{false};
  std::thread slow([&] {
    c.get(3, [&] {
      started = true;
      while (!release) std::this_thread::sleep_for(1ms);
      return 3;
    });
  });
  while (!started) std::this_thread::sleep_for(1ms);
  // key 3 is being made (and stays so until released): key 2 still hits, key 4 is made
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.get(2, [] { return -1; }), 2);
  EXPECT_EQ(c.get(4, [] { return 4; }), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  release = true;
  slow.join();
  EXPECT_EQ(c.get(3, [] { return -1; }), 3);
}

TEST(JitMemoryCache, DistinctCachesDoNotShareEntries) {
  for (int i = 0; i < 3; ++i) {
    MemoryCache<int> c;  // often at the same address as the last one
    EXPECT_EQ(c.get(9, [i] { return i; }), i);
  }
}

}  // namespace
}  // namespace mxq::runtime::jit
