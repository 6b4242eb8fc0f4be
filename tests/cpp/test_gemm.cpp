// The block-scaled GEMM's CPU reference (issue 6): the exact test (integer operands with pow2
// scales quantize exactly and every partial sum is exact in fp32), random operands against an
// independent computation from mxq::dequantize, alpha / C / bias / bf16 D, and validation; for
// the fp8_block families and the MX, NVFP4 and per-tensor FP8 ones.
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
    for (auto& v : x) v = std::trunc(std::fmod(v * 97.0f, 9.0f));  // integers in [-8, 8]: <= 3 significant bits
  Operand o{quantize_f32(recipe, x, rows, k), x};
  return o;
}

// Integers that FP4 (E2M1) holds under any MX block scale the block's maximum gives: 0, +-1, +-2,
// +-3, +-4, +-6 (a block whose maximum is 1, 2 or 3 scales by 1/4 or 1/2 and lands on 4, 4 or 6).
// Rows take the first 3, 7 or all 11 of them in turn, so that block scales of 1/4, 1/2 and 1 occur.
Operand make_fp4_exact(const std::string& recipe, int64_t rows, int64_t k, uint64_t seed) {
  static const float kValues[11] = {0, 1, -1, 2, -2, 3, -3, 4, -4, 6, -6};
  static const int kCount[3] = {3, 7, 11};
  std::vector<float> x = random_matrix(rows, k, seed);
  for (size_t i = 0; i < x.size(); ++i) x[i] = kValues[int(std::fabs(x[i]) * 1000.0f) % kCount[(i / size_t(k)) % 3]];
  Operand o{quantize_f32(recipe, x, rows, k), x};
  return o;
}

void expect_exact(const Operand& a, const Operand& b, const std::vector<float>& d, const std::string& what) {
  const int64_t m = a.q.rows, n = b.q.rows, k = a.q.cols;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t exact = 0;
      for (int64_t t = 0; t < k; ++t) exact += int64_t(a.x[size_t(i * k + t)]) * int64_t(b.x[size_t(j * k + t)]);
      ASSERT_EQ(d[size_t(i * n + j)], float(exact)) << what << " K=" << k << " at (" << i << ", " << j << ")";
    }
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
      expect_exact(a, b, run(a, b), b_recipe);
      EXPECT_EQ(last_dispatch().op, "gemm");
    }
  }
}

// MX operands (1 x 32 UE8M0 blocks), FP8 and FP4 elements and their mixes: integer operands that
// quantize exactly, so D is the exact integer product. K = 352 ends on a block of 32 and 330 (a
// partial last block) does not; the scale layouts are row_major and swizzled_128x4.
TEST(Gemm, MxOperandsAreExactOnIntegers) {
  const struct {
    const char *a, *b;
    bool a_fp4, b_fp4;
  } pairs[] = {{"mxfp8", "mxfp8", false, false},
               {"mxfp8", "mxfp4", false, true},
               {"mxfp4", "mxfp4:layout=swizzled_128x4", true, true},
               {"mxfp8_e5m2", "mxfp8:layout=swizzled_128x4", false, false},
               {"mxfp4", "mxfp8_e5m2", true, false}};
  for (const auto& p : pairs)
    for (int64_t k : {352, 330}) {
      const Operand a = p.a_fp4 ? make_fp4_exact(p.a, 37, k, 11) : make(p.a, 37, k, 11, true);
      const Operand b = p.b_fp4 ? make_fp4_exact(p.b, 129, k, 12) : make(p.b, 129, k, 12, true);
      expect_exact(a, b, run(a, b), std::string(p.a) + " x " + p.b);
      EXPECT_EQ(last_dispatch().backend, "cpu");
    }
}

// Independent: dequantize both operands with mxq::dequantize (fp32), multiply in fp64; the
// relative Frobenius error of D against that (no NaN allowed).
double error_against_dequantized(const Operand& a, const Operand& b, const std::string& what) {
  const int64_t m = a.q.rows, n = b.q.rows, k = a.q.cols;
  std::vector<float> ya(size_t(m * k)), yb(size_t(n * k));
  dequantize(const_cast<Outputs&>(a.q).view(), f32_matrix(ya, m, k));
  dequantize(const_cast<Outputs&>(b.q).view(), f32_matrix(yb, n, k));
  const std::vector<float> d = run(a, b);
  double err = 0, ref = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += double(ya[size_t(i * k + t)]) * double(yb[size_t(j * k + t)]);
      EXPECT_FALSE(std::isnan(d[size_t(i * n + j)])) << what << " at (" << i << ", " << j << ")";
      err += (d[size_t(i * n + j)] - s) * (d[size_t(i * n + j)] - s);
      ref += s * s;
    }
  EXPECT_GT(ref, 0.0) << what;
  return std::sqrt(err / ref);
}

