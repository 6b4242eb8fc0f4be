// The tensor-core GEMM for Hopper (sm_90a): D[M, N] = alpha * A . B^T (+ C) (+ bias) with A's
// 1 x 128 scales (fp32, layout mn_major_tma) and B's 128 x 128 scales (any layout and format), or
// (1D1D) B's 1 x 128 scales (fp32, layout mn_major_tma).
//
// Warp-specialised and persistent (split-K kernels: one tile per cluster; wgmma.cuh), after the
// structure DeepGEMM describes for its sm90 FP8 GEMM: one producer warpgroup (a single thread
// issues TMA copies of A, B and A's scales, and 1D1D's B scales, into a ring of shared-memory
// stages guarded by "full" and "empty" mbarriers) and two consumer
// warpgroups, each taking half the rows of a 128 x 128 or 256 x 128 output tile as blocks of 64
// (wgmma m64n128k32). setmaxnreg moves registers from the producer to the consumers.
//
// Promotion: the tensor cores add the products of one instruction in a narrower format than
// fp32 and carry that into a running sum (DeepSeek-V3 section 3.3.2 reports about 14 bits), so
// each group of kGroup instructions (kGroup x 32 of K) starts from zero and is added into fp32
// accumulators with its block scales. kGroup = 4 is DeepGEMM's every-128 promotion; smaller
// groups are more accurate and cost FMAs. With 128-row tiles two sets of group accumulators let
// one group's FMAs overlap the next group's MMAs; with 256-row tiles (two 64-row blocks per
// consumer) one set is promoted in turn, the other consumer's MMAs filling the gap.
#include <cuda.h>
#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/gemm/launchers.hpp"
#include "cuda/gemm/tma.hpp"
#include "cuda/gemm/wgmma.cuh"
#include "cuda/pdl.cuh"

