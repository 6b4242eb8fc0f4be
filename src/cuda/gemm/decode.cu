// The decode GEMM for 9..64 activation rows (decode_mma.cu takes M <= 8): swap-AB on Hopper's FP8
// wgmma. A tile of kR = 64 or 128 weight rows B[n0 .. n0 + kR, K] is the instruction's 64-row A
// operand (one or two m64 halves) and up to 32 activation rows A[m_base .., K] its kN-column B
// operand (kN = 16 or 32), so D^T's tile is computed with the weights read once: the GEMM is
// bound by the weight bytes. (FP8 mma.sync does less per instruction on sm_90: ptxas lowers it to
// fp16 HMMA plus conversions.)
//
// - One warpgroup per CTA. Thread 0 streams the tile's 128-wide K blocks with TMA (128-byte
//   swizzle, zero fill past N and M) into a ring of decode_stages stages guarded by one mbarrier
//   each, and refills a stage as soon as the warpgroup's MMAs have read it.
// - A cluster of C CTAs (config.h decode_cluster) splits a tile's K blocks (rank r takes the r-th
//   contiguous range: measured faster than interleaved blocks at M = 1); each CTA leaves its partial tile in shared memory, and after a cluster barrier each
//   rank sums a slice of the tile over the C ranks in rank order (distributed shared memory) and
//   writes it: deterministic, no workspace.
// - Numerics: every 32-wide step is its own wgmma from zero (the tensor cores sum an
//   instruction's products in a narrower format than fp32) and is added into fp32 accumulators
//   with the product of the weight row's and the activation row's block scales. The scales (any
//   layout quantize() writes: num::separable_walk) are loaded one block ahead.
#include <cuda.h>
#include <cuda_runtime.h>

#include "cuda/check.hpp"
#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "cuda/gemm/sm90.cuh"
#include "cuda/gemm/tma.hpp"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"

namespace mxq::cuda {
namespace {

using namespace gemm_config;
using namespace sm90;

template <int kN>
__device__ __forceinline__ void mma_from_zero(float (&d)[kN / 2], uint64_t a, uint64_t b) {
  if constexpr (kN == 16) wgmma_m64n16k32_e4m3(d, a, b, false);
  else wgmma_m64n32k32_e4m3(d, a, b, false);
}

// The block scales a thread needs: weight rows 64 h + 16 warp + lane / 4 + 8 e (e = 0, 1) and
// activation rows 8 j + 2 (lane % 4) + f (f = 0, 1) of the CTA's. Loaded a block ahead and
// multiplied only when used, so that nothing waits for the loads before the next block.
template <int kN, int kR>
struct Scales {
  float sb[kR / 64][2], sa[kN / 8][2];
};

// Calls fn(h, j, e, f) for each accumulator of the thread's fragment: register 4 j + 2 e + f of
// m64 half h holds weight row 64 h + 16 warp + lane / 4 + 8 e and activation row 8 j + 2 (lane % 4) + f.
template <int kH, int kJ, typename Fn>
__device__ __forceinline__ void for_each_fragment(Fn&& fn) {
#pragma unroll
  for (int h = 0; h < kH; ++h)
#pragma unroll
    for (int j = 0; j < kJ; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int f = 0; f < 2; ++f) fn(h, j, e, f);
}

template <int kN, int kR>
__global__ void __launch_bounds__(128) gemm_decode_kernel(const __grid_constant__ CUtensorMap map_w,
                                                          const __grid_constant__ CUtensorMap map_x, const GemmParams p,
                                                          int cluster) {
  constexpr int kStages = decode_stages(kR), kH = kR / 64, kJ = kN / 8;
  constexpr uint32_t kTileW = kR * 128, kTileX = kN * 128, kStageBytes = kTileW + kTileX;
  static_assert(kTileW % 1024 == 0 && kTileX % 1024 == 0, "swizzled tiles are 1024-byte aligned");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  uint8_t* tiles_w = smem;
  uint8_t* tiles_x = smem + kStages * kTileW;
  uint64_t* full = reinterpret_cast<uint64_t*>(tiles_x + kStages * kTileX);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rank = int(cluster_rank());
  const int64_t n0 = int64_t(blockIdx.x / cluster) * kR;
  const int m_base = int(blockIdx.y) * kDecodeRowsPerCta, m_left = int(p.m) - m_base;
  const int kblocks = int(p.k / 128);                             // < 2^31: the dispatch checks
  // The rank's K blocks: a contiguous range (longer runs of each weight row for the DRAM pages)
  const int first = int(int64_t(rank) * kblocks / cluster);
  const int steps = int(int64_t(rank + 1) * kblocks / cluster) - first;  // decode_cluster: >= 4 each

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    mbar_init_fence();
  }
  __syncthreads();
  auto issue = [&](int i) {  // this CTA's i-th K block into stage i % kStages
    const int s = i % kStages, kb = first + i;
    mbar_arrive_expect_tx(&full[s], kStageBytes);
    tma_load_2d(tiles_w + s * kTileW, &map_w, &full[s], kb * 128, int32_t(n0));
    tma_load_2d(tiles_x + s * kTileX, &map_x, &full[s], kb * 128, m_base);
  };
  if (tid == 0) {
    tma_prefetch_map(&map_w);
    tma_prefetch_map(&map_x);
    for (int i = 0; i < kStages && i < steps; ++i) issue(i);
  }

