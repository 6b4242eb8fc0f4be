// Instantiates the launchers for the input dtype MXQ_INPUT_DTYPE (see quantize_tile_launch.cuh).
#include "cuda/quantize/quantize_tile.cuh"
#include "cuda/quantize/quantize_tile_launch.cuh"

namespace mxq::cuda {

template <>
void launch_quantize_tile<MXQ_INPUT_DTYPE>(num::ElemFormat elem, int tile_rows, dim3 grid, cudaStream_t stream,
                                           const TileParams& p) {
  auto go = [&](auto kernel) { kernel<<<grid, 256, 0, stream>>>(p); };
  using E = num::ElemFormat;
#define MXQ_TILE(E_, TR_) go(quantize_tile_kernel<MXQ_INPUT_DTYPE, E_, TR_>)
#define MXQ_TILE_ROWS(E_)                  \
  switch (tile_rows) {                     \
    case 16: MXQ_TILE(E_, 16); break;      \
    case 32: MXQ_TILE(E_, 32); break;      \
    default: MXQ_TILE(E_, 128); break;     \
  }
  switch (elem) {
    case E::e4m3fn: MXQ_TILE_ROWS(E::e4m3fn); break;
    case E::e5m2: MXQ_TILE_ROWS(E::e5m2); break;
    default: MXQ_TILE_ROWS(E::e2m1); break;
  }
#undef MXQ_TILE_ROWS
#undef MXQ_TILE
}

template <>
void launch_amax<MXQ_INPUT_DTYPE>(dim3 grid, cudaStream_t stream, const void* x, int64_t rows, int64_t cols,
                                  int64_t row_stride, bool vec_ok, unsigned* out) {
  amax_kernel<MXQ_INPUT_DTYPE><<<grid, 256, 0, stream>>>(x, rows, cols, row_stride, vec_ok, out);
}

// The output dtype of dequantize shares the 0/1/2 numbering.
template <>
void launch_dequantize<MXQ_INPUT_DTYPE>(num::ElemFormat elem, dim3 grid, cudaStream_t stream, const DequantParams& p) {
  using E = num::ElemFormat;
  switch (elem) {
    case E::e4m3fn: dequantize_kernel<E::e4m3fn, MXQ_INPUT_DTYPE><<<grid, 256, 0, stream>>>(p); break;
    case E::e5m2: dequantize_kernel<E::e5m2, MXQ_INPUT_DTYPE><<<grid, 256, 0, stream>>>(p); break;
    default: dequantize_kernel<E::e2m1, MXQ_INPUT_DTYPE><<<grid, 256, 0, stream>>>(p); break;
  }
}

}  // namespace mxq::cuda