namespace mxq::cuda {
namespace {

using namespace wgmma_detail;

template <int kBM, int kGroup, int kSplit, bool kB1D>
cudaError_t launch(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  constexpr auto kernel = gemm_wgmma_kernel<kBM, kGroup, 0, 0, kSplit, kB1D>;
  constexpr int smem = int(WgmmaTile<kBM, kB1D>::kSmemBytes);
  if (const cudaError_t e = allow_dynamic_smem<kernel>(device, smem); e != cudaSuccess) return e;
  CUtensorMap maps[kWgmmaMaps];
  unsigned grid = 0;
  GemmParams q = p;
  if (!gemm_wgmma_setup(q, sms, kBM, kSplit, maps, grid)) return cudaErrorInvalidValue;
  // split-K: clusters of kSplit CTAs, one tile each
  return pdl_launch_cluster(kernel, dim3(grid), dim3(kThreads), size_t(smem), kSplit > 1 ? kSplit : 0, stream, true,
                            maps[0], maps[1], maps[2], maps[3], maps[4], q);
}

template <int kBM, int kSplit, bool kB1D>
cudaError_t launch_group(const GemmParams& p, int device, int sms, int group, cudaStream_t stream) {
  switch (group) {
    case 1: return launch<kBM, 1, kSplit, kB1D>(p, device, sms, stream);
    case 2: return launch<kBM, 2, kSplit, kB1D>(p, device, sms, stream);
    default: return launch<kBM, 4, kSplit, kB1D>(p, device, sms, stream);
  }
}

template <bool kB1D>
cudaError_t launch_variant(const GemmParams& p, int device, int sms, int group, int block_m, int split,
                           cudaStream_t stream) {
  if (block_m == 256 && split == 1) return launch_group<256, 1, kB1D>(p, device, sms, group, stream);
  if (block_m != 128) return cudaErrorInvalidValue;
  switch (split) {
    case 1: return launch_group<128, 1, kB1D>(p, device, sms, group, stream);
    case 2: return launch_group<128, 2, kB1D>(p, device, sms, group, stream);
    case 4: return launch_group<128, 4, kB1D>(p, device, sms, group, stream);
    default: return cudaErrorInvalidValue;  // gemm_config::wgmma_split_k gives 1, 2 or 4
  }
}

}  // namespace

// A 1 x 128 operand's fp32 scales in layout mn_major_tma ([kb][align(mn, 4)]) for TMA: boxes of
// `rows` scales of one K block.
static bool make_scale_map(CUtensorMap& map, const GemmOperand& o, int64_t mn, int64_t k, uint32_t rows) {
  const int64_t stride = num::scale_offset(o.geom, 0, 1);  // one K block's (padded) scales
  return make_map(map, o.scales, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, ceil_div(k, kBK), mn, stride, rows, 1,
                  CU_TENSOR_MAP_SWIZZLE_NONE);
}

bool gemm_wgmma_setup(GemmParams& p, int sms, int block_m, int split, CUtensorMap (&maps)[kWgmmaMaps],
                      unsigned& grid) {
  if (!wgmma_variant_exists(block_m, split)) return false;
  if (!make_map(maps[0], p.a.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.m, p.k, p.k, kBK, block_m,
                CU_TENSOR_MAP_SWIZZLE_128B) ||
      !make_map(maps[1], p.b.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.n, p.k, p.k, kBK, kBN,
                CU_TENSOR_MAP_SWIZZLE_128B) ||
      !make_scale_map(maps[2], p.a, p.m, p.k, uint32_t(block_m)))
    return false;
  // 1D1D: B's 1 x 128 scales, a tile's kBN columns per K block; else unused (a valid map all the same)
  if (p.b.block_rows == 1) {
    if (!make_scale_map(maps[4], p.b, p.n, p.k, uint32_t(kBN))) return false;
  } else {
    maps[4] = maps[2];
  }
  // D through TMA where its base and rows are 16-byte aligned: boxes of 64 rows x 128 bytes in
  // the 128-byte swizzle the epilogue writes (wgmma.cuh)
  const int esz = p.d_bf16 ? 2 : 4;
  p.d_tma = reinterpret_cast<uintptr_t>(p.d) % 16 == 0 && (p.d_stride * esz) % 16 == 0 &&
            make_map(maps[3], p.d, p.d_bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, esz,
                     p.m, p.n, p.d_stride, kOutData / esz, 64, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!p.d_tma) maps[3] = maps[0];  // not read by the kernel; a valid map all the same
  const int64_t tiles = wgmma_tiles(p.m, p.n, block_m);
  // persistent; split-K: one tile per cluster of `split` CTAs (the kernel's cluster barriers pair up so)
  grid = unsigned(split > 1 ? tiles * split : tiles < sms ? tiles : sms);
  return true;
}

// A 1 x 128 operand's scales that the kernel's TMA reads: fp32 in mn_major_tma, 16-byte aligned.
// (UE8M0 scales for A would be decoded by the consumers while their MMAs run: the instructions and
// registers that took made ptxas serialise the 128-row, promote-k 32 kernel's wgmmas, C7511.)
static bool tma_scales(const GemmOperand& o) {
  return o.block_rows == 1 && aligned16(o.scales) && o.fp32_scales && o.geom.layout == num::ScaleLayout::mn_major_tma;
}

// The operands this kernel takes (the caller also checks the device is sm_90): A's scales fp32
// in mn_major_tma; B's 128 x 128 in any layout and format (the producer reads one per stage), or
// B's 1 x 128 (1D1D) fp32 in mn_major_tma.
bool gemm_wgmma_takes(const GemmParams& p) {
  // TMA coordinates are 32-bit: M, N and K below 2^31; the kernel counts tiles in 32 bits
  return p.m >= 1 && p.n >= 1 && p.k >= 16 && p.k % 16 == 0 && p.m < INT32_MAX && p.n < INT32_MAX && p.k < INT32_MAX &&
         wgmma_tiles(p.m, p.n, 128) < INT32_MAX && tma_scales(p.a) && (p.b.block_rows == 128 || tma_scales(p.b)) &&
         aligned16(p.a.codes) && aligned16(p.b.codes) &&
         encode_fn() != nullptr;
}

cudaError_t launch_gemm_wgmma(const GemmParams& p, int device, int sms, int group, int block_m, int split,
                              cudaStream_t stream) {
  return p.b.block_rows == 1 ? launch_variant<true>(p, device, sms, group, block_m, split, stream)
                             : launch_variant<false>(p, device, sms, group, block_m, split, stream);
}

}  // namespace mxq::cuda
