// The tensor-core GEMM for Hopper (sm_90a), device side: the kernel that wgmma.cu launches
// (ahead of time) and that NVRTC compiles (tests/nvrtc). Design notes in wgmma.cu.
#pragma once

#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "cuda/gemm/sm90.cuh"
#include "cuda/pdl.cuh"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {
namespace wgmma_detail {

using namespace sm90;

using namespace gemm_config;
constexpr int kBN = kWgmmaBN, kBK = kWgmmaBK, kConsumers = kWgmmaConsumers, kThreads = kWgmmaThreads;
constexpr uint32_t kOutData = kWgmmaOutData, kOutRow = kWgmmaOutRow, kOutBytes = kWgmmaOutBytes;
// setmaxnreg's split of the 168 x 384 registers the launch gives a CTA: 40 for the producer's
// warpgroup and 232 for each consumer's; split-K's producer (its K range, the cluster barriers)
// spilled within 40, so it takes 56 and the consumers 224.
template <int kSplit>
struct Regs {
  static constexpr uint32_t kProducer = kSplit == 1 ? 40 : 56, kConsumer = kSplit == 1 ? 232 : 224;
  static_assert(128 * kProducer + 256 * kConsumer <= 168 * 384, "within the CTA's registers");
};
// Shared memory, in order: A and B tiles (1024-byte aligned for the swizzle), the epilogue
// blocks (1024-byte aligned for the TMA store's swizzle), A's scales (TMA: 128-byte aligned), for
// 1D1D B's scales (TMA, after A's: 128-byte aligned), the mbarriers (8), for 1D2D B's one scale
// per stage (WgmmaTile asserts the alignments).
static_assert(kOutBytes % 1024 == 0, "shared-memory carve-up alignment: the epilogue blocks' TMA swizzle");

using num::ceil_div;

// acc += part * scale, rows (lane / 4) and (lane / 4 + 8) of the warp's 16 taking scales s0, s1.
__device__ __forceinline__ void promote(float (&acc)[64], const float (&part)[64], float s0, float s1) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    acc[4 * j + 0] = __fmaf_rn(part[4 * j + 0], s0, acc[4 * j + 0]);
    acc[4 * j + 1] = __fmaf_rn(part[4 * j + 1], s0, acc[4 * j + 1]);
    acc[4 * j + 2] = __fmaf_rn(part[4 * j + 2], s1, acc[4 * j + 2]);
    acc[4 * j + 3] = __fmaf_rn(part[4 * j + 3], s1, acc[4 * j + 3]);
  }
}

// The 1D1D promotion (B with 1 x 128 scales): acc += part * (row scale x column scale), the
// thread's columns 8 j + 2 (lane % 4) + {0, 1} taking their scales from the stage's B scales
// `sb` (already offset by 2 (lane % 4)), rows (lane / 4) and (lane / 4 + 8) s0 and s1.
__device__ __forceinline__ void promote_cols(float (&acc)[64], const float (&part)[64], float s0, float s1,
                                             const float* sb) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float2 b = *reinterpret_cast<const float2*>(sb + 8 * j);
    acc[4 * j + 0] = __fmaf_rn(part[4 * j + 0], s0 * b.x, acc[4 * j + 0]);
    acc[4 * j + 1] = __fmaf_rn(part[4 * j + 1], s0 * b.y, acc[4 * j + 1]);
    acc[4 * j + 2] = __fmaf_rn(part[4 * j + 2], s1 * b.x, acc[4 * j + 2]);
    acc[4 * j + 3] = __fmaf_rn(part[4 * j + 3], s1 * b.y, acc[4 * j + 3]);
  }
}

__device__ __forceinline__ void sync_consumer(int c) {  // named barrier of one consumer warpgroup
  asm volatile("bar.sync %0, 128;" ::"r"(c + 1) : "memory");
}

// gemm_output with the bounds checks the epilogue's loads of C and bias need (its fragment covers
// the whole tile; values outside the matrix are not stored).
__device__ __forceinline__ float finish(const GemmParams& p, float v, int64_t row, int64_t col) {
  float out = gemm_scaled(p, v);
  if (p.c && row < p.m && col < p.n) out += p.c[row * p.c_stride + col];
  if (p.bias && col < p.n) out += p.bias[col];
  return out;
}

