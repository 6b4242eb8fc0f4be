// Activations fused into quantization (TransformerEngine's set) and their derivatives, with the
// transcendental functions they need, written as fixed sequences of correctly rounded fp32
// operations (mul_rn, add_rn, rcp_rn_ge1 and fma_rn, each named: no contraction left to a
// compiler, no libm). The CPU reference and the CUDA kernels run these same lines, so a fused
// quantize is bit-exact across backends; the libraries' expf/erff/tanhf differ by an ulp here
// and there between host and device.
//
// Accuracy against the exact functions (tests/cpp/test_activations.cpp measures it): exp_f
// <= 1 ulp, exp_in_range <= 1.1, tanh_f <= 3 ulp, erf_f <= 4 ulp (+-1 from |x| = 4, as in fp32),
// sigmoid_f <= 3 ulp. Measured over 2e7 points each: exp 0.93, exp_in_range 1.05, tanh 2.71, erf
// 2.39, sigmoid 2.48.
//
// Speed on the GPU is instruction issue (the fused kernels are compute-bound): every step is one
// FFMA / FMUL / FADD, polynomials are FMA Horner chains, exp, erf and tanh are branch-free, and
// silu costs ~20 SASS instructions per element, gelu ~37 (session 15: 34 and 60).
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

// c[0] x^(N-1) + ... + c[N-1], by Horner's rule, each step one fused multiply-add.
template <int N>
MXQ_HD float horner(float x, const float (&c)[N]) {
  float p = c[0];
  for (int k = 1; k < N; ++k) p = fma_rn(p, x, c[k]);
  return p;
}

// 2^n for n in [-126, 127], from the exponent bits.
MXQ_HD float pow2_normal(int n) { return bits_float(uint32_t(n + 127) << 23); }

// Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2 (plus rounding), for |x| <= 128. n comes
// from adding 1.5 * 2^23, which rounds to an integer (ties to even) and leaves n in the low bits.
// ln2_hi has 16 significant bits, so n ln2_hi and x - n ln2_hi are exact; r rounds once.
struct Ln2Reduced {
  float r;
  int n;
};
MXQ_HD Ln2Reduced reduce_ln2(float x) {
  const float magic = 12582912.0f;
  const float t = fma_rn(x, 1.44269502162933349609f, magic);
  const float n = add_rn(t, -magic);
  const float r = fma_rn(n, -1.42860676533018704e-06f, fma_rn(n, -0.693145751953125f, x));
  return {r, int(float_bits(t)) - int(float_bits(magic))};
}

// e^x: the reduction, a degree-7 Taylor polynomial for e^r (truncation 5e-9), then 2^n in two
// exact-then-rounded products so that subnormal results round once. Branch-free: x is clamped
// to [-110, 89] (e^x is 0 below -103.98 and Inf above 88.73 either way) and NaN passes through.
MXQ_HD float exp_f(float x) {
  const float xc = is_nan(x) ? 0.0f : (x > 89.0f ? 89.0f : (x < -110.0f ? -110.0f : x));
  const Ln2Reduced d = reduce_ln2(xc);
  const float c[8] = {1.984126984e-04f, 1.388888889e-03f, 8.333333333e-03f, 4.166666667e-02f,  // 1/7! .. 1/4!
                      1.666666667e-01f, 0.5f,             1.0f,             1.0f};
  const float p = horner(d.r, c);
  const int n1 = d.n >> 1, n2 = d.n - n1;  // in [-80, 65]: p 2^n1 is exact and normal
  const float e = mul_rn(mul_rn(p, pow2_normal(n1)), pow2_normal(n2));
  return is_nan(x) ? x : e;
}

// e^x - 1 for 0 <= x <= 20, accurate near 0: e^r - 1 = r + r^2 q(r) (Taylor, terms to r^8),
// then 2^n (e^r - 1) + (2^n - 1) rounded once.
MXQ_HD float expm1_nonneg(float x) {
  const Ln2Reduced d = reduce_ln2(x);
  const float c[7] = {2.480158730e-05f, 1.984126984e-04f, 1.388888889e-03f, 8.333333333e-03f,  // 1/8! .. 1/5!
                      4.166666667e-02f, 1.666666667e-01f, 0.5f};
  const float m = fma_rn(mul_rn(d.r, d.r), horner(d.r, c), d.r);
  const float s = pow2_normal(d.n);
  return fma_rn(s, m, add_rn(s, -1.0f));
}

// e^a = p 2^n for a in [-87, 87] only (the callers hold it there; outside, 2^n's bits wrap and
// the result is wrong, not clamped; NaN passes through as p): exp_f's reduction (reduce_ln2), a
// degree-6 polynomial for e^r (a minimax fit of the relative error on |r| <= 0.3467, 1.9e-9
// before the coefficients' rounding), and 2^n, normal for n in [-126, 126]. Callers round
// p 2^n (+ c) once. No clamp, no NaN select, no subnormal split: ~10 SASS instructions against
// exp_f's ~25, for the fused activations, which are bound by instruction issue.
struct ExpParts {
  float p, s;
};
MXQ_HD ExpParts exp_parts(float a) {
  const Ln2Reduced d = reduce_ln2(a);
  const float c[7] = {1.38368085e-03f, 8.37484561e-03f, 4.16682288e-02f, 1.66664198e-01f, 4.99999911e-01f, 1.0f, 1.0f};
  return {horner(d.r, c), pow2_normal(d.n)};
}
MXQ_HD float exp_in_range(float a) {
  const ExpParts e = exp_parts(a);
  return mul_rn(e.p, e.s);
}

