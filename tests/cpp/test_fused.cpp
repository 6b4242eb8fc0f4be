// Fused epilogues on the CPU reference: a fused quantize equals the plain quantize of
// y = f(x) computed with numerics/activations.h (every output byte), gated activations halve
// the width, the backward pass multiplies by act'(act_input), dbias is the fp64-accumulated
// column sum of y, and a non-zero noop writes nothing (dbias included).
#include <cstring>
#include <vector>

#include "test_support.hpp"

namespace mxq::test {
namespace {

// The plain quantization of y (fp32, rows x cols).
Outputs plain(const std::string& recipe, std::vector<float> y, int64_t rows, int64_t cols) {
  return quantize_f32(recipe, std::move(y), rows, cols);
}

Outputs fused(const std::string& recipe, std::vector<float>& x, int64_t rows, int64_t in_cols, int64_t out_cols,
              const QuantizeOptions& o) {
  Outputs out(recipe, rows, out_cols);
  out.poison(0xCD);
  quantize(f32_matrix(x, rows, in_cols), out.view(), o);
  return out;
}

constexpr Activation kElementwise[] = {Activation::gelu, Activation::gelu_tanh, Activation::silu,
                                       Activation::relu, Activation::qgelu,     Activation::srelu};

TEST(Fused, ActivationEqualsQuantizingItsOutput) {
  const int64_t r = 33, c = 256;
  std::vector<float> x = random_matrix(r, c, 5);
  for (Activation a : kElementwise)
    for (const char* recipe : {"mxfp8:dir=both", "nvfp4", "fp8_tensor", "fp8_block_1x128"}) {
      QuantizeOptions o;
      o.activation = a;
      const Outputs got = fused(recipe, x, r, c, c, o);
      EXPECT_EQ(last_dispatch().kernel, "reference fused");
      std::vector<float> y(x.size());
      for (size_t i = 0; i < x.size(); ++i) y[i] = num::act_f(a, x[i]);
      const Outputs want = plain(recipe, y, r, c);
      EXPECT_EQ(got.concat(), want.concat()) << activation_name(a) << " " << recipe;
      EXPECT_EQ(got.amax, want.amax) << activation_name(a) << " " << recipe << ": amax of the activated values";
    }
}

// silu(-Inf) = -Inf * 0 and a negative NaN input both make NaNs whose sign x86 and the GPU
// disagree on; the fused values are canonicalised, so the codes are the positive NaN (0x7f for
// e4m3fn), and the NaN-free block next to them is quantized as usual.
TEST(Fused, NaNsTheActivationMakesAreCanonical) {
  std::vector<float> x(64, 1.5f);
  x[0] = -INFINITY;
  x[1] = num::bits_float(0xffc00000u);  // -NaN
  QuantizeOptions o;
  o.activation = Activation::silu;
  const Outputs got = fused("mxfp8", x, 1, 64, 64, o);
  EXPECT_EQ(got.data[0], 0x7f);
  EXPECT_EQ(got.data[1], 0x7f);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = num::canonical_nan(num::act_f(Activation::silu, x[i]));
  EXPECT_EQ(got.concat(), plain("mxfp8", y, 1, 64).concat());
}

TEST(Fused, GatedActivationsHalveTheWidth) {
  const int64_t r = 17, n = 64;
  std::vector<float> x = random_matrix(r, 2 * n, 6);
  for (Activation a : {Activation::swiglu, Activation::geglu, Activation::reglu}) {
    QuantizeOptions o;
    o.activation = a;
    const Outputs got = fused("mxfp8", x, r, 2 * n, n, o);
    std::vector<float> y(size_t(r * n));
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < n; ++j)
        y[size_t(i * n + j)] = num::mul_rn(num::act_f(num::gate_of(a), x[size_t(i * 2 * n + j)]), x[size_t(i * 2 * n + n + j)]);
    EXPECT_EQ(got.concat(), plain("mxfp8", y, r, n).concat()) << activation_name(a);
  }
  // the output must be planned for [M, N], and the input width must be even
  QuantizeOptions o;
  o.activation = Activation::swiglu;
  Outputs wrong("mxfp8", r, 2 * n);
  EXPECT_THROW(quantize(f32_matrix(x, r, 2 * n), wrong.view(), o), Error);
  std::vector<float> odd = random_matrix(4, 33, 1);
  Outputs o16("mxfp8", 4, 16);
  try {
    quantize(f32_matrix(odd, 4, 33), o16.view(), o);
    ADD_FAILURE() << "odd gated width accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input.cols=33 must be even"), std::string::npos) << e.what();
  }
}

