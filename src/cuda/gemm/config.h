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

// The swap-AB decode kernel: 16 weight rows (N) per CTA, 8 warps over the K blocks, M <= 64 in
// tiles of 8 activation rows.
constexpr int kDecodeRowsN = 16, kDecodeWarps = 8, kDecodeMaxM = 64;
// Above kDecodePreferMaxM rows the decode kernel runs 8 tiles of 8 rows, and the wgmma kernel's
// single 128-row tile is faster wherever it takes the call (H200, bench/RESULTS.md session 6:
// decode at M = 64 took 2.4-3.8x the wgmma kernel's time at M = 128 on every issue shape); the
// decode kernel keeps M = 33..64 only where the wgmma kernel cannot run (1D1D, K % 16 != 0).
constexpr int kDecodePreferMaxM = 32;
constexpr int decode_m_tiles(int64_t m) { return m <= 8 ? 1 : m <= 16 ? 2 : m <= 32 ? 4 : kDecodeMaxM / 8; }
constexpr int64_t decode_smem_bytes(int64_t m) { return int64_t(kDecodeWarps) * decode_m_tiles(m) * 8 * kDecodeRowsN * 4; }

}  // namespace mxq::gemm_config
