// Device-side helpers shared by the mxq CUDA kernels (AOT now, NVRTC later): vector loads of
// the input types and stores of codes. Only NVRTC-compatible includes.
#pragma once

#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {

// cp.async of 16 bytes (zero-filled when !valid), its commit group, and the wait for all but
// kPending of this thread's groups. The wait is a compiler memory barrier: the shared-memory
// reads of the data it waits for stay after it.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0));
}
// The same, always 16 bytes read.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
// Asks the L2 for `bytes` (a multiple of 16) from the 16-byte aligned global address `p`: a hint
// that loads nothing into the SM. The L2 is where every SM's writes land, so a load after
// pdl_wait still sees what the kernel before wrote there: safe before pdl_wait (sm_90).
__device__ __forceinline__ void l2_prefetch_bulk(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// fp16 -> fp32 (exact), without cuda_fp16.h (not available to NVRTC without the toolkit).
__device__ __forceinline__ float f16_bits_to_float(uint32_t h) {
  float f;
  asm("{.reg .b16 t;\n\tcvt.u16.u32 t, %1;\n\tcvt.f32.f16 %0, t;\n\t}" : "=f"(f) : "r"(h & 0xffffu));
  return f;
}

// Input element types by mxq DType value (float32 = 0, float16 = 1, bfloat16 = 2).
template <int kDType>
struct Input;
template <>
struct Input<0> {
  using T = float;
  __device__ static float to_float(T v) { return v; }
};
template <>
struct Input<1> {
  using T = unsigned short;
  __device__ static float to_float(T v) { return num::fp16_to_float(v); }
};
template <>
struct Input<2> {
  using T = unsigned short;
  __device__ static float to_float(T v) { return num::bf16_to_float(v); }
};

// 8 consecutive elements from one 16-byte chunk (16-bit types) or two (fp32), as fp32.
template <int kDType>
__device__ __forceinline__ void unpack8(const uint4& a, const uint4& b, float (&v)[8]) {
  if constexpr (kDType == 0) {
    const unsigned w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = __uint_as_float(w[i]);
  } else {
    const unsigned w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = Input<kDType>::to_float((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = Input<kDType>::to_float((unsigned short)(w[i] >> 16));
    }
  }
}

// Loads 8 consecutive elements from global memory; `p` must be 16-byte aligned.
template <int kDType>
__device__ __forceinline__ void load8_vec(const typename Input<kDType>::T* p, float (&v)[8]) {
  const uint4* q = reinterpret_cast<const uint4*>(p);
  unpack8<kDType>(__ldg(q), kDType == 0 ? __ldg(q + 1) : uint4{}, v);
}

// The same from a 16-byte aligned shared-memory chunk (32 bytes for fp32).
template <int kDType>
__device__ __forceinline__ void load8_vec_shared(const uint8_t* p, float (&v)[8]) {
  const uint4* q = reinterpret_cast<const uint4*>(p);
  unpack8<kDType>(q[0], kDType == 0 ? q[1] : uint4{}, v);
}

// Guarded scalar load of up to 8 elements; missing elements read as 0 (no effect on amax).
template <int kDType>
__device__ __forceinline__ void load8_scalar(const typename Input<kDType>::T* p, int n, float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = i < n ? Input<kDType>::to_float(p[i]) : 0.0f;
}

// ---- packed maxima. amax_words: max(|a|, |b|) per element, NaN-propagating, on the words as
// loaded (pairs of 16-bit values, or fp32); the sign bits of the result are garbage (xorsign),
// and half_bits() clears them.
template <int kDType>
__device__ __forceinline__ uint32_t amax_words(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (kDType == 2) {
    asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  } else if constexpr (kDType == 1) {
    asm("max.NaN.xorsign.abs.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  } else {
    r = num::max_u32(a & 0x7fffffffu, b & 0x7fffffffu);  // abs bits order like the values; NaN on top
  }
  return r;
}

// fp32 abs bits of half h of a packed maximum (16-bit types) or of the word itself (fp32).
template <int kDType>
__device__ __forceinline__ uint32_t half_bits(uint32_t m, int h) {
  if constexpr (kDType == 2) return (h ? (m & 0xffff0000u) : (m << 16)) & 0x7fffffffu;
  else if constexpr (kDType == 1) {
    return __float_as_uint(f16_bits_to_float(h ? m >> 16 : m)) & 0x7fffffffu;
  } else {
    return m & 0x7fffffffu;
  }
}

// Element j of 8 as fp32 (exact widening).
template <int kDType>
__device__ __forceinline__ float element(const uint32_t (&w)[kDType == 0 ? 8 : 4], int j) {
  if constexpr (kDType == 0) return __uint_as_float(w[j]);
  else if constexpr (kDType == 2) return __uint_as_float(j & 1 ? (w[j / 2] & 0xffff0000u) : (w[j / 2] << 16));
  else return f16_bits_to_float(j & 1 ? w[j / 2] >> 16 : w[j / 2]);
}

template <int kDType>
__device__ __forceinline__ void elements(const uint32_t (&w)[kDType == 0 ? 8 : 4], float (&v)[8]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = element<kDType>(w, j);
}

// fp32 abs bits of the maximum of 8 elements.
template <int kDType>
__device__ __forceinline__ uint32_t amax8_bits(const uint32_t (&w)[kDType == 0 ? 8 : 4]) {
  constexpr int kW = kDType == 0 ? 8 : 4;
  uint32_t m = w[0];
#pragma unroll
  for (int k = 1; k < kW; ++k) m = amax_words<kDType>(m, w[k]);
  if constexpr (kDType == 0) return m & 0x7fffffffu;
  else return num::max_u32(half_bits<kDType>(m, 0), half_bits<kDType>(m, 1));
}

// E2M1 satfinite codes of eight values given as four 16-bit float pairs (pair k: value 2k in the
// low half, 2k + 1 in the high half), f16 or bf16 (kBf16), packed as stored (nibble i = value i),
// for values whose rounding to that format cannot change their E2M1 code: products of a 16-bit
// input and a power of two (exact in f16 down to 2^-14, in bf16 throughout; anything smaller is
// code 0 either way; overflow gives Inf, which saturates to 6 like the fp32 value would), or fp32
// products rounded to odd in bf16 (bf16x2_round_odd_abs: then h holds magnitudes, kMagnitude,
// and `sign` the pair toward zero, whose sign bits are the products').
// Magnitude: num::kE2M1Lines' rule, a = min(|h|, 6) and the minimum of three lines, each one
// fused multiply-add onto B + offset, where B is the integer at which the format's quantum is 1
// (bf16 128, f16 1024; even, so the sum rounds to B + the line's rint): code = min(sums) - B.
// The sums' low bytes are the codes (B's own low byte is 0), gathered by byte permutes; `sign`
// holds the sign bits (15 and 31) the codes take: the input's, so that a product the hardware
// might flush keeps them. The lines run on the FMA pipe: the former binade-start arithmetic
// kept the ALU pipe (half rate on sm_90) 82% busy in the FP4 rows kernels (ncu).
// kMagnitude: h holds |values| already (bf16x2_round_odd_abs), so no |x| is taken.
template <bool kBf16, bool kMagnitude = false>
__device__ __forceinline__ uint32_t e2m1x8_from_half2(const uint32_t (&h)[4], const uint32_t (&sign)[4]) {
  auto pair = [](uint32_t x) { return x * 0x00010001u; };
  constexpr int kM = kBf16 ? 7 : 10, kBias = kBf16 ? 127 : 15;  // mantissa bits, exponent bias
  // 16-bit patterns of 2^e, of 6 (E2M1's largest value), and of B = 2^M, where the quantum is 1
  constexpr auto pow2 = [](int e) { return uint32_t(kBias + e) << kM; };
  constexpr uint32_t kSix = pow2(2) | (1u << (kM - 1)), kB = pow2(kM);
  constexpr num::E2M1Line l0 = num::kE2M1Lines[0], l1 = num::kE2M1Lines[1], l2 = num::kE2M1Lines[2];
  constexpr uint32_t kTwo = pow2(l0.slope_log2), kOne = pow2(l1.slope_log2), kHalf = pow2(l2.slope_log2);
  static_assert(kB % 256 == 0 && l0.offset % 2 == 0 && l1.offset % 2 == 0 && l2.offset % 2 == 0,
                "B + offset is even (rounding keeps the line's ties) and the sums' low bytes are the codes");
  uint32_t k[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    uint32_t a, c1, c2, c3;
    if constexpr (kBf16 && kMagnitude) {
      asm("min.bf16x2 %0, %1, %2;" : "=r"(a) : "r"(h[j]), "r"(pair(kSix)));
    } else if constexpr (kBf16) {
      asm("{.reg .b32 t;\n\tabs.bf16x2 t, %1;\n\tmin.bf16x2 %0, t, %2;\n\t}" : "=r"(a) : "r"(h[j]), "r"(pair(kSix)));
    } else {
      static_assert(!kMagnitude, "magnitudes come as bf16");
      asm("{.reg .b32 t;\n\tabs.f16x2 t, %1;\n\tmin.f16x2 %0, t, %2;\n\t}" : "=r"(a) : "r"(h[j]), "r"(pair(kSix)));
    }
    if constexpr (kBf16) {
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(c1) : "r"(a), "r"(pair(kTwo)), "r"(pair(kB + l0.offset)));
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(c2) : "r"(a), "r"(pair(kOne)), "r"(pair(kB + l1.offset)));
      asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(c3) : "r"(a), "r"(pair(kHalf)), "r"(pair(kB + l2.offset)));
      asm("{.reg .b32 t;\n\tmin.bf16x2 t, %1, %2;\n\tmin.bf16x2 %0, t, %3;\n\t}" : "=r"(k[j]) : "r"(c1), "r"(c2), "r"(c3));
    } else {
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(c1) : "r"(a), "r"(pair(kTwo)), "r"(pair(kB + l0.offset)));
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(c2) : "r"(a), "r"(pair(kOne)), "r"(pair(kB + l1.offset)));
      asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(c3) : "r"(a), "r"(pair(kHalf)), "r"(pair(kB + l2.offset)));
      asm("{.reg .b32 t;\n\tmin.f16x2 t, %1, %2;\n\tmin.f16x2 %0, t, %3;\n\t}" : "=r"(k[j]) : "r"(c1), "r"(c2), "r"(c3));
    }
  }
  // bytes 0 and 2 of k[j] are the codes of values 2j and 2j + 1: gather them as [0, 2, 1, 3] and
  // [4, 6, 5, 7], add each value's sign (prmt with bit 3 set in a selector nibble replicates the
  // selected byte's top bit: bytes 1 and 3 of sign[j] end in the signs of values 2j and 2j + 1),
  // then the even values are the low nibbles and the odd ones the high nibbles
  auto prmt = [](uint32_t x, uint32_t y, uint32_t sel) {
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(y), "r"(sel));
    return d;
  };
  const uint32_t a = prmt(k[0], k[1], 0x6240u) | (prmt(sign[0], sign[1], 0xfbd9u) & 0x08080808u);
  const uint32_t b = prmt(k[2], k[3], 0x6240u) | (prmt(sign[2], sign[3], 0xfbd9u) & 0x08080808u);
  return prmt(a, b, 0x5410u) + (prmt(a, b, 0x7632u) << 4);
}
// The same with a block's multiplier: a NaN one (a NaN block) gives codes 0.
template <bool kBf16>
__device__ __forceinline__ uint32_t e2m1x8_from_half2(const uint32_t (&h)[4], const uint32_t (&sign)[4], float m) {
  const uint32_t w = e2m1x8_from_half2<kBf16>(h, sign);
  return num::is_nan(m) ? 0u : w;
}

