// Per-launch set-up shared by the quantize kernels: the tensor-level factor of fp8_tensor and
// NVFP4 comes from the device amax (or a caller-given scale), and block (0, 0) publishes the
// global decode scale and writes the amax to the output, a NaN as the canonical one.
#pragma once

#include "cuda/common.cuh"
#include "cuda/quantize/params.h"

namespace mxq::cuda {

// `amax()` gives the tensor amax: the one the kernel computed (FastKey::one_launch) or the
// one in p.amax (the amax kernel's, or a caller-given one); block (0, 0) writes it to
// amax_canonical.
template <class Amax>
__device__ __forceinline__ num::ScaleRule prepare_rule_with(const TileParams& p, num::ElemFormat elem, Amax amax) {
  num::ScaleRule rule = p.rule;
  const bool tensor_scaled = rule.scheme == num::Scheme::fp8_tensor;
  if (tensor_scaled) {
    rule = num::with_tensor_factor(
        rule, p.scale_in ? *p.scale_in : num::fp8_tensor_scale(amax(), num::max_finite(elem), rule.eps, rule.pow2));
  } else if (rule.scheme == num::Scheme::nvfp4) {
    rule = num::with_tensor_factor(rule, num::nvfp4_encode_scale(num::amax_from_bits(num::abs_bits(amax()))));
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    if (p.global_scale_out) {
      *p.global_scale_out = tensor_scaled ? num::div_rn(1.0f, rule.tensor_factor)
                                          : num::nvfp4_decode_scale(rule.tensor_factor);
    }
    if (p.amax_canonical) *p.amax_canonical = num::canonical_nan(amax());
  }
  return rule;
}

// The amax in the buffer p.amax (written by the amax kernel before, or given by the caller).
__device__ __forceinline__ num::ScaleRule prepare_rule(const TileParams& p, num::ElemFormat elem) {
  return prepare_rule_with(p, elem, [&] { return *p.amax; });
}

}  // namespace mxq::cuda
