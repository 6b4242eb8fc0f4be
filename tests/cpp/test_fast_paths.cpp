// The branch-free element encoders that the kernels use against the generic codec, on every
// fp32 input. Owner: GPU kernels (they call these paths; the CPU reference calls encode()).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "mxq/numerics/recipes.h"

namespace {

using mxq::num::ElemFormat;

// Runs `check` on every non-NaN fp32 value over the machine's threads. `check` returns a mask of
// the conditions it found (bit k: condition k); the sweep counts each and keeps the first value
// that showed condition 0.
struct Sweep {
  uint64_t count[4] = {0, 0, 0, 0}, checked = 0;  // any finding, then bits 1-3 of the findings
  uint32_t first = 0;
};
template <class Check>
Sweep sweep_all_fp32(Check check) {
  std::atomic<uint64_t> count[4] = {0, 0, 0, 0}, checked{0};
  std::atomic<uint32_t> first{0};
  const unsigned nthreads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nthreads; ++t)
    pool.emplace_back([&, t] {
      uint64_t c[4] = {0, 0, 0, 0}, n = 0;
      const uint64_t begin = (uint64_t(1) << 32) * t / nthreads, end = (uint64_t(1) << 32) * (t + 1) / nthreads;
      for (uint64_t b = begin; b < end; ++b) {
        const float x = mxq::num::bits_float(uint32_t(b));
        if (mxq::num::is_nan(x)) continue;
        ++n;
        const unsigned found = check(x);
        if ((found & 1u) && c[0]++ == 0) first = uint32_t(b);
        if (found & 2u) ++c[1];
        if (found & 4u) ++c[2];
        if (found & 8u) ++c[3];
      }
      for (int k = 0; k < 4; ++k) count[k] += c[k];
      checked += n;
    });
  for (auto& th : pool) th.join();
  Sweep s;
  for (int k = 0; k < 4; ++k) s.count[k] = count[k];
  s.checked = checked;
  s.first = first;
  return s;
}

TEST(FastPaths, E2M1SatfiniteMatchesEncodeForAllFp32) {
  const Sweep s = sweep_all_fp32([](float x) {
    return unsigned(mxq::num::encode_e2m1_satfinite(x) !=
                    mxq::num::encode(x, ElemFormat::e2m1, mxq::num::Saturation::satfinite));
  });
  EXPECT_EQ(s.checked, (uint64_t(1) << 32) - 2 * ((uint64_t(1) << 23) - 1));
  EXPECT_EQ(s.count[0], 0u) << "first mismatch at fp32 bits 0x" << std::hex << s.first;
}

// Every non-negative non-NaN fp32 block maximum through `kinds` variants: scales(k, bits, x) gives
// the kernels' and the reference's BlockScale of variant k ({got, want}); bit k + 1 of a finding
// marks a difference in the stored form or the multiplier's bits.
template <class Scales>
Sweep sweep_block_scales(int kinds, Scales scales) {
  return sweep_all_fp32([&](float x) {
    const uint32_t b = mxq::num::float_bits(x);
    if (b >> 31) return 0u;  // maxima are |x|
    unsigned found = 0;
    for (int k = 0; k < kinds; ++k) {
      const auto [got, want] = scales(k, b, x);
      if (got.stored != want.stored || mxq::num::float_bits(got.multiplier) != mxq::num::float_bits(want.multiplier))
        found |= 1u << (k + 1) | 1u;
    }
    return found;
  });
}

// The kernels' branch-free MX block scale (num::mx_block_scale_bits, from |amax|'s bits) against
// the reference's (block_scale_for<Scheme::mx>: mx_scale_code, mx_multiplier), stored code and
// multiplier bits, on every non-negative non-NaN fp32 maximum, for each element format and both
// rounding modes (bit k of a finding: the k-th rounding), and on NaN maxima.
TEST(FastPaths, MxBlockScaleWithoutBranchesMatchesForAllFp32) {
  using mxq::num::MxRounding;
  for (ElemFormat f : {ElemFormat::e4m3fn, ElemFormat::e5m2, ElemFormat::e2m1}) {
    const Sweep s = sweep_block_scales(2, [f](int k, uint32_t b, float x) {
      mxq::num::ScaleRule r{};
      r.scheme = mxq::num::Scheme::mx;
      r.elem = f;
      r.rounding = k ? MxRounding::floor : MxRounding::rceil;
      return std::pair{mxq::num::mx_block_scale_bits(b, f, r.rounding),
                       mxq::num::block_scale_for<mxq::num::Scheme::mx>(r, x)};
    });
    EXPECT_EQ(s.checked, (uint64_t(1) << 32) - 2 * ((uint64_t(1) << 23) - 1));
    EXPECT_EQ(s.count[0], 0u) << int(f) << ": first mismatch at |amax| bits 0x" << std::hex << s.first << std::dec
                              << " (rceil " << s.count[1] << ", floor " << s.count[2] << ")";
  }
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu}) {
    const mxq::num::BlockScale got = mxq::num::mx_block_scale_bits(nan, ElemFormat::e4m3fn, MxRounding::rceil);
    EXPECT_EQ(got.stored, uint32_t(mxq::num::kE8M0NaN));
    EXPECT_TRUE(mxq::num::is_nan(got.multiplier));
  }
}

