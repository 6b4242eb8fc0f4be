#include "mxq/gemm_plan.hpp"

#include <algorithm>
#include <cstdio>

#include "mxq/error.hpp"
#include "mxq/numerics/layouts.h"

namespace mxq {
namespace {

using num::ceil_div;

// Shared memory of one pipeline stage: an A tile and a B tile of FP8 (1 byte per element, K =
// 128 per stage) plus their fp32 scales (A: one per row; B: one per 128 x 128 block, or one per
// row for 1D1D).
int64_t stage_bytes(int bm, int bn, GemmKind kind) {
  const int64_t b_scales = kind == GemmKind::d1d1 ? bn : ceil_div(bn, 128);
  return int64_t(bm) * 128 + int64_t(bn) * 128 + 4 * (bm + b_scales);
}

// D staged for the TMA store, plus the barriers.
int64_t epilogue_bytes(int bm, int bn, DType out) {
  return int64_t(bm) * bn * (out == DType::float32 ? 4 : 2) + 1024;
}

void fill_waves(GemmPlan& p, const ArchDesc& a) {
  p.waves = ceil_div(p.tiles, a.sms);
  const int64_t last = p.tiles - (p.waves - 1) * a.sms;
  p.last_wave = double(last) / a.sms;
}

}  // namespace

GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, GemmKind kind, DType out, const ArchDesc& arch) {
  if (m < 1 || n < 1 || k < 1)
    fail_arg("gemm plan: M, N and K must be >= 1, got " + std::to_string(m) + ", " + std::to_string(n) + ", " +
             std::to_string(k));
  if (out != DType::float32 && out != DType::bfloat16)
    fail_arg(std::string("gemm plan: D dtype ") + dtype_name(out) + " is not supported; expected float32 or bfloat16");
  GemmPlan p;
  const int d_align = out == DType::float32 ? 4 : 8;
  if (arch.major != 9) {
    p.path = "generic";
    p.why = "sm_" + std::to_string(arch.major) + std::to_string(arch.minor) + " has no wgmma; the kernel is sm_90a";
  } else if (k % 16 != 0) {
    p.path = "generic";
    p.why = "K=" + std::to_string(k) + " is not a multiple of 16 (TMA needs 16-byte aligned FP8 rows)";
  } else if (n % d_align != 0) {
    p.path = "generic";
    p.why = "N=" + std::to_string(n) + " is not a multiple of " + std::to_string(d_align) +
            " (TMA needs 16-byte aligned rows of D)";
  }
  if (!p.path.empty()) {
    p.block_m = 128;
    p.block_n = 128;
    p.tiles = ceil_div(m, 128) * ceil_div(n, 128);
    fill_waves(p, arch);
    return p;
  }

  if (m <= 64) {
    // Decode: N on wgmma's 64-row side (BLOCK 128 of N), M as the instruction's N.
    p.path = "swap-ab";
    p.why = "M=" + std::to_string(m) + " <= 64: N fills the 64-row side of wgmma, M is its N";
    p.block_m = 128;                                  // rows of B (the N dimension)
    p.block_n = int(std::max<int64_t>(8, ceil_div(m, 8) * 8));  // M rounded up to wgmma's N step
    const int64_t n_tiles = ceil_div(n, 128);
    const int64_t k_blocks = ceil_div(k, 128);
    p.split_k = int(std::clamp<int64_t>(arch.sms / std::max<int64_t>(1, n_tiles), 1, std::min<int64_t>(k_blocks, 16)));
    p.tiles = n_tiles * p.split_k;
  } else {
    p.path = "tma-wgmma";
    p.block_m = 128;
    p.why = "M=" + std::to_string(m) + " > 64: BLOCK_M 128, BLOCK_N chosen for the fewest waves";
    const int64_t m_tiles = ceil_div(m, 128);
    int best = 0;
    int64_t best_waves = 0;
    double best_last = 0.0;
    const int top = int(std::min<int64_t>(256, ceil_div(n, 16) * 16));
    for (int bn = 16; bn <= top; bn += 16) {
      // at least 3 stages must fit beside D's staging (fp32 D rules out the widest blocks)
      const int64_t room = arch.smem_per_block - epilogue_bytes(128, bn, out);
      if (room < 3 * stage_bytes(128, bn, kind)) continue;
      const int64_t tiles = m_tiles * ceil_div(n, bn);
      const int64_t waves = ceil_div(tiles, arch.sms);
      const double last = double(tiles - (waves - 1) * arch.sms) / arch.sms;
      const bool better = best == 0 || waves < best_waves || (waves == best_waves && last > best_last + 1e-9) ||
                          (waves == best_waves && last >= best_last - 1e-9 && bn > best);
      if (better) {
        best = bn;
        best_waves = waves;
        best_last = last;
      }
    }
    p.block_n = best;
    p.tiles = m_tiles * ceil_div(n, p.block_n);
    if (m >= 2 * 128 && ceil_div(p.tiles, arch.sms) >= 2) p.cluster = 2;
  }
  const int64_t per_stage = stage_bytes(p.block_m, p.block_n, kind);
  const int64_t room = arch.smem_per_block - epilogue_bytes(p.block_m, p.block_n, out);
  p.stages = int(std::clamp<int64_t>(room / per_stage, 0, 8));
  if (p.stages < 2) fail(ErrorCode::internal, "gemm plan: fewer than two stages fit: " + to_string(p));
  p.smem_bytes = p.stages * per_stage + epilogue_bytes(p.block_m, p.block_n, out);
  fill_waves(p, arch);
  return p;
}

std::string to_string(const GemmPlan& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: block %dx%dx%d, %d stages, cluster %d, split-k %d, %lld tiles, %lld waves (last %.0f%%), "
                "%lld bytes of shared memory; %s",
                p.path.c_str(), p.block_m, p.block_n, p.block_k, p.stages, p.cluster, p.split_k, (long long)p.tiles,
                (long long)p.waves, 100.0 * p.last_wave, (long long)p.smem_bytes, p.why.c_str());
  return buf;
}

}  // namespace mxq