  const num::SeparableWalk walk_a = num::separable_walk(p.a.geom), walk_b = num::separable_walk(p.b.geom);
  const int stride_a = int(walk_a.row_stride);  // A's scale offsets fit 32 bits: the dispatch checks
  auto load_scales = [&](Scales<kN, kR>& sc, int kb) {
    const int col_a = int(walk_a.block(kb));
    const int64_t col_b = walk_b.block(kb);
#pragma unroll
    for (int j = 0; j < kJ; ++j)
#pragma unroll
      for (int f = 0; f < 2; ++f) {
        const int m = 8 * j + 2 * (lane % 4) + f;
        sc.sa[j][f] = m < m_left ? gemm_scale_at(p.a, (m_base + m) * stride_a + col_a) : 0.0f;
      }
    // 128 x 128 weight scales: the tile (64 or 128 rows, aligned) lies in one block
    const bool per_tile = p.b.block_rows == 128;
    const float tile_sb = per_tile ? gemm_scale_at(p.b, walk_b.row(n0 / 128) + col_b) : 0.0f;
#pragma unroll
    for (int h = 0; h < kH; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t row = n0 + 64 * h + 16 * warp + lane / 4 + 8 * e;
        sc.sb[h][e] = per_tile ? tile_sb : row < p.n ? gemm_scale_at(p.b, walk_b.row(row) + col_b) : 0.0f;
      }
  };

  float acc[kH][kN / 2] = {};
  // Block i: its MMAs, the refill of its stage, and its promotion with the scales loaded during
  // block i - 1 (`use`), while block i + 1's scales load into `ahead`.
  auto block = [&](int i, const Scales<kN, kR>& use, Scales<kN, kR>& ahead) {
    const int s = i % kStages;
    if (i + 1 < steps) load_scales(ahead, first + i + 1);
    mbar_wait(&full[s], (i / kStages) & 1);
    float part[4][kH][kN / 2];
    wgmma_fence();
#pragma unroll
    for (int st = 0; st < 4; ++st)
#pragma unroll
      for (int h = 0; h < kH; ++h)
        mma_from_zero<kN>(part[st][h], desc_k_major_sw128(tiles_w + s * kTileW + h * 64 * 128 + st * 32),
                          desc_k_major_sw128(tiles_x + s * kTileX + st * 32));
    wgmma_commit();
    wgmma_wait<0>();
    __syncthreads();  // every warp's MMAs have read stage s: refill it
    if (tid == 0 && i + kStages < steps) issue(i + kStages);
    for_each_fragment<kH, kJ>([&](int h, int j, int e, int f) {
      const float w = use.sb[h][e] * use.sa[j][f];
      float& a = acc[h][4 * j + 2 * e + f];
#pragma unroll
      for (int st = 0; st < 4; ++st) a = __fmaf_rn(part[st][h][4 * j + 2 * e + f], w, a);
    });
  };
  Scales<kN, kR> even, odd;  // two buffers, their roles fixed by unrolling the loop by two
  if (steps > 0) load_scales(even, first);
  for (int i = 0; i < steps; i += 2) {
    block(i, even, odd);
    if (i + 1 < steps) block(i + 1, odd, even);
  }

