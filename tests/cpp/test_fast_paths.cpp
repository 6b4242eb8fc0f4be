// The branch-free element encoders that the kernels use against the generic codec, on every
// fp32 input. Owner: GPU kernels (they call these paths; the CPU reference calls encode()).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "mxq/numerics/recipes.h"

namespace {

using mxq::num::ElemFormat;

TEST(FastPaths, E2M1SatfiniteMatchesEncodeForAllFp32) {
  std::atomic<uint64_t> mismatches{0}, checked{0};
  std::atomic<uint32_t> first_bad{0};
  const unsigned nthreads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nthreads; ++t)
    pool.emplace_back([&, t] {
      uint64_t bad = 0, n = 0;
      const uint64_t begin = (uint64_t(1) << 32) * t / nthreads, end = (uint64_t(1) << 32) * (t + 1) / nthreads;
      for (uint64_t b = begin; b < end; ++b) {
        const float x = mxq::num::bits_float(uint32_t(b));
        if (mxq::num::is_nan(x)) continue;
        ++n;
        if (mxq::num::encode_e2m1_satfinite(x) !=
            mxq::num::encode(x, ElemFormat::e2m1, mxq::num::Saturation::satfinite)) {
          if (bad++ == 0) first_bad = uint32_t(b);
        }
      }
      mismatches += bad;
      checked += n;
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(checked.load(), (uint64_t(1) << 32) - 2 * ((uint64_t(1) << 23) - 1));
  EXPECT_EQ(mismatches.load(), 0u) << "first mismatch at fp32 bits 0x" << std::hex << first_bad.load();
}

TEST(FastPaths, QuantizedNaNCodes) {
  EXPECT_EQ(mxq::num::quantize_element(mxq::num::quiet_nan(), 1.0f, ElemFormat::e4m3fn), 0x7f);
  EXPECT_EQ(mxq::num::quantize_element(-mxq::num::quiet_nan(), 1.0f, ElemFormat::e5m2), 0x7f);
  EXPECT_EQ(mxq::num::quantize_element(1.0f, mxq::num::quiet_nan(), ElemFormat::e2m1), 0x0);
}

}  // namespace
