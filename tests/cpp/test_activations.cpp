// The fused activations' arithmetic (numerics/activations.h) against the exact functions in
// fp64: the error bounds the header states, measured over a dense sweep plus special values.
// (Bit-exactness between backends holds by construction: both run these lines; the GPU tests
// compare them byte for byte once the CUDA kernels fuse activations.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mxq/numerics/activations.h"

namespace mxq::num {
namespace {

// Distance in fp32 ulps between a float result and an exact value.
double ulps(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e9;
  const float w = float(want);
  const double ulp = std::isfinite(w) && w != 0.0f
                         ? std::fabs(double(std::nextafter(std::fabs(w), INFINITY)) - std::fabs(double(w)))
                         : double(std::numeric_limits<float>::denorm_min());
  return std::fabs(double(got) - want) / ulp;
}

template <class F, class G>
double max_ulps(F ours, G exact, double lo, double hi, int steps) {
  double worst = 0.0;
  for (int i = 0; i <= steps; ++i) {
    const float x = float(lo + (hi - lo) * i / steps);
    worst = std::max(worst, ulps(ours(x), exact(double(x))));
  }
  return worst;
}

TEST(Activations, ExpWithinOneUlp) {
  EXPECT_LE(max_ulps(exp_f, [](double x) { return std::exp(x); }, -87.0, 88.7, 2'000'000), 1.0);
  EXPECT_EQ(exp_f(0.0f), 1.0f);
  EXPECT_EQ(exp_f(100.0f), INFINITY);
  EXPECT_EQ(exp_f(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f(NAN)));
  EXPECT_EQ(exp_f(-INFINITY), 0.0f);
  EXPECT_LE(ulps(exp_f(-100.0f), std::exp(-100.0)), 1.0);  // subnormal result, rounded once
  // the fused activations' exp (no clamp, no subnormals): its range only
  EXPECT_LE(max_ulps(exp_in_range, [](double x) { return std::exp(x); }, -87.0, 87.0, 2'000'000), 1.1);
  EXPECT_LE(max_ulps(sigmoid_f, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -80.0, 80.0, 2'000'000), 3.0);
  EXPECT_EQ(sigmoid_f(-INFINITY), sigmoid_f(-87.0f));  // held at -87
  EXPECT_LT(sigmoid_f(-INFINITY), 2e-38f);
  EXPECT_EQ(sigmoid_f(INFINITY), 1.0f);
}

TEST(Activations, TanhWithinThreeErfWithinFourUlps) {
  EXPECT_LE(max_ulps(tanh_f, [](double x) { return std::tanh(x); }, -12.0, 12.0, 2'000'000), 3.0);
  EXPECT_LE(max_ulps(erf_f, [](double x) { return std::erf(x); }, -6.0, 6.0, 2'000'000), 4.0);
  EXPECT_LE(max_ulps(tanh_f, [](double x) { return std::tanh(x); }, -1e-3, 1e-3, 200'000), 2.5);
  EXPECT_LE(max_ulps(erf_f, [](double x) { return std::erf(x); }, -1e-3, 1e-3, 200'000), 3.0);
  for (float z : {0.0f, -0.0f}) {
    EXPECT_EQ(std::signbit(tanh_f(z)), std::signbit(z));
    EXPECT_EQ(std::signbit(erf_f(z)), std::signbit(z));
  }
  EXPECT_EQ(tanh_f(INFINITY), 1.0f);
  EXPECT_EQ(erf_f(-INFINITY), -1.0f);
}

double phi(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }
double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The activations against fp64 evaluations of the same formulas. Where a formula cancels
// (GELU's 1 + erf for x << 0) the error is relative to the size of the terms: the bound is
// 8 ulps of the result plus 2e-7 |x|, the same order as TransformerEngine's fp32 erff / tanhf.
TEST(Activations, ForwardAndDerivativeMatchTheirFormulas) {
  struct Case {
    Activation a;
    double (*f)(double);
    double (*df)(double);
  } cases[] = {
      {Activation::gelu, [](double x) { return x * phi(x); },
       [](double x) { return phi(x) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI); }},
      {Activation::gelu_tanh,
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); },
       [](double x) {
         const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), t = std::tanh(u);
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
       }},
      {Activation::silu, [](double x) { return x * sig(x); }, [](double x) { return sig(x) * (1 + x * (1 - sig(x))); }},
      {Activation::qgelu, [](double x) { return x * sig(1.702 * x); },
       [](double x) { return sig(1.702 * x) * (1 + 1.702 * x * (1 - sig(1.702 * x))); }},
      {Activation::relu, [](double x) { return x > 0 ? x : 0.0; }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {Activation::srelu, [](double x) { return x > 0 ? x * x : 0.0; }, [](double x) { return x > 0 ? 2 * x : 0.0; }},
  };
  for (const Case& c : cases) {
    double worst = 0.0, worst_d = 0.0;
    for (int i = 0; i <= 400'000; ++i) {
      const float x = float(-20.0 + 40.0 * i / 400'000);
      const double slack = 2e-7 * std::fabs(double(x));
      auto excess = [&](float got, double want) {  // ulps, or 0 within the |x| slack
        return std::fabs(double(got) - want) <= slack ? 0.0 : ulps(got, want);
      };
      worst = std::max(worst, excess(act_f(c.a, x), c.f(double(x))));
      worst_d = std::max(worst_d, excess(dact_f(c.a, x), c.df(double(x))));
    }
    EXPECT_LE(worst, 8.0) << "activation " << int(c.a);
    EXPECT_LE(worst_d, 8.0) << "derivative of activation " << int(c.a);
  }
  EXPECT_TRUE(std::isnan(act_f(Activation::relu, NAN)));
  EXPECT_EQ(act_f(Activation::srelu, -3.0f), 0.0f);
  EXPECT_EQ(act_f(Activation::relu, 2.5f), 2.5f);
}


// The bf16 table of the fused GPU kernels, as the kernels index it (offset, entry): every bf16
// value with |x| in [2^-24, 2^8) is inside and has an entry whose value is that bf16 value, each
// entry belongs to exactly one such value, every other bf16 value (zeros, tinier, larger, Inf,
// NaN) is outside, and the bits above the low 16 change nothing.
TEST(Activations, Bf16TableIndexesEachValueInRangeOnce) {
  std::vector<int> owner(Bf16Table::kSize, -1);
  int inside = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float x = bits_float(b << 16);
    const bool in_range = std::fabs(x) >= 0x1p-24f && std::fabs(x) < 256.0f;  // false for NaN
    const bool in_table = Bf16Table::offset(b) < Bf16Table::kHalf;
    ASSERT_EQ(in_table, in_range) << "bf16 bits " << b;
    const uint32_t i = Bf16Table::entry(b);
    ASSERT_LT(i, Bf16Table::kSize) << "bf16 bits " << b;
    for (uint32_t high : {0x00010000u, 0xabcd0000u, 0xffff0000u}) {
      ASSERT_EQ(Bf16Table::offset(b | high) < Bf16Table::kHalf, in_table) << "bf16 bits " << b << " | " << high;
      ASSERT_EQ(Bf16Table::entry(b | high), i) << "bf16 bits " << b << " | " << high;
    }
    if (!in_range) continue;
    ++inside;
    ASSERT_EQ(owner[i], -1) << "entry " << i << " of bf16 bits " << owner[i] << " and " << b;
    owner[i] = int(b);
    ASSERT_EQ(float_bits(Bf16Table::value(i)), b << 16) << "entry " << i;
  }
  EXPECT_EQ(inside, int(Bf16Table::kSize));
}

// The kernels index both halves of a loaded word at once (pair_offsets, pair_outside, entry_low,
// entry_high): the same answers as offset and entry of each half, whatever the other half holds.
// Every value in each half against 257 values in the other (every 256th, the table's edges, zeros,
// Inf and NaN of both signs).
TEST(Activations, Bf16TablePairsIndexLikeSingleValues) {
  std::vector<uint32_t> others;
  for (uint32_t b = 0; b < 65536; b += 256) others.push_back(b + (b >> 8));
  for (uint32_t edge : {Bf16Table::kFirst - 1, Bf16Table::kFirst, Bf16Table::kFirst + Bf16Table::kHalf - 1,
                        Bf16Table::kFirst + Bf16Table::kHalf, 0x7f80u, 0x7fc1u, 0x7fffu, 0u})
    for (uint32_t sign : {0u, 0x8000u}) others.push_back(edge | sign);
  for (uint32_t b = 0; b < 65536; ++b) {
    const bool in_table = Bf16Table::offset(b) < Bf16Table::kHalf;
    for (uint32_t o : others) {
      for (int high = 0; high < 2; ++high) {
        const uint32_t w = high ? (b << 16 | o) : (o << 16 | b);
        const uint32_t t = Bf16Table::pair_offsets(w);
        const uint32_t outside = Bf16Table::pair_outside(t) & (high ? 0xffff0000u : 0xffffu);
        ASSERT_EQ(outside == 0, in_table) << "bf16 bits " << b << (high ? " high" : " low") << ", other " << o;
        const uint32_t e = high ? Bf16Table::entry_high(t, w) : Bf16Table::entry_low(t, w);
        ASSERT_LT(e, Bf16Table::kSize) << "bf16 bits " << b << (high ? " high" : " low") << ", other " << o;
        if (in_table) {
          ASSERT_EQ(e, Bf16Table::entry(b)) << "bf16 bits " << b << (high ? " high" : " low") << ", other " << o;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mxq::num
