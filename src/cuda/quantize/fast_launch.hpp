// Host interface of the specialised quantize kernels (fast.cuh): a key names the
// specialisation, and each input dtype's translation unit holds a table of the ones built
// ahead of time.
#pragma once

#include <cuda_runtime.h>

#include <optional>

#include "cuda/quantize/params.h"

namespace mxq::cuda {

// Thread shapes of the specialised kernels (fast.cuh describes them).
enum class FastShape : int { rows = 0, colblocks = 1, two_d = 2 };

struct FastKey {
  num::Scheme scheme;
  num::ElemFormat elem;
  int shape;  // FastShape
  int g, h;   // block width and height (see FastConfig)
  num::ScaleLayout row_layout, col_layout;
  bool operator==(const FastKey&) const = default;
};

// Launches the specialisation `key` for input dtype kDType over a rows x cols input on a
// device with `sms` SMs; the launch status, or nothing when it was not built ahead of time.
template <int kDType>
std::optional<cudaError_t> launch_fast_quantize(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                cudaStream_t stream, const TileParams& p);

}  // namespace mxq::cuda
