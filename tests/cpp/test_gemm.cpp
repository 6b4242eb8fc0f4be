// The block-scaled FP8 GEMM's CPU reference (issue 6): the exact test (integer operands with
// pow2 scales quantize exactly and every partial sum is exact in fp32), random operands against
// an independent computation from mxq::dequantize, alpha / C / bias / bf16 D, and validation.
#include <cmath>
#include <cstdint>
#include <vector>

#include "test_support.hpp"

namespace mxq::test {
namespace {

struct Operand {
  Outputs q;
  std::vector<float> x;
};

Operand make(const std::string& recipe, int64_t rows, int64_t k, uint64_t seed, bool integers) {
  std::vector<float> x = random_matrix(rows, k, seed);
  if (integers)
    for (auto& v : x) v = std::round(std::fmod(v * 97.0f, 9.0f));  // integers in [-8, 8]: <= 3 significant bits
  Operand o{quantize_f32(recipe, x, rows, k), x};
  return o;
}

std::vector<float> run(const Operand& a, const Operand& b, const GemmOptions& opt = {}) {
  std::vector<float> d(size_t(a.q.rows * b.q.rows), -1.0f);
  Outputs& qa = const_cast<Outputs&>(a.q);
  Outputs& qb = const_cast<Outputs&>(b.q);
  gemm(qa.view(), qb.view(), f32_matrix(d, a.q.rows, b.q.rows), opt);
  return d;
}

TEST(Gemm, ExactWithIntegerOperandsAndPow2Scales) {
  for (const char* b_recipe : {"fp8_block_128x128:pow2=1", "fp8_block_1x128:pow2=1"}) {  // 1D2D, 1D1D
    for (int64_t k : {384, 320}) {
      const Operand a = make("fp8_block_1x128:pow2=1", 37, k, 1, true);
      const Operand b = make(b_recipe, 129, k, 2, true);
      const std::vector<float> d = run(a, b);
      for (int64_t i = 0; i < 37; ++i)
        for (int64_t j = 0; j < 129; ++j) {
          int64_t exact = 0;
          for (int64_t t = 0; t < k; ++t)
            exact += int64_t(a.x[size_t(i * k + t)]) * int64_t(b.x[size_t(j * k + t)]);
          ASSERT_EQ(d[size_t(i * 129 + j)], float(exact)) << b_recipe << " K=" << k << " at (" << i << ", " << j << ")";
        }
      EXPECT_EQ(last_dispatch().op, "gemm");
    }
  }
}

// Independent: dequantize both operands with mxq::dequantize (fp32), multiply in fp64.
TEST(Gemm, RandomOperandsMatchDequantizeThenMultiply) {
  for (const char* a_recipe : {"fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma",
                               "fp8_block_1x128:pow2=1,layout=packed_ue8m0,scale=float8_e8m0fnu"})
    for (const char* b_recipe : {"fp8_block_128x128", "fp8_block_1x128"}) {
      const int64_t m = 65, n = 200, k = 320;
      const Operand a = make(a_recipe, m, k, 3, false), b = make(b_recipe, n, k, 4, false);
      std::vector<float> ya(size_t(m * k)), yb(size_t(n * k));
      dequantize(const_cast<Outputs&>(a.q).view(), f32_matrix(ya, m, k));
      dequantize(const_cast<Outputs&>(b.q).view(), f32_matrix(yb, n, k));
      const std::vector<float> d = run(a, b);
      double err = 0, ref = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t t = 0; t < k; ++t) s += double(ya[size_t(i * k + t)]) * double(yb[size_t(j * k + t)]);
          err += (d[size_t(i * n + j)] - s) * (d[size_t(i * n + j)] - s);
          ref += s * s;
        }
      // the only difference is dequantize's fp32 rounding of code * scale (and D's own rounding)
      EXPECT_LE(std::sqrt(err / ref), 2e-7) << a_recipe << " x " << b_recipe;
    }
}

