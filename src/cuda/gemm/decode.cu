// The decode GEMM for up to 64 activation rows (decode_mma.cu takes M <= 8 at K < 16384: config.h
// decode_use_mma): swap-AB on Hopper's FP8 wgmma. A tile of kR = 64 or 128 weight rows
// B[n0 .. n0 + kR, K] is the instruction's 64-row A operand (one or two m64 halves) and the
// activation rows A[0 .. M, K] its kN-column B operand (kN = 16, 32 or 64, zero-filled past M),
// so D^T's tile is computed with the weights read once: the GEMM is bound by the weight bytes.
// (FP8 mma.sync does less per instruction on sm_90: ptxas lowers it to fp16 HMMA plus conversions.)
//
// - One warpgroup per CTA. Thread 0 streams the tile's 128-wide K blocks with TMA (128-byte
//   swizzle, zero fill past N and M) into a ring of decode_stages stages guarded by one mbarrier
//   each, and refills a stage as soon as the warpgroup's MMAs have read it.
// - A cluster of C CTAs (config.h decode_cluster) splits a tile's K blocks (rank r takes the r-th
//   contiguous range: measured faster than interleaved blocks at M = 1); each CTA leaves its
//   partial tile in shared memory, and after a cluster barrier each rank sums a slice of the tile
//   over the C ranks in rank order (distributed shared memory) and writes it: deterministic, no
//   workspace.
// - Numerics: every 32-wide step is its own wgmma from zero (the tensor cores sum an
//   instruction's products in a narrower format than fp32) and is added into fp32 accumulators
//   with the product of the weight row's and the activation row's block scales.
// - Scales: see kTmaScales below. No load from global memory may sit in the loop: the warp's
//   few scoreboards are shared by all loads in flight, so waiting for one block's scales waits
//   for the ones issued since, and the loop ran at the pace of a load's latency (ncu, session 10).
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "cuda/check.hpp"
#include "cuda/gemm/config.h"
#include "cuda/gemm/launchers.hpp"
#include "cuda/gemm/params.h"
#include "cuda/gemm/sm90.cuh"
#include "cuda/gemm/tma.hpp"
#include "cuda/pdl.cuh"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"