// A power-of-two (or NaN) fp32 multiplier as a bf16 pair: its high half twice (exact).
__device__ __forceinline__ uint32_t bf16_pair(float m) { return __byte_perm(__float_as_uint(m), 0u, 0x3232u); }
// Two fp32 values as one bf16 pair toward zero: lo's high half in the low half, hi's in the high
// half. Exact for powers of two (the multipliers of values 2k and 2k + 1 of a loaded word).
__device__ __forceinline__ uint32_t bf16_pair(float lo, float hi) {
  return __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632u);
}

// |bf16 pair| of two fp32 values (lo -> bits 0-15, hi -> bits 16-31) rounded to odd, for
// e2m1x8_from_half2<true, true>, and in `sign` the pair toward zero (its signs for the encoder):
// bf16_pair's high halves (fp32 toward zero in bf16, subnormals and Inf included), the last bit
// set where the dropped low half is not zero (min.u16x2 of the two low halves with 1 gives those
// bits where they go), the signs cleared by the same LOP3. Rounding to odd first keeps the
// information that rounding to nearest even needs when the intermediate format has at least two
// more significand bits than the final one (bf16: 8, E2M1: 2), so the codes equal
// encode_e2m1_satfinite of each value; bf16 has fp32's exponent range, so no value is outside
// it. Two byte permutes, a min and a LOP3 per pair, with the encoder's |x| in them, against the
// f16 form's conversion, four predicated bit operations and its |x| (SASS count of the NVFP4 rows
// loop: 1 fewer instruction per pair). tests/cpp/test_fast_paths.cpp checks all 2^32 non-NaN
// inputs through these steps.
__device__ __forceinline__ uint32_t bf16x2_round_odd_abs(float lo, float hi, uint32_t& sign) {
  const uint32_t a = __float_as_uint(lo), b = __float_as_uint(hi);
  uint32_t sticky;
  asm("min.u16x2 %0, %1, %2;" : "=r"(sticky) : "r"(__byte_perm(a, b, 0x5410u)), "r"(0x00010001u));
  sign = bf16_pair(lo, hi);
  return (sign | sticky) & 0x7fff7fffu;
}

