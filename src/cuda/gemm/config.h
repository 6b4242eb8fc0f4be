// The shapes of the CUDA GEMM kernels, in plain C++: the kernels (wgmma.cu, decode.cu) compile
// from these numbers and plan_gemm (src/core/gemm_plan.cpp) reports them, so that
// `mxq gemm-plan` prints what runs.
#pragma once

#include "mxq/numerics/config.h"   // the fixed-width types, under NVRTC too
#include "mxq/numerics/layouts.h"  // ceil_div

namespace mxq::gemm_config {

// The TMA + wgmma kernel: BM x 128 output tiles (BM = 128 or 256, wgmma_block_m below), K blocks
// of 128 (one scale block), a ring of shared-memory stages, one producer and two consumer
// warpgroups. Each consumer takes BM / 2 rows of a tile as BM / 128 blocks of 64 (wgmma's m).
constexpr int kWgmmaBN = 128, kWgmmaBK = 128;
constexpr int kWgmmaConsumers = 2;
constexpr int kWgmmaThreads = 128 * (1 + kWgmmaConsumers);
// Its tensor maps (kernel parameters): A, B, A's scales, D, and B's 1 x 128 scales (1D1D).
constexpr int kWgmmaMaps = 5;
// The epilogue stages each consumer's 64 x 128 results 128 bytes of a row at a time (64 columns
// of bf16 D, 32 of fp32). For the threads' own stores the rows are padded by 16 bytes so that a
// warp's 4-byte bf16 fragment writes hit 32 different banks (fp32's 8-byte writes are 2-way
// conflicted); for the TMA store they are 128 bytes in TMA's 128-byte swizzle, within the same
// block (64 x 144 bytes = 9 x 1024, so each block stays 1024-byte aligned as the swizzle needs).
// (Narrower than a row: measured faster, session 14.)
constexpr uint32_t kWgmmaOutData = 128, kWgmmaOutRow = kWgmmaOutData + 16, kWgmmaOutBytes = 64 * kWgmmaOutRow;
// B1D: B has 1 x 128 scales (the 1D1D recipe), a scale per tile column and K block, which each
// stage brings with its tiles (kTileScaleB); 1D2D's one 128 x 128 block scale per stage comes from
// the producer thread.
template <int BM, bool B1D = false>
struct WgmmaTile {
  static_assert(BM == 128 || BM == 256, "the wgmma kernel's tiles are 128 or 256 rows");
  static constexpr int kBM = BM;
  static constexpr int kBlocks = BM / (64 * kWgmmaConsumers);  // 64-row wgmma blocks per consumer
  // 128 rows: five stages; on the H200, 4 and 6 ran ~13% slower and 3 ~2% slower (session 14,
  // bench/RESULTS.md; the cause of the even counts' loss is not known). 256 rows: four (49 KB
  // each, the most that fit); 3 ran 7% slower at 4096x7168x7168 (session 16).
  static constexpr int kStages = BM == 128 ? 5 : 4;
  // Epilogue blocks per consumer: with two, a TMA store of D drains from one while the consumer
  // stages the next into the other (128 rows: a bf16 tile's two passes never wait); 256 rows have
  // room for one only.
  static constexpr int kOutBuffers = BM == 128 ? 2 : 1;
  // Per stage: the A and B tiles and A's BM scales (what TMA writes; B1D: and B's kWgmmaBN
  // scales), and 1D2D's one B scale.
  static constexpr uint32_t kTileA = BM * kWgmmaBK, kTileB = kWgmmaBN * kWgmmaBK, kTileScaleA = BM * 4;
  static constexpr uint32_t kTileScaleB = B1D ? kWgmmaBN * 4 : 0;
  static constexpr uint32_t kStageBytes = kTileA + kTileB + kTileScaleA + kTileScaleB;
  // the shared-memory carve-up (wgmma.cuh): swizzled tiles on 1024 bytes, TMA'd scales on 128
  // (A's scales follow the 1024-byte aligned epilogue blocks, B1D's B scales A's)
  static_assert(kTileA % 1024 == 0 && kTileB % 1024 == 0 && kTileScaleA % 128 == 0 && kTileScaleB % 128 == 0,
                "carve-up alignment");
  static constexpr int64_t kSmemBytes =
      int64_t(kStages) * (kStageBytes + 4) + kWgmmaConsumers * kOutBuffers * kWgmmaOutBytes + 2 * kStages * 8 + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "the wgmma kernel's shared memory exceeds sm_90's per-CTA limit");
};
constexpr int wgmma_stages(int bm) { return bm == 256 ? WgmmaTile<256>::kStages : WgmmaTile<128>::kStages; }
constexpr int64_t wgmma_smem_bytes(int bm, bool b1d = false) {
  return bm == 256 ? (b1d ? WgmmaTile<256, true>::kSmemBytes : WgmmaTile<256>::kSmemBytes)
                   : (b1d ? WgmmaTile<128, true>::kSmemBytes : WgmmaTile<128>::kSmemBytes);
}
constexpr int64_t wgmma_tiles(int64_t m, int64_t n, int bm) {
  return num::ceil_div(m, bm) * num::ceil_div(n, kWgmmaBN);
}
// The tile height for M x N on `sms` SMs: the one with the shorter estimated time, counted as the
// persistent grid's waves (each CTA walks its tiles in turn) times the work of one tile. A 256-row
// tile does twice a 128-row one's work in 0.9 of twice its time: from 512 rows the 256-row tiles
// ran 0.96-1.15x as fast as 128-row ones, most samples 1.06-1.15x (H200, bench/RESULTS.md session
// 16, runs 1-2, whose figures move by up to ~15% between samples), the A and B bytes each tile's
// stages bring to shared memory being spread over twice the MMAs. Ties go to 128 rows, so shapes
// whose 128-row tiles fit one wave keep them (256x7168: 1.7x faster than at 256 rows).
constexpr int wgmma_block_m(int64_t m, int64_t n, int sms) {
  const int64_t w128 = num::ceil_div(wgmma_tiles(m, n, 128), sms) * 10;
  const int64_t w256 = num::ceil_div(wgmma_tiles(m, n, 256), sms) * 2 * 9;
  return w256 < w128 ? 256 : 128;
}
// The persistent order of the wgmma kernel's tiles: bands of kWgmmaBandN N blocks, the N blocks
// of a band fastest, then M, so that the CTAs running at once share A rows and B columns in L2.
// Tile t -> (M block mb, N block nb); every tile once for t in [0, m_blocks * n_blocks). The
// kernel walks in 32-bit unsigned arithmetic (fewer instructions per division than 64-bit):
// gemm_wgmma_takes keeps the tile count below 2^31.
constexpr int64_t kWgmmaBandN = 8;
template <class I>
MXQ_HD void wgmma_tile_at(I t, I m_blocks, I n_blocks, I& mb, I& nb) {
  const I per_band = m_blocks * I(kWgmmaBandN), band = t / per_band, first = band * I(kWgmmaBandN);
  const I width = n_blocks - first < I(kWgmmaBandN) ? n_blocks - first : I(kWgmmaBandN);
  const I local = t - band * per_band;
  mb = local / width;
  nb = first + local % width;
}