// The kernels' fp8_block pow2 block scale without a division (num::fp8_block_pow2_scale_bits)
// against the reference's (block_scale_for<Scheme::fp8_block> with pow2: fp8_block_scale,
// reciprocal_multiplier), stored form and multiplier bits, on every non-negative non-NaN fp32
// maximum: bit 1 of a finding is DeepSeek V4's FP4 (fmax 6, eps 0, UE8M0), bit 2 1x128 FP8 (fmax
// 448, eps 1e-4, fp32 scales), bit 3 E5M2 (fmax 57344, eps 1e-4, UE8M0). And on NaN maxima.
TEST(FastPaths, Fp8BlockPow2ScaleWithoutDivisionMatchesForAllFp32) {
  struct Case {
    ElemFormat elem;
    float eps;
    bool ue8m0;
  };
  const Case cases[] = {{ElemFormat::e2m1, 0.0f, true}, {ElemFormat::e4m3fn, 1e-4f, false}, {ElemFormat::e5m2, 1e-4f, true}};
  const Sweep s = sweep_block_scales(3, [&](int k, uint32_t b, float x) {
    mxq::num::ScaleRule r{};
    r.scheme = mxq::num::Scheme::fp8_block;
    r.elem = cases[k].elem;
    r.eps = cases[k].eps;
    r.pow2 = true;
    r.ue8m0_out = cases[k].ue8m0;
    return std::pair{mxq::num::fp8_block_pow2_scale_bits(b, mxq::num::max_finite(r.elem), r.eps, r.ue8m0_out),
                     mxq::num::block_scale_for<mxq::num::Scheme::fp8_block>(r, x)};
  });
  EXPECT_EQ(s.checked, (uint64_t(1) << 32) - 2 * ((uint64_t(1) << 23) - 1));
  EXPECT_EQ(s.count[0], 0u) << "first mismatch at |amax| bits 0x" << std::hex << s.first << std::dec << " (fp4 "
                            << s.count[1] << ", 1x128 " << s.count[2] << ", e5m2 " << s.count[3] << ")";
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu}) {
    const mxq::num::BlockScale got = mxq::num::fp8_block_pow2_scale_bits(nan, 6.0f, 0.0f, true);
    EXPECT_EQ(got.stored, uint32_t(mxq::num::kE8M0NaN));
    EXPECT_TRUE(mxq::num::is_nan(got.multiplier));
  }
}

// The GPU rounds fp32 products (NVFP4, non-power-of-two FP4 scales) to E2M1 through bf16 pairs
// rounded to odd (common.cuh bf16x2_round_odd_abs: the high half of the fp32 bits, its last bit set
// where the low half is not zero), then the bf16 encoder (num::kE2M1Lines' rule, which
// E2M1MinimumOfThreeLinesMatchesForAllFp32 holds for every fp32 value; the byte permutes that pick
// the halves are the GPU tests' to check, bit for bit against the CPU). Rounding
// to odd loses nothing that the final rounding to nearest even needs: every non-NaN fp32 value
// gives the code it gives directly. The same steps with plain truncation (no odd bit) must fail,
// so that this test can.
TEST(FastPaths, E2M1ThroughBf16RoundedToOddMatchesForAllFp32) {
  const Sweep s = sweep_all_fp32([](float x) {
    const uint8_t want = mxq::num::encode_e2m1_satfinite(x);
    const uint32_t b = mxq::num::float_bits(x), rz = b & 0xffff0000u;
    const uint32_t odd = rz | ((b & 0xffffu) != 0 ? 0x10000u : 0u);  // min(low half, 1), moved up
    return unsigned(mxq::num::encode_e2m1_satfinite(mxq::num::bits_float(odd)) != want) |
           (unsigned(mxq::num::encode_e2m1_satfinite(mxq::num::bits_float(rz)) != want) << 1);
  });
  EXPECT_EQ(s.count[0], 0u) << "first mismatch at fp32 bits 0x" << std::hex << s.first;
  EXPECT_GT(s.count[1], 0u) << "truncation alone (no odd bit) should have mismatched";
}

// The GPU's FP4 magnitude rule (num::kE2M1Lines, which common.cuh e2m1x8_from_half2 computes as
// one fused multiply-add per line onto an even integer where the quantum is 1): with
// a = min(|x|, 6), the code is the minimum over the lines of rint(2^slope_log2 * a) + offset,
// evaluated here in double, where it is exact. Every non-NaN fp32 value must give the magnitude
// of its code, and the rule without its last line (the binade from 4 to 6) must not.
TEST(FastPaths, E2M1MinimumOfThreeLinesMatchesForAllFp32) {
  const Sweep s = sweep_all_fp32([](float x) {
    const double a = std::min(std::fabs(double(x)), 6.0);
    double line[3];
    for (int k = 0; k < 3; ++k)
      line[k] = std::nearbyint(std::ldexp(a, mxq::num::kE2M1Lines[k].slope_log2)) + mxq::num::kE2M1Lines[k].offset;
    const unsigned want = mxq::num::encode_e2m1_satfinite(x) & 7u;
    return unsigned(unsigned(std::min({line[0], line[1], line[2]})) != want) |
           (unsigned(unsigned(std::min(line[0], line[1])) != want) << 1);
  });
  EXPECT_EQ(s.count[0], 0u) << "first mismatch at fp32 bits 0x" << std::hex << s.first;
  EXPECT_GT(s.count[1], 0u) << "two lines alone should have mismatched above 4";
}

TEST(FastPaths, QuantizedNaNCodes) {
  EXPECT_EQ(mxq::num::quantize_element(mxq::num::quiet_nan(), 1.0f, ElemFormat::e4m3fn), 0x7f);
  EXPECT_EQ(mxq::num::quantize_element(-mxq::num::quiet_nan(), 1.0f, ElemFormat::e5m2), 0x7f);
  EXPECT_EQ(mxq::num::quantize_element(1.0f, mxq::num::quiet_nan(), ElemFormat::e2m1), 0x0);
}

}  // namespace