// 1 / (1 + e^-x), with x held to [-87, 87] (1 + e^87 < 2^126 keeps rcp_rn_ge1 in its range, and
// e^-87 is normal): below -87 it is sigmoid(-87) = 1.6e-38, an absolute error under 2e-38; above
// 87 it is 1, as it is in fp32 from x = 17. 1 + e^-x is one fused multiply-add of exp_parts.
MXQ_HD float sigmoid_f(float x) {
  const float xc = x < -87.0f ? -87.0f : (x > 87.0f ? 87.0f : x);  // NaN stays NaN
  const ExpParts e = exp_parts(-xc);
  return rcp_rn_ge1(fma_rn(e.p, e.s, 1.0f));
}

// tanh |x| from m = e^(2|x|) - 1 and q = 1 / (m + 2): m q below 0.55, 1 - 2 q above, where it
// is near 1 (and m + 2 rounds). No branch for the GPU's warps to diverge on; from |x| = 10 on
// tanh is 1 in fp32, and so is the formula at 10.
MXQ_HD float tanh_f(float x) {
  const float a = abs_f(x);
  const float m = expm1_nonneg(a < 10.0f ? add_rn(a, a) : 20.0f);
  const float q = rcp_rn_ge1(add_rn(m, 2.0f));
  const float t = a < 0.55f ? mul_rn(m, q) : fma_rn(-2.0f, q, 1.0f);
  return is_nan(x) ? x : (float_bits(x) >> 31 ? -t : t);
}

// erf, branch-free (a warp's lanes on both sides of |x| = 1 no longer run two paths): below 1,
// x P(x^2) with a degree-6 minimax P (relative error 1.2e-9 of erf(x) / x); from 1 on,
// 1 - e^q(|x|), q a degree-6 minimax fit of log erfc on [1, 4] in |x| - 2.5 (weighted by erfc:
// 0.02 ulp of erf), e^q by exp_parts and 1 - p 2^n rounded once; |x| is held at 4, where erfc
// (1.5e-8) already rounds away. Both sides are computed and one is selected. Fitted by the Remez
// exchange algorithm for this library (session 15); ~33 SASS instructions against ~50.
MXQ_HD float erf_f(float x) {
  const float a = abs_f(x);
  const float cs[7] = {7.889123662607744e-05f,  -8.020842215046287e-04f, 5.189535673707724e-03f,
                       -2.6854444295167923e-02f, 1.1283600330352783e-01f, -3.761262595653534e-01f,
                       1.1283791065216064f};
  const float small = mul_rn(a, horner(mul_rn(a, a), cs));
  const float cl[7] = {1.8557391013018787e-04f, -1.559977390570566e-04f, 2.457789145410061e-03f,
                       -1.0717765428125858e-02f, -9.438853859901428e-01f, -5.352694034576416f,
                       -7.806818008422852f};
  const ExpParts e = exp_parts(horner(add_rn(a < 4.0f ? a : 4.0f, -2.5f), cl));
  const float large = fma_rn(-e.p, e.s, 1.0f);
  const float r = a < 1.0f ? small : large;
  return is_nan(x) ? x : (float_bits(x) >> 31 ? -r : r);
}

// ---- lookup tables of the fused GPU kernels for bf16 inputs (cuda/quantize/fast.cuh). A bf16
// input takes one of 65536 values, and the activations cost 20-65 instructions each; the 8192
// values with |x| in [2^-24, 2^8) (32 binades of 128 mantissas, both signs) index a table of fp32
// entries, 32 KB of shared memory, which each CTA fills by evaluating the functions above on them.
// A lookup is therefore the function's value bit for bit. The other values (zero, |x| < 2^-24,
// |x| >= 256, Inf, NaN) are evaluated.
struct Bf16Table {
  static constexpr uint32_t kFirst = 103u << 7;  // bf16 bits of 2^-24 (biased exponent 103)
  static constexpr uint32_t kHalf = 32u * 128u;  // entries per sign
  static constexpr uint32_t kSize = 2u * kHalf;
  // For the bf16 value with bits b (the low 16 bits; higher ones are ignored): its offset in the
  // table's binades, < kHalf exactly inside the table (below 2^-24 it wraps to a large value) ...
  static MXQ_HD uint32_t offset(uint32_t b) { return (b & 0x7fffu) - kFirst; }
  // ... and, inside, its entry: |x| in binade k (0..31) with mantissa m at k * 128 + m, negatives
  // kHalf on. Outside, an entry of some other value (always < kSize: a lookup never strays).
  static MXQ_HD uint32_t entry(uint32_t b) { return (offset(b) | ((b >> 3) & kHalf)) & (kSize - 1); }
  // The value of entry i < kSize.
  static MXQ_HD float value(uint32_t i) { return bits_float((((i / kHalf) << 15) | (kFirst + i % kHalf)) << 16); }