TEST(Fused, BackwardMultipliesByTheDerivative) {
  const int64_t r = 9, c = 128;
  std::vector<float> grad = random_matrix(r, c, 7), act_in = random_matrix(r, c, 8);
  const TensorView av = f32_matrix(act_in, r, c);
  for (Activation a : kElementwise) {
    QuantizeOptions o;
    o.activation = a;
    o.act_input = &av;
    const Outputs got = fused("mxfp8", grad, r, c, c, o);
    std::vector<float> y(grad.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = num::mul_rn(grad[i], num::dact_f(a, act_in[i]));
    EXPECT_EQ(got.concat(), plain("mxfp8", y, r, c).concat()) << activation_name(a);
  }
  QuantizeOptions bad;
  bad.activation = Activation::swiglu;
  bad.act_input = &av;
  Outputs out("mxfp8", r, c / 2);
  EXPECT_THROW(quantize(f32_matrix(grad, r, c), out.view(), bad), Error);
  std::vector<float> small = random_matrix(r, 64, 9);
  const TensorView sv = f32_matrix(small, r, 64);
  QuantizeOptions mismatch;
  mismatch.activation = Activation::gelu;
  mismatch.act_input = &sv;
  Outputs out2("mxfp8", r, c);
  try {
    quantize(f32_matrix(grad, r, c), out2.view(), mismatch);
    ADD_FAILURE() << "act_input of another shape accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("options.act_input (9, 64)"), std::string::npos) << e.what();
  }
}

TEST(Fused, DbiasIsTheColumnSumOfTheQuantizedValues) {
  const int64_t r = 300, c = 96;
  std::vector<float> x = random_matrix(r, c, 10);
  std::vector<float> dbias(size_t(c), -1.0f);
  QuantizeOptions o;
  o.activation = Activation::gelu;
  o.dbias = dbias.data();
  fused("mxfp8", x, r, c, c, o);
  for (int64_t j = 0; j < c; ++j) {
    double s = 0.0;
    for (int64_t i = 0; i < r; ++i) s += double(num::act_f(Activation::gelu, x[size_t(i * c + j)]));
    EXPECT_EQ(dbias[size_t(j)], float(s)) << "column " << j;  // same values, same fp64 order: exact
  }
}

TEST(Fused, NoopWritesNothingNotEvenDbias) {
  const int64_t r = 8, c = 64;
  std::vector<float> x = random_matrix(r, c, 11);
  std::vector<float> dbias(size_t(c), 123.0f);
  const float one = 1.0f, zero = 0.0f;
  QuantizeOptions o;
  o.activation = Activation::silu;
  o.dbias = dbias.data();
  o.noop = &one;
  Outputs out = fused("nvfp4", x, r, c, c, o);
  for (auto* b : out.all())
    for (uint8_t v : *b) ASSERT_EQ(v, 0xCD) << "an output was written under noop";
  for (float v : dbias) ASSERT_EQ(v, 123.0f) << "dbias was written under noop";
  o.noop = &zero;
  out = fused("nvfp4", x, r, c, c, o);
  EXPECT_NE(out.data[0] | out.data[1], 0xCD | 0xCD);
  EXPECT_NE(dbias[0], 123.0f);
}

TEST(Fused, ActivationNamesRoundTrip) {
  for (int i = 0; i <= int(Activation::reglu); ++i)
    EXPECT_EQ(parse_activation(activation_name(Activation(i))), Activation(i));
  EXPECT_THROW(parse_activation("gelu_erf"), Error);
}

}  // namespace
}  // namespace mxq::test
