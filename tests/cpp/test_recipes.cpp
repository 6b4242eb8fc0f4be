// The recipes of FORMATS.md section 2, value by value: the scale rules of numerics/recipes.h
// and what quantize() writes for hand-computed blocks (ties, saturation, zero / NaN / Inf blocks,
// partial blocks), plus the recipe text round trip. Expected values are worked out by hand in
// the comments or recomputed here from the formula with fp32 operations and the definition-based
// encoder of test_support.hpp (RefFormat), never with the library's own helpers.
#include <cfloat>
#include <limits>

#include "mxq/numerics/recipes.h"
#include "test_support.hpp"

namespace mxq::test {
namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// fp32 a / b and a * b, correctly rounded, computed in double (exact for * and rounded once for
// /: double has more than 2 * 24 + 2 bits, so rounding to double and then to float is the same
// as rounding to float once).
float div32(float a, float b) { return float(double(a) / double(b)); }
float mul32(float a, float b) { return float(double(a) * double(b)); }

bool is_pow2(float s) { return s > 0 && (bits_of(s) & 0x7fffffu) == 0 && (bits_of(s) >> 23) != 0; }

// One row of `cols` values quantized with `recipe`; returns the outputs.
Outputs quantize_row(const std::string& recipe, const std::vector<float>& row, const QuantizeOptions& opt = {}) {
  return quantize_f32(recipe, row, 1, int64_t(row.size()), 0xCD, opt);
}

// ================================ 2.1 fp8_tensor ================================================
TEST(Fp8Tensor, ScaleSpecialAmax) {
  // amax 0 or non-finite: scale 1.
  for (float amax : {0.0f, kNaN, kInf, -kNaN}) EXPECT_EQ(num::fp8_tensor_scale(amax, 448.0f, 0.0f, false), 1.0f);
  // a finite amax so small that fmax / amax overflows: FLT_MAX (2^127 with pow2).
  EXPECT_EQ(num::fp8_tensor_scale(float_of(1u), 448.0f, 0.0f, false), kFltMax);
  EXPECT_EQ(num::fp8_tensor_scale(float_of(1u), 448.0f, 0.0f, true), std::ldexp(1.0f, 127));
}

TEST(Fp8Tensor, ScaleValues) {
  EXPECT_EQ(num::fp8_tensor_scale(2.0f, 448.0f, 0.0f, false), 224.0f);
  EXPECT_EQ(num::fp8_tensor_scale(3.0f, 448.0f, 0.0f, false), div32(448.0f, 3.0f));
  EXPECT_EQ(num::fp8_tensor_scale(3.0f, 57344.0f, 0.0f, false), div32(57344.0f, 3.0f));
  // eps: max(amax, eps)
  EXPECT_EQ(num::fp8_tensor_scale(1e-6f, 448.0f, 1e-3f, false), div32(448.0f, 1e-3f));
  // pow2 clears the mantissa (rounds down): 448/3 = 149.33 -> 128; 448/1 -> 256; 448/448 -> 1.
  EXPECT_EQ(num::fp8_tensor_scale(3.0f, 448.0f, 0.0f, true), 128.0f);
  EXPECT_EQ(num::fp8_tensor_scale(1.0f, 448.0f, 0.0f, true), 256.0f);
  EXPECT_EQ(num::fp8_tensor_scale(448.0f, 448.0f, 0.0f, true), 1.0f);
  EXPECT_EQ(num::fp8_tensor_scale(449.0f, 448.0f, 0.0f, true), 0.5f);
}

TEST(Fp8Tensor, QuantizeWritesScaleInvAmaxAndElements) {
  // amax 2 -> scale 224, scale_inv 1/224. Elements x * 224: 2 -> 448 (0x7E); -1 -> -224 (1.75 * 2^7:
  // 0xF6); 2^-7 -> 1.75 (0x3E); 1/3 -> 74.67, between 72 and 80 -> 72 (1.125 * 2^6: 0x69);
  // 2^-16 -> 0.0034, E4M3 subnormals are k * 2^-9 -> 2^-9 * 1.75 -> k = 2 (0x02).
  const std::vector<float> row = {2.0f, -1.0f, 0.0078125f, 1.0f / 3.0f, std::ldexp(1.0f, -16)};
  const Outputs o = quantize_row("fp8_tensor", row);
  EXPECT_EQ(o.data, (std::vector<uint8_t>{0x7E, 0xF6, 0x3E, 0x69, 0x02}));
  EXPECT_EQ(load_f32(o.global_scale.data()), div32(1.0f, 224.0f));
  EXPECT_EQ(load_f32(o.amax.data()), 2.0f);
}

TEST(Fp8Tensor, CallerGivenAmaxAndScale) {
  // A stale (delayed-scaling) amax of 1: scale 448, larger elements saturate.
  const std::vector<float> row = {2.0f, -0.5f, 1.0f};
  const float amax_in = 1.0f;
  QuantizeOptions opt;
  opt.amax_in = &amax_in;
  const Outputs o = quantize_row("fp8_tensor", row, opt);
  EXPECT_EQ(o.data, (std::vector<uint8_t>{0x7E, 0xF6, 0x7E}));  // 896 -> 448; -224 (-1.75 * 2^7); 448
  EXPECT_EQ(load_f32(o.global_scale.data()), div32(1.0f, 448.0f));
  EXPECT_EQ(load_f32(o.amax.data()), 1.0f);
  // A caller-given encode scale is used as is.
  const float scale_in = 4.0f;
  QuantizeOptions opt2;
  opt2.scale_in = &scale_in;
  const Outputs p = quantize_row("fp8_tensor", row, opt2);
  EXPECT_EQ(p.data, (std::vector<uint8_t>{0x50, 0xC0, 0x48}));  // 8 (2^3: field 10), -2 (field 8), 4 (field 9)
  EXPECT_EQ(load_f32(p.global_scale.data()), 0.25f);
}

TEST(Fp8Tensor, NonFiniteTensorUsesScaleOne) {
  // A NaN or Inf amax gives scale 1 (section 2.1); elements convert with satfinite, NaN to the
  // NaN code.
  const Outputs o = quantize_row("fp8_tensor", {kNaN, 1000.0f, -3.0f, kInf});
  EXPECT_EQ(load_f32(o.global_scale.data()), 1.0f);
  const uint8_t nan = RefFormat::make(num::ElemFormat::e4m3fn).nan_code;
  EXPECT_EQ(o.data, (std::vector<uint8_t>{nan, 0x7E, 0xC4, 0x7E}));  // -3 = -1.5 * 2: 0x80|0x44
}

// ================================ 2.2 fp8_block =================================================
TEST(Fp8Block, ScaleEpsAndZero) {
  EXPECT_EQ(num::fp8_block_scale(1e-6f, 448.0f, 1e-4f, false), div32(1e-4f, 448.0f));  // eps clamp
  EXPECT_EQ(num::fp8_block_scale(0.0f, 448.0f, 1e-4f, false), div32(1e-4f, 448.0f));
  EXPECT_EQ(num::fp8_block_scale(0.0f, 448.0f, 0.0f, false), 1.0f);  // eps = 0 and amax 0
  EXPECT_EQ(num::fp8_block_scale(0.0f, 448.0f, 0.0f, true), 1.0f);
  EXPECT_EQ(num::fp8_block_scale(3.0f, 448.0f, 1e-4f, false), div32(3.0f, 448.0f));
  // Rule beyond FORMATS.md (recipes.h): a quotient that underflows to 0 gives s = 1.
  EXPECT_EQ(num::fp8_block_scale(float_of(1u), 448.0f, 0.0f, false), 1.0f);
}

TEST(Fp8Block, ScaleNonFinite) {
  EXPECT_TRUE(std::isnan(num::fp8_block_scale(kNaN, 448.0f, 1e-4f, false)));
  EXPECT_TRUE(std::isnan(num::fp8_block_scale(kNaN, 448.0f, 1e-4f, true)));
  EXPECT_EQ(num::fp8_block_scale(kInf, 448.0f, 1e-4f, false), div32(kFltMax, 448.0f));  // Inf -> FLT_MAX
  EXPECT_EQ(num::fp8_block_scale(kInf, 448.0f, 1e-4f, true), std::ldexp(1.0f, 120));    // 2^119.2 -> 2^120
}

TEST(Fp8Block, Pow2ByHand) {
  EXPECT_EQ(num::fp8_block_scale(448.0f, 448.0f, 0.0f, true), 1.0f);                     // exact power stays
  EXPECT_EQ(num::fp8_block_scale(std::ldexp(448.0f, -10), 448.0f, 0.0f, true), std::ldexp(1.0f, -10));
  EXPECT_EQ(num::fp8_block_scale(449.0f, 448.0f, 0.0f, true), 2.0f);
  EXPECT_EQ(num::fp8_block_scale(447.0f, 448.0f, 0.0f, true), 1.0f);
  EXPECT_EQ(num::fp8_block_scale(224.0f, 448.0f, 0.0f, true), 0.5f);
  // one mantissa bit above a power of two rounds up
  EXPECT_EQ(num::fp8_block_scale(std::nextafter(448.0f, 1e9f), 448.0f, 0.0f, true), 2.0f);
  // fmax 6 (DeepSeek V4 FP4): 6 -> 1, 3 -> 0.5, 7 -> 2
  EXPECT_EQ(num::fp8_block_scale(6.0f, 6.0f, 0.0f, true), 1.0f);
  EXPECT_EQ(num::fp8_block_scale(3.0f, 6.0f, 0.0f, true), 0.5f);
  EXPECT_EQ(num::fp8_block_scale(7.0f, 6.0f, 0.0f, true), 2.0f);
  // Rules beyond FORMATS.md (recipes.h): subnormal s is clamped to UE8M0's range: s <= 2^-127
  // gives 2^-127, s in (2^-127, 2^-126) gives 2^-126.
  EXPECT_EQ(num::fp8_block_scale(std::ldexp(1.0f, -120), 448.0f, 0.0f, true), std::ldexp(1.0f, -127));
  EXPECT_EQ(num::fp8_block_scale(std::ldexp(1.0f, -118), 448.0f, 0.0f, true), std::ldexp(1.0f, -126));
}

TEST(Fp8Block, Pow2IsTheNextPowerOfTwoOnManyValues) {
  // s = 2^ceil(log2(a / fmax)) for the fp32 quotient: a power of two p with p/2 < s <= p.
  Rng rng(11);
  int exact = 0;
  for (int i = 0; i < 200000; ++i) {
    float amax = float_of(uint32_t(rng.range(0x1e800000, 0x7f000000)));  // s stays normal
    if (i % 10 == 0) amax = std::ldexp(448.0f, int(rng.range(-100, 100)));  // exact powers of two as s
    const float s = div32(std::max(amax, 1e-4f), 448.0f);
    const float p = num::fp8_block_scale(amax, 448.0f, 1e-4f, true);
    ASSERT_TRUE(is_pow2(p)) << amax;
    ASSERT_TRUE(double(p) / 2 < double(s) && double(s) <= double(p)) << "amax=" << amax << " s=" << s << " p=" << p;
    exact += p == s;
  }
  EXPECT_GT(exact, 1000);  // the exact-power case really was exercised
}

// q = satfinite(x * (1 / s)): the expected element, from the formula.
uint8_t fp8_block_element(float x, float amax, float eps, const RefFormat& f) {
  const float s = div32(std::max(amax, eps), float(f.max_value()));
  return f.encode(mul32(x, div32(1.0f, s)));
}

TEST(Fp8Block, ElementsFollowDeepGemmOrderOfOperations) {
  // Pairs (x, amax) where x * (1 / s) and the alternatives x / s and x * (fmax / amax) give
  // different E4M3 codes; quantize must write the x * (1 / s) code. They are found by aiming x at
  // an E4M3 rounding midpoint times s and stepping a few ulps around it.
  const RefFormat e4m3 = RefFormat::make(num::ElemFormat::e4m3fn);
  Rng rng(5);
  int found = 0;
  for (int i = 0; i < 100000 && found < 20; ++i) {
    const float amax = float(1.0 + rng.uniform() * 1000.0);
    const float s = div32(amax, 448.0f);
    const int code = int(rng.range(8, 0x7d));
    const double mid = (e4m3.values[size_t(code)] + e4m3.values[size_t(code + 1)]) / 2;
    float x = float(mid * double(s));
    for (int k = 0; k < 4; ++k) x = std::nextafter(x, 0.0f);
    for (int k = -4; k <= 4; ++k, x = std::nextafter(x, kFltMax)) {
      if (x > amax) break;
      const uint8_t spec = fp8_block_element(x, amax, 1e-4f, e4m3);
      if (spec == e4m3.encode(div32(x, s)) && spec == e4m3.encode(mul32(x, div32(448.0f, amax)))) continue;
      ++found;
      std::vector<float> row(32, 0.0f);
      row[0] = amax;
      row[1] = x;
      const Outputs o = quantize_row("fp8_block_1x32", row);
      EXPECT_EQ(o.data[1], spec) << "x=" << x << " amax=" << amax;
      EXPECT_EQ(load_f32(o.scales.data()), s);
    }
  }
  EXPECT_GT(found, 0) << "no distinguishing case found; the test would prove nothing";
}

TEST(Fp8Block, NanAndInfBlocks) {
  // Blocks of 32: block 0 holds a NaN (scale NaN, every element the NaN code), block 1 an
  // Inf (s = FLT_MAX / 448; Inf -> 448, finite elements * 448/FLT_MAX underflow to +-0), block 2
  // is ordinary.
  std::vector<float> row(96, 1.0f);
  row[5] = kNaN;
  row[6] = -2.0f;
  row[40] = kInf;
  row[41] = -kInf;
  row[42] = -1.0f;
  row[64] = 448.0f;  // block 2: amax 448, s = 1
  row[65] = 3.0f;
  const Outputs o = quantize_row("fp8_block_1x32", row);
  EXPECT_TRUE(std::isnan(load_f32(&o.scales[0])));
  const uint8_t nan = RefFormat::make(num::ElemFormat::e4m3fn).nan_code;
  for (int c = 0; c < 32; ++c) EXPECT_EQ(o.data[size_t(c)], nan) << c;
  EXPECT_EQ(load_f32(&o.scales[4]), div32(kFltMax, 448.0f));
  EXPECT_EQ(o.data[40], 0x7E);
  EXPECT_EQ(o.data[41], 0xFE);
  EXPECT_EQ(o.data[42], 0x80);
  EXPECT_EQ(o.data[43], 0x00);
  EXPECT_EQ(load_f32(&o.scales[8]), 1.0f);
  EXPECT_EQ(o.data[64], 0x7E);
  EXPECT_EQ(o.data[65], 0x44);
  EXPECT_EQ(o.data[66], 0x38);
}

// docs/NUMERICS.md: with eps = 0 a block of amax 2^-140 has s = 2^-140 / 448 rounded to a
// subnormal (2^-149: the quotient is nearer it than 0); the multiplier min(1 / s, FLT_MAX) sends
// the block's maximum to 0 too, and no element becomes NaN (0 * Inf).
TEST(Fp8Block, SubnormalScaleGivesZerosNotNans) {
  std::vector<float> row(32, 0.0f);
  row[0] = std::ldexp(1.0f, -140);
  row[2] = -0.0f;
  const Outputs o = quantize_row("fp8_block_1x32:eps=0", row);
  EXPECT_EQ(bits_of(load_f32(&o.scales[0])), 1u);  // 2^-149
  EXPECT_EQ(o.data[0], 0x00);
  EXPECT_EQ(o.data[1], 0x00);
  EXPECT_EQ(o.data[2], 0x80);
}

TEST(Fp8Block, Ue8m0ScalesAndFp4Variant) {
  // pow2 scales stored as UE8M0: amax 448 -> s = 1 -> code 127; amax 449 -> 2 -> 128.
  std::vector<float> row(256, 0.0f);
  row[0] = 448.0f;
  row[128] = 449.0f;
  row[129] = 3.0f;  // * 1/2 = 1.5 -> 0x3C
  const Outputs o = quantize_row("fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", row);
  EXPECT_EQ(o.scales, (std::vector<uint8_t>{127, 128}));
  EXPECT_EQ(o.data[129], 0x3C);
  // fp4_block_1x32: fmax 6, pow2, UE8M0. amax 12 -> s = 2 -> code 128; 5 * 1/2 = 2.5 -> tie -> 2.
  std::vector<float> r4(32, 0.0f);
  r4[0] = 12.0f;
  r4[1] = 5.0f;
  r4[2] = -7.0f;  // -3.5 -> tie between 3 and 4 -> 4 (code 6)
  const Outputs p = quantize_row("fp4_block_1x32", r4);
  EXPECT_EQ(p.scales, (std::vector<uint8_t>{128}));
  EXPECT_EQ(p.data[0], 0x47);  // element 0: 6 (code 7, low nibble); element 1: 2 (code 4)
  EXPECT_EQ(p.data[1], 0x0E);  // element 2: -4 (code 0xE); element 3: 0
}

TEST(Fp8Block, TwoDimensionalBlocksUseOnlyTheirElements) {
  // 128x128 blocks over a (130, 200) input with a row stride of 256 whose unused columns hold
  // huge values: the partial blocks' maxima must ignore them (and the rows beyond 130).
  const int64_t rows = 130, cols = 200, ld = 256;
  std::vector<float> x(size_t(rows * ld), 1e30f);
  Rng rng(3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[size_t(r * ld + c)] = float(rng.normal());
  x[size_t(129 * ld + 199)] = 100.0f;  // the max of block (1, 1), which has 2 x 72 elements
  x[size_t(0 * ld + 130)] = -50.0f;    // the max of block (0, 1)
  Outputs o("fp8_block_128x128", rows, cols);
  o.poison(0xCD);
  quantize(f32_matrix(x, rows, cols, ld), o.view());
  float block_max[2][2] = {{0, 0}, {0, 0}};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      block_max[r / 128][c / 128] = std::max(block_max[r / 128][c / 128], std::fabs(x[size_t(r * ld + c)]));
  EXPECT_EQ(block_max[1][1], 100.0f);
  EXPECT_EQ(block_max[0][1], 50.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(load_f32(&o.scales[size_t((i * 2 + j) * 4)]), div32(std::max(block_max[i][j], 1e-4f), 448.0f))
          << i << "," << j;
}

// ================================ 2.3 MX ========================================================
uint8_t mx_code(float amax, num::ElemFormat f, num::MxRounding r = num::MxRounding::rceil) {
  return num::mx_scale_code(amax, f, r);
}

TEST(MxScale, RceilByHand) {
  using E = num::ElemFormat;
  EXPECT_EQ(mx_code(448.0f, E::e4m3fn), 127);  // v = 1
  EXPECT_EQ(mx_code(449.0f, E::e4m3fn), 128);  // v just above 1
  EXPECT_EQ(mx_code(224.0f, E::e4m3fn), 126);
  EXPECT_EQ(mx_code(1.0f, E::e4m3fn), 119);  // v = 2^-8.8 -> 2^-8
  EXPECT_EQ(mx_code(57344.0f, E::e5m2), 127);
  EXPECT_EQ(mx_code(6.0f, E::e2m1), 127);
  EXPECT_EQ(mx_code(6.5f, E::e2m1), 128);
  EXPECT_EQ(mx_code(0.0f, E::e4m3fn), 0);
  EXPECT_EQ(mx_code(kNaN, E::e4m3fn), 0xFF);
  // subnormal v: code 1 if v > 2^-127 else 0
  EXPECT_EQ(mx_code(std::ldexp(448.0f, -127), E::e4m3fn), 0);  // v = 2^-127 exactly
  // the first amax above it whose quotient rounds above 2^-127 (one ulp more still rounds to it)
  float above = std::ldexp(448.0f, -127);
  while (div32(above, 448.0f) <= std::ldexp(1.0f, -127)) above = std::nextafter(above, 1.0f);
  EXPECT_EQ(mx_code(above, E::e4m3fn), 1);
  EXPECT_EQ(mx_code(std::nextafter(above, 0.0f), E::e4m3fn), 0);
  EXPECT_EQ(mx_code(std::ldexp(1.0f, -118), E::e4m3fn), 1);  // v = 2^-126.8
  EXPECT_EQ(mx_code(float_of(1u), E::e4m3fn), 0);           // v underflows to 0
  // Inf -> FLT_MAX: 2^128 / 448 = 2^119.2 -> 247; / 57344 = 2^112.2 -> 240; / 6 = 2^125.4 -> 253.
  // The cap of 254 is out of reach for these three formats.
  EXPECT_EQ(mx_code(kInf, E::e4m3fn), 247);
  EXPECT_EQ(mx_code(kInf, E::e5m2), 240);
  EXPECT_EQ(mx_code(kInf, E::e2m1), 253);
}

TEST(MxScale, FloorByHand) {
  using E = num::ElemFormat;
  const auto floor = num::MxRounding::floor;
  // code = floor(log2 amax) - emax + 127, emax 8 / 15 / 2
  EXPECT_EQ(mx_code(448.0f, E::e4m3fn, floor), 127);
  EXPECT_EQ(mx_code(511.0f, E::e4m3fn, floor), 127);
  EXPECT_EQ(mx_code(512.0f, E::e4m3fn, floor), 128);
  EXPECT_EQ(mx_code(1.0f, E::e4m3fn, floor), 119);
  EXPECT_EQ(mx_code(57344.0f, E::e5m2, floor), 127);  // floor(log2 57344) = 15
  EXPECT_EQ(mx_code(6.0f, E::e2m1, floor), 127);
  EXPECT_EQ(mx_code(7.99f, E::e2m1, floor), 127);
  EXPECT_EQ(mx_code(0.0f, E::e4m3fn, floor), 0);
  EXPECT_EQ(mx_code(kNaN, E::e2m1, floor), 0xFF);
  // subnormal amax: floor(log2 2^-149) - 8 + 127 = -30 -> clamped to 0; 2^-118 -> 1; 2^-119 -> 0
  EXPECT_EQ(mx_code(float_of(1u), E::e4m3fn, floor), 0);
  EXPECT_EQ(mx_code(float_of(0x7fffffu), E::e2m1, floor), 0);  // 2^-126.0000001 -> -126 - 2 + 127 < 0
  EXPECT_EQ(mx_code(std::ldexp(1.0f, -118), E::e4m3fn, floor), 1);
  EXPECT_EQ(mx_code(std::ldexp(1.0f, -119), E::e4m3fn, floor), 0);
  EXPECT_EQ(mx_code(kInf, E::e4m3fn, floor), 246);  // FLT_MAX: 127 - 8 + 127
}

TEST(Mx, E4m3ElementTiesAndSubnormals) {
  // amax 448 -> code 127, multiplier 1: elements are converted as they are.
  std::vector<float> row(32, 0.0f);
  const std::vector<std::pair<float, uint8_t>> cases = {
      {448.0f, 0x7E},
      {1.0625f, 0x38},                            // tie between 1 and 1.125 -> 1 (even)
      {1.1875f, 0x3A},                            // tie between 1.125 and 1.25 -> 1.25 (even)
      {std::nextafter(1.0625f, 2.0f), 0x39},      // just above the tie
      {-1.0625f, 0xB8},
      {std::ldexp(1.0f, -10), 0x00},              // half the smallest subnormal 2^-9: tie -> 0
      {std::ldexp(3.0f, -10), 0x02},              // 1.5 * 2^-9: tie between k=1 and k=2 -> 2
      {std::ldexp(1.0f, -6), 0x08},               // min normal
      {std::ldexp(15.0f, -10), 0x08},             // 7.5 * 2^-9: tie between k=7 and 2^-6 -> even (0x08)
      {-0.0f, 0x80},
      {240.0f, 0x77},
      {232.0f, 0x76},                             // tie between 224 and 240 -> 224 (0x76 even)
  };
  for (size_t i = 0; i < cases.size(); ++i) row[i] = cases[i].first;
  const Outputs o = quantize_row("mxfp8", row);
  EXPECT_EQ(o.scales[0], 127);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(o.data[i], cases[i].second) << "x=" << cases[i].first;
}

TEST(Mx, RceilNeverSaturatesFloorDoes) {
  // amax 511: rceil code 128 (scale 2), 511 / 2 = 255.5 -> 256 (0x78); floor code 127 (scale 1),
  // 511 saturates to 448 (0x7E), the loss that makes rceil the default.
  std::vector<float> row(32, 0.0f);
  row[0] = 511.0f;
  row[1] = 3.0f;
  const Outputs rc = quantize_row("mxfp8", row);
  const Outputs fl = quantize_row("mxfp8:rounding=floor", row);
  EXPECT_EQ(rc.scales[0], 128);
  EXPECT_EQ(rc.data[0], 0x78);
  EXPECT_EQ(rc.data[1], 0x3C);  // 3 / 2 = 1.5
  EXPECT_EQ(fl.scales[0], 127);
  EXPECT_EQ(fl.data[0], 0x7E);
  EXPECT_EQ(fl.data[1], 0x44);  // 3 = 1.5 * 2
}

TEST(Mx, Fp4ElementTiesAndPacking) {
  // mxfp4, amax 6 -> code 127, multiplier 1. E2M1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0-7).
  const std::vector<std::pair<float, uint8_t>> cases = {
      {6.0f, 7}, {0.25f, 0},  {0.75f, 2},  {1.25f, 2},   {1.75f, 4},
      {2.5f, 4}, {3.5f, 6},   {5.0f, 6},   {-0.75f, 0xA}, {-5.5f, 0xF},
      {std::nextafter(0.25f, 1.0f), 1}, {0.0f, 0}, {-0.0f, 0x8}, {1.5f, 3}, {-6.0f, 0xF}, {2.9f, 5},
  };
  std::vector<float> row(32, 0.0f);
  for (size_t i = 0; i < cases.size(); ++i) row[i] = cases[i].first;
  const Outputs o = quantize_row("mxfp4", row);
  EXPECT_EQ(o.scales[0], 127);
  ASSERT_EQ(o.data.size(), 16u);
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(code_at(o.data, int64_t(i), true), cases[i].second) << cases[i].first;
  EXPECT_EQ(o.data[0], 0x07);  // element 0 (6 -> 7) in the low nibble, element 1 (0.25 -> 0) high
  EXPECT_EQ(o.data[1], 0x22);
}

TEST(Mx, Fp4FloorSaturates) {
  // amax 7.5: floor code 127 -> 7.5 saturates to 6; rceil code 128 -> 3.75 -> 4 (code 6).
  std::vector<float> row(32, 0.0f);
  row[0] = 7.5f;
  EXPECT_EQ(code_at(quantize_row("mxfp4:rounding=floor", row).data, 0, true), 7);
  const Outputs rc = quantize_row("mxfp4", row);
  EXPECT_EQ(rc.scales[0], 128);
  EXPECT_EQ(code_at(rc.data, 0, true), 6);
}

TEST(Mx, ZeroNanInfAndPartialBlocks) {
  // 72 columns: blocks [0,32) zero, [32,64) with a NaN, [64,72) partial with an Inf.
  // The row stride is 96 and columns 72..95 hold 1e30, which the partial block must not see.
  const int64_t cols = 72, ld = 96;
  std::vector<float> x(size_t(ld), 1e30f);
  for (int64_t c = 0; c < cols; ++c) x[size_t(c)] = c < 32 ? 0.0f : 1.0f;
  x[40] = kNaN;
  x[64] = -kInf;
  x[65] = 2.0f;
  for (const char* recipe : {"mxfp8", "mxfp8_e5m2", "mxfp4"}) {
    SCOPED_TRACE(recipe);
    Outputs o(recipe, 1, cols);
    o.poison(0xCD);
    quantize(f32_matrix(x, 1, cols, ld), o.view());
    const Recipe rc = Recipe::parse(recipe);
    const bool fp4 = rc.elem == num::ElemFormat::e2m1;
    const RefFormat f = RefFormat::make(rc.elem);
    ASSERT_EQ(o.scales.size(), 3u);
    EXPECT_EQ(o.scales[0], 0);     // zero block: code 0, elements 0
    EXPECT_EQ(o.scales[1], 0xFF);  // NaN block
    // Inf block: amax FLT_MAX; the Inf saturates, 2 * 2^(127 - code) underflows to 0.
    const int inf_code = rc.elem == num::ElemFormat::e4m3fn ? 247 : rc.elem == num::ElemFormat::e5m2 ? 240 : 253;
    EXPECT_EQ(o.scales[2], inf_code);
    for (int64_t c = 0; c < 32; ++c) EXPECT_EQ(code_at(o.data, c, fp4), 0) << c;
    for (int64_t c = 32; c < 64; ++c) EXPECT_EQ(code_at(o.data, c, fp4), f.nan_code) << c;
    EXPECT_EQ(code_at(o.data, 64, fp4), f.max_code | (1 << f.sign_shift));
    EXPECT_EQ(code_at(o.data, 65, fp4), 0);
  }
}

TEST(Mx, PartialBlockAmaxOverExistingElementsOnly) {
  // cols = 40 with row stride 64; columns 40..63 lie outside the tensor and hold 448.
  // Block 0: all 1 -> 1/448 = 2^-8.8 -> code 119. Block 1 (8 elements): max 3 -> 3/448 = 2^-7.2
  // -> code 120, multiplier 2^7: 3 -> 384 = 1.5 * 2^8 (field 15, m 4: 0x7C), 0.5 -> 64 (field 13: 0x68).
  // Had the padding been read, block 1 would have code 127.
  const int64_t cols = 40, ld = 64;
  std::vector<float> x(size_t(ld), 448.0f);
  for (int64_t c = 0; c < 32; ++c) x[size_t(c)] = 1.0f;
  for (int64_t c = 32; c < 40; ++c) x[size_t(c)] = 0.5f;
  x[32] = 3.0f;
  x[33] = -3.0f;
  Outputs o("mxfp8", 1, cols);
  o.poison(0xCD);
  quantize(f32_matrix(x, 1, cols, ld), o.view());
  EXPECT_EQ(o.scales, (std::vector<uint8_t>{119, 120}));
  EXPECT_EQ(o.data[32], 0x7C);
  EXPECT_EQ(o.data[33], 0xFC);
  EXPECT_EQ(o.data[34], 0x68);
}

// ================================ 2.4 NVFP4 =====================================================
TEST(Nvfp4, EncodeScale) {
  EXPECT_EQ(num::nvfp4_encode_scale(2688.0f), 1.0f);
  EXPECT_EQ(num::nvfp4_encode_scale(3.0f), 896.0f);
  EXPECT_EQ(num::nvfp4_encode_scale(7.0f), div32(2688.0f, 7.0f));
  EXPECT_EQ(num::nvfp4_encode_scale(0.0f), 1.0f);
  EXPECT_EQ(num::nvfp4_encode_scale(float_of(1u)), kFltMax);  // quotient overflows: min(Inf, FLT_MAX)
  EXPECT_EQ(num::nvfp4_encode_scale(kNaN), kFltMax);          // fminf(NaN, FLT_MAX) = FLT_MAX
  EXPECT_EQ(num::nvfp4_encode_scale(kInf), 1.0f);             // 2688 / Inf = 0 -> 1
  EXPECT_EQ(num::nvfp4_decode_scale(896.0f), div32(1.0f, 896.0f));
}

TEST(Nvfp4, BlockScaleMultiplicationOrder) {
  // S_dec_b = e4m3(amax_b * (S_enc * (1/6 as fp32))). Search (amax, S_enc) where the other order
  // (amax_b * S_enc) * (1/6) rounds to a different E4M3 code; the library must follow the spec.
  const RefFormat e4m3 = RefFormat::make(num::ElemFormat::e4m3fn);
  const float sixth = 1.0f / 6.0f;
  Rng rng(17);
  int found = 0;
  for (int i = 0; i < 200000 && found < 10; ++i) {
    const float s_enc = div32(2688.0f, float(0.5 + rng.uniform() * 100));
    // aim at an E4M3 rounding midpoint, then step a few ulps around it
    const int code = int(rng.range(8, 0x7d));
    const double mid = (e4m3.values[size_t(code)] + e4m3.values[size_t(code + 1)]) / 2;
    float amax = float(mid / (double(s_enc) / 6.0));
    for (int k = -3; k <= 3; ++k, amax = std::nextafter(amax, kFltMax)) {
      const uint8_t spec = e4m3.encode(mul32(amax, mul32(s_enc, sixth)));
      const uint8_t other = e4m3.encode(mul32(mul32(amax, s_enc), sixth));
      if (spec == other) continue;
      ++found;
      EXPECT_EQ(num::nvfp4_block_scale_code(amax, s_enc), spec) << "amax=" << amax << " S_enc=" << s_enc;
    }
  }
  EXPECT_GT(found, 0) << "no distinguishing case found; the test would prove nothing";
}

TEST(Nvfp4, BlocksByHand) {
  // global amax 2688 -> S_enc 1, decode scale 1. Blocks of 16:
  //  block 0: amax 6 -> S_dec = e4m3(6 * (1/6)f) = e4m3(1.0000000298) = 1.0 (0x38); r = 1.
  //  block 1: amax 3 -> e4m3(0.5) = 0x30; r = 2: 3 -> 6 (code 7), 1 -> 2 (code 4).
  //  block 2: amax 1 -> e4m3(0.16666667) = 0.171875 (0x23); r = 1/0.171875 = 5.818..:
  //           1 -> 5.8 -> 6 (7); 0.5 -> 2.9 -> 3 (5); 0.25 -> 1.45 -> 1.5 (3).
  //  block 3: zero -> S_dec 0, r = min(1/0, FLT_MAX), elements 0.
  // The global amax is given (options.amax_in), as a static checkpoint scale would be.
  std::vector<float> row(64, 0.0f);
  row[0] = 6.0f;
  row[1] = -2.5f;  // tie between 2 and 3 -> 2 (code 4) -> 0xC
  row[16] = 3.0f;
  row[17] = 1.0f;
  row[32] = 1.0f;
  row[33] = 0.5f;
  row[34] = -0.25f;
  const float global_amax = 2688.0f;
  QuantizeOptions opt;
  opt.amax_in = &global_amax;
  const Outputs o = quantize_row("nvfp4", row, opt);
  EXPECT_EQ(load_f32(o.global_scale.data()), 1.0f);
  EXPECT_EQ(o.scales, (std::vector<uint8_t>{0x38, 0x30, 0x23, 0x00}));
  EXPECT_EQ(code_at(o.data, 0, true), 7);
  EXPECT_EQ(code_at(o.data, 1, true), 0xC);
  EXPECT_EQ(code_at(o.data, 16, true), 7);
  EXPECT_EQ(code_at(o.data, 17, true), 4);
  EXPECT_EQ(code_at(o.data, 32, true), 7);
  EXPECT_EQ(code_at(o.data, 33, true), 5);
  EXPECT_EQ(code_at(o.data, 34, true), 0xB);
  for (int64_t c = 48; c < 64; ++c) EXPECT_EQ(code_at(o.data, c, true), 0);
}

// The expected NVFP4 output of a row from the formula of section 2.4 (fp32 ops in double).
struct Nvfp4Expect {
  std::vector<uint8_t> scales, codes;
  float global;
};
Nvfp4Expect nvfp4_formula(const std::vector<float>& row, float global_amax) {
  const RefFormat e4m3 = RefFormat::make(num::ElemFormat::e4m3fn), e2m1 = RefFormat::make(num::ElemFormat::e2m1);
  float s_enc = std::min(div32(2688.0f, global_amax), kFltMax);
  if (global_amax == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  Nvfp4Expect e;
  e.global = div32(1.0f, s_enc);
  for (size_t b = 0; b < row.size(); b += 16) {
    float amax = 0.0f;
    for (size_t i = b; i < std::min(row.size(), b + 16); ++i) amax = std::max(amax, std::fabs(row[i]));
    const uint8_t sc = e4m3.encode(mul32(amax, mul32(s_enc, 1.0f / 6.0f)));
    const float d = mul32(e4m3.decode(sc), div32(1.0f, s_enc));
    const float r = d == 0.0f ? kFltMax : std::min(div32(1.0f, d), kFltMax);
    e.scales.push_back(sc);
    for (size_t i = b; i < std::min(row.size(), b + 16); ++i) e.codes.push_back(e2m1.encode(mul32(row[i], r)));
  }
  return e;
}

TEST(Nvfp4, RandomRowsMatchTheFormula) {
  Rng rng(23);
  for (int t = 0; t < 200; ++t) {
    std::vector<float> row(size_t(16 * rng.range(1, 9)));
    const float mag = std::ldexp(1.0f, int(rng.range(-30, 30)));
    for (auto& v : row) v = float(rng.normal()) * mag * (rng.uniform() < 0.1 ? 50.0f : 1.0f);
    float amax = 0.0f;
    for (float v : row) amax = std::max(amax, std::fabs(v));
    const Nvfp4Expect e = nvfp4_formula(row, amax);
    const Outputs o = quantize_row("nvfp4", row);
    ASSERT_EQ(o.scales, e.scales) << t;
    EXPECT_EQ(load_f32(o.global_scale.data()), e.global);
    EXPECT_EQ(load_f32(o.amax.data()), amax);
    for (size_t i = 0; i < row.size(); ++i) ASSERT_EQ(code_at(o.data, int64_t(i), true), e.codes[i]) << t << " " << i;
  }
}

TEST(Nvfp4, NanBlockAndItsEffectOnTheTensor) {
  // A NaN block: scale 0x7F, element codes 0. The tensor amax is NaN too, so S_enc = FLT_MAX
  // (fminf semantics, as TransformerEngine): every other non-zero block scale saturates at 448
  // and its non-zero elements at +-6. This follows FORMATS.md 2.4 to the letter; it means one NaN
  // wipes out the whole NVFP4 tensor, not just its block.
  std::vector<float> row(48, 1.0f);
  row[3] = kNaN;
  row[20] = -0.001f;
  for (int c = 32; c < 48; ++c) row[size_t(c)] = 0.0f;
  const Outputs o = quantize_row("nvfp4", row);
  EXPECT_EQ(o.scales, (std::vector<uint8_t>{0x7F, 0x7E, 0x00}));
  EXPECT_EQ(load_f32(o.global_scale.data()), div32(1.0f, kFltMax));
  for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(code_at(o.data, c, true), 0) << c;
  EXPECT_EQ(code_at(o.data, 16, true), 7);
  EXPECT_EQ(code_at(o.data, 20, true), 0xF);
  for (int64_t c = 32; c < 48; ++c) EXPECT_EQ(code_at(o.data, c, true), 0) << c;
}

TEST(Nvfp4, TwoDimensionalTilesShareTheirScale) {
  // nvfp4_2d: amax over 16x16 tiles, the tile's scale repeated for its 16 rows (one per row).
  const int64_t rows = 20, cols = 32;  // tiles: rows [0,16) and [16,20) (partial)
  auto x = random_matrix(rows, cols, 99, -2, 2);
  x[size_t(3 * cols + 5)] = 40.0f;    // tile (0, 0) max
  x[size_t(18 * cols + 20)] = -9.0f;  // tile (1, 1) max
  const Outputs o = quantize_f32("nvfp4_2d", x, rows, cols);
  float tile_max[2][2] = {{0, 0}, {0, 0}}, gmax = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float a = std::fabs(x[size_t(r * cols + c)]);
      tile_max[r / 16][c / 16] = std::max(tile_max[r / 16][c / 16], a);
      gmax = std::max(gmax, a);
    }
  const RefFormat e4m3 = RefFormat::make(num::ElemFormat::e4m3fn);
  const float s_enc = div32(2688.0f, gmax);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < 2; ++b)
      EXPECT_EQ(o.scales[size_t(r * 2 + b)], e4m3.encode(mul32(tile_max[r / 16][b], mul32(s_enc, 1.0f / 6.0f))))
          << r << "," << b;
}

TEST(QuantizedNanCode, IsANanOfTheFormat) {
  // quantize writes one fixed code for NaN elements (FORMATS.md: "NaN codes where the element
  // format has one"); it must be a NaN of the format: E4M3 S.1111.111, E5M2 S.11111.{01,10,11}.
  // E2M1 has none: code 0 (the block's NaN scale carries the NaN).
  EXPECT_EQ(num::quantized_nan_code(num::ElemFormat::e4m3fn) & 0x7f, 0x7f);
  const int e5m2 = num::quantized_nan_code(num::ElemFormat::e5m2) & 0x7f;
  EXPECT_TRUE(e5m2 >= 0x7d && e5m2 <= 0x7f) << e5m2;
  EXPECT_EQ(num::quantized_nan_code(num::ElemFormat::e2m1), 0);
}

// ================================ recipe text ===================================================
TEST(RecipeText, NameRoundTripsForPresetsAndOptions) {
  const char* texts[] = {
      "fp8_tensor", "fp8_tensor_e5m2", "fp8_tensor:pow2=1", "fp8_tensor:dir=both", "fp8_tensor:eps=1e-12",
      "fp8_block", "fp8_block_1x128", "fp8_block_1x64", "fp8_block_1x32", "fp8_block_128x128",
      "fp8_block_1x128:pow2=1", "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", "fp8_block_1x128:eps=1e-10",
      "fp8_block_1x128:layout=mn_major_tma", "fp8_block_1x128:pow2=1,layout=packed_ue8m0",
      "fp8_block_1x128:elem=float8_e5m2", "fp8_block_128x128:dir=both,colform=same", "mxfp8", "mxfp8_e4m3",
      "mxfp8_e5m2", "mxfp4", "mxfp8:rounding=floor", "mxfp8:dir=both", "mxfp8:dir=col,colform=same",
      "mxfp8:layout=swizzled_128x4", "mxfp8:layout=packed_ue8m0,dir=both", "mxfp4:dir=both,layout=swizzled_128x4",
      "nvfp4", "nvfp4_2d", "nvfp4:layout=swizzled_128x4", "nvfp4:dir=both", "fp4_block_1x32",
      "fp8_block_1x32:elem=float4_e2m1fn,pow2=1,scale=ue8m0",
  };
  for (const char* t : texts) {
    const Recipe r = Recipe::parse(t);
    const std::string name = r.name();
    EXPECT_EQ(Recipe::parse(name), r) << t << " -> " << name;
    EXPECT_EQ(Recipe::parse(name).name(), name) << t;
  }
  EXPECT_EQ(Recipe::parse("fp8_block_1x32:elem=float4_e2m1fn,pow2=1,scale=ue8m0").name(), "fp4_block_1x32");
  EXPECT_EQ(Recipe::parse("mxfp8_e4m3").name(), "mxfp8");
  EXPECT_EQ(Recipe::parse("fp8_block").name(), "fp8_block_1x128");
  // a rowwise recipe's column form is read by nothing: its name leaves it out, so that parse()
  // takes the name back ("colform=same" on a rowwise recipe is refused)
  Recipe rowwise = Recipe::parse("mxfp8");
  rowwise.column_form = ColumnForm::same_shape;
  EXPECT_EQ(rowwise.name(), "mxfp8");
  EXPECT_NO_THROW(Recipe::parse(rowwise.name()));
}

}  // namespace
}  // namespace mxq::test
