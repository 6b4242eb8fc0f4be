// The GEMM kernels' host entry points (generic.cu, decode.cu, decode_mma.cu, wgmma.cu), called by
// launch.cpp: whether a kernel takes a call's operands, and its launch.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "mxq/gemm_plan.hpp"

namespace mxq::cuda {

cudaError_t launch_gemm_generic(const GemmParams& p, cudaStream_t stream);
bool gemm_decode_takes(const GemmParams& p);
cudaError_t launch_gemm_decode(const GemmParams& p, int device, const ArchDesc& arch, cudaStream_t stream);
// ArchDesc::resident_clusters of the current device `device`, asked of the decode kernels themselves
// (cudaOccupancyMaxActiveClusters, once per device); zeros where the query fails.
void decode_resident_clusters(int device, int64_t (&out)[2][4]);
cudaError_t launch_gemm_decode_mma(const GemmParams& p, int device, int sms, cudaStream_t stream);
bool gemm_wgmma_takes(const GemmParams& p);
// group: 32-wide K steps per promotion (1, 2, 4); block_m: the tile's rows (128 or 256); split: the
// CTAs of a cluster that split each tile's K (1, or 2 and 4 at 128 rows: gemm_config::wgmma_split_k)
cudaError_t launch_gemm_wgmma(const GemmParams& p, int device, int sms, int group, int block_m, int split,
                              cudaStream_t stream);
// What a launch of gemm_wgmma_kernel (any instance: AOT or JIT) with block_m-row tiles for p
// and `split` takes: its TMA maps of A, B, A's scales, D (p.d_tma says whether D's is used: D
// and its rows 16-byte aligned) and B's 1 x 128 scales (1D1D; else a copy of A's), and its grid
// (persistent, min(tiles, sms); split-K: tiles x split, in clusters of split); false if a map of A,
// B or the scales cannot be made or the tile rows and split are not a kernel's. The block is
// gemm_config::kWgmmaThreads threads with gemm_config::wgmma_smem_bytes(block_m, 1D1D) of dynamic
// shared memory.
bool gemm_wgmma_setup(GemmParams& p, int sms, int block_m, int split, CUtensorMap (&maps)[gemm_config::kWgmmaMaps],
                      unsigned& grid);

}  // namespace mxq::cuda
