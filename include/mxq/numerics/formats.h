// Element formats of FORMATS.md section 1: one parameterised minifloat codec for
// float8_e4m3fn, float8_e5m2 and float4_e2m1fn, plus float8_e8m0fnu scale codes and the
// 16-bit input/output types. Conversions round to nearest, ties to even, on the exact fp32
// input; decode is exact.
#pragma once

#include "mxq/numerics/config.h"

namespace mxq::num {

// Element formats that carry data. The numeric values are part of the JIT key and the C ABI.
enum class ElemFormat : uint8_t { e4m3fn = 0, e5m2 = 1, e2m1 = 2 };

// How a format spends its all-ones exponent field.
enum class Special : uint8_t {
  fn,    // finite-only except one NaN pattern per sign (e4m3fn: S.1111.111)
  ieee,  // Inf at mantissa 0, NaN above (e5m2)
  none,  // every code is finite (e2m1)
};

struct FormatTraits {
  int ebits, mbits, bias;
  Special special;
  uint8_t max_code;  // largest finite magnitude code
  uint8_t nan_code;  // positive NaN code (0 where the format has none)
  uint8_t inf_code;  // positive Inf code (0 where the format has none)
  float max_value;
};

MXQ_HD FormatTraits traits(ElemFormat f) {
  switch (f) {
    case ElemFormat::e4m3fn: return {4, 3, 7, Special::fn, 0x7e, 0x7f, 0, 448.0f};
    case ElemFormat::e5m2: return {5, 2, 15, Special::ieee, 0x7b, 0x7e, 0x7c, 57344.0f};
    default: return {2, 1, 1, Special::none, 0x7, 0, 0, 6.0f};
  }
}

MXQ_HD int total_bits(ElemFormat f) { return f == ElemFormat::e2m1 ? 4 : 8; }
MXQ_HD float max_finite(ElemFormat f) { return traits(f).max_value; }

enum class Saturation : uint8_t {
  satfinite,      // overflow and +-Inf -> +-max finite; NaN -> NaN where the format has one
  non_saturating  // ml_dtypes / torch .to(): overflow -> NaN (e4m3fn), Inf (e5m2), max (e2m1)
};

// Magnitude code of a finite fp32 value |x| (given as its bits) in a binary format with
// `mbits` mantissa bits and exponent `bias`, rounded once to nearest even. The significand
// is shifted right by the bits the target cannot hold (more in the target's subnormal
// range); a carry out of the mantissa lands in the exponent field, as the encoding wants.
// The result may exceed the format's range: the caller decides what overflow means.
MXQ_HD uint32_t round_magnitude(uint32_t abs, int mbits, int bias) {
  const int exp32 = int(abs >> 23);  // biased fp32 exponent
  const uint32_t sig = (abs & 0x7fffffu) | (exp32 ? 0x800000u : 0u);
  const int field = (exp32 ? exp32 : 1) - 127 + bias;  // target exponent field, unclamped
  const int lo_field = field < 1 ? 1 : field;          // <= 1: target subnormal range
  const int shift = 23 - mbits + (lo_field - field);
  if (shift > 25) return 0;  // below half the smallest subnormal
  uint32_t q = sig >> shift;
  const uint32_t rem = sig & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  // q carries the implicit bit when normal; with (lo_field - 1) << mbits it forms the field.
  return q == 0 ? 0u : (uint32_t(lo_field - 1) << mbits) + q;
}

// fp32 -> element code (low `total_bits` bits of the result; sign in the top bit).
MXQ_HD uint8_t encode(float x, ElemFormat f, Saturation sat) {
  const FormatTraits t = traits(f);
  const uint32_t bits = float_bits(x);
  const uint32_t sign = (bits >> 31) << (t.ebits + t.mbits);
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32InfBits) {  // NaN
    return uint8_t(t.special == Special::none ? 0u : (sign | t.nan_code));
  }
  const uint32_t mag = abs == kF32InfBits ? 0xffffu : round_magnitude(abs, t.mbits, t.bias);
  if (mag > t.max_code) {
    if (sat == Saturation::satfinite || t.special == Special::none) return uint8_t(sign | t.max_code);
    return uint8_t(sign | (t.special == Special::fn ? t.nan_code : t.inf_code));
  }
  return uint8_t(sign | mag);
}