// Pass kPass of a consumer's fragment (its columns kPass * kCols ..): alpha * sum (kPlain: the
// call has no C and no bias), else finish() (C and bias element-wise, with the bounds checks
// their loads need), into the staging block: kTma, rows of 128 bytes in TMA's 128-byte swizzle
// (16-byte chunk j of row r at chunk j ^ (r % 8)); else rows padded to kOutRow bytes. bf16 pairs
// come from one cvt each; a pass holding a NaN converts again by num::float_to_bf16, whose NaNs
// (sign and payload kept) differ from cvt's canonical one.
template <typename T, bool kTma, bool kPlain, int kPass>
__device__ __forceinline__ void stage_pass(const GemmParams& p, const float (&acc)[64], uint8_t* out, int fr, int fc,
                                           int64_t row0, int64_t col0) {
  constexpr int kCols = kOutData / sizeof(T), kPairs = kCols / 4;  // a thread's value pairs in the pass
  float v[kPairs][2];
  uint32_t bf[kPairs];
  bool nan = false;
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int j = kPass * kCols / 8 + i / 2, h = i % 2, r = fr + 8 * h, cl = 8 * j + fc;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float a = acc[4 * j + 2 * h + e];
      if constexpr (kPlain) v[i][e] = gemm_scaled(p, a);
      else v[i][e] = finish(p, a, row0 + r, col0 + cl + e);
    }
    if constexpr (sizeof(T) == 2) {
      bf[i] = bf16x2_cvt(v[i][0], v[i][1]);
      nan = nan || v[i][0] != v[i][0] || v[i][1] != v[i][1];
    }
  }
  if constexpr (sizeof(T) == 2) {
    if (nan) {
#pragma unroll
      for (int i = 0; i < kPairs; ++i) bf[i] = bf16x2_rn(v[i][0], v[i][1]);
    }
  }
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int j = kPass * kCols / 8 + i / 2, r = fr + 8 * (i % 2), cl = 8 * j + fc;
    uint8_t* at;
    if constexpr (kTma) {
      const int byte = (cl - kPass * kCols) * int(sizeof(T));
      at = out + r * int(kOutData) + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
    } else {
      at = out + r * kOutRow + (cl - kPass * kCols) * sizeof(T);
    }
    if constexpr (sizeof(T) == 2) *reinterpret_cast<uint32_t*>(at) = bf[i];
    else *reinterpret_cast<float2*>(at) = float2{v[i][0], v[i][1]};
  }
}
// stage_pass for a call with or without C and bias (`plain`: without)
template <typename T, bool kTma, int kPass>
__device__ __forceinline__ void stage_pass_any(const GemmParams& p, const float (&acc)[64], uint8_t* out, int fr,
                                               int fc, bool plain, int64_t row0, int64_t col0) {
  if (plain) stage_pass<T, kTma, true, kPass>(p, acc, out, fr, fc, row0, col0);
  else stage_pass<T, kTma, false, kPass>(p, acc, out, fr, fc, row0, col0);
}

// f(Const<0>()), .., f(Const<N - 1>()): a loop whose index is a constant in its body (the
// epilogue's passes index the accumulators, which must stay in registers).
template <int V>
struct Const {
  static constexpr int value = V;
};
template <int N, int I = 0, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (I < N) {
    f(Const<I>());
    static_for<N, I + 1>(f);
  }
}

