// Device-side helpers shared by the mxq CUDA kernels (AOT now, NVRTC later): vector loads of
// the input types and stores of codes. Only NVRTC-compatible includes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"

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

// Loads 8 consecutive elements as fp32 with one (16-bit types) or two (fp32) 16-byte loads.
// `p` must be 16-byte aligned.
template <int kDType>
__device__ __forceinline__ void load8_vec(const typename Input<kDType>::T* p, float (&v)[8]) {
  if constexpr (kDType == 0) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p));
    const float4 b = __ldg(reinterpret_cast<const float4*>(p) + 1);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
  } else {
    const uint4 a = __ldg(reinterpret_cast<const uint4*>(p));
    const unsigned w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = Input<kDType>::to_float((unsigned short)(w[i] & 0xffffu));
      v[2 * i + 1] = Input<kDType>::to_float((unsigned short)(w[i] >> 16));
    }
  }
}

// Guarded scalar load of up to 8 elements; missing elements read as 0 (no effect on amax).
template <int kDType>
__device__ __forceinline__ void load8_scalar(const typename Input<kDType>::T* p, int n, float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = i < n ? Input<kDType>::to_float(p[i]) : 0.0f;
}

// Stores 8 element codes at logical element index `idx` of a data buffer: 8 bytes (FP8) or 4
// bytes (FP4, packed low nibble first) when `aligned`, else element by element for the first n.
template <bool kFp4>
__device__ __forceinline__ void store8_codes(uint8_t* data, int64_t idx, const uint8_t (&c)[8], int n,
                                             bool aligned) {
  if constexpr (kFp4) {
    if (aligned && n == 8) {
      unsigned w = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) w |= unsigned(num::pack_fp4(c[2 * i], c[2 * i + 1])) << (8 * i);
      *reinterpret_cast<unsigned*>(data + idx / 2) = w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; i += 2)  // constant indices keep c[] in registers
        if (i < n) data[(idx + i) / 2] = num::pack_fp4(c[i], c[i + 1]);
    }
  } else {
    if (aligned && n == 8) {
      uint2 w;
      w.x = unsigned(c[0]) | unsigned(c[1]) << 8 | unsigned(c[2]) << 16 | unsigned(c[3]) << 24;
      w.y = unsigned(c[4]) | unsigned(c[5]) << 8 | unsigned(c[6]) << 16 | unsigned(c[7]) << 24;
      *reinterpret_cast<uint2*>(data + idx) = w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (i < n) data[idx + i] = c[i];
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
