// Launchers of the quantize, amax and dequantize kernels. The instantiations are spread over
// several translation units so that they build in parallel.
#pragma once

#include <cuda_runtime.h>

#include "cuda/quantize/params.h"

namespace mxq::cuda {

// Launches the persistent tile kernel over `tiles` tiles of `tile_rows` x 128 elements. One
// translation unit per (input dtype, element format): quantize_tile_<dtype>_<elem>.cu.
template <int kDType, num::ElemFormat kElem>
void launch_quantize_tile(int tile_rows, int block_cols, int64_t tiles, int device, int sms, cudaStream_t stream,
                          const TileParams& p);

// grid.x == 0: one CTA that writes *out (small inputs); otherwise *out must be zero.
template <int kDType>
cudaError_t launch_amax(dim3 grid, cudaStream_t stream, const void* x, int64_t rows, int64_t cols, int64_t row_stride,
                 bool vec_ok, unsigned* out);

// Zeroes `bytes` bytes at p, unless noop is given and *noop (a device float) is non-zero: a
// kernel launched with PDL (aux_kernels.cu zero_kernel), not a memset node.
cudaError_t launch_zero(void* p, int64_t bytes, const float* noop, cudaStream_t stream);

template <int kOutDType>
void launch_dequantize(num::ElemFormat elem, dim3 grid, cudaStream_t stream, const DequantParams& p);

}  // namespace mxq::cuda