// Split-K (kSplit > 1): the epilogue's passes of the tile, consumer c's pass `pass` being number
// c * kPasses + pass, are dealt to the cluster's ranks in turn; a rank sums and writes its own.
template <int kSplit, int kPasses>
__device__ __forceinline__ bool owns_pass(int c, int pass, uint32_t rank) {
  return kSplit == 1 || uint32_t(c * kPasses + pass) % kSplit == rank;
}
// The partial tiles of a split-K cluster: each rank leaves consumer c's 64 accumulators of thread
// tid in its drained ring as 16 float4s, granule g at red[(c * 16 + g) * 128 + tid] (a warp's
// stores and reads are 512 contiguous bytes); then every rank, for the passes it owns, replaces
// its accumulators by the sum over the ranks, taken in rank order (the same sum whichever rank
// computes it: deterministic).
__device__ __forceinline__ void split_store(float4* red, const float (&acc)[64], int c, int tid) {
#pragma unroll
  for (int g = 0; g < 16; ++g)
    red[(c * 16 + g) * 128 + tid] = float4{acc[4 * g], acc[4 * g + 1], acc[4 * g + 2], acc[4 * g + 3]};
}
template <typename T, int kSplit>
__device__ __forceinline__ void split_sum(const float4* red, float (&acc)[64], int c, int tid, uint32_t rank) {
  constexpr int kCols = kOutData / sizeof(T), kPasses = 128 / kCols, kGranules = kCols / 8;  // float4s per pass
  constexpr int kChunk = 2;  // granules whose loads are all issued before their first add
  static_for<kPasses>([&](auto pass_c) {
    constexpr int pass = decltype(pass_c)::value;
    if (!owns_pass<kSplit, kPasses>(c, pass, rank)) return;
#pragma unroll
    for (int g0 = 0; g0 < kGranules; g0 += kChunk) {
      float4 v[kChunk][kSplit];
      const float4* at = red + (c * 16 + pass * kGranules + g0) * 128 + tid;
#pragma unroll
      for (int g = 0; g < kChunk; ++g)
#pragma unroll
        for (int r = 0; r < kSplit; ++r) v[g][r] = ld_cluster_f32x4(at + g * 128, r);
#pragma unroll
      for (int g = 0; g < kChunk; ++g) {
        float4 sum = v[g][0];
#pragma unroll
        for (int r = 1; r < kSplit; ++r) {
          const float4 x = v[g][r];
          sum = float4{sum.x + x.x, sum.y + x.y, sum.z + x.z, sum.w + x.w};
        }
        float* a = &acc[4 * (pass * kGranules + g0 + g)];
        a[0] = sum.x;
        a[1] = sum.y;
        a[2] = sum.z;
        a[3] = sum.w;
      }
    }
  });
}

