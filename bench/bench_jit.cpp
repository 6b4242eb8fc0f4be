// The JIT's costs, without a GPU: a cold NVRTC compile of one configuration, a load from the
// disk cache (read, verify, unpack), and a memory-cache hit (one thread, and one per core at once). Issue 4's
// bars: compile <= 1.5 s, disk load <= 20 ms, hit < 100 ns. Prints one table.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mxq/numerics/activations.h"
#include "runtime/jit/compile.hpp"
#include "runtime/jit/disk_cache.hpp"
#include "runtime/jit/memory_cache.hpp"

using namespace mxq;
using namespace mxq::runtime::jit;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <class F>
double median_s(int n, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  const cuda::FastKey key{2, num::Scheme::mx, num::ElemFormat::e4m3fn, cuda::FastShape::colblocks, 32, 32,
                          num::ScaleLayout::row_major, num::ScaleLayout::row_major};
  std::printf("configuration: %s, sm_90a, NVRTC %s\n", key_text(key).c_str(), nvrtc_version().c_str());

  Compiled c;
  const double compile_s = median_s(3, [&] { c = compile(key, 90); });
  // A fused configuration (the bar is for these): the same key with dgelu + dbias, and
  // with swiglu (the heaviest activation polynomials).
  cuda::FastKey fused = key;
  fused.fuse = cuda::fuse_bits(int(num::Activation::gelu), true, true);
  const double fused_s = median_s(3, [&] { compile(fused, 90); });
  cuda::FastKey gated = key;
  gated.fuse = cuda::fuse_bits(int(num::Activation::swiglu), false, false);
  const double gated_s = median_s(3, [&] { compile(gated, 90); });

  char dir_template[] = "/tmp/mxq-bench-jit-XXXXXX";
  const std::string dir = std::string(mkdtemp(dir_template)) + "/cache";
  DiskCache disk(dir, 0, [](const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); });
  const Key128 bk = binary_key(key, 90);
  disk.store(bk, to_payload(c), key_text(key));
  Compiled back;
  const double load_s = median_s(20, [&] {
    const auto p = disk.load(bk);
    if (!p || !from_payload(*p, back)) std::abort();
  });
  disk.clear();

  MemoryCache<int> mem;
  constexpr int kKeys = 16;  // a process uses a handful of configurations
  for (int k = 0; k < kKeys; ++k) mem.get(uint64_t(k) * 977, [k] { return k; });
  constexpr int kHits = 2'000'000;
  std::atomic<long> sink{0};
  const auto t1 = Clock::now();
  long acc = 0;
  for (int i = 0; i < kHits; ++i) acc += mem.get(uint64_t(i % kKeys) * 977, [] { return -1; });
  const double hit1_ns = seconds_since(t1) * 1e9 / kHits;
  sink += acc;
  std::vector<std::thread> pool;
  const int threads = int(std::max(2u, std::thread::hardware_concurrency()));
  const auto tn = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      long a = 0;
      for (int i = 0; i < kHits; ++i) a += mem.get(uint64_t((i + t) % kKeys) * 977, [] { return -1; });
      sink += a;
    });
  for (auto& t : pool) t.join();
  const double hitn_ns = seconds_since(tn) * 1e9 / kHits;  // wall time per hit of each thread

  std::printf("\n%-44s %12s %10s\n", "measure", "value", "bar");
  std::printf("%-44s %9.3f s %10s\n", "cold NVRTC compile (median of 3)", compile_s, "<= 1.5 s");
  std::printf("%-44s %9.3f s %10s\n", ("  fused " + key_text(fused).substr(key_text(fused).rfind(' ') + 1)).c_str(),
              fused_s, "<= 1.5 s");
  std::printf("%-44s %9.3f s %10s\n", ("  fused " + key_text(gated).substr(key_text(gated).rfind(' ') + 1)).c_str(),
              gated_s, "<= 1.5 s");
  std::printf("%-44s %8.3f ms %10s\n", "disk-cache load, verify, unpack (median of 20)", load_s * 1e3, "<= 20 ms");
  std::printf("%-44s %9.1f ns %10s\n", "memory-cache hit, 1 thread", hit1_ns, "< 100 ns");
  std::printf("%-30s%2d threads at once %9.1f ns %10s\n", "memory-cache hit,", threads, hitn_ns, "< 100 ns");
  std::printf("(cubin %zu bytes; %u cores)\n", c.cubin.size(), std::thread::hardware_concurrency());
  return sink.load() == 42 ? 1 : 0;
}