namespace mxq::cuda {
namespace {

using namespace gemm_config;
using namespace sm90;

template <int kN>
__device__ __forceinline__ void mma_from_zero(float (&d)[kN / 2], uint64_t a, uint64_t b) {
  if constexpr (kN == 16) wgmma_m64n16k32_e4m3(d, a, b, false);
  else if constexpr (kN == 32) wgmma_m64n32k32_e4m3(d, a, b, false);
  else wgmma_m64n64k32_e4m3(d, a, b, false);
}

// The stored block scales of one K block that a thread loads: weight rows 64 h + 16 warp + lane / 4
// + 8 e (e = 0, 1), the ones its fragment multiplies, and activation rows lane + 32 q of the
// CTA's, which every warp holds whole and hands to the lanes that need them by shuffles when the
// block is promoted. Loaded decode_scale_ring - 1 blocks ahead into a ring of these, as stored
// words decoded only at their use, so that no instruction waits for a load before then.
template <int kN, int kR>
struct Scales {
  uint32_t sb[kR / 64][2], sa[(kN + 31) / 32];
};

// The stored scale at byte address `at`: fp32 bits, or a UE8M0 byte zero-extended. Both loads are
// predicated into one register (no select consumes the value where it is loaded).
__device__ __forceinline__ uint32_t load_scale_word(const void* at, bool fp32) {
  uint32_t v;
  asm("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n@p ld.global.nc.u32 %0, [%1];\n@!p ld.global.nc.u8 %0, [%1];\n}"
      : "=r"(v)
      : "l"(at), "r"(int(fp32)));
  return v;
}
__device__ __forceinline__ float decode_scale(uint32_t stored, bool fp32) {
  return num::block_decode_scale(num::Scheme::fp8_block, !fp32, stored);
}

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

// kTmaScales: A's scales are fp32 mn_major_tma (DeepGEMM's layout) and B's are 128 x 128 blocks, so
// each stage's A scales come with it by TMA and the tile's B scales are read into shared memory
// before the loop (in chunks of kDecodeScaleChunk blocks): the loop loads nothing from global
// memory itself. Otherwise (1D1D, other layouts, UE8M0 bytes) each thread loads the scales it
// needs into a ring of registers, decode_scale_ring - 1 blocks ahead.
template <int kN, int kR, bool kTmaScales>
__global__ void __launch_bounds__(128, decode_ctas_per_sm(kR))
    gemm_decode_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
                       const __grid_constant__ CUtensorMap map_sa, const GemmParams p, int cluster) {
  constexpr int kStages = decode_stages(kR, kN), kH = kR / 64, kJ = kN / 8;
  constexpr uint32_t kTileW = kR * 128, kTileX = kN * 128, kStageBytes = kTileW + kTileX;
  static_assert(kTileW % 1024 == 0 && kTileX % 1024 == 0, "swizzled tiles are 1024-byte aligned");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  uint8_t* tiles_w = smem;
  uint8_t* tiles_x = smem + kStages * kTileW;
  // kTmaScales: A's kN scales of each stage (128-byte aligned slots, TMA's alignment), then B's
  // scale of each block of a chunk
  constexpr int kSlot = decode_scale_slot(kN) / 4;
  float* stage_sa = reinterpret_cast<float*>(tiles_x + kStages * kTileX);
  uint64_t* full = reinterpret_cast<uint64_t*>(stage_sa + kStages * kSlot);
  float* chunk_sb = reinterpret_cast<float*>(full + kStages);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rank = int(cluster_rank());
  const int64_t n0 = int64_t(blockIdx.x / cluster) * kR;
  const int m_base = int(blockIdx.y) * kN, m_left = int(p.m) - m_base;
  const int kblocks = int(p.k / 128);                             // < 2^31: the dispatch checks
  // The rank's K blocks: a contiguous range (longer runs of each weight row for the DRAM pages)
  const int first = int(int64_t(rank) * kblocks / cluster);
  const int steps = int(int64_t(rank + 1) * kblocks / cluster) - first;  // decode_cluster: >= 4 each

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    mbar_init_fence();
    tma_prefetch_map(&map_w);
    tma_prefetch_map(&map_x);
    if constexpr (kTmaScales) tma_prefetch_map(&map_sa);
  }
  __syncthreads();
  pdl_wait();  // the kernel before (pdl.cuh) has completed: nothing above touched global memory
  auto issue = [&](int i) {  // this CTA's i-th K block into stage i % kStages
    const int s = i % kStages, kb = first + i;
    mbar_arrive_expect_tx(&full[s], kStageBytes + (kTmaScales ? kN * 4 : 0));
    tma_load_2d(tiles_w + s * kTileW, &map_w, &full[s], kb * 128, int32_t(n0));
    tma_load_2d(tiles_x + s * kTileX, &map_x, &full[s], kb * 128, m_base);
    if constexpr (kTmaScales) tma_load_2d(stage_sa + s * kSlot, &map_sa, &full[s], m_base, kb);
  };
  if (tid == 0) {
    for (int i = 0; i < kStages && i < steps; ++i) issue(i);
  }

  const num::SeparableWalk walk_a = num::separable_walk(p.a.geom), walk_b = num::separable_walk(p.b.geom);
  const int stride_a = int(walk_a.row_stride);  // A's scale offsets fit 32 bits: the dispatch checks
  // The rows' scale addresses at K block 0 (rows past M or N read the last row's scales: finite or
  // not, their sums are never stored, so every load is unconditional); a block adds its column.
  const int unit_a = p.a.fp32_scales ? 4 : 1, unit_b = p.b.fp32_scales ? 4 : 1;
  const uint8_t* rows_a[(kN + 31) / 32];
  const uint8_t* rows_b[kH][2];
#pragma unroll
  for (int q = 0; q < (kN + 31) / 32; ++q) {
    const int m = min(lane + 32 * q, m_left - 1);
    rows_a[q] = static_cast<const uint8_t*>(p.a.scales) + int64_t(m_base + m) * stride_a * unit_a;
  }
#pragma unroll
  for (int h = 0; h < kH; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int64_t row = min(n0 + 64 * h + 16 * warp + lane / 4 + 8 * e, p.n - 1);
      rows_b[h][e] = static_cast<const uint8_t*>(p.b.scales) + walk_b.row(row / p.b.block_rows) * unit_b;
    }
  auto load_scales = [&](Scales<kN, kR>& sc, int kb) {
    const int64_t col_a = walk_a.block(kb) * unit_a, col_b = walk_b.block(kb) * unit_b;
#pragma unroll
    for (int q = 0; q < (kN + 31) / 32; ++q) sc.sa[q] = load_scale_word(rows_a[q] + col_a, p.a.fp32_scales);
#pragma unroll
    for (int h = 0; h < kH; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) sc.sb[h][e] = load_scale_word(rows_b[h][e] + col_b, p.b.fp32_scales);
  };

