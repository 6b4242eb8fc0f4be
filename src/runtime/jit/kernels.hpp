// The cuda-jit backend: specialised kernels compiled on first use and cached in memory and on
// disk, then loaded into the device's context and launched.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "cuda/quantize/params.h"
#include "runtime/jit/compile.hpp"
#include "runtime/jit/disk_cache.hpp"

namespace mxq::runtime::jit {

// "" when the JIT can run (NVRTC answers and MXQ_JIT is not 0), else why not.
std::string unavailable_reason();
// NVRTC version and the disk cache's state, for `mxq info`.
std::string summary();

// The cubin for (key, arch): the memory cache, else the disk cache, else NVRTC (then stored in
// both). A failed compile is cached in memory as that failure, never on disk.
const Compiled& compiled(const cuda::FastKey& key, int arch);

// Compiles (or finds) and loads the kernel for `key` into `device`'s context; throws on failure.
// Returns the CTAs per SM it reaches (the occupancy its grids are shaped for).
int prepare(const cuda::FastKey& key, int device);
// Whether it is loaded into `device`'s context already.
bool is_loaded(const cuda::FastKey& key, int device);
// Launches it (prepare() first, so that errors come before anything is enqueued).
void launch(const cuda::FastKey& key, int device, int64_t rows, int64_t cols, int sms, cudaStream_t stream,
                   const cuda::TileParams& p);

// The GEMM's specialised tma-wgmma kernels, the same way: launch_gemm compiles (or finds) the
// kernel for `device`'s arch, loads it into its context (a failure throws before anything is
// enqueued) and launches it with the maps and grid cuda::gemm_wgmma_setup made for p (whose N and
// K must be the key's where the key names them).
const Compiled& compiled_gemm(const GemmKey& key, int arch);
void launch_gemm(const GemmKey& key, int device, unsigned grid, const CUtensorMap (&maps)[gemm_config::kWgmmaMaps],
                 const cuda::GemmParams& p, cudaStream_t stream);

// Compiles `keys` and `gemm_keys` for `arch` into the caches on `threads` workers, off the hot path; the
// failures, as "config: message".
std::vector<std::string> warmup(const std::vector<cuda::FastKey>& keys, const std::vector<GemmKey>& gemm_keys, int arch,
                                int threads);

// The process's disk cache (created on first use from MXQ_CACHE_DIR / XDG_CACHE_HOME / HOME
// and MXQ_CACHE_MAX_MB, default 1024).
DiskCache& disk_cache();

}  // namespace mxq::runtime::jit
