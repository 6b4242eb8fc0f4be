// Launchers of the quantize tile kernel, one translation unit per input dtype (quantize_tile_*.cu)
// so that the instantiations build in parallel.
#pragma once

#include <cuda_runtime.h>

#include "cuda/quantize/params.h"

namespace mxq::cuda {

template <int kDType>
void launch_quantize_tile(num::ElemFormat elem, int tile_rows, dim3 grid, cudaStream_t stream, const TileParams& p);

template <int kDType>
void launch_amax(dim3 grid, cudaStream_t stream, const void* x, int64_t rows, int64_t cols, int64_t row_stride,
                 bool vec_ok, unsigned* out);

template <int kOutDType>
void launch_dequantize(num::ElemFormat elem, dim3 grid, cudaStream_t stream, const DequantParams& p);

}  // namespace mxq::cuda
