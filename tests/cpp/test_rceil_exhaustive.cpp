// FORMATS.md section 2.3, exhaustively: for every non-negative finite fp32 block maximum
// (2^31 - 2^23 patterns) and every MX element format,
//   - the rceil scale code computed from v = amax / fmax equals the one computed from
//     v = amax * (1 / fmax), as the contract claims, and both equal num::mx_scale_code();
//   - num::mx_scale_code(..., floor) is floor(log2 amax) - emax_elem + 127 clamped to [0, 254].
// The codes are checked against their definitions written here with exact powers of two (a code
// is right iff its scale brackets v), not against the bit manipulations of recipes.h.
#include <array>
#include <cstdio>
#include <limits>
#include <atomic>
#include <mutex>
#include <thread>

#include "mxq/numerics/recipes.h"
#include "test_support.hpp"

namespace mxq::test {
namespace {

struct MxFormat {
  num::ElemFormat elem;
  float fmax;
  int emax;  // exponent of the largest power of two the format holds (OCP MX emax_elem)
  const char* name;
};
constexpr std::array<MxFormat, 3> kMxFormats = {{
    {num::ElemFormat::e4m3fn, 448.0f, 8, "float8_e4m3fn"},
    {num::ElemFormat::e5m2, 57344.0f, 15, "float8_e5m2"},
    {num::ElemFormat::e2m1, 6.0f, 2, "float4_e2m1fn"},
}};

// Powers of two 2^e for e in [-kPow2Bias, kPow2Bias), exact in double, filled once from
// std::ldexp before the sweep (which would spend most of its time in ldexp otherwise).
constexpr int kPow2Bias = 200;
double g_pow2[2 * kPow2Bias];
void fill_pow2_table() {
  for (int e = -kPow2Bias; e < kPow2Bias; ++e) g_pow2[e + kPow2Bias] = pow2d(e);
}
inline double pow2_exact(int e) { return g_pow2[e + kPow2Bias]; }

// UE8M0 scale of code c: 2^(c - 127).
inline double scale_of(int c) { return pow2_exact(c - 127); }

// rceil: the code is the smallest c in [0, 254] whose scale is >= v (254 if none is), i.e.
// 2^ceil(log2 v) as far as UE8M0 reaches. FORMATS.md states the same thing on the bits of v
// (biased exponent, +1 if the mantissa is non-zero; subnormal v: 1 if v > 2^-127, else 0; v = 0:
// 0; cap 254).
inline bool is_rceil_code(int c, float v) {
  const double dv = v;
  return c >= 0 && c <= 254 && (c == 254 || dv <= scale_of(c)) && (c == 0 || dv > scale_of(c - 1));
}

// floor: code = floor(log2 amax) - emax + 127, clamped to [0, 254]; amax 0 gives 0.
inline bool is_floor_code(int c, float amax, int emax) {
  const double a = amax;
  const int e = c - 127 + emax;  // the floor(log2 amax) that code c stands for
  return c >= 0 && c <= 254 && (c == 0 || a >= pow2_exact(e)) && (c == 254 || a < pow2_exact(e + 1));
}

// Self-checks of the two definitions on hand-computed codes, so that the sweep cannot pass
// because a definition accepts everything.
TEST(MxScaleDefinitions, AcceptExactlyTheHandComputedCodes) {
  fill_pow2_table();
  // (v, rceil code): 1 -> 127; just above 1 -> 128; 2^-127 -> 0; just above -> 1; 0 -> 0.
  const std::vector<std::pair<float, int>> rceil = {
      {1.0f, 127}, {std::nextafter(1.0f, 2.0f), 128}, {0.75f, 127}, {0.5f, 126}, {float_of(0x400000u), 0},
      {float_of(0x400001u), 1}, {0.0f, 0}, {float_of(1u), 0}, {std::ldexp(1.0f, 127), 254},
      {std::numeric_limits<float>::max(), 254}};
  for (const auto& [v, code] : rceil)
    for (int c = 0; c <= 255; ++c) EXPECT_EQ(is_rceil_code(c, v), c == code) << "v=" << v << " c=" << c;
  // (amax, E4M3 floor code): 448 -> 127 (floor(log2 448) = 8); 512 -> 128; 255.9 -> 126;
  // 2^-119 -> 0 (unclamped 0); 2^-120 -> clamped 0; FLT_MAX -> 246.
  const std::vector<std::pair<float, int>> floor_e4m3 = {
      {448.0f, 127}, {512.0f, 128}, {255.9f, 126}, {std::ldexp(1.0f, -119), 0}, {std::ldexp(1.0f, -118), 1},
      {std::ldexp(1.0f, -120), 0}, {std::numeric_limits<float>::max(), 246}, {0.0f, 0}};
  for (const auto& [a, code] : floor_e4m3)
    for (int c = 0; c <= 255; ++c) EXPECT_EQ(is_floor_code(c, a, 8), c == code) << "amax=" << a << " c=" << c;
}

struct SweepResult {
  std::atomic<uint64_t> checked{0}, rceil_div_bad{0}, rceil_mul_bad{0}, floor_bad{0}, quotients_differ{0};
  std::mutex mu;
  std::string first_failure;
  void note(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_failure.empty()) first_failure = s;
  }
};

// One format over the amax patterns [lo, hi). A template so that the format is a constant in
// the inlined library code.
template <int F>
void sweep_format(uint32_t lo, uint32_t hi, SweepResult& res) {
  constexpr MxFormat f = kMxFormats[F];
  const float inv_fmax = 1.0f / f.fmax;
  uint64_t div_bad = 0, mul_bad = 0, floor_bad = 0, differ = 0;
  for (uint32_t b = lo; b < hi; ++b) {
    const float amax = float_of(b);
    const float v_div = amax / f.fmax;
    const float v_mul = amax * inv_fmax;
    const int code = num::mx_scale_code(amax, f.elem, num::MxRounding::rceil);
    const int code_floor = num::mx_scale_code(amax, f.elem, num::MxRounding::floor);
    const bool div_ok = is_rceil_code(code, v_div), mul_ok = is_rceil_code(code, v_mul);
    const bool floor_ok = is_floor_code(code_floor, amax, f.emax);
    differ += bits_of(v_div) != bits_of(v_mul);
    if (div_ok && mul_ok && floor_ok) [[likely]]
      continue;
    div_bad += !div_ok;
    mul_bad += !mul_ok;
    floor_bad += !floor_ok;
    char msg[200];
    std::snprintf(msg, sizeof msg, "%s amax=0x%08x: rceil code %d (v_div=%a ok=%d, v_mul=%a ok=%d), floor code %d ok=%d",
                  f.name, b, code, double(v_div), div_ok, double(v_mul), mul_ok, code_floor, floor_ok);
    res.note(msg);
  }
  res.checked += hi - lo;
  res.rceil_div_bad += div_bad;
  res.rceil_mul_bad += mul_bad;
  res.floor_bad += floor_bad;
  res.quotients_differ += differ;
}

void sweep_range(uint32_t lo, uint32_t hi, SweepResult& res) {
  sweep_format<0>(lo, hi, res);
  sweep_format<1>(lo, hi, res);
  sweep_format<2>(lo, hi, res);
}

TEST(MxScaleExhaustive, EveryFiniteAmaxEveryFormat) {
  constexpr uint32_t kEnd = 0x7f800000u;  // +0 .. FLT_MAX: 2^31 - 2^23 patterns
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  fill_pow2_table();
  // Threads take slices from a shared counter: subnormal arithmetic is slower, so static halves
  // would leave one thread idle.
  constexpr uint32_t kSlice = 1u << 22;
  std::atomic<uint32_t> next{0};
  SweepResult res;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (uint32_t lo; (lo = next.fetch_add(kSlice)) < kEnd;) sweep_range(lo, std::min(kEnd, lo + kSlice), res);
    });
  for (auto& th : pool) th.join();

  const uint64_t expected = uint64_t(kEnd) * kMxFormats.size();
  std::printf("[ sweep    ] %llu (amax, format) pairs on %u threads; amax/fmax and amax*(1/fmax) differ in %llu\n",
              (unsigned long long)res.checked.load(), threads, (unsigned long long)res.quotients_differ.load());
  EXPECT_EQ(res.checked.load(), expected);
  EXPECT_EQ(res.rceil_div_bad.load(), 0u) << res.first_failure;
  EXPECT_EQ(res.rceil_mul_bad.load(), 0u) << res.first_failure;
  EXPECT_EQ(res.floor_bad.load(), 0u) << res.first_failure;
  // The quotients do differ for some amax (else the claim would be trivial): the sweep proves the
  // code is insensitive to it.
  EXPECT_GT(res.quotients_differ.load(), 0u);
}

TEST(MxScaleExhaustive, NonFiniteAmax) {
  // NaN (any payload, either sign) -> 0xFF; +Inf is treated as FLT_MAX.
  for (const MxFormat& f : kMxFormats)
    for (auto rounding : {num::MxRounding::rceil, num::MxRounding::floor}) {
      for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0x7fffffffu})
        EXPECT_EQ(num::mx_scale_code(float_of(nan), f.elem, rounding), 0xFF) << f.name;
      EXPECT_EQ(num::mx_scale_code(INFINITY, f.elem, rounding),
                num::mx_scale_code(std::numeric_limits<float>::max(), f.elem, rounding))
          << f.name;
    }
}

}  // namespace
}  // namespace mxq::test