// Eight codes packed as stored: FP8 in x (elements 0-3) and y (4-7), byte i = element i; FP4 in
// x, nibble i = element i. `p` holds the products x * multiplier. FP8 converts pairs with one
// cvt, and a NaN product becomes the hardware's canonical NaN 0x7F, which is
// num::quantized_nan_code. E2M1 has no NaN: the callers zero the codes of NaN blocks.
template <num::ElemFormat kElem>
__device__ __forceinline__ uint2 encode8(const float (&p)[8]) {
  uint2 out;
  if constexpr (kElem == num::ElemFormat::e2m1) {
    uint32_t h[4], sign[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = bf16x2_round_odd_abs(p[2 * k], p[2 * k + 1], sign[k]);
    out.x = e2m1x8_from_half2<true, true>(h, sign);
    out.y = 0;
  } else {
    unsigned h[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      unsigned short r;
      if constexpr (kElem == num::ElemFormat::e4m3fn) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(p[2 * k + 1]), "f"(p[2 * k]));
      } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(p[2 * k + 1]), "f"(p[2 * k]));
      }
      h[k] = r;
    }
    out.x = h[0] | (h[1] << 16);
    out.y = h[2] | (h[3] << 16);
  }
  return out;
}


// FP4 codes of 8 values with one power-of-two multiplier, through f16 pairs.
__device__ __forceinline__ uint32_t quantize8_e2m1_pow2(const float (&v)[8], float m) {
  uint32_t h[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h[k]) : "f"(num::mul_rn(v[2 * k + 1], m)), "f"(num::mul_rn(v[2 * k], m)));
  return e2m1x8_from_half2<false>(h, h, m);
}