// The wgmma swap-AB decode kernel (decode.cu; M <= 64 where the mma.sync one below does not run):
// one warpgroup per CTA. A tile of 64 or 128 weight rows is wgmma's M operand and the activation
// rows its N operand (n = 16, 32 or 64, all of M in one CTA row). TMA streams the tile's 128-wide
// K blocks through a ring of stages; a cluster of decode_cluster CTAs splits a tile's K and sums
// over distributed shared memory. The choice keeps every CTA resident in one wave (the weight
// stream then runs at full width to the end) and gives each CTA at least 4 K blocks where K allows.
constexpr int kDecodeMaxM = 64;
// Up to kDecodePreferMaxM rows the decode kernel takes every call it can; above, only where its
// tiles fit one wave (decode_one_wave; H200, bench/RESULTS.md session 10: 64x24576x1536 and
// 64x32768x512 ran 1.4-1.7x longer than on the tma-wgmma kernel, every one-wave shape shorter),
// and the calls the tma-wgmma kernel cannot take (other scale layouts, unaligned operands).
constexpr int kDecodePreferMaxM = 32;
// ... except at promote-k 128 for short K, where the wgmma kernel (split-K clusters where its tiles
// are few) was faster: from 33 rows at K <= 2048 (H200, bench/RESULTS.md session 19, run 3, us
// decode / wgmma: 64x24576x1536 22.5 / 19.0, 64x7168x2048 12.2 / 10.0, 48x24576x1536 21.7 / 18.1,
// 48x7168x2048 12.0 / 10.1; at K >= 7168 the decode kernel, 64x2112x7168 11.6 / 13.1) and from 17
// rows at K <= 512 (32x32768x512 14.3 / 9.6; 16x32768x512 9.8 / 9.8). The decode kernel promotes
// every 32 of K, so at the default promote-k 32 it keeps these shapes.
constexpr bool decode_cedes_short_k(int64_t m, int64_t k, int promote_k) {
  return promote_k == 128 && ((m > kDecodePreferMaxM && k <= 2048) || (m > 16 && k <= 512));
}
// Backend auto runs the decode kernels rather than cuBLASLt up to kDecodeAutoMaxM rows: there they
// were as fast or faster on every issue-6 shape (H200, bench/RESULTS.md session 10: 0.99-1.96x at
// M = 16) and are more accurate (fp32 error 1.4e-4 against cuBLASLt's 3.2e-4); at M = 32 cuBLASLt
// was faster on 2 of the 6.
constexpr int kDecodeAutoMaxM = 16;
// wgmma's n: the CTA takes every activation row (M <= kDecodeMaxM = the largest n), zero-filled past M
constexpr int decode_n(int64_t m) { return m <= 16 ? 16 : m <= 32 ? 32 : 64; }
static_assert(kDecodeMaxM <= 64, "one CTA row of activations: decode_n covers every M the decode kernel takes");
// Stages of the ring: as many as keep the resident CTAs (decode_ctas_per_sm) within an SM's shared
// memory (3 of 64 rows: 6 stages at n <= 32, 4 at n = 64; 2 of 128 rows: 4).
constexpr int decode_stages(int rows, int n) { return rows == 64 ? (n == 64 ? 4 : 6) : 4; }
// B's 128 x 128 block scales that the kernel reads into shared memory at once (blocks of K).
constexpr int kDecodeScaleChunk = 128;
// A stage's slot for A's n fp32 scales: TMA writes shared memory at 128-byte aligned addresses.
constexpr int decode_scale_slot(int n) { return (n * 4 + 127) / 128 * 128; }
// Dynamic shared memory: the ring (weights, activations and A's fp32 scales per stage), the
// stages' mbarriers, a chunk of B's scales and the 1024-byte alignment of the swizzled tiles; the
// partial sums reuse the ring.
constexpr int64_t decode_smem_bytes(int64_t m, int rows) {
  return int64_t(decode_stages(rows, decode_n(m))) * ((rows + decode_n(m)) * 128 + decode_scale_slot(decode_n(m)) + 8) +
         kDecodeScaleChunk * 4 + 1024;
}
// Resident CTAs per SM, bound by shared memory (227 KB): 3 of 64 weight rows, 2 of 128. Registers
// allow it: two sets of one step's results in flight (decode.cu), 64 per thread at n = 64.
constexpr int decode_ctas_per_sm(int rows) { return rows == 64 ? 3 : 2; }
// Tiles of `rows` weight rows, and the CTAs of that size one wave holds.
constexpr int64_t decode_tiles(int64_t n, int rows) { return num::ceil_div(n, rows); }
constexpr int64_t decode_slots(int rows, int sms) { return int64_t(sms) * decode_ctas_per_sm(rows); }
// 128-row tiles where 64-row ones would not fit one wave; n = 64 has registers for 64 rows only.
constexpr int decode_tile_rows(int64_t m, int64_t n, int sms) {
  return decode_n(m) < 64 && decode_tiles(n, 64) > decode_slots(64, sms) ? 128 : 64;
}
// Whether a decode kernel's grid of `ctas` takes programmatic dependent launch (pdl.cuh): where it
// fills at least two thirds of the `slots` one wave holds (cluster_slots). Launched early, the next kernel's CTAs
// take the slots a sparser grid leaves free, unevenly spread over the SMs, and that kernel ran
// slower than without (H200, bench/RESULTS.md session 20, run 3, us without / with, in CUDA-graph
// replay of the same GEMM: 64x7168x16384 43.7 / 50.2 at 57% of the slots, 16x7168x16384 33.7 /
// 35.8, 1x2112x7168 7.0 / 7.2 at 50%; from 70% mostly faster: 16x4096x7168 10.4 / 10.1 (64
// clusters of 4 of the 92 resident), 16x2112x7168 7.5 / 7.1, 1x7168x2048 6.3 / 5.8 at 85%; not
// 16x32768x512, 10.1 / 10.7 at 97%).
constexpr bool decode_pdl(int64_t ctas, int64_t slots) { return 3 * ctas >= 2 * slots; }
// The weight bytes a CTA of the mma.sync decode kernel asks the L2 for before its pdl_wait
// (l2_prefetch_bulk): the start of each row it streams, so that the weights, which no kernel
// before writes in a model's forward pass (and which the L2 would serve fresh if one did), are on
// their way while that kernel drains. Two CTAs per SM make ~8 MB over 132 SMs. Measured on the
// H200 (bench/RESULTS.md session 34, graph replay, B past the L2): 1x24576x1536 14.05 -> 13.7 us,
// 1x32768x512 7.65 -> 7.4, the rest unchanged. The same prefetch of the first TMA boxes made the
// wgmma decode kernel slower (16 x 2112 x 7168 8.4 -> 9.1 us, 1 x 7168 x 16384 35.8 -> 37.05) and
// the wgmma kernel faster on most shapes but slower on 24576 x 1536 (128 rows, promote-k 128:
// 16.65 -> 18.1), so neither has it.
inline constexpr int kWeightPrefetchBytes = 32 * 1024;
constexpr bool decode_one_wave(int64_t m, int64_t n, int sms) {
  const int rows = decode_tile_rows(m, n, sms);
  return decode_tiles(n, rows) <= decode_slots(rows, sms);
}
// Clusters of 1, 2, 4 and 8 CTAs of one kernel resident at once (at[log2 c]). A cluster's CTAs
// share a GPC, so fewer than slots / c fit: on the H200 (cudaOccupancyMaxActiveClusters on the
// decode kernel, bench/RESULTS.md session 11) 62 clusters of 4 and 30 of 8 at 2 CTAs per SM
// (slots / c: 66 and 33), 92 and 45 at 3 (99 and 49). A cluster count past that runs a second
// wave: 64x4096x7168 took 25.4 us at 4 CTAs per cluster (64 clusters, 2 CTAs per SM), 18.9 at 2.
struct ResidentClusters {
  int64_t at[4];
};
// Without a measurement (a plan for a described architecture): about a tenth of the slots lost
// to the GPCs from clusters of 4 up (fewer clusters than every H200 figure above).
constexpr ResidentClusters model_resident_clusters(int64_t slots) {
  return {{slots, slots / 2, slots * 9 / 40, slots * 9 / 80}};
}
#ifndef __CUDACC_RTC__
}  // namespace mxq::gemm_config
namespace mxq {
struct ArchDesc;
}
namespace mxq::gemm_config {
// The architecture's figures for a kernel of ctas_per_sm (2 or 3) CTAs per SM, else the model
// (src/core/gemm_plan.cpp).
ResidentClusters decode_resident(const ArchDesc& arch, int ctas_per_sm);
#endif
constexpr int cluster_log2(int c) { return c >= 8 ? 3 : c >= 4 ? 2 : c >= 2 ? 1 : 0; }
// The CTA slots one wave holds for a grid in clusters of `cluster`: the SMs' `slots`, or the
// resident clusters of that size times it.
constexpr int64_t cluster_slots(int64_t slots, int cluster, const ResidentClusters& resident) {
  return cluster > 1 ? resident.at[cluster_log2(cluster)] * cluster : slots;
}
// The split-K rule both kernels use: the most CTAs per cluster (doubling, up to max_split) such
// that every one of `tiles` clusters stays resident in one wave and each CTA keeps at least 4 of
// the tile's `blocks` K blocks.
constexpr int resident_split(int64_t tiles, int64_t blocks, int max_split, const ResidentClusters& resident) {
  int s = 1;
  while (s < max_split && tiles <= resident.at[cluster_log2(2 * s)] && blocks / (2 * s) >= 4) s *= 2;
  return s;
}
// Split-K of the wgmma kernel, for shapes with few tiles (small M): a cluster of S CTAs (S = 2 or 4,
// 128-row tiles only) takes one tile, rank r its r-th contiguous share of the K blocks, and the
// ranks sum their fp32 partial tiles over distributed shared memory in rank order before the
// epilogue (wgmma.cuh): deterministic, no workspace. Without it a 128 x 7168 D is 56 tiles, and
// 76 of the H200's 132 SMs idle while the weights stream through the other 56. S is the largest
// (doubling) such that every cluster of S stays resident in one wave (`resident`: clusters of 1,
// 2, 4 CTAs of the kernel at once, at[log2 S]) and each rank keeps 4 K blocks (resident_split).
// Over more than one wave it lost (H200, bench/RESULTS.md session 19: 128x24576x1536 in 3 waves
// of half K 26.6 us against 15.2 persistent, 65x8576x7168 in 3 of a quarter 44.6 against 26.9).
constexpr int kWgmmaMaxSplit = 4;
// The (tile rows, split) pairs the wgmma kernel has: 128 or 256 rows, split-K 2 or 4 at 128 only.
constexpr bool wgmma_variant_exists(int block_m, int split) {
  return (block_m == 128 || block_m == 256) && (split == 1 || (block_m == 128 && (split == 2 || split == 4)));
}
constexpr int wgmma_split_k(int64_t m, int64_t n, int64_t k, int block_m, const ResidentClusters& resident) {
  return block_m == 128 ? resident_split(wgmma_tiles(m, n, 128), num::ceil_div(k, kWgmmaBK), kWgmmaMaxSplit, resident)
                        : 1;
}
#ifndef __CUDACC_RTC__
// The wgmma kernel (one CTA per SM) in clusters of 1, 2 and 4: the decode kernel's residency at 2
// CTAs per SM (decode_resident; clusters are placed within a GPC either way), halved.
ResidentClusters wgmma_resident(const ArchDesc& arch);
#endif
// The most CTAs (up to 8) that split each tile's K while every tile's cluster stays resident in
// one wave and each CTA keeps at least 4 K blocks (resident_split).
constexpr int decode_cluster(int64_t m, int64_t n, int64_t k, int sms, const ResidentClusters& resident) {
  return resident_split(decode_tiles(n, decode_tile_rows(m, n, sms)), k / 128, 8, resident);
}
// Blocks of scales in flight per thread (decode.cu's ring): a block's promotion uses scales loaded
// decode_scale_ring - 1 blocks earlier, so the loop does not wait on their latency. At n = 64 only
// 2 (one block ahead): a deeper ring spilled within the 168 registers of 3 CTAs per SM.
constexpr int decode_scale_ring(int n, int rows) { return rows == 64 && n <= 32 ? 8 : n == 64 ? 2 : 4; }

// The mma.sync decode kernel (decode_mma.cu), for M <= kDecodeMmaMaxM: a CTA of 8 warps, each
// warp 16 weight rows and a share of K. The warps form 8 / split groups of 16 rows, and the
// `split` warps of a group take interleaved 128-wide K blocks (decode_mma_k_split: at least 4
// blocks per warp where K allows, and no more warps than one wave of CTAs holds). Each thread
// streams its weight bytes through a private kDecodeMmaStages-deep cp.async ring.
constexpr int kDecodeMmaMaxM = 8;
// ... and K below kDecodeMmaMaxK: at K = 16384 the wgmma kernel streams faster at every M <= 8
// (H200, bench/RESULTS.md session 10: 1x7168x16384 34.8 against 39.5 us), at K <= 7168 the mma.sync
// one at M <= 4 on every issue shape (the boundary between is not measured).
constexpr int64_t kDecodeMmaMaxK = 16384;
constexpr bool decode_use_mma(int64_t m, int64_t k) { return m <= kDecodeMmaMaxM && k < kDecodeMmaMaxK; }
constexpr int kDecodeMmaRowsN = 16, kDecodeMmaWarps = 8, kDecodeMmaStages = 3, kDecodeMmaCtasPerSm = 2;
constexpr int kDecodeMmaStageBytes = 64;  // per thread: 16 bytes of rows g and g + 8, twice
constexpr int decode_mma_k_split(int64_t n, int64_t k, int sms) {
  const int64_t blocks = k / 128, groups16 = num::ceil_div(n, kDecodeMmaRowsN);
  const int64_t resident = int64_t(sms) * kDecodeMmaCtasPerSm * kDecodeMmaWarps;
  int split = blocks >= 32 ? 8 : blocks >= 16 ? 4 : blocks >= 8 ? 2 : 1;
  while (split > 1 && groups16 * split > resident) split /= 2;
  return split;
}
constexpr int decode_mma_rows_per_cta(int64_t n, int64_t k, int sms) {
  return kDecodeMmaRowsN * (kDecodeMmaWarps / decode_mma_k_split(n, k, sms));
}
// Dynamic shared memory: the cp.async rings, reused afterwards for the warps' partial sums.
constexpr int64_t decode_mma_smem_bytes() {
  const int64_t ring = int64_t(kDecodeMmaWarps) * 32 * kDecodeMmaStages * kDecodeMmaStageBytes;
  const int64_t sums = int64_t(kDecodeMmaWarps) * 8 * kDecodeMmaRowsN * 4;
  return ring > sums ? ring : sums;
}

}  // namespace mxq::gemm_config