// Element code -> fp32, exact.
MXQ_HD float decode(uint8_t code, ElemFormat f) {
  const FormatTraits t = traits(f);
  const int nbits = t.ebits + t.mbits;
  const uint32_t sign = uint32_t((code >> nbits) & 1u) << 31;
  const uint32_t mag = code & ((1u << nbits) - 1u);
  const uint32_t efield = mag >> t.mbits;
  const uint32_t mant = mag & ((1u << t.mbits) - 1u);
  if (t.special == Special::fn && mag == ((1u << nbits) - 1u)) return bits_float(sign | kF32NaNBits);
  if (t.special == Special::ieee && efield == (1u << t.ebits) - 1u) {
    return bits_float(sign | (mant ? kF32NaNBits : kF32InfBits));
  }
  if (efield == 0) {  // subnormal: mant * 2^(1 - bias - mbits); mant < 8 so the float is exact
    float v = float(mant) * exp2i(1 - t.bias - t.mbits);
    return bits_float(float_bits(v) | sign);
  }
  const uint32_t e32 = efield - uint32_t(t.bias) + 127u;
  return bits_float(sign | (e32 << 23) | (mant << (23 - t.mbits)));
}

// ---- FP4 packing: element 2i in bits 0-3, element 2i+1 in bits 4-7 (torch float4_e2m1fn_x2).
MXQ_HD uint8_t pack_fp4(uint8_t even, uint8_t odd) { return uint8_t((even & 0xfu) | ((odd & 0xfu) << 4)); }
MXQ_HD uint8_t unpack_fp4(uint8_t byte, int index_parity) {
  return uint8_t(index_parity ? (byte >> 4) : (byte & 0xfu));
}

// ---- float8_e8m0fnu: 2^(code - 127), code 0xff is NaN.
inline constexpr uint8_t kE8M0NaN = 0xff;

MXQ_HD float decode_e8m0(uint8_t code) {
  if (code == kE8M0NaN) return quiet_nan();
  return exp2i(int(code) - 127);
}

// fp32 -> e8m0 the way ml_dtypes (0.7) converts: round half up on the significand, subnormal
// inputs included (code 1, 2^-126, from 1.5 x 2^-127 = 0x600000 up; ml_dtypes 0.5-0.6 gave it to
// everything above 2^-127); zero, negative, NaN and overflow give NaN. Recipes never call this:
// they compute their scale codes directly (recipes.h).
MXQ_HD uint8_t encode_e8m0(float x) {
  const uint32_t bits = float_bits(x);
  if (is_nan(x) || (bits >> 31) || bits == 0) return kE8M0NaN;
  const uint32_t exp32 = bits >> 23;
  if (exp32 == 0) return bits >= 0x600000u ? 1 : 0;  // fp32 subnormal: 2^-127 or 2^-126
  const uint32_t code = exp32 + ((bits & 0x400000u) ? 1u : 0u);
  return code >= 255 ? kE8M0NaN : uint8_t(code);
}

// ---- 16-bit floating types used for inputs and dequantized outputs.
MXQ_HD float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

MXQ_HD uint16_t float_to_bf16(float x) {  // RNE; NaN stays a quiet NaN with its sign
  const uint32_t u = float_bits(x);
  if (is_nan(x)) return uint16_t((u >> 16) | 0x40u);
  const uint32_t lsb = (u >> 16) & 1u;
  return uint16_t((u + 0x7fffu + lsb) >> 16);
}

MXQ_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | kF32InfBits | (m << 13));
  if (e == 0) {
    float v = float(m) * exp2i(-24);
    return bits_float(float_bits(v) | sign);
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

MXQ_HD uint16_t float_to_fp16(float x) {  // RNE, overflow -> Inf (IEEE), NaN stays quiet NaN
  const uint32_t u = float_bits(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & kF32AbsMask;
  if (abs > kF32InfBits) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  uint32_t mag = abs == kF32InfBits ? 0x7c00u : round_magnitude(abs, 10, 15);
  if (mag >= 0x7c00u) mag = 0x7c00u;
  return uint16_t(sign | mag);
}

}  // namespace mxq::num
