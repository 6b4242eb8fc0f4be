// Scaling rules of FORMATS.md section 2, one copy each. A recipe turns a block maximum into
// (a) the scale that is stored and (b) the multiplier applied to every element before it is
// converted with satfinite; quantize_element() is that last step for all recipes.
#pragma once

#include "mxq/numerics/config.h"
#include "mxq/numerics/formats.h"

namespace mxq::num {

enum class Scheme : uint8_t { fp8_tensor = 0, fp8_block = 1, mx = 2, nvfp4 = 3 };
enum class MxRounding : uint8_t { rceil = 0, floor = 1 };

// The NaN code every quantize writes: one fixed code per format, because backends disagree
// on the sign of a NaN product (x86 keeps the NaN operand's sign, the GPU gives a canonical
// positive NaN). E2M1 has no NaN: its NaN blocks carry the NaN in the scale and code 0 here.
// The FP8 code is the one the conversion instruction writes for NaN (0x7F, a NaN in both
// formats), so that the GPU needs no per-element NaN test.
MXQ_HD uint8_t quantized_nan_code(ElemFormat f) { return f == ElemFormat::e2m1 ? 0x0 : 0x7f; }

// E2M1 satfinite for non-NaN x, without branches: |x| is clamped to 6 and rounded to nearest
// even on the quantum of its binade in E2M1 (0.5 below 2, 1 below 4, 2 up to 6) by adding a
// magic power of two whose fp32 ulp is that quantum: 2^22 times the binade's start b (1 below 2,
// then 2 or 4), read off the exponent bits of max(|x|, 1). The number of ulps above the magic
// number plus the binade's first code (2 log2 b, from the same exponent bits) is the E2M1 code.
// Equal to encode(x, e2m1, satfinite) for every non-NaN x (tests/cpp/test_fast_paths.cpp checks
// all 2^32 inputs).
MXQ_HD uint8_t encode_e2m1_satfinite(float x) {
  float a = abs_f(x);
  a = a < 6.0f ? a : 6.0f;
  const uint32_t b = float_bits(a < 1.0f ? 1.0f : a) & 0x7f800000u;  // 1, 2 or 4 as fp32 bits
  const uint32_t magic = b + (22u << 23);                             // 2^22 b
  // ulps above magic, + 2 log2 b = (b >> 22) - 254; no product: nothing to contract
  const uint32_t code = float_bits(add_rn(a, bits_float(magic))) - magic + (b >> 22) - 254u;
  return uint8_t(code | ((float_bits(x) >> 28) & 0x8u));
}

// E2M1 magnitude codes as the minimum of three lines, the form the GPU's FP4 encoder computes
// (cuda/common.cuh e2m1x8_from_half2, one fused multiply-add per line): with a = min(|x|, 6),
// code = min over the lines of rint(2^slope_log2 * a) + offset, rint rounding to nearest even.
// Line k rounds a to E2M1's quantum in one binade (0.5 below 2, 1 below 4, 2 up to 6) and maps
// it onto that binade's codes; E2M1's code is a concave piecewise-linear function of the value,
// so elsewhere each line lies on or above it (tests/cpp/test_fast_paths.cpp checks the rule
// against encode_e2m1_satfinite on all 2^32 fp32 values).
struct E2M1Line {
  int slope_log2, offset;
};
inline constexpr E2M1Line kE2M1Lines[3] = {{1, 0}, {0, 2}, {-1, 4}};

// encode(x, f, satfinite) for non-NaN x, through the conversion instruction where there is one.
MXQ_HD uint8_t encode_satfinite_finite(float x, ElemFormat f) {
  if (f == ElemFormat::e2m1) return encode_e2m1_satfinite(x);
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
  // NOTE: cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (PTX ISA, sm_89+) rounds the exact fp32 value to
  // nearest even and saturates finite overflow and Inf, i.e. encode(x, f, satfinite) for
  // non-NaN x; the GPU tests hold it to the CPU reference bit for bit.
  unsigned short r;
  if (f == ElemFormat::e4m3fn) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  }
  return uint8_t(r & 0xffu);
#else
  return encode(x, f, Saturation::satfinite);
#endif
}

MXQ_HD uint8_t quantize_element(float x, float multiplier, ElemFormat f) {
  const float p = mul_rn(x, multiplier);
  return is_nan(p) ? quantized_nan_code(f) : encode_satfinite_finite(p, f);
}

// An infinite block maximum is treated as FLT_MAX when a scale is computed.
MXQ_HD float finite_amax(float amax) { return is_inf(amax) ? flt_max() : amax; }

