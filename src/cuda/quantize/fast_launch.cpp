// Host side of the specialised kernels: grid geometry and the ahead-of-time tables.
#include "cuda/quantize/fast_launch.hpp"

#include <algorithm>

namespace mxq::cuda {

dim3 fast_grid(const FastKey& key, int64_t rows, int64_t cols, int sms) {
  const FastGeometry g = fast_geometry(key);
  const int64_t gx = num::ceil_div(cols, g.tile_cols);
  const int64_t tiles_y = num::ceil_div(rows, g.tile_rows);
  const int64_t wave = num::ceil_div(int64_t(sms) * g.min_blocks, gx);
  return dim3(unsigned(gx), unsigned(std::clamp<int64_t>(std::min(tiles_y, wave), 1, 65535)));
}

std::optional<cudaError_t> launch_fast_quantize(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                cudaStream_t stream, const TileParams& p) {
  switch (key.dtype) {
    case 0: return launch_aot_fast<0>(key, rows, cols, sms, stream, p);
    case 1: return launch_aot_fast<1>(key, rows, cols, sms, stream, p);
    default: return launch_aot_fast<2>(key, rows, cols, sms, stream, p);
  }
}

bool aot_fast_has(const FastKey& key) {
  switch (key.dtype) {
    case 0: return aot_fast_has<0>(key);
    case 1: return aot_fast_has<1>(key);
    default: return aot_fast_has<2>(key);
  }
}

}  // namespace mxq::cuda
