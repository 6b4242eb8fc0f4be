// mxq numerics: portability layer shared by host C++, nvcc device code and NVRTC.
//
// Only headers that NVRTC can compile may be included from include/mxq/numerics/: no <cmath>,
// no <vector>. Everything here is integer or IEEE fp32 arithmetic written out explicitly, so
// that every backend computes the same bits.
#pragma once

#if defined(__CUDACC_RTC__)
// NVRTC provides no C library; the fixed-width types are all we need.
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef signed char int8_t;
typedef int int32_t;
typedef long long int64_t;
#else
#include <cstdint>
#include <cstring>
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MXQ_HD __host__ __device__ __forceinline__
#else
#define MXQ_HD inline
#endif

namespace mxq::num {

MXQ_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MXQ_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

inline constexpr uint32_t kF32AbsMask = 0x7fffffffu;
inline constexpr uint32_t kF32InfBits = 0x7f800000u;
inline constexpr uint32_t kF32MaxBits = 0x7f7fffffu;  // FLT_MAX
inline constexpr uint32_t kF32NaNBits = 0x7fc00000u;

MXQ_HD bool is_nan(float x) { return (float_bits(x) & kF32AbsMask) > kF32InfBits; }
MXQ_HD bool is_inf(float x) { return (float_bits(x) & kF32AbsMask) == kF32InfBits; }
MXQ_HD bool is_finite(float x) { return (float_bits(x) & kF32AbsMask) < kF32InfBits; }
MXQ_HD float abs_f(float x) { return bits_float(float_bits(x) & kF32AbsMask); }
MXQ_HD float flt_max() { return bits_float(kF32MaxBits); }
MXQ_HD float quiet_nan() { return bits_float(kF32NaNBits); }
// Any NaN as the canonical quiet NaN. A NaN that arithmetic makes (Inf * 0, NaN inputs) has a
// sign and payload that differ between x86 and the GPU, and the element encoders keep a NaN's
// sign: values a backend computes (dequantized values, the fused activations) are canonicalised
// before they are stored or quantized, so every backend writes the same bits.
MXQ_HD float canonical_nan(float x) { return is_nan(x) ? quiet_nan() : x; }

// C99 fminf semantics (a NaN operand is ignored), written out so host and device agree.
MXQ_HD float fmin_ignore_nan(float a, float b) {
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  return a < b ? a : b;
}

// max(|a|, |b|) with NaN propagation: the running block maximum of FORMATS.md section 2.
// Block maxima are reduced as integers: |x|'s bits order like its value, and every NaN pattern
// sorts above Inf, so an integer max propagates NaN. amax_from_bits() canonicalises the NaN.
MXQ_HD uint32_t abs_bits(float x) { return float_bits(x) & kF32AbsMask; }
MXQ_HD uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }
MXQ_HD float amax_from_bits(uint32_t m) { return m > kF32InfBits ? quiet_nan() : bits_float(m); }

MXQ_HD float amax_combine(float acc, float x) {
  return amax_from_bits(max_u32(abs_bits(acc), abs_bits(x)));
}

// 2^e as an fp32 value for e in [-149, 127], built from bits (exact, no libm).
MXQ_HD float exp2i(int e) {
  if (e >= -126) return bits_float(uint32_t(e + 127) << 23);
  return bits_float(1u << (e + 149));
}

}  // namespace mxq::num

namespace mxq::num {
// Correctly rounded fp32 operations that the compiler may not contract into FMAs or replace
// with approximations, on any backend (FORMATS.md section 2: IEEE fp32, no fast-math).
MXQ_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;  // a product alone cannot be contracted; add_rn guards the add side
#endif
}
MXQ_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
// 1 / x, correctly rounded (the GPU's reciprocal is cheaper than its division).
MXQ_HD float rcp_rn(float x) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(x);
#else
  return 1.0f / x;
#endif
}
// a * b + c rounded once (IEEE fusedMultiplyAdd): the GPU's FFMA, the host's fmaf (glibc's is
// correctly rounded with or without FMA hardware). Written out where a formula wants it, never
// left to the compiler's contraction.
MXQ_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
// 1 / d correctly rounded, for 1 <= d <= 2^126 only (the caller guarantees it). On the GPU this
// is __frcp_rn's fast path without its range check and slow-path branch: MUFU.RCP and one
// Newton step in FMAs, the steps __frcp_rn itself takes for every such d (tests/gpu/
// test_numerics_gpu.cu compares the two on every fp32 value in the range).
MXQ_HD float rcp_rn_ge1(float d) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
#else
  return 1.0f / d;
#endif
}
MXQ_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  volatile float r = a + b;  // volatile: forbids contracting a * b + c into an FMA
  return r;
#endif
}
}  // namespace mxq::num