// ---- 2.1 fp8_tensor: returns the encode scale; the stored decode scale is 1 / scale.
// amax 0, NaN or Inf gives scale 1 (TransformerEngine compute_scale_from_amax). A finite amax so
// small that fmax / amax overflows gives FLT_MAX (same source), before the optional pow2.
MXQ_HD float fp8_tensor_scale(float amax, float fmax, float eps, bool pow2) {
  if (!is_finite(amax) || !(amax > 0.0f)) return 1.0f;
  const float a = amax > eps ? amax : eps;
  float scale = div_rn(fmax, a);
  if (is_inf(scale)) scale = flt_max();
  if (pow2) scale = bits_float(float_bits(scale) & 0xff800000u);
  return scale;
}

// ---- 2.2 fp8_block (also DeepSeek V4 FP4 activations with fmax 6): returns the decode scale s.
// Rules beyond FORMATS.md, pinned by tests: a quotient that underflows to 0 gives s = 1 (as for
// amax 0 with eps 0); pow2 scales are at least 2^-127 so that UE8M0 can hold them.
MXQ_HD float fp8_block_scale(float amax, float fmax, float eps, bool pow2) {
  if (is_nan(amax)) return quiet_nan();
  float a = finite_amax(amax);
  if (a < eps) a = eps;
  if (a == 0.0f) return 1.0f;
  float s = div_rn(a, fmax);
  if (s == 0.0f) return 1.0f;
  if (pow2) {
    const uint32_t b = float_bits(s);
    if (b >> 23) {  // normal: 2^ceil(log2 s) = next exponent if any mantissa bit is set
      s = bits_float((b & 0x7fffffu) ? ((b & 0xff800000u) + 0x800000u) : b);
    } else {  // subnormal: clamp to 2^-127, the smallest UE8M0 value
      s = exp2i(-127);
      if (b > 0x400000u) s = exp2i(-126);
    }
  }
  return s;
}

// Element multiplier for a decode scale s: min(1 / s, FLT_MAX); NaN stays NaN.
MXQ_HD float reciprocal_multiplier(float s) {
  if (is_nan(s)) return s;
  const float r = rcp_rn(s);
  return is_inf(r) ? flt_max() : r;
}

// UE8M0 code of a pow2 decode scale (exact); NaN -> 0xff.
MXQ_HD uint8_t pow2_scale_to_e8m0(float s) {
  if (is_nan(s)) return kE8M0NaN;
  const uint32_t b = float_bits(s);
  return uint8_t(b >> 23);  // 2^-127 (0x400000) has field 0, which is code 0
}

// ---- 2.3 MX: UE8M0 block scale code from the block maximum.
MXQ_HD int mx_emax(ElemFormat f) {
  return f == ElemFormat::e4m3fn ? 8 : (f == ElemFormat::e5m2 ? 15 : 2);
}

// 1 / fmax, rounded: rceil's v = amax / fmax is computed as amax * mx_inv_fmax(f). For fmax 448,
// 57344 and 6 both give the same code for every fp32 amax (FORMATS.md 2.3;
// tests/cpp/test_rceil_exhaustive.cpp proves it).
MXQ_HD float mx_inv_fmax(ElemFormat f) {
  return f == ElemFormat::e4m3fn ? (1.0f / 448.0f) : (f == ElemFormat::e5m2 ? (1.0f / 57344.0f) : (1.0f / 6.0f));
}

MXQ_HD uint8_t mx_scale_code(float amax, ElemFormat f, MxRounding rounding) {
  if (is_nan(amax)) return kE8M0NaN;
  const float a = finite_amax(amax);
  if (a == 0.0f) return 0;
  if (rounding == MxRounding::rceil) {
    const uint32_t v = float_bits(mul_rn(a, mx_inv_fmax(f)));
    const uint32_t e = v >> 23;
    if (e == 0) return v > 0x400000u ? 1 : 0;
    const uint32_t code = e + ((v & 0x7fffffu) ? 1u : 0u);
    return uint8_t(code > 254u ? 254u : code);
  }
  const uint32_t b = float_bits(a);
  int floor_log2;
  if (b >> 23) {
    floor_log2 = int(b >> 23) - 127;
  } else {
    int p = 22;
    while (!((b >> p) & 1u)) --p;
    floor_log2 = p - 149;
  }
  const int code = floor_log2 - mx_emax(f) + 127;
  return uint8_t(code < 0 ? 0 : (code > 254 ? 254 : code));
}

// 2^(127 - code): an exact power-of-two multiplier; NaN for the NaN code.
MXQ_HD float mx_multiplier(uint8_t code) {
  return code == kE8M0NaN ? quiet_nan() : exp2i(127 - int(code));
}

// ---- 2.4 NVFP4 (TransformerEngine core_nvfp4.cuh).
inline constexpr float kNvfp4Range = 448.0f * 6.0f;
inline constexpr float kOneSixth = 1.0f / 6.0f;
inline constexpr uint8_t kUE4M3NaN = 0x7f;