// D for one consumer's 64 x 128 results: the thread's fragment (rows r and r + 8 of the warp's
// 16, columns 8 j + 2 (lane % 4) + {0, 1}) goes to shared memory, 128 bytes of each row a pass.
// With p.d_tma one thread then stores the 64 x 128-byte box through D's tensor map (rows in
// TMA's 128-byte swizzle: 16-byte chunk j of row r at chunk j ^ (r % 8); TMA clips the matrix's
// edges). The passes take the consumer's kBufs blocks in turn (`q` counts them across tiles), and
// a pass waits only until the store that last used its block has read it: with two blocks a
// store drains while the next pass is staged, and a tile's last stores drain under the next
// tile's MMAs. Otherwise (D or its rows not 16-byte aligned: element stores; or a D that the
// tensor map could not describe: 16-byte stores, element stores at the edges) the warpgroup
// writes whole rows itself from the first block.
template <typename T, int kBufs, int kSplit = 1>
__device__ __forceinline__ void epilogue(const GemmParams& p, const CUtensorMap* map_d, const float (&acc)[64],
                                         uint8_t* out, uint32_t& q, int c, int tid, int64_t row0, int64_t col0,
                                         uint32_t rank = 0) {
  constexpr int kCols = kOutData / sizeof(T), kPasses = 128 / kCols;  // columns per pass
  const int warp = tid / 32, lane = tid % 32, fr = warp * 16 + lane / 4, fc = 2 * (lane % 4);
  const bool plain = !p.c && !p.bias;
  if (p.d_tma) {
    static_for<kPasses>([&](auto pass_c) {
      constexpr int pass = decltype(pass_c)::value;
      if constexpr (kSplit > 1) {
        if (!owns_pass<kSplit, kPasses>(c, pass, rank)) return;
      }
      uint8_t* block = out + (q++ % kBufs) * kOutBytes;
      if (tid == 0) bulk_wait_read<kBufs - 1>();  // the store that last used this block has read it
      sync_consumer(c);
      stage_pass_any<T, true, pass>(p, acc, block, fr, fc, plain, row0, col0);
      fence_async_shared();
      sync_consumer(c);
      if (tid == 0) {
        tma_store_2d(map_d, block, int32_t(col0 + pass * kCols), int32_t(row0));
        bulk_commit();
      }
    });
    return;
  }
  const bool vec = (reinterpret_cast<unsigned long long>(p.d) % 16 == 0) && (p.d_stride * int64_t(sizeof(T))) % 16 == 0;
  static_for<kPasses>([&](auto pass_c) {
    constexpr int pass = decltype(pass_c)::value;
    if constexpr (kSplit > 1) {
      if (!owns_pass<kSplit, kPasses>(c, pass, rank)) return;
    }
    sync_consumer(c);  // the previous pass (or tile) has been read out
    stage_pass_any<T, false, pass>(p, acc, out, fr, fc, plain, row0, col0);
    sync_consumer(c);
    constexpr int kPieces = kOutData / 16, kChunks = 64 * kPieces;  // 16-byte pieces of the 64-row block
#pragma unroll
    for (int i = tid; i < kChunks; i += 128) {
      const int r = i / kPieces, piece = i % kPieces;
      const int64_t row = row0 + r, col = col0 + pass * kCols + piece * (16 / int(sizeof(T)));
      if (row >= p.m || col >= p.n) continue;
      const uint8_t* src = out + r * kOutRow + piece * 16;
      T* dst = static_cast<T*>(p.d) + row * p.d_stride + col;
      if (vec && col + 16 / int64_t(sizeof(T)) <= p.n) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
      } else {
        for (int e = 0; e < 16 / int(sizeof(T)) && col + e < p.n; ++e) dst[e] = reinterpret_cast<const T*>(src)[e];
      }
    }
  });
}

}  // namespace wgmma_detail