  // The same for both values of a word w of two bf16 (as the kernels load them), in fewer
  // instructions: t = pair_offsets(w) holds in each 16-bit half |b| + 0x8000 - kFirst, at most
  // 0xffff - kFirst (no carry between the halves), which lies in [0x8000, 0x8000 + kHalf) exactly
  // when b is inside the table, and whose low 12 bits are then offset(b).
  static constexpr uint32_t kPairBias = (0x8000u - kFirst) * 0x10001u;
  static MXQ_HD uint32_t pair_offsets(uint32_t w) { return (w & 0x7fff7fffu) + kPairBias; }
  // Non-zero exactly when a half of w lies outside the table (bits 12-15: the low half, 28-31: the
  // high), and so is the OR of the words' (t ^ kPairInside) masked once, for several words.
  static constexpr uint32_t kPairInside = 0x80008000u, kPairNibbles = 0xf000f000u;
  static MXQ_HD uint32_t pair_outside(uint32_t t) { return (t ^ kPairInside) & kPairNibbles; }
  // entry() of the low and the high half (inside the table; outside, an entry < kSize): the offset's
  // 12 bits and the half's sign at bit 12 (w >> 19 has no bits above it: one select of bits).
  static MXQ_HD uint32_t entry_low(uint32_t t, uint32_t w) { return (t & 0xfffu) | ((w >> 3) & kHalf); }
  static MXQ_HD uint32_t entry_high(uint32_t t, uint32_t w) { return ((t >> 16) & 0xfffu) | ((w >> 19) & ~0xfffu); }
};

// ---- the activations (forward) and their derivatives, in TransformerEngine's formulas.
constexpr float kSqrtHalf = 0.707106781186547524f;
constexpr float kSqrt2OverPi = 0.797884560802865355f;
constexpr float kGeluTanhC = 0.044715f;
constexpr float kQgeluAlpha = 1.702f;

MXQ_HD float relu_f(float x) { return is_nan(x) ? x : (x > 0.0f ? x : 0.0f); }

// GELU's tanh argument sqrt(2/pi) (x + 0.044715 x^3).
MXQ_HD float gelu_tanh_arg(float x, float x2) { return mul_rn(kSqrt2OverPi, fma_rn(mul_rn(kGeluTanhC, x2), x, x)); }

MXQ_HD float act_f(Activation a, float x) {
  switch (a) {
    case Activation::gelu: {
      const float h = mul_rn(0.5f, x);
      return fma_rn(h, erf_f(mul_rn(x, kSqrtHalf)), h);  // x/2 (1 + erf(x / sqrt 2))
    }
    case Activation::gelu_tanh: {
      const float h = mul_rn(0.5f, x);
      return fma_rn(h, tanh_f(gelu_tanh_arg(x, mul_rn(x, x))), h);
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
      const float cdf = fma_rn(0.5f, erf_f(mul_rn(x, kSqrtHalf)), 0.5f);
      const float pdf = mul_rn(exp_f(mul_rn(-0.5f, mul_rn(x, x))), 0.398942280401432678f);
      return fma_rn(x, pdf, cdf);
    }
    case Activation::gelu_tanh: {
      const float x2 = mul_rn(x, x);
      const float t = tanh_f(gelu_tanh_arg(x, x2));
      const float du = mul_rn(kSqrt2OverPi, fma_rn(3.0f * kGeluTanhC, x2, 1.0f));
      const float sech2 = fma_rn(-t, t, 1.0f);
      return fma_rn(mul_rn(0.5f, x), mul_rn(sech2, du), fma_rn(0.5f, t, 0.5f));
    }
    case Activation::silu: {
      const float s = sigmoid_f(x);
      return mul_rn(s, fma_rn(x, add_rn(1.0f, -s), 1.0f));
    }
    case Activation::relu: return is_nan(x) ? x : (x > 0.0f ? 1.0f : 0.0f);
    case Activation::qgelu: {
      const float ax = mul_rn(kQgeluAlpha, x);
      const float s = sigmoid_f(ax);
      return mul_rn(s, fma_rn(ax, add_rn(1.0f, -s), 1.0f));
    }
    case Activation::srelu: return is_nan(x) ? x : (x > 0.0f ? add_rn(x, x) : 0.0f);
    default: return 1.0f;
  }
}

// What a Bf16Table entry (and the kernels' evaluation of a value outside it) holds: f at x, or its
// derivative with dact, NaN canonicalised (a lookup then needs no NaN test of its own).
MXQ_HD float table_function(Activation f, bool dact, float x) { return canonical_nan(dact ? dact_f(f, x) : act_f(f, x)); }

}  // namespace mxq::num