// bf16 pairs a * b, each half rounded to nearest even.
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// The same for 8 bf16 values (4 words as loaded) without widening to fp32: x * m is exact in
// bf16 (it has fp32's exponent range and subnormals; m is 2^k, itself exact in bf16). Equal to
// quantize8_e2m1_pow2 of the widened values.
__device__ __forceinline__ uint32_t quantize8_e2m1_pow2_bf16(const uint32_t (&w)[4], float m) {
  // = bf16_pair(m), written as a shift and multiply: bf16_pair's PRMT reschedules these FP4 kernels,
  // and this form is the binary the H200 ran (session 21)
  const uint32_t m2 = (__float_as_uint(m) >> 16) * 0x00010001u;
  uint32_t h[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = bf16x2_mul(w[k], m2);
  return e2m1x8_from_half2<true>(h, w, m);
}

// FP8 codes (encode8) of 8 bf16 values (4 words as loaded) times power-of-two (or NaN)
// multipliers given as bf16 pairs (value 2k times the low half of m2[k], value 2k + 1 times its
// high half), multiplied in bf16 and widened instead of widened and multiplied in fp32, with
// the same codes: a bf16 value times 2^k is exact in bf16 as in fp32 (8 significant bits, the
// same exponent range) unless it overflows (Inf in both) or falls below 2^-126, where both
// roundings keep the sign and stay far below FP8's smallest subnormal, so both convert to a
// zero of that sign; a NaN product converts to 0x7f either way. One mul per two elements
// instead of two FMULs.
template <num::ElemFormat kElem>
__device__ __forceinline__ uint2 quantize8_fp8_pow2_bf16(const uint32_t (&w)[4], const uint32_t (&m2)[4]) {
  static_assert(kElem != num::ElemFormat::e2m1, "FP8 only");
  float p[8];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t h = bf16x2_mul(w[k], m2[k]);
    p[2 * k] = __uint_as_float(h << 16);
    p[2 * k + 1] = __uint_as_float(h & 0xffff0000u);
  }
  return encode8<kElem>(p);
}