  float acc[kH][kN / 2] = {};
  // Block i, its stage landed: four 32-wide steps, each a wgmma from zero into one of two register
  // sets in turn (step s + 2 reuses step s's set once that is promoted), so that each step's
  // promotion (acc += part x weight row scale x activation row scale) overlaps the next step's
  // MMAs and two sets of results suffice (registers for 3 CTAs per SM at n = 64). `scales`
  // gives the block's scales, read before the stage is refilled; the refill waits until every
  // warp's MMAs have read the stage (the barrier). Each accumulator adds the steps in order.
  auto mma_block = [&](int i, auto&& scales) {
    const int s = i % kStages;
    mbar_wait(&full[s], (i / kStages) & 1);
    float part[2][kH][kN / 2];
    auto step = [&](int st) {
      wgmma_fence();  // after the promotion's reads of the set
#pragma unroll
      for (int h = 0; h < kH; ++h)
        mma_from_zero<kN>(part[st % 2][h], desc_k_major_sw128(tiles_w + s * kTileW + h * 64 * 128 + st * 32),
                          desc_k_major_sw128(tiles_x + s * kTileX + st * 32));
      wgmma_commit();
    };
    step(0);
    step(1);
    float sb[kH][2], sa[kJ][2], w[kH][kN / 2];
    scales(sb, sa);
    for_each_fragment<kH, kJ>([&](int h, int j, int e, int f) { w[h][4 * j + 2 * e + f] = sb[h][e] * sa[j][f]; });
    auto add = [&](int st) {
#pragma unroll
      for (int h = 0; h < kH; ++h)
#pragma unroll
        for (int r = 0; r < kN / 2; ++r) acc[h][r] = __fmaf_rn(part[st % 2][h][r], w[h][r], acc[h][r]);
    };
    wgmma_wait<1>();
    add(0);
    step(2);
    wgmma_wait<1>();
    add(1);
    step(3);
    wgmma_wait<1>();
    add(2);
    wgmma_wait<0>();
    __syncthreads();
    if (tid == 0 && i + kStages < steps) issue(i + kStages);
    add(3);
  };

  if constexpr (kTmaScales) {
    const int64_t row_b = walk_b.row(n0 / 128);
    for (int i = 0; i < steps; ++i) {
      if (i % kDecodeScaleChunk == 0) {  // B's scales of the next chunk of blocks
        if (i > 0) __syncthreads();      // the previous chunk's last use is done
        if (tid < kDecodeScaleChunk && i + tid < steps) chunk_sb[tid] = gemm_scale_at(p.b, row_b + walk_b.block(first + i + tid));
        __syncthreads();
      }
      mma_block(i, [&](float (&sb)[kH][2], float (&sa)[kJ][2]) {
        const float* sa_s = stage_sa + (i % kStages) * kSlot;
#pragma unroll
        for (int j = 0; j < kJ; ++j) {
          const float2 v = *reinterpret_cast<const float2*>(sa_s + 8 * j + 2 * (lane % 4));
          sa[j][0] = v.x;
          sa[j][1] = v.y;
        }
        const float b = chunk_sb[i % kDecodeScaleChunk];
#pragma unroll
        for (int h = 0; h < kH; ++h) sb[h][0] = sb[h][1] = b;
      });
    }
  } else {
    // Block i is promoted with the scales `use` loaded kRing - 1 blocks earlier, while block
    // i + kRing - 1's load into `ahead` (the entry block i - 1 used).
    constexpr int kRing = decode_scale_ring(kN, kR);
    auto block = [&](int i, const Scales<kN, kR>& use, Scales<kN, kR>& ahead) {
      if (i + kRing - 1 < steps) load_scales(ahead, first + i + kRing - 1);
      mma_block(i, [&](float (&sb)[kH][2], float (&sa)[kJ][2]) {
        // the fragment's activation-row scales come from the lanes that loaded them
#pragma unroll
        for (int j = 0; j < kJ; ++j)
#pragma unroll
          for (int f = 0; f < 2; ++f)
            sa[j][f] = decode_scale(__shfl_sync(0xffffffffu, use.sa[j / 4], 8 * (j % 4) + 2 * (lane % 4) + f), p.a.fp32_scales);
#pragma unroll
        for (int h = 0; h < kH; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) sb[h][e] = decode_scale(use.sb[h][e], p.b.fp32_scales);
      });
    };
    Scales<kN, kR> ring[kRing];  // entry u holds the scales of blocks u, u + kRing, ...: the loop is unrolled by kRing
#pragma unroll
    for (int u = 0; u < kRing - 1; ++u)
      if (u < steps) load_scales(ring[u], first + u);
    for (int i0 = 0; i0 < steps; i0 += kRing) {
#pragma unroll
      for (int u = 0; u < kRing; ++u)
        if (i0 + u < steps) block(i0 + u, ring[u], ring[(u + kRing - 1) % kRing]);
    }
  }

