// Instantiates the quantize launcher for input dtype MXQ_INPUT_DTYPE and element format
// MXQ_ELEM (see quantize_tile_launch.cuh).
#include <algorithm>

#include <string>

#include "cuda/check.hpp"
#include "cuda/quantize/quantize_tile.cuh"
#include "mxq/error.hpp"
#include "cuda/quantize/quantize_tile_launch.cuh"

namespace mxq::cuda {

namespace {

// Persistent grid: as many CTAs as fit on the device at once (capped by the tile count). The
// dynamic shared-memory limit and the occupancy are looked up once per kernel and device.
template <num::ElemFormat kElem, int kTR, int kBC>
void launch_one(int64_t tiles, int device, int sms, cudaStream_t stream, const TileParams& p) {
  constexpr auto kernel = quantize_tile_kernel<MXQ_INPUT_DTYPE, kElem, kTR, kBC>;
  constexpr int kSmem = TileRing<MXQ_INPUT_DTYPE, kTR>::kBytes;
  const int n = resident_ctas<kernel>(device, 256, kSmem);
  const int64_t grid = std::max<int64_t>(1, std::min<int64_t>(tiles, int64_t(sms) * n));
  kernel<<<unsigned(grid), 256, kSmem, stream>>>(p);
}

}  // namespace

template <>
void launch_quantize_tile<MXQ_INPUT_DTYPE, MXQ_ELEM>(int tile_rows, int block_cols, int64_t tiles, int device,
                                                     int sms, cudaStream_t stream, const TileParams& p) {
  // (tile rows, block width) pairs that tile_shape() in launch.cpp produces.
  switch (tile_rows * 1000 + block_cols) {
    case 16016: return launch_one<MXQ_ELEM, 16, 16>(tiles, device, sms, stream, p);
    case 32008: return launch_one<MXQ_ELEM, 32, 8>(tiles, device, sms, stream, p);
    case 32016: return launch_one<MXQ_ELEM, 32, 16>(tiles, device, sms, stream, p);
    case 32032: return launch_one<MXQ_ELEM, 32, 32>(tiles, device, sms, stream, p);
    case 32064: return launch_one<MXQ_ELEM, 32, 64>(tiles, device, sms, stream, p);
    case 32128: return launch_one<MXQ_ELEM, 32, 128>(tiles, device, sms, stream, p);
    case 64064: return launch_one<MXQ_ELEM, 64, 64>(tiles, device, sms, stream, p);
    case 128128: return launch_one<MXQ_ELEM, 128, 128>(tiles, device, sms, stream, p);
    default:
      fail(ErrorCode::internal, "quantize: no tile kernel for " + std::to_string(tile_rows) + " rows x block " +
                                    std::to_string(block_cols));
  }
}

}  // namespace mxq::cuda
