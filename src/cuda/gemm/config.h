// The shapes of the CUDA GEMM kernels, in plain C++: the kernels (wgmma.cu, decode.cu) compile
// from these numbers and plan_gemm (src/core/gemm_plan.cpp) reports them, so that
// `mxq gemm-plan` prints what runs.
#pragma once

#include "mxq/numerics/config.h"  // the fixed-width types, under NVRTC too

namespace mxq::gemm_config {

// The TMA + wgmma kernel: 128 x 128 output tiles, K blocks of 128 (one scale block), a ring of
// kWgmmaStages shared-memory stages, one producer and two consumer warpgroups.
constexpr int kWgmmaBM = 128, kWgmmaBN = 128, kWgmmaBK = 128;
constexpr int kWgmmaConsumers = 2;
constexpr int kWgmmaThreads = 128 * (1 + kWgmmaConsumers);
constexpr int kWgmmaStages = 5;
// Per stage: the A and B tiles and A's 128 scales (what TMA writes), and B's one scale.
constexpr uint32_t kWgmmaTileA = kWgmmaBM * kWgmmaBK, kWgmmaTileB = kWgmmaBN * kWgmmaBK;
constexpr uint32_t kWgmmaTileScaleA = kWgmmaBM * 4;
constexpr uint32_t kWgmmaStageBytes = kWgmmaTileA + kWgmmaTileB + kWgmmaTileScaleA;
// The epilogue stages each consumer's 64 x 128 results (64 columns at a time for fp32 D), rows
// padded by 16 bytes so that the fragment writes hit 32 different banks.
constexpr uint32_t kWgmmaOutRow = 256 + 16, kWgmmaOutBytes = 64 * kWgmmaOutRow;
constexpr int64_t kWgmmaSmemBytes = int64_t(kWgmmaStages) * (kWgmmaStageBytes + 4) +
                                    kWgmmaConsumers * kWgmmaOutBytes + 2 * kWgmmaStages * 8 + 1024;

// The persistent order of the wgmma kernel's tiles: bands of kWgmmaBandN N blocks, M fastest
// inside a band, so that the CTAs running at once share A rows and B columns in L2. Tile t ->
// (M block mb, N block nb); every tile once for t in [0, m_blocks * n_blocks).
constexpr int64_t kWgmmaBandN = 8;
MXQ_HD void wgmma_tile_at(int64_t t, int64_t m_blocks, int64_t n_blocks, int64_t& mb, int64_t& nb) {
  const int64_t per_band = m_blocks * kWgmmaBandN, band = t / per_band, first = band * kWgmmaBandN;
  const int64_t width = n_blocks - first < kWgmmaBandN ? n_blocks - first : kWgmmaBandN;
  const int64_t local = t - band * per_band;
  mb = local / width;
  nb = first + local % width;
}

// The swap-AB decode kernel: a CTA of kDecodeWarps warps, each warp 16 weight rows (N) and a
// share of K. The warps form kDecodeWarps / split groups of 16 rows, and the `split` warps of a
// group take interleaved 128-wide K blocks (decode_k_split: at least 4 blocks per warp where K
// allows, and no more warps than one wave of CTAs holds, so that every CTA is resident at once
// and the weight stream runs at full width to the end). M <= 64 in tiles of 8 activation rows.
// Each thread streams its weight bytes through a private kDecodeStages-deep cp.async ring.
constexpr int kDecodeRowsN = 16, kDecodeWarps = 8, kDecodeMaxM = 64, kDecodeStages = 3;
constexpr int kDecodeStageBytes = 64;  // per thread: 16 bytes of rows g and g + 8, twice
// Above kDecodePreferMaxM rows the decode kernel runs 8 tiles of 8 rows, and the wgmma kernel's
// single 128-row tile is faster wherever it takes the call (H200, bench/RESULTS.md session 6:
// decode at M = 64 took 2.4-3.8x the wgmma kernel's time at M = 128 on every issue shape); the
// decode kernel keeps M = 33..64 only where the wgmma kernel cannot run (1D1D, K % 16 != 0).
constexpr int kDecodePreferMaxM = 32;
// Activation rows in tiles of 8: up to 32 rows per CTA (4 tiles); 33..64 rows take two CTAs per
// chunk of weight rows (grid.y), each reading the weights (the second mostly from L2).
constexpr int kDecodeMaxTiles = 4;
constexpr int decode_m_tiles(int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : kDecodeMaxTiles; }
constexpr int decode_m_ctas(int64_t m) { return int((m + 8 * kDecodeMaxTiles - 1) / (8 * kDecodeMaxTiles)); }
// CTAs of the decode kernel per SM (its registers: 128 per thread up to 16 rows, more above).
constexpr int decode_ctas_per_sm(int64_t m) { return m <= 16 ? 2 : 1; }
constexpr int decode_k_split(int64_t m, int64_t n, int64_t k, int sms) {
  const int64_t blocks = k / 128, groups16 = (n + kDecodeRowsN - 1) / kDecodeRowsN;
  const int64_t resident = int64_t(sms) * decode_ctas_per_sm(m) * kDecodeWarps;
  int split = blocks >= 32 ? 8 : blocks >= 16 ? 4 : blocks >= 8 ? 2 : 1;
  while (split > 1 && groups16 * split > resident) split /= 2;
  return split;
}
constexpr int decode_rows_per_cta(int64_t m, int64_t n, int64_t k, int sms) {
  return kDecodeRowsN * (kDecodeWarps / decode_k_split(m, n, k, sms));
}
// Dynamic shared memory: the cp.async rings, reused afterwards for the warps' partial sums.
constexpr int64_t decode_smem_bytes(int64_t m) {
  const int64_t ring = int64_t(kDecodeWarps) * 32 * kDecodeStages * kDecodeStageBytes;
  const int64_t sums = int64_t(kDecodeWarps) * decode_m_tiles(m) * 8 * kDecodeRowsN * 4;
  return ring > sums ? ring : sums;
}

}  // namespace mxq::gemm_config
