// Activations fused into quantization (TransformerEngine's set) and their derivatives, with the
// transcendental functions they need, written as fixed sequences of correctly rounded fp32
// operations (mul_rn, add_rn, div_rn: no FMA contraction, no libm). The CPU reference and the
// CUDA kernels run these same lines, so a fused quantize is bit-exact across backends; the
// libraries' expf/erff/tanhf differ by an ulp here and there between host and device.
//
// Accuracy against the exact functions (tests/cpp/test_activations.cpp measures it): exp_f
// <= 2 ulp, tanh_f <= 6 ulp (worst near |x| = 0.25, where the two formulas meet), erf_f <= 4 ulp
// (+-1 from |x| = 4, as in fp32).
#pragma once

#include "mxq/numerics/config.h"

namespace mxq::num {

enum class Activation : uint8_t {
  none = 0,
  gelu = 1,       // x * Phi(x), with erf
  gelu_tanh = 2,  // the tanh approximation of GELU
  silu = 3,       // x * sigmoid(x)
  relu = 4,
  qgelu = 5,      // x * sigmoid(1.702 x)
  srelu = 6,      // relu(x)^2
  swiglu = 7,     // gated: silu(a) * b over [a | b] halves of each row
  geglu = 8,      // gated: gelu(a) * b
  reglu = 9,      // gated: relu(a) * b
};

constexpr MXQ_HD bool is_gated(Activation a) { return a == Activation::swiglu || a == Activation::geglu || a == Activation::reglu; }
// The elementwise activation a gated one applies to its first half.
constexpr MXQ_HD Activation gate_of(Activation a) {
  return a == Activation::swiglu ? Activation::silu : (a == Activation::geglu ? Activation::gelu : Activation::relu);
}

// c[0] x^(N-1) + ... + c[N-1], by Horner's rule in rounded fp32 steps (highest power first).
template <int N>
MXQ_HD float horner(float x, const float (&c)[N]) {
  float p = c[0];
  for (int k = 1; k < N; ++k) p = add_rn(mul_rn(p, x), c[k]);
  return p;
}

// Round to the nearest integer (ties to even) for |t| < 2^22, by the magic-number addition.
MXQ_HD float rint_small(float t) {
  const float m = 12582912.0f;  // 1.5 * 2^23
  return add_rn(add_rn(t, m), -m);
}

// e^x. Cody-Waite reduction x = n ln2 + r (|r| <= ln2 / 2; ln2_hi has 16 significant bits, so
// n * ln2_hi is exact for |n| <= 256), a degree-7 Taylor polynomial for e^r (truncation
// 5e-9), and 2^n applied in two steps so that subnormal results round once.
MXQ_HD float exp_f(float x) {
  if (is_nan(x)) return x;
  if (x > 88.72283935546875f) return bits_float(kF32InfBits);
  if (x < -103.972084f) return 0.0f;
  const float n = rint_small(mul_rn(x, 1.44269502162933349609f));
  const float r = add_rn(add_rn(x, -mul_rn(n, 0.693145751953125f)), -mul_rn(n, 1.42860676533018704e-06f));
  const float c[8] = {1.98412698e-4f, 1.38888889e-3f, 8.33333333e-3f, 4.16666667e-2f,  // 1/7! .. 1/4!
                      1.66666667e-1f, 0.5f,           1.0f,           1.0f};
  const float p = horner(r, c);
  const int ni = int(n);
  const int n1 = ni / 2, n2 = ni - n1;
  return mul_rn(mul_rn(p, exp2i(n1)), exp2i(n2));
}

MXQ_HD float sigmoid_f(float x) { return div_rn(1.0f, add_rn(1.0f, exp_f(-x))); }

// tanh: an odd Taylor polynomial below 0.25, 1 - 2 / (e^(2|x|) + 1) up to 9.1, +-1 beyond.
MXQ_HD float tanh_f(float x) {
  if (is_nan(x)) return x;
  const float a = abs_f(x);
  float t;
  if (a < 0.25f) {
    const float a2 = mul_rn(a, a);
    const float c[4] = {2.18694885e-2f, -5.39682540e-2f, 1.33333333e-1f, -3.33333333e-1f};  // 62/2835 .. -1/3
    t = add_rn(a, mul_rn(mul_rn(a, a2), horner(a2, c)));
  } else if (a < 9.1f) {
    t = add_rn(1.0f, -div_rn(2.0f, add_rn(exp_f(add_rn(a, a)), 1.0f)));
  } else {
    t = 1.0f;
  }
  return float_bits(x) >> 31 ? -t : t;
}

// erf: the Taylor series 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)) below 1 (terms to x^23),
// Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7) from 1 to 4, +-1 beyond.
MXQ_HD float erf_f(float x) {
  if (is_nan(x)) return x;
  const float a = abs_f(x);
  float e;
  if (a < 1.0f) {
    const float a2 = mul_rn(a, a);
    // coefficients of x^(2k+1) / (2/sqrt(pi)), k = 11 .. 0
    const float c[12] = {-1.089222104e-09f, 1.312253296e-08f,  -1.450385222e-07f, 1.458916900e-06f,
                         -1.322751323e-05f, 1.068376068e-04f,  -7.575757576e-04f, 4.629629630e-03f,
                         -2.380952381e-02f, 1.000000000e-01f,  -3.333333333e-01f, 1.000000000e+00f};
    e = mul_rn(mul_rn(a, horner(a2, c)), 1.12837916709551257f);
  } else if (a < 4.0f) {
    const float t = div_rn(1.0f, add_rn(1.0f, mul_rn(0.3275911f, a)));
    const float c[5] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f};
    e = add_rn(1.0f, -mul_rn(mul_rn(horner(t, c), t), exp_f(-mul_rn(a, a))));
  } else {
    e = 1.0f;
  }
  return float_bits(x) >> 31 ? -e : e;
}