// S_enc from the global amax. fminf semantics: a NaN quotient becomes FLT_MAX.
MXQ_HD float nvfp4_encode_scale(float global_amax) {
  const float s = fmin_ignore_nan(div_rn(kNvfp4Range, global_amax), flt_max());
  return (global_amax == 0.0f || s == 0.0f) ? 1.0f : s;
}

// The global decode scale stored with the tensor (ModelOpt's weight_scale_2).
MXQ_HD float nvfp4_decode_scale(float s_enc) { return rcp_rn(s_enc); }

// The value whose e4m3 satfinite code is the block's scale: amax_b * (S_enc / 6), for a block
// maximum already made finite (finite_amax; a NaN stays NaN). The GPU's rows kernels encode it
// with the hardware's cvt.
MXQ_HD float nvfp4_block_scale_value(float finite_amax_b, float s_enc) {
  return mul_rn(finite_amax_b, mul_rn(s_enc, kOneSixth));
}
MXQ_HD uint8_t nvfp4_block_scale_code(float amax, float s_enc) {
  if (is_nan(amax)) return kUE4M3NaN;
  return encode_satfinite_finite(nvfp4_block_scale_value(finite_amax(amax), s_enc), ElemFormat::e4m3fn);
}

// r = min(1 / (S_dec_b * (1 / S_enc)), FLT_MAX) with s_dec = 1 / S_enc precomputed; a NaN block
// gives NaN so that its elements get code 0.
MXQ_HD float nvfp4_multiplier(uint8_t scale_code, float s_dec) {
  if ((scale_code & 0x7fu) == kUE4M3NaN) return quiet_nan();
  const float d = mul_rn(decode(scale_code, ElemFormat::e4m3fn), s_dec);
  return fmin_ignore_nan(rcp_rn(d), flt_max());
}

}  // namespace mxq::num

