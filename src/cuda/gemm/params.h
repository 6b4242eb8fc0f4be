// Parameters of the CUDA GEMM kernels: D[M, N] = alpha * A[M, K] . B[N, K]^T (+ C) (+ bias).
// A and B are K-major codes: for the tensor-core kernels float8_e4m3fn with fp8_block scales
// (1 x 128 for A; 1 x 128 or 128 x 128 for B) in any layout quantize() writes; the generic kernel
// also takes the MX, NVFP4 and per-tensor FP8 families (GemmFamily).
#pragma once

#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {

struct GemmOperand {
  const uint8_t* codes;   // rows x k, row stride k (FP4: k / 2 bytes, the generic kernel only)
  const void* scales;     // in `geom`'s layout (per-tensor FP8: none)
  num::ScaleGeometry geom;
  int block_rows;         // 1 or 128 (the scale of row r is at block row r / block_rows)
  bool fp32_scales;       // fp32 words, else bytes: UE8M0 (packed_ue8m0: 4 per int32) or UE4M3
};

// The operands' family beyond fp8_block E4M3 (mxq/api.hpp, gemm), which the generic kernel
// decodes: the scheme (both operands'), each one's element format, the K extent of a block scale
// and the global scales (NVFP4's and per-tensor FP8's decode multipliers; null for the others).
struct GemmFamily {
  num::Scheme scheme = num::Scheme::fp8_block;
  num::ElemFormat a_elem = num::ElemFormat::e4m3fn, b_elem = num::ElemFormat::e4m3fn;
  int block_k = 128;
  const float* a_global = nullptr;
  const float* b_global = nullptr;
};

// The decode multiplier of the block holding (row, K block kb) of an operand of any family (1
// for per-tensor FP8, whose scale is its global one).
MXQ_HD float gemm_family_scale(const GemmOperand& o, num::Scheme scheme, int64_t row, int64_t kb) {
  if (scheme == num::Scheme::fp8_tensor) return 1.0f;
  return num::block_decode_scale(scheme, !o.fp32_scales,
                                 num::stored_scale_at(o.scales, o.geom, o.fp32_scales, row / o.block_rows, kb));
}

// The decode multiplier of the block holding (row, K block kb) of an fp8_block operand.
MXQ_HD float gemm_operand_scale(const GemmOperand& o, int64_t row, int64_t kb) {
  return gemm_family_scale(o, num::Scheme::fp8_block, row, kb);
}

// The decode multiplier stored at `off` in o's scales. fp8_block layouts are separable
// (num::scale_offset_separable): off = scale_offset(geom, block row, 0) + scale_offset(geom, 0, kb).
MXQ_HD float gemm_scale_at(const GemmOperand& o, int64_t off) {
  const uint32_t stored = o.fp32_scales ? static_cast<const uint32_t*>(o.scales)[off] : static_cast<const uint8_t*>(o.scales)[off];
  return num::block_decode_scale(num::Scheme::fp8_block, !o.fp32_scales, stored);
}

struct GemmParams {
  GemmOperand a, b;
  int64_t m, n, k;
  float alpha;
  const float* c;  // fp32 [m, n] with row stride c_stride, or null
  int64_t c_stride;
  const float* bias;  // fp32 [n], or null
  void* d;
  int64_t d_stride;
  bool d_bf16;
  bool d_tma;  // the wgmma kernel stores D through its tensor map (16-byte aligned D and rows)
  GemmFamily family;  // the generic kernel's decode (the tensor-core kernels take fp8_block E4M3 only)
};

// D[m, n] from the fp32 dot product: alpha * sum (+ C[m, n]) (+ bias[n]), stored as bf16 (round
// to nearest even) or fp32. Every CUDA GEMM kernel's epilogue.
MXQ_HD float gemm_scaled(const GemmParams& p, float sum) { return p.alpha * sum; }  // without C and bias
MXQ_HD float gemm_output(const GemmParams& p, float sum, int64_t m, int64_t n) {
  float out = gemm_scaled(p, sum);
  if (p.c) out += p.c[m * p.c_stride + n];
  if (p.bias) out += p.bias[n];
  return out;
}
MXQ_HD void gemm_store(const GemmParams& p, int64_t m, int64_t n, float out) {
  if (p.d_bf16) static_cast<uint16_t*>(p.d)[m * p.d_stride + n] = num::float_to_bf16(out);
  else static_cast<float*>(p.d)[m * p.d_stride + n] = out;
}

}  // namespace mxq::cuda
