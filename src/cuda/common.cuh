// Device-side helpers shared by the mxq CUDA kernels (AOT now, NVRTC later): vector loads of
// the input types and stores of codes. Only NVRTC-compatible includes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {

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

// Eight codes packed as stored: FP8 in x (elements 0-3) and y (4-7), byte i = element i; FP4 in
// x, nibble i = element i. Equal to num::quantize_element per element: the FP8 path converts
// pairs with one cvt, and a NaN product (only in a NaN block) becomes the hardware's canonical
// NaN 0x7F, which is num::quantized_nan_code.
template <num::ElemFormat kElem>
__device__ __forceinline__ uint2 quantize8(const float (&v)[8], float m) {
  uint2 out;
  if constexpr (kElem == num::ElemFormat::e2m1) {
    unsigned w = 0;
    const bool nan_block = num::is_nan(m);
#pragma unroll
    for (int i = 0; i < 8; ++i) w |= unsigned(num::encode_e2m1_satfinite(num::mul_rn(v[i], m))) << (4 * i);
    out.x = nan_block ? 0u : w;
    out.y = 0;
  } else {
    unsigned h[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float lo = num::mul_rn(v[2 * k], m), hi = num::mul_rn(v[2 * k + 1], m);
      unsigned short r;
      if constexpr (kElem == num::ElemFormat::e4m3fn) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
      } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
      }
      h[k] = r;
    }
    out.x = h[0] | (h[1] << 16);
    out.y = h[2] | (h[3] << 16);
  }
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

__device__ __forceinline__ void put_scale(void* scales, const num::ScaleGeometry& g, bool fp32, int64_t i, int64_t j,
                                          uint32_t stored) {
  const int64_t off = num::scale_offset(g, i, j);
  if (fp32 && g.layout != num::ScaleLayout::packed_ue8m0) {
    static_cast<uint32_t*>(scales)[off] = stored;
  } else {
    static_cast<uint8_t*>(scales)[off] = uint8_t(stored);
  }
}

}  // namespace mxq::cuda