// kBM: the tile's rows, 128 or 256 (gemm_config::wgmma_block_m). kGroup: 32-wide K steps summed
// by the tensor cores before each fp32 promotion. kN, kK: 0 (the ahead-of-time build: N and K
// from p), or the N and K this instance is specialised on (the JIT: src/runtime/jit; launched
// only for calls with p.n == kN and p.k == kK), so that the tile walk and the K loop count with
// constants. kSplit > 1 (gemm_config::wgmma_split_k, 128-row tiles): launched in clusters of
// kSplit CTAs, one tile per cluster (the grid is tiles x kSplit), rank r taking the r-th share of
// the K blocks; the partial tiles meet over distributed shared memory (split_store, split_sum).
// kB1D: the 1D1D recipe, B with 1 x 128 fp32 scales (layout mn_major_tma, through map_sb; unused
// otherwise), one per tile column and K block (promote_cols); else B's 128 x 128 scales, one per
// stage, read by the producer in any layout and format. A's 1 x 128 fp32 scales (mn_major_tma)
// come through map_sa.
template <int kBM, int kGroup, int64_t kN = 0, int64_t kK = 0, int kSplit = 1, bool kB1D = false>
__global__ void __launch_bounds__(gemm_config::kWgmmaThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const __grid_constant__ CUtensorMap map_sa, const __grid_constant__ CUtensorMap map_d,
                      const __grid_constant__ CUtensorMap map_sb, const GemmParams p) {
  using namespace wgmma_detail;
  using namespace sm90;
  using Tile = WgmmaTile<kBM, kB1D>;
  constexpr int kStages = Tile::kStages, kBlocks = Tile::kBlocks;
  constexpr uint32_t kTileA = Tile::kTileA, kTileB = Tile::kTileB;
  static_assert(kGroup == 1 || kGroup == 2 || kGroup == 4, "a 128-wide K block is 4 steps of 32");
  static_assert(kN >= 0 && kK >= 0 && kK % 16 == 0, "a specialisation names a valid N and K");
  static_assert(kSplit == 1 || ((kSplit == 2 || kSplit == 4) && kBM == 128), "split-K: 2 or 4 CTAs, 128-row tiles");
  const int64_t n = kN ? kN : p.n, k = kK ? kK : p.k;
  extern __shared__ uint8_t smem_raw[];
  // Swizzled TMA tiles need 1024-byte alignment.
  uint8_t* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  uint8_t* tiles_a = smem;
  uint8_t* tiles_b = smem + kStages * kTileA;
  uint8_t* outs = smem + kStages * (kTileA + kTileB);  // 16-byte aligned rows for the epilogue
  float* scales_a = reinterpret_cast<float*>(outs + kConsumers * Tile::kOutBuffers * kOutBytes);
  // kB1D: B's kBN scales of each stage (TMA), after A's (128-byte aligned)
  uint64_t* full = reinterpret_cast<uint64_t*>(scales_a + kStages * (kBM + (kB1D ? kBN : 0)));  // 8-byte aligned
  uint64_t* empty = full + kStages;
  // B's scales: kB1D, kBN per stage from TMA; else the block scale of each stage, from the producer
  float* scales_b = kB1D ? scales_a + kStages * kBM : reinterpret_cast<float*>(empty + kStages);

  const uint32_t m_blocks = uint32_t(ceil_div(p.m, kBM)), n_blocks = uint32_t(ceil_div(n, kBN));
  const int64_t k_blocks = ceil_div(k, kBK);
  const uint32_t tiles = m_blocks * n_blocks;  // below 2^31 (gemm_wgmma_takes)
  // split-K: this CTA's rank in its cluster and its share [k_range(rank), k_range(rank + 1)) of the
  // K blocks (at most 2^24: K < 2^31, so r x blocks fits 32 bits), computed where used
  uint32_t rank = 0;
  if constexpr (kSplit > 1) rank = cluster_rank();
  auto k_range = [&](uint32_t r) -> int64_t {
    return kSplit == 1 ? (r == 0 ? 0 : k_blocks) : int64_t(r * uint32_t(k_blocks) / kSplit);
  };
  // every cluster of kSplit CTAs takes exactly one tile (gemm_wgmma_setup's grid, launched in
  // clusters): the cluster barriers below pair up, and the ranks' K shares cover K
  if constexpr (kSplit > 1) {
    if (gridDim.x != tiles * kSplit || cluster_ctas() != kSplit) __trap();
  }
  // The warpgroup index through a shuffle, so that the compiler knows it is warp-uniform and keeps
  // what derives from it (the consumer's descriptors) in uniform registers.
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x) / 128, 0);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kConsumers * 4);  // one arrival per consumer warp
    }
    mbar_init_fence();
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_b);
    tma_prefetch_map(&map_sa);
    if constexpr (kB1D) tma_prefetch_map(&map_sb);
    if (p.d_tma) tma_prefetch_map(&map_d);
  }
  __syncthreads();
  pdl_wait();  // the kernel before (pdl.cuh) has completed: nothing above touched global memory

  if (wg == 0) {  // producer
    regs_release<Regs<kSplit>::kProducer>();
    if (kSplit == 1 && threadIdx.x != 0) return;
    if (threadIdx.x == 0) {
      uint32_t s = 0, phase = 0;
      // K block kb of tile (mb, nb) into the next stage
      auto produce = [&](uint32_t mb, uint32_t nb, int64_t kb) {
        float sb = 0.0f;
        if constexpr (!kB1D) sb = gemm_operand_scale(p.b, nb * kBN, kb);
        mbar_wait(&empty[s], phase ^ 1);
        // published by the arrive below (release), read after the consumers' wait
        if constexpr (!kB1D) scales_b[s] = sb;
        mbar_arrive_expect_tx(&full[s], Tile::kStageBytes);
        tma_load_2d(tiles_a + s * kTileA, &map_a, &full[s], int32_t(kb * kBK), int32_t(mb * kBM));
        tma_load_2d(tiles_b + s * kTileB, &map_b, &full[s], int32_t(kb * kBK), int32_t(nb * kBN));
        tma_load_2d(scales_a + s * kBM, &map_sa, &full[s], int32_t(mb * kBM), int32_t(kb));
        if constexpr (kB1D) tma_load_2d(scales_b + s * kBN, &map_sb, &full[s], int32_t(nb * kBN), int32_t(kb));
        if (++s == kStages) s = 0, phase ^= 1;
      };
      for (uint32_t t = blockIdx.x / kSplit; t < tiles; t += gridDim.x / kSplit) {
        uint32_t mb, nb;
        wgmma_tile_at(t, m_blocks, n_blocks, mb, nb);
        if constexpr (kSplit == 1) {
          for (int64_t kb = 0; kb < k_blocks; ++kb) produce(mb, nb, kb);
        } else {  // rolled: unrolled, the producer spilled within its registers
#pragma unroll 1
          for (int64_t kb = k_range(rank), kb_end = k_range(rank + 1); kb < kb_end; ++kb) produce(mb, nb, kb);
        }
      }
      // The CTA's last loads are issued: the next kernel may be scheduled (pdl.cuh) onto the SMs
      // as they free up (decode.cu says why not at the start).
      pdl_trigger();
    }
    if constexpr (kSplit > 1) {  // the consumers' two cluster barriers (every thread of the cluster takes them)
      cluster_sync();
      cluster_sync();
    }
    return;
  }

  // consumers: kBlocks blocks of 64 rows each, block h at rows 64 h of the consumer's share
  regs_claim<Regs<kSplit>::kConsumer>();
  const int c = wg - 1, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const int row_in_tile = c * 64 * kBlocks + warp * 16 + lane / 4;  // and + 8 (block h: + 64 h)
  // Stage 0's descriptors of this consumer's first 64 rows of A and of B, in 16-byte units: stage
  // s, block h and K step j add s * tile / 16, 64 h * kBK / 16 and 32 j / 16.
  const uint32_t a16 = (smem_addr(tiles_a) + c * 64 * kBlocks * kBK) >> 4, b16 = smem_addr(tiles_b) >> 4;
  float acc[kBlocks][64];
  uint32_t s = 0, phase = 0, q = 0;  // q: the epilogue's passes so far
  // One run: the K steps [run * kGroup, (run + 1) * kGroup) of block h into d, committed as a group.
  auto issue = [&](float(&d)[64], int h, int run) {
#pragma unroll
    for (int step = run * kGroup; step < (run + 1) * kGroup; ++step)
      wgmma_m64n128k32_e4m3(d, desc_k_major_sw128_at(a16 + s * (kTileA >> 4) + h * (64 * kBK >> 4) + step * 2),
                            desc_k_major_sw128_at(b16 + s * (kTileB >> 4) + step * 2), step > run * kGroup);
    wgmma_commit();
  };
  // The stage's decode scales of the thread's rows r and r + 8 of block h. 1D2D: lane 0 reads B's
  // scale and is the lane that releases the stage (mbarrier.arrive releases the arriving thread's
  // own accesses), then shares it: no other lane touches scales_b. 1D1D: 1 (B's scales are the
  // columns', promote_cols).
  auto scale_b = [&] {
    if constexpr (kB1D) return 1.0f;
    float sb = 0.0f;
    if (lane == 0) sb = scales_b[s];
    return __shfl_sync(0xffffffffu, sb, 0);
  };
  auto read_scales = [&](float sb, int h, float& s0, float& s1) {
    s0 = scales_a[s * kBM + row_in_tile + 64 * h] * sb;
    s1 = scales_a[s * kBM + row_in_tile + 64 * h + 8] * sb;
  };
  // 1D1D: the thread's columns of the stage's B scales
  const float* cols_b = scales_b + 2 * (lane % 4);
  auto promote_run = [&](float(&a)[64], const float(&part)[64], float s0, float s1) {
    if constexpr (kB1D) promote_cols(a, part, s0, s1, cols_b + s * kBN);
    else promote(a, part, s0, s1);
  };
  auto release = [&] {
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[s]);
  };
  constexpr int kRuns = 4 / kGroup;  // runs of a 128-wide K block
  for (uint32_t t = blockIdx.x / kSplit; t < tiles; t += gridDim.x / kSplit) {
    uint32_t mb, nb;
    wgmma_tile_at(t, m_blocks, n_blocks, mb, nb);
#pragma unroll
    for (int h = 0; h < kBlocks; ++h)
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[h][i] = 0.0f;
    for (int64_t kb = k_range(rank), kb_end = k_range(rank + 1); kb < kb_end; ++kb) {
      mbar_wait(&full[s], phase);
      if constexpr (kBlocks == 1) {
        // The block's runs alternate between two sets of run accumulators: run g is issued, then
        // run g - 1 (complete after wait<1>) is promoted while g is in flight; the last run is
        // promoted once the stage is released (1D1D: before, its promotion reads the stage's B
        // scales). A run's accumulators are rewritten only after
        // their promotion, behind a wgmma fence (run 1's were last touched before run 0's).
        float part0[64], part1[64];
        wgmma_fence();
        issue(part0, 0, 0);
        float s0, s1;
        read_scales(scale_b(), 0, s0, s1);  // while the first run is in flight
#pragma unroll
        for (int run = 1; run < kRuns; ++run) {
          if (run != 1) wgmma_fence();
          issue(run % 2 ? part1 : part0, 0, run);
          wgmma_wait<1>();
          promote_run(acc[0], run % 2 ? part0 : part1, s0, s1);
        }
        wgmma_wait<0>();
        if constexpr (kB1D) {  // the column scales are read from the stage: released after them
          promote_run(acc[0], kRuns % 2 ? part0 : part1, s0, s1);
          release();
        } else {
          release();
          promote_run(acc[0], kRuns % 2 ? part0 : part1, s0, s1);
        }
      } else {
        // Two blocks: acc holds 128 registers, so one set of run accumulators, each run issued,
        // waited for and promoted in turn; the other consumer's MMAs keep the tensor cores busy
        // meanwhile (256-row tiles, H200 session 16: mostly 1.06-1.15x the 128-row kernel from M = 512).
        float part[64];
        const float sb = scale_b();
#pragma unroll
        for (int h = 0; h < kBlocks; ++h) {
          float s0, s1;
          read_scales(sb, h, s0, s1);
#pragma unroll
          for (int run = 0; run < kRuns; ++run) {
            wgmma_fence();
            issue(part, h, run);
            wgmma_wait<0>();
            const bool last = h == kBlocks - 1 && run == kRuns - 1;
            if (!kB1D && last) release();
            promote_run(acc[h], part, s0, s1);
            if (kB1D && last) release();  // after the column scales' last read
          }
        }
      }
      if (++s == kStages) s = 0, phase ^= 1;
    }
    if constexpr (kSplit > 1) {  // one tile per cluster: the ring is drained once both consumers' MMAs are done
      asm volatile("bar.sync 3, 256;" ::: "memory");
      float4* red = reinterpret_cast<float4*>(smem);
      split_store(red, acc[0], c, tid);
      cluster_sync();  // every rank's partial tile is written
      if (p.d_bf16) split_sum<uint16_t, kSplit>(red, acc[0], c, tid, rank);
      else split_sum<float, kSplit>(red, acc[0], c, tid, rank);
    }
    uint8_t* out = outs + c * Tile::kOutBuffers * kOutBytes;
#pragma unroll
    for (int h = 0; h < kBlocks; ++h) {
      const int64_t row0 = int64_t(mb) * kBM + (c * kBlocks + h) * 64, col0 = int64_t(nb) * kBN;
      if (p.d_bf16) epilogue<uint16_t, Tile::kOutBuffers, kSplit>(p, &map_d, acc[h], out, q, c, tid, row0, col0, rank);
      else epilogue<float, Tile::kOutBuffers, kSplit>(p, &map_d, acc[h], out, q, c, tid, row0, col0, rank);
    }
  }
  if constexpr (kSplit > 1) cluster_sync();  // no CTA leaves while another reads its shared memory
  if (p.d_tma && tid == 0) bulk_wait<0>();  // the last stores complete before the CTA exits
}

}  // namespace mxq::cuda