TEST(Gemm, RandomOperandsMatchDequantizeThenMultiply) {
  for (const char* a_recipe : {"fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma",
                               "fp8_block_1x128:pow2=1,layout=packed_ue8m0,scale=float8_e8m0fnu"})
    for (const char* b_recipe : {"fp8_block_128x128", "fp8_block_1x128"}) {
      const Operand a = make(a_recipe, 65, 320, 3, false), b = make(b_recipe, 200, 320, 4, false);
      // the only difference is dequantize's fp32 rounding of code * scale (and D's own rounding)
      EXPECT_LE(error_against_dequantized(a, b, std::string(a_recipe) + " x " + b_recipe), 2e-7);
    }
}

// Every other family: MX (code * 2^e exact in fp32), NVFP4 (code * UE4M3 * global: dequantize
// rounds that to fp32 once) and per-tensor FP8 (code * scale_inv, likewise), at a K of whole
// blocks (320) and of a partial last one (330).
TEST(Gemm, EveryFamilyMatchesDequantizeThenMultiply) {
  const std::pair<const char*, const char*> pairs[] = {
      {"mxfp8", "mxfp8"},   {"mxfp8_e5m2", "mxfp4"},     {"mxfp4", "mxfp4:layout=swizzled_128x4"},
      {"mxfp8", "mxfp8_e5m2:layout=swizzled_128x4"},
      {"nvfp4", "nvfp4"},   {"nvfp4_2d", "nvfp4"},       {"nvfp4:layout=swizzled_128x4", "nvfp4_2d"},
      {"fp8_tensor", "fp8_tensor"}, {"fp8_tensor:elem=float8_e5m2", "fp8_tensor"}};
  for (const auto& [a_recipe, b_recipe] : pairs)
    for (int64_t k : {320, 330}) {
      const Operand a = make(a_recipe, 65, k, 13, false), b = make(b_recipe, 130, k, 14, false);
      const std::string what = std::string(a_recipe) + " x " + b_recipe + " K=" + std::to_string(k);
      EXPECT_LE(error_against_dequantized(a, b, what), 2e-7) << what;
    }
}

// The global scales are part of the product: scaling an NVFP4 operand's input by 2^10 changes its
// global scale (the codes and block scales stay), and D by exactly 2^10.
TEST(Gemm, GlobalScalesEnterTheProduct) {
  for (const char* recipe : {"nvfp4", "fp8_tensor"}) {
    const int64_t m = 9, n = 17, k = 64;
    const Operand a = make(recipe, m, k, 15, false), b = make(recipe, n, k, 16, false);
    std::vector<float> big = a.x;
    for (auto& v : big) v *= 1024.0f;
    const Operand a2{quantize_f32(recipe, big, m, k), big};
    const std::vector<float> d = run(a, b), d2 = run(a2, b);
    size_t nonzero = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      ASSERT_EQ(d2[i], d[i] * 1024.0f) << recipe << " at " << i;
      nonzero += d[i] != 0.0f;
    }
    EXPECT_GT(nonzero, d.size() / 2) << recipe;
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
  expect(mx, a, 8, 8, "a.recipe=mxfp8 (MX) and b.recipe=fp8_block_1x128 (fp8_block (1D2D or 1D1D)) differ in scaling");
  expect(make("nvfp4", 8, 128, 17, false), mx, 8, 8, "a.recipe=nvfp4 (NVFP4) and b.recipe=mxfp8 (MX) differ");
  expect(make("mxfp8:dir=col", 8, 128, 18, false), mx, 8, 8,
         "a.recipe=mxfp8:dir=col is not supported; expected an MX recipe (mxfp8, mxfp8_e5m2, mxfp4) quantized rowwise");
  expect(mx, make("nvfp4:dir=col", 8, 128, 19, false), 8, 8, "b.recipe=nvfp4:dir=col is not supported");
  {  // an FP4 operand of odd K (quantize never writes one; a hand-made QuantizedTensor can claim it)
    Operand f1 = make("mxfp4", 8, 128, 22, false), f2 = make("mxfp4", 8, 128, 23, false);
    QuantizedTensor qa = f1.q.view(), qb = f2.q.view();
    qa.cols = qb.cols = 127;
    try {
      gemm(qa, qb, f32_matrix(d, 8, 8));
      ADD_FAILURE() << "an FP4 operand of odd K accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("gemm: a.cols=127 (K) must be even for mxfp4"), std::string::npos)
          << e.what();
    }
  }
  {  // an NVFP4 operand without its global scale
    Operand n1 = make("nvfp4", 8, 128, 20, false), n2 = make("nvfp4", 8, 128, 21, false);
    QuantizedTensor qa = n1.q.view();
    qa.global_scale = {};
    try {
      gemm(qa, n2.q.view(), f32_matrix(d, 8, 8));
      ADD_FAILURE() << "an nvfp4 operand without global_scale accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("gemm: a.global_scale.data is null; recipe nvfp4 needs 4 bytes"), std::string::npos)
          << e.what();
    }
  }
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
  // a bfloat16 D at C's address and row stride is not C itself: its rows are half as wide, so
  // writing D would overwrite C's rows before they are read
  const TensorView d_bf16 = TensorView::matrix(acc.data(), DType::bfloat16, 8, 8);
  try {
    gemm(qa.view(), const_cast<Outputs&>(b2.q).view(), d_bf16, o);
    ADD_FAILURE() << "bfloat16 D over float32 C accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlaps options.c"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mxq::test