  // The partial tile, red[activation row c][weight row r], in this CTA's (drained) ring.
  float* red = reinterpret_cast<float*>(smem);
  for_each_fragment<kH, kJ>([&](int h, int j, int e, int f) {
    red[(8 * j + 2 * (lane % 4) + f) * kR + 64 * h + 16 * warp + lane / 4 + 8 * e] = acc[h][4 * j + 2 * e + f];
  });
  cluster_sync();  // every rank's partial tile is written (a cluster of one: the CTA's barrier)
  const int slice = kN * kR / cluster;
  for (int idx = rank * slice + tid; idx < (rank + 1) * slice; idx += 128) {
    const int c = idx / kR, r = idx % kR;
    const int64_t n = n0 + r;
    float sum = ld_cluster_f32(red + idx, 0);
    for (int q = 1; q < cluster; ++q) sum += ld_cluster_f32(red + idx, uint32_t(q));
    if (c >= m_left || n >= p.n) continue;
    const int64_t m = m_base + c;
    gemm_store(p, m, n, gemm_output(p, sum, m, n));
  }
  cluster_sync();  // no CTA leaves while another reads its shared memory
}

template <int kN, int kR>
cudaError_t launch(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  constexpr auto kernel = gemm_decode_kernel<kN, kR>;
  constexpr int kSmem = int(decode_smem_bytes(kN, kR));
  static_assert(decode_smem_bytes(32, 128) <= 227 * 1024, "the decode kernel's shared memory");
  if (const cudaError_t e = allow_dynamic_smem<kernel>(device, kSmem); e != cudaSuccess) return e;
  CUtensorMap map_w, map_x;
  if (!make_map(map_w, p.b.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.n, p.k, p.k, 128, kR, CU_TENSOR_MAP_SWIZZLE_128B) ||
      !make_map(map_x, p.a.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.m, p.k, p.k, 128, kN, CU_TENSOR_MAP_SWIZZLE_128B))
    return cudaErrorInvalidValue;
  const int cluster = decode_cluster(p.m, p.n, p.k, sms);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned((p.n + kR - 1) / kR * cluster), unsigned(decode_m_ctas(p.m)));
  cfg.blockDim = dim3(128);
  cfg.dynamicSmemBytes = kSmem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, map_w, map_x, p, cluster);
}

template <int kN>
cudaError_t launch_rows(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  return decode_tile_rows(p.m, p.n, sms) == 64 ? launch<kN, 64>(p, device, sms, stream)
                                                : launch<kN, 128>(p, device, sms, stream);
}

}  // namespace

// The operands the decode kernels (this one, and decode_mma.cu's for M <= 8) take besides
// gemm_path's shape rule (K % 128 == 0, M <= 64).
bool gemm_decode_takes(const GemmParams& p) {
  return aligned16(p.a.codes) && aligned16(p.b.codes) && p.k < INT32_MAX && p.n < INT32_MAX &&  // 32-bit TMA coordinates
         num::scale_storage_units(p.a.geom) < INT32_MAX && (p.m <= kDecodeMmaMaxM || encode_fn() != nullptr);
}

cudaError_t launch_gemm_decode(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  return decode_n(p.m) == 16 ? launch_rows<16>(p, device, sms, stream) : launch_rows<32>(p, device, sms, stream);
}

}  // namespace mxq::cuda