namespace mxq::num {

// Everything a kernel needs to turn a block maximum into its stored scale and its element
// multiplier. Plain data so that it can be a kernel argument or a JIT constant.
struct ScaleRule {
  Scheme scheme;
  ElemFormat elem;
  MxRounding rounding;
  bool pow2;
  bool ue8m0_out;  // fp8_block: store the UE8M0 code of the pow2 scale instead of fp32
  float eps;
  float tensor_factor;  // fp8_tensor: the encode scale; nvfp4: S_enc; unused otherwise
  float tensor_decode;  // nvfp4: 1 / S_enc (set by with_tensor_factor)
};

MXQ_HD ScaleRule with_tensor_factor(ScaleRule r, float factor) {
  r.tensor_factor = factor;
  r.tensor_decode = r.scheme == Scheme::nvfp4 ? nvfp4_decode_scale(factor) : 0.0f;
  return r;
}

struct BlockScale {
  float multiplier;  // applied to each element before the satfinite conversion
  uint32_t stored;   // fp32 bits (fp8_block fp32) or a 1-byte code; unused for fp8_tensor
};

// mx_scale_code and mx_multiplier of a block maximum given as the fp32 bits of |amax| (sign
// clear; NaN above kF32InfBits), without branches: the specialised kernels' form.
// tests/cpp/test_fast_paths.cpp holds it equal to block_scale_for<Scheme::mx> on every input.
// a = min(m, FLT_MAX) is finite_amax; rceil's code e + (mantissa != 0) of v = a * (1 / fmax) is
// (v + 0x7fffff) >> 23, which is also 1 for a subnormal v above 0x400000 and is 0 below it;
// floor's is max(e(a) - emax, 0) (a subnormal or zero a has e 0). Both are at most 253 (v < 2^126
// for fmax >= 4; e(a) <= 254 and emax >= 2), so mx_scale_code's clamp to 254 never applies and
// the multiplier 2^(127 - code) is the normal (254 - code) << 23. In the MXFP8 row+col kernel (4
// block scales per thread and tile) it took 1199 -> 1080 SASS instructions per tile (session 21).
MXQ_HD BlockScale mx_block_scale_bits(uint32_t m, ElemFormat f, MxRounding rounding) {
  const uint32_t a = m < kF32MaxBits ? m : kF32MaxBits;
  uint32_t code;
  if (rounding == MxRounding::rceil) {
    const uint32_t v = float_bits(mul_rn(bits_float(a), mx_inv_fmax(f)));
    code = v > 0x400000u ? (v + 0x7fffffu) >> 23 : 0u;
  } else {
    const int e = int(a >> 23) - mx_emax(f);
    code = uint32_t(e < 0 ? 0 : e);
  }
  const bool nan = m > kF32InfBits;
  return {nan ? quiet_nan() : bits_float((254u - code) << 23), nan ? uint32_t(kE8M0NaN) : code};
}

// block_scale_for<Scheme::fp8_block> with pow2 scales (fp8_block_scale, reciprocal_multiplier and
// the stored form) of a block maximum given as the fp32 bits of |amax| (sign clear; NaN above
// kF32InfBits), with no division or reciprocal where the quotient is normal: the specialised
// kernels' form. tests/cpp/test_fast_paths.cpp holds it equal on every input.
// With a = 2^(ea - 127) Ma and fmax = 2^(ef - 127) Mf (Ma, Mf in [1, 2), normal), a / fmax =
// 2^(ea - ef) Ma / Mf. Where Ma <= Mf the quotient lies in (2^(ea - ef - 1), 2^(ea - ef)], and so
// does its rounding (2 Ma / Mf exceeds 1 + 2^-24), whose next power of two is 2^(ea - ef). Where
// Ma > Mf, Ma is at least Mf + 2^-23, so the quotient exceeds 2^(ea - ef) by more than half an ulp:
// it rounds above 2^(ea - ef), to at most 2^(ea - ef + 1), its next power of two. The biased
// exponent field of s is then ea - ef + 127 + (Ma > Mf), at least 2 where the fast path is taken
// (ea - ef + 127 >= 2: s normal) and at most 253 (ea <= 254, fmax >= 4 gives ef >= 129), so 1 / s
// is the normal 2^-k, field 254 - that. Everything else (NaN, zero, tiny maxima) takes the
// reference's arithmetic.
MXQ_HD BlockScale fp8_block_pow2_scale_bits(uint32_t m, float fmax, float eps, bool ue8m0_out) {
  const uint32_t f = float_bits(fmax), a0 = m < kF32MaxBits ? m : kF32MaxBits;  // finite_amax
  const uint32_t a = bits_float(a0) < eps ? float_bits(eps) : a0;
  const int ea = int(a >> 23), ef = int(f >> 23);
  if (m > kF32InfBits || ea == 0 || ea - ef + 127 < 2) {
    const float s = fp8_block_scale(bits_float(m), fmax, eps, true);
    return {reciprocal_multiplier(s), ue8m0_out ? uint32_t(pow2_scale_to_e8m0(s)) : float_bits(s)};
  }
  const uint32_t field = uint32_t(ea - ef + 127) + ((a & 0x7fffffu) > (f & 0x7fffffu) ? 1u : 0u);
  return {bits_float((254u - field) << 23), ue8m0_out ? field : field << 23};
}

// The scheme as a template argument: specialised kernels call this directly, so that only
// their scheme's arithmetic is compiled in.
template <Scheme S>
MXQ_HD BlockScale block_scale_for(const ScaleRule& r, float amax) {
  if constexpr (S == Scheme::fp8_tensor) {
    return {r.tensor_factor, 0u};
  } else if constexpr (S == Scheme::fp8_block) {
    const float s = fp8_block_scale(amax, max_finite(r.elem), r.eps, r.pow2);
    return {reciprocal_multiplier(s), r.ue8m0_out ? uint32_t(pow2_scale_to_e8m0(s)) : float_bits(s)};
  } else if constexpr (S == Scheme::mx) {
    const uint8_t code = mx_scale_code(amax, r.elem, r.rounding);
    return {mx_multiplier(code), code};
  } else {
    const uint8_t code = nvfp4_block_scale_code(amax, r.tensor_factor);
    return {nvfp4_multiplier(code, r.tensor_decode), code};
  }
}

MXQ_HD BlockScale block_scale(const ScaleRule& r, float amax) {
  switch (r.scheme) {
    case Scheme::fp8_tensor: return block_scale_for<Scheme::fp8_tensor>(r, amax);
    case Scheme::fp8_block: return block_scale_for<Scheme::fp8_block>(r, amax);
    case Scheme::mx: return block_scale_for<Scheme::mx>(r, amax);
    default: return block_scale_for<Scheme::nvfp4>(r, amax);
  }
}

// Dequantized value: (q * block) * global in fp32 (FORMATS.md section 4). A NaN result is the
// canonical quiet NaN on every backend (the GPU's NaN products carry another payload).
MXQ_HD float dequantize_value(uint8_t code, ElemFormat f, float block, float global) {
  return canonical_nan(mul_rn(mul_rn(decode(code, f), block), global));
}

// Decode multiplier of one stored block scale (dequantize: x = q * block * global).
MXQ_HD float block_decode_scale(Scheme scheme, bool ue8m0_or_fp32_bits, uint32_t stored) {
  switch (scheme) {
    case Scheme::fp8_tensor: return 1.0f;
    case Scheme::fp8_block: return ue8m0_or_fp32_bits ? decode_e8m0(uint8_t(stored)) : bits_float(stored);
    case Scheme::mx: return decode_e8m0(uint8_t(stored));
    default: return decode(uint8_t(stored), ElemFormat::e4m3fn);
  }
}

}  // namespace mxq::num