  // The weights are read: the next kernel may be scheduled (pdl.cuh). Triggered at the start, its
  // CTAs took the slots a grid of few CTAs left free, unevenly spread, and the same GEMM after
  // this one ran slower (H200, bench/RESULTS.md session 20: 1x7168x16384 36.5 us without PDL,
  // 45.9 so, 37.7 triggered here; config.h decode_pdl keeps such grids off PDL altogether).
  if (tid == 0) pdl_trigger();
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
    float part[8];  // every rank's value loaded before the first add (the adds stay in rank order)
#pragma unroll
    for (int q = 0; q < 8; ++q)
      if (q < cluster) part[q] = ld_cluster_f32(red + idx, uint32_t(q));
    float sum = part[0];
#pragma unroll
    for (int q = 1; q < 8; ++q)
      if (q < cluster) sum += part[q];
    if (c >= m_left || n >= p.n) continue;
    const int64_t m = m_base + c;
    gemm_store(p, m, n, gemm_output(p, sum, m, n));
  }
  cluster_sync();  // no CTA leaves while another reads its shared memory
}

// Whether A's scales can come with each stage by TMA and B's are one per 128 x 128 block (the
// kTmaScales kernels): fp32 mn_major_tma A scales (M padded to 4: 16-byte columns), 16-byte aligned.
bool tma_scales(const GemmParams& p) {
  return p.a.fp32_scales && p.a.geom.layout == num::ScaleLayout::mn_major_tma && p.b.block_rows == 128 &&
         aligned16(p.a.scales);
}

// Clusters of 1, 2, 4 and 8 CTAs of the kernel <kN, kR> resident at once on the current device;
// zeros if the query fails.
template <int kN, int kR>
void query_resident(int device, int64_t (&at)[4]) {
  constexpr auto kernel = gemm_decode_kernel<kN, kR, true>;
  constexpr int kSmem = int(decode_smem_bytes(kN, kR));
  if (allow_dynamic_smem<kernel>(device, kSmem) != cudaSuccess) return;
  int64_t v[4] = {};
  for (int i = 0; i < 4; ++i) {
    LaunchConfig l(dim3(1u << i), dim3(128), size_t(kSmem), 1 << i, nullptr, false);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &l.cfg) != cudaSuccess || n < 1) {
      (void)cudaGetLastError();
      return;
    }
    v[i] = n;
  }
  std::memcpy(at, v, sizeof v);
}