// ---- the activations (forward) and their derivatives, in TransformerEngine's formulas.
constexpr float kSqrtHalf = 0.707106781186547524f;
constexpr float kSqrt2OverPi = 0.797884560802865355f;
constexpr float kGeluTanhC = 0.044715f;
constexpr float kQgeluAlpha = 1.702f;

MXQ_HD float relu_f(float x) { return is_nan(x) ? x : (x > 0.0f ? x : 0.0f); }

MXQ_HD float act_f(Activation a, float x) {
  switch (a) {
    case Activation::gelu: return mul_rn(mul_rn(0.5f, x), add_rn(1.0f, erf_f(mul_rn(x, kSqrtHalf))));
    case Activation::gelu_tanh: {
      const float u = mul_rn(kSqrt2OverPi, add_rn(x, mul_rn(kGeluTanhC, mul_rn(mul_rn(x, x), x))));
      return mul_rn(mul_rn(0.5f, x), add_rn(1.0f, tanh_f(u)));
    }
    case Activation::silu: return mul_rn(x, sigmoid_f(x));
    case Activation::relu: return relu_f(x);
    case Activation::qgelu: return mul_rn(x, sigmoid_f(mul_rn(kQgeluAlpha, x)));
    case Activation::srelu: {
      const float r = relu_f(x);
      return mul_rn(r, r);
    }
    default: return x;
  }
}

// d act / dx at x.
MXQ_HD float dact_f(Activation a, float x) {
  switch (a) {
    case Activation::gelu: {
      // Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi)
      const float cdf = mul_rn(0.5f, add_rn(1.0f, erf_f(mul_rn(x, kSqrtHalf))));
      const float pdf = mul_rn(exp_f(mul_rn(-0.5f, mul_rn(x, x))), 0.398942280401432678f);
      return add_rn(cdf, mul_rn(x, pdf));
    }
    case Activation::gelu_tanh: {
      const float x2 = mul_rn(x, x);
      const float u = mul_rn(kSqrt2OverPi, add_rn(x, mul_rn(kGeluTanhC, mul_rn(x2, x))));
      const float t = tanh_f(u);
      const float du = mul_rn(kSqrt2OverPi, add_rn(1.0f, mul_rn(3.0f * kGeluTanhC, x2)));
      const float sech2 = add_rn(1.0f, -mul_rn(t, t));
      return add_rn(mul_rn(0.5f, add_rn(1.0f, t)), mul_rn(mul_rn(0.5f, x), mul_rn(sech2, du)));
    }
    case Activation::silu: {
      const float s = sigmoid_f(x);
      return mul_rn(s, add_rn(1.0f, mul_rn(x, add_rn(1.0f, -s))));
    }
    case Activation::relu: return is_nan(x) ? x : (x > 0.0f ? 1.0f : 0.0f);
    case Activation::qgelu: {
      const float s = sigmoid_f(mul_rn(kQgeluAlpha, x));
      return mul_rn(s, add_rn(1.0f, mul_rn(mul_rn(kQgeluAlpha, x), add_rn(1.0f, -s))));
    }
    case Activation::srelu: return is_nan(x) ? x : (x > 0.0f ? add_rn(x, x) : 0.0f);
    default: return 1.0f;
  }
}

}  // namespace mxq::num