TEST(Gemm, AlphaAccumulateBiasAndBf16) {
  const int64_t m = 16, n = 24, k = 128;
  const Operand a = make("fp8_block_1x128:pow2=1", m, k, 5, true), b = make("fp8_block_128x128:pow2=1", n, k, 6, true);
  const std::vector<float> base = run(a, b);
  std::vector<float> c(size_t(m * n)), bias(static_cast<size_t>(n));
  for (size_t i = 0; i < c.size(); ++i) c[i] = float(i % 7) - 3.0f;
  for (size_t j = 0; j < bias.size(); ++j) bias[j] = 0.25f * float(j);
  const TensorView cv = f32_matrix(c, m, n);
  GemmOptions o;
  o.alpha = 0.5f;
  o.c = &cv;
  o.bias = bias.data();
  const std::vector<float> d = run(a, b, o);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(d[size_t(i * n + j)], 0.5f * base[size_t(i * n + j)] + c[size_t(i * n + j)] + bias[size_t(j)]);
  std::vector<uint16_t> d16(size_t(m * n));
  gemm(const_cast<Outputs&>(a.q).view(), const_cast<Outputs&>(b.q).view(),
       TensorView::matrix(d16.data(), DType::bfloat16, m, n));
  for (size_t i = 0; i < d16.size(); ++i) ASSERT_EQ(d16[i], num::float_to_bf16(base[i])) << i;
}

TEST(Gemm, ValidationNamesTheArgument) {
  const Operand a = make("fp8_block_1x128", 8, 128, 7, false), b = make("fp8_block_128x128", 8, 256, 8, false);
  const Operand mx = make("mxfp8", 8, 128, 9, false);
  std::vector<float> d(64);
  auto expect = [&](const Operand& x, const Operand& y, int64_t dr, int64_t dc, const char* fragment) {
    try {
      gemm(const_cast<Outputs&>(x.q).view(), const_cast<Outputs&>(y.q).view(), f32_matrix(d, dr, dc));
      ADD_FAILURE() << "accepted; expected an error with " << fragment;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect(a, b, 8, 8, "same K");
  expect(mx, a, 8, 8, "a.recipe=mxfp8");
  expect(b, a, 8, 8, "a.recipe=fp8_block_128x128");
  const Operand b2 = make("fp8_block_128x128", 8, 128, 10, false);
  expect(a, b2, 4, 16, "d is (4, 16); expected (M, N) = (8, 8)");
  // an option out of range is refused, naming it, its value and what it takes
  auto refused = [&](const GemmOptions& o, const std::string& message) {
    try {
      gemm(const_cast<Outputs&>(a.q).view(), const_cast<Outputs&>(b2.q).view(), f32_matrix(d, 8, 8), o);
      ADD_FAILURE() << "accepted; expected " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  for (int pk : {-32, 16, 96, 256}) {
    GemmOptions o;
    o.promote_k = pk;
    refused(o, "options.promote_k=" + std::to_string(pk) + "; expected 0 (by D's dtype), 32, 64 or 128");
  }
  for (int bm : {-1, 64, 192, 512}) {
    GemmOptions o;
    o.block_m = bm;
    refused(o, "options.block_m=" + std::to_string(bm) + "; expected 0 (the plan's choice), 128 or 256");
  }
  for (auto [pk, bm] : {std::pair{32, 0}, {64, 128}, {128, 256}, {0, 0}}) {  // the CPU reference ignores both: fp64
    GemmOptions o;
    o.promote_k = pk;
    o.block_m = bm;
    EXPECT_NO_THROW(gemm(const_cast<Outputs&>(a.q).view(), const_cast<Outputs&>(b2.q).view(), f32_matrix(d, 8, 8), o));
  }
  // D over an operand, over the bias, or partly over C: refused; D == C (accumulating in place) is fine.
  Outputs& qa = const_cast<Outputs&>(a.q);
  std::vector<float> wide(8 * 8 + 1);
  GemmOptions o;
  const TensorView c_shifted = f32_matrix(wide, 8, 8);
  o.c = &c_shifted;
  try {
    gemm(qa.view(), const_cast<Outputs&>(b2.q).view(), TensorView::matrix(wide.data() + 1, DType::float32, 8, 8), o);
    ADD_FAILURE() << "D one float past C accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gemm: d ("), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overlaps options.c"), std::string::npos) << e.what();
  }
  o.c = nullptr;
  o.bias = d.data() + 3;
  refused(o, "overlaps options.bias");
  o.bias = nullptr;
  TensorView over_a = TensorView::matrix(qa.data.data(), DType::float32, 8, 8);
  try {
    gemm(qa.view(), const_cast<Outputs&>(b2.q).view(), over_a);
    ADD_FAILURE() << "D over a.data accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps a.data"), std::string::npos) << e.what();
  }
  std::vector<float> acc(64, 1.0f), ones(64, 1.0f);
  const TensorView in_place = f32_matrix(acc, 8, 8), separate = f32_matrix(ones, 8, 8);
  o.c = &separate;
  const std::vector<float> want = run(a, b2, o);
  o.c = &in_place;
  gemm(qa.view(), const_cast<Outputs&>(b2.q).view(), in_place, o);
  for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(acc[i], want[i]) << i;
}

}  // namespace
}  // namespace mxq::test
