// Host interface of the specialised quantize kernels (fast.cuh): a key names the
// specialisation, and each input dtype's translation unit holds a table of the ones built
// ahead of time.
#pragma once

#include <cuda_runtime.h>

#include <optional>

#include "cuda/quantize/fast_key.h"
#include "cuda/quantize/params.h"

namespace mxq::cuda {

// Grid of a specialised kernel over a rows x cols input, by what bounds the kernel (the policy
// and its measurements are in fast_launch.cpp): one CTA per row tile for the memory-bound
// kernels and the fused 8-row shapes (grid.y capped at 65535, the CTAs loop beyond), two or three
// row tiles per CTA for the FP4 rows and column-block kernels, else CTAs that walk the row tiles
// over two persistent waves (NVFP4's 2-D blocks) or one (fused rows kernels), `blocks_per_sm`
// being the kernel's measured occupancy on `sms` SMs, with the tiles spread as evenly as the
// waves allow.
dim3 fast_grid(const FastKey& key, int64_t rows, int64_t cols, int sms, int blocks_per_sm);

// Whether the fused kernel `key` launched on `grid` over a rows x cols input looks its function
// up in a bf16 table (fast.cuh ActTable): where the key allows it (act_table_capable) and each
// CTA has at least twice the table's 8192 entries of elements to quantize, so that filling it
// (evaluating the function 8192 times) costs less than it saves.
bool act_table_pays(const FastKey& key, int64_t rows, int64_t cols, dim3 grid);
// Tests: -1 (the default) decides as above; 0 never and 1 always uses the table where the key
// allows it. last_act_table(): the decision of the process's last launch of a specialised kernel.
void set_act_table_policy(int policy);
bool last_act_table();

// Launches the ahead-of-time specialisation `key` over a rows x cols input; the launch status,
// or nothing when `key` was not built ahead of time.
std::optional<cudaError_t> launch_fast_quantize(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                cudaStream_t stream, const TileParams& p);

// Whether `key` was built ahead of time.
bool aot_fast_has(const FastKey& key);

// The table of one input dtype (fast_inst.cuh, one translation unit each).
template <int kDType>
std::optional<cudaError_t> launch_aot_fast(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                           cudaStream_t stream, const TileParams& p);

template <int kDType>
bool aot_fast_has(const FastKey& key);

}  // namespace mxq::cuda
