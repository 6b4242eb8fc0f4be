// Host side of the Hopper tensor-memory-access (TMA) copies: 2-D tensor maps through the driver's
// cuTensorMapEncodeTiled, reached through the runtime (the library links no libcuda).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.hpp"

namespace mxq::cuda {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's encoder, or null (then no kernel that needs a tensor map takes the call).
inline EncodeTiled encode_fn() {
  static const auto fn = reinterpret_cast<EncodeTiled>(driver_entry_point("cuTensorMapEncodeTiled", 12000));
  return fn;
}

// A 2-D tensor map over rows x cols elements of `elem` bytes with row stride `stride` elements;
// boxes of box_rows x box_cols, zero-filled outside the matrix.
inline bool make_map(CUtensorMap& map, const void* base, CUtensorMapDataType type, int elem, int64_t rows, int64_t cols,
                     int64_t stride, uint32_t box_cols, uint32_t box_rows, CUtensorMapSwizzle swizzle) {
  const EncodeTiled encode = encode_fn();
  if (!encode) return false;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(stride) * cuuint64_t(elem)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t unit[2] = {1, 1};
  return encode(&map, type, 2, const_cast<void*>(base), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace mxq::cuda