// quantize_element of eight values with one multiplier (a NaN multiplier marks a NaN block).
template <num::ElemFormat kElem>
__device__ __forceinline__ uint2 quantize8(const float (&v)[8], float m) {
  float p[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) p[i] = num::mul_rn(v[i], m);
  uint2 out = encode8<kElem>(p);
  if constexpr (kElem == num::ElemFormat::e2m1) out.x = num::is_nan(m) ? 0u : out.x;
  return out;
}

// The nibbles of 8 E2M1 codes (nibble i = element i) whose multiplier m[i] is NaN (a NaN block):
// E2M1 has no NaN, so those codes are cleared to 0.
__device__ __forceinline__ uint32_t e2m1_nan_nibbles(const float (&m)[8]) {
  uint32_t mask = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) mask |= num::is_nan(m[i]) ? 0xfu << (4 * i) : 0u;
  return mask;
}

// The same with one multiplier per element (columnwise blocks in the input's orientation).
template <num::ElemFormat kElem>
__device__ __forceinline__ uint2 quantize8_each(const float (&v)[8], const float (&m)[8]) {
  float p[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) p[i] = num::mul_rn(v[i], m[i]);
  uint2 out = encode8<kElem>(p);
  if constexpr (kElem == num::ElemFormat::e2m1) out.x &= ~e2m1_nan_nibbles(m);
  return out;
}

// Code of element i of a quantize8 result.
template <num::ElemFormat kElem>
__device__ __forceinline__ uint8_t code_at(uint2 w, int i) {
  if constexpr (kElem == num::ElemFormat::e2m1) return uint8_t((w.x >> (4 * i)) & 0xfu);
  return uint8_t(((i < 4 ? w.x : w.y) >> (8 * (i & 3))) & 0xffu);
}

// Stores a quantize8 result at logical element index idx: one 8-byte (FP8) or 4-byte (FP4)
// store when aligned and complete, else the first n elements one byte at a time.
template <num::ElemFormat kElem>
__device__ __forceinline__ void store8_packed(uint8_t* data, int64_t idx, uint2 w, int n, bool aligned) {
  if constexpr (kElem == num::ElemFormat::e2m1) {
    if (aligned && n == 8) {
      *reinterpret_cast<unsigned*>(data + idx / 2) = w.x;
    } else {
#pragma unroll
      for (int i = 0; i < 8; i += 2)
        if (i < n) data[(idx + i) / 2] = uint8_t((w.x >> (4 * i)) & 0xffu);
    }
  } else {
    if (aligned && n == 8) {
      *reinterpret_cast<uint2*>(data + idx) = w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (i < n) data[idx + i] = code_at<kElem>(w, i);
    }
  }
}

// Stores one block scale: an fp32 word, or one byte (1-byte scales and packed_ue8m0).
__device__ __forceinline__ void store_scale(void* scales, int64_t off, bool fp32_word, uint32_t stored) {
  if (fp32_word) static_cast<uint32_t*>(scales)[off] = stored;
  else static_cast<uint8_t*>(scales)[off] = uint8_t(stored);
}

__device__ __forceinline__ void put_scale(void* scales, const num::ScaleGeometry& g, bool fp32, int64_t i, int64_t j,
                                          uint32_t stored) {
  store_scale(scales, num::scale_offset(g, i, j), fp32 && g.layout != num::ScaleLayout::packed_ue8m0, stored);
}

template <num::ScaleLayout L>
__device__ __forceinline__ void put_scale_for(void* scales, const num::ScaleGeometry& g, bool fp32, int64_t i,
                                              int64_t j, uint32_t stored) {
  store_scale(scales, num::scale_offset_for<L>(g, i, j), fp32 && L != num::ScaleLayout::packed_ue8m0, stored);
}

}  // namespace mxq::cuda
