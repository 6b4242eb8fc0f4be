// Element conversions of the CPU reference, written so that compilers auto-vectorize them with
// baseline SSE2 / NEON: no branches, no per-lane variable shifts, no tables. Each one is
// bit-identical to the numerics function it stands in for (named in its comment); the CPU
// bit-identity check compares them over every possible input (all 2^32 fp32 patterns, all
// 2^16 half patterns).
#pragma once

#include "mxq/numerics/recipes.h"

namespace mxq::cpu {

using num::ElemFormat;

// cond ? a : b as bit operations. NOTE: GCC does not if-convert a ?: whose arm holds a floating-
// point operation (it may trap under the default -ftrapping-math), and then vectorizes nothing.
inline int32_t select_i32(bool cond, int32_t a, int32_t b) {
  const int32_t mask = -int32_t(cond);
  return (a & mask) | (b & ~mask);
}

// Geometry of the element formats (FORMATS.md section 1).
template <ElemFormat F>
struct Geometry;
template <>
struct Geometry<ElemFormat::e4m3fn> {
  static constexpr int ebits = 4, mbits = 3, bias = 7;
  static constexpr int32_t max_code = 0x7e;
};
template <>
struct Geometry<ElemFormat::e5m2> {
  static constexpr int ebits = 5, mbits = 2, bias = 15;
  static constexpr int32_t max_code = 0x7b;
};
template <>
struct Geometry<ElemFormat::e2m1> {
  static constexpr int ebits = 2, mbits = 1, bias = 1;
  static constexpr int32_t max_code = 0x7;
};

// num::quantize_element(x, m, F) == encode_satfinite<F>(x * m): satfinite, round to nearest
// even on the exact fp32 product, one fixed NaN code per format.
//
// In the target's normal range the code is the fp32 pattern re-biased and rounded to `mbits`
// mantissa bits (a constant shift); below it the code counts multiples of the smallest
// subnormal, which one fp32 addition of 2^(23 + log2(smallest subnormal)) rounds to nearest
// even. A carry out of the mantissa lands in the exponent field in both cases.
template <ElemFormat F>
inline uint8_t encode_satfinite(float p) {
  using G = Geometry<F>;
  constexpr int shift = 23 - G::mbits;
  constexpr uint32_t rebias = uint32_t(127 - G::bias) << 23;
  constexpr int32_t min_normal_bits = int32_t(uint32_t(128 - G::bias) << 23);         // 2^(1 - bias)
  constexpr uint32_t magic_bits = uint32_t(127 + 23 + 1 - G::bias - G::mbits) << 23;  // 2^(23 + emin_sub)
  const float magic = num::bits_float(magic_bits);
  const uint32_t bits = num::float_bits(p);
  const int32_t abs = int32_t(bits & num::kF32AbsMask);
  // normal: unused (and wrapped) when abs < min_normal_bits
  const uint32_t rebased = uint32_t(abs) - rebias;
  const int32_t normal = int32_t((rebased + ((1u << (shift - 1)) - 1u) + ((rebased >> shift) & 1u)) >> shift);
  const int32_t sub = int32_t(num::float_bits(num::bits_float(uint32_t(abs)) + magic) - magic_bits);
  int32_t mag = select_i32(abs < min_normal_bits, sub, normal);
  mag = mag > G::max_code ? G::max_code : mag;  // finite overflow and Inf saturate
  const int32_t code = mag | int32_t((bits >> (31 - G::ebits - G::mbits)) & (1u << (G::ebits + G::mbits)));
  return uint8_t(select_i32(abs > int32_t(num::kF32InfBits), num::quantized_nan_code(F), code));
}

// num::float_to_bf16.
inline uint16_t float_to_bf16(float x) {
  const uint32_t u = num::float_bits(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return uint16_t((u & num::kF32AbsMask) > num::kF32InfBits ? nan : rounded);
}

// num::float_to_fp16: round to nearest even, overflow to Inf, NaN stays a quiet NaN (payload
// kept), by the same two paths as encode_satfinite.
inline uint16_t float_to_fp16(float x) {
  constexpr uint32_t rebias = uint32_t(127 - 15) << 23;
  constexpr int32_t min_normal_bits = int32_t(uint32_t(128 - 15) << 23);  // 2^-14
  constexpr uint32_t magic_bits = uint32_t(127 - 1) << 23;                // 2^(23 - 24)
  const uint32_t u = num::float_bits(x);
  const int32_t abs = int32_t(u & num::kF32AbsMask);
  const uint32_t rebased = uint32_t(abs) - rebias;
  const int32_t normal = int32_t((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13);
  const int32_t sub =
      int32_t(num::float_bits(num::bits_float(uint32_t(abs)) + num::bits_float(magic_bits)) - magic_bits);
  int32_t mag = select_i32(abs < min_normal_bits, sub, normal);
  mag = mag > 0x7c00 ? 0x7c00 : mag;  // overflow and Inf
  const int32_t nan = int32_t(0x7e00u | ((uint32_t(abs) >> 13) & 0x3ffu));
  return uint16_t(select_i32(abs > int32_t(num::kF32InfBits), nan, mag) | int32_t((u >> 16) & 0x8000u));
}

// num::fp16_to_float.
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  const uint32_t normal = ((e + 112u) << 23) | (m << 13);
  const uint32_t special = num::kF32InfBits | (m << 13);
  const uint32_t sub = num::float_bits(float(int32_t(m)) * 0x1p-24f);
  const uint32_t mag =
      uint32_t(select_i32(e == 0x1fu, int32_t(special), select_i32(e == 0u, int32_t(sub), int32_t(normal))));
  return num::bits_float(sign | mag);
}

}  // namespace mxq::cpu