template <int kN, int kR, bool kTmaScales>
cudaError_t launch(const GemmParams& p, int device, const ArchDesc& arch, cudaStream_t stream) {
  constexpr auto kernel = gemm_decode_kernel<kN, kR, kTmaScales>;
  constexpr int kSmem = int(decode_smem_bytes(kN, kR));
  static_assert((decode_smem_bytes(kN, kR) + 1024) * decode_ctas_per_sm(kR) <= 228 * 1024,
                "the decode kernel's resident CTAs fit an SM's shared memory (1 KB reserved per CTA)");
  if (const cudaError_t e = allow_dynamic_smem<kernel>(device, kSmem); e != cudaSuccess) return e;
  CUtensorMap map_w, map_x, map_sa = {};
  if (!make_map(map_w, p.b.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.n, p.k, p.k, 128, kR, CU_TENSOR_MAP_SWIZZLE_128B) ||
      !make_map(map_x, p.a.codes, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, p.m, p.k, p.k, 128, kN, CU_TENSOR_MAP_SWIZZLE_128B))
    return cudaErrorInvalidValue;
  // A's scales: K blocks of (padded) M fp32 values; a stage takes the CTA's kN rows (zero past M)
  if (kTmaScales && !make_map(map_sa, p.a.scales, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, p.k / 128, p.m,
                              num::scale_offset(p.a.geom, 0, 1), kN, 1, CU_TENSOR_MAP_SWIZZLE_NONE))
    return cudaErrorInvalidValue;
  const ResidentClusters resident = decode_resident(arch, decode_ctas_per_sm(kR));
  const int cluster = decode_cluster(p.m, p.n, p.k, arch.sms, resident);
  // one CTA row: decode_n(M) >= M
  const int64_t ctas = decode_tiles(p.n, kR) * cluster;
  const bool pdl = decode_pdl(ctas, cluster_slots(decode_slots(kR, arch.sms), cluster, resident));
  return pdl_launch_cluster(kernel, dim3(unsigned(ctas)), dim3(128), size_t(kSmem), cluster, stream, pdl, map_w, map_x,
                            map_sa, p, cluster);
}

template <int kN, int kR>
cudaError_t launch_scales(const GemmParams& p, int device, const ArchDesc& arch, cudaStream_t stream) {
  return tma_scales(p) ? launch<kN, kR, true>(p, device, arch, stream) : launch<kN, kR, false>(p, device, arch, stream);
}

template <int kN>
cudaError_t launch_rows(const GemmParams& p, int device, const ArchDesc& arch, cudaStream_t stream) {
  return decode_tile_rows(p.m, p.n, arch.sms) == 64 ? launch_scales<kN, 64>(p, device, arch, stream)
                                                     : launch_scales<kN, 128>(p, device, arch, stream);
}

}  // namespace

// The operands the decode kernels (this one, and decode_mma.cu's for M <= 8) take besides
// gemm_path's shape rule (K % 128 == 0, M <= 64).
bool gemm_decode_takes(const GemmParams& p) {
  return aligned16(p.a.codes) && aligned16(p.b.codes) && p.k < INT32_MAX && p.n < INT32_MAX &&  // 32-bit TMA coordinates
         num::scale_storage_units(p.a.geom) < INT32_MAX && (decode_use_mma(p.m, p.k) || encode_fn() != nullptr);
}

void decode_resident_clusters(int device, int64_t (&out)[2][4]) {
  // Kept once both queries have answered; a failure (zeros: the plan then uses its model) is
  // asked again on the next call instead of being kept for the life of the process.
  struct Entry {
    std::mutex mu;
    std::atomic<bool> known{false};
    int64_t at[2][4] = {};
  };
  static Entry entries[64];
  Entry& e = entries[device & 63];
  if (!e.known.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(e.mu);
    if (!e.known.load(std::memory_order_relaxed)) {
      RelaxedCapture relaxed;  // a first call may come inside CUDA-graph capture
      static_assert(decode_ctas_per_sm(128) == 2 && decode_ctas_per_sm(64) == 3, "the two occupancies");
      int64_t at[2][4] = {};
      query_resident<32, 128>(device, at[0]);
      query_resident<32, 64>(device, at[1]);
      if (at[0][0] > 0 && at[1][0] > 0) {
        std::memcpy(e.at, at, sizeof at);
        e.known.store(true, std::memory_order_release);
      } else {
        std::memcpy(out, at, sizeof at);
        return;
      }
    }
  }
  std::memcpy(out, e.at, sizeof e.at);
}

cudaError_t launch_gemm_decode(const GemmParams& p, int device, const ArchDesc& arch, cudaStream_t stream) {
  switch (decode_n(p.m)) {
    case 16: return launch_rows<16>(p, device, arch, stream);
    case 32: return launch_rows<32>(p, device, arch, stream);
    default: return launch_scales<64, 64>(p, device, arch, stream);  // decode_tile_rows: 64 rows at n = 64
  }
}

}  // namespace mxq::cuda
