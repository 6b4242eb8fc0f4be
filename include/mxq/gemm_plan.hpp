// How the Hopper block-scaled FP8 GEMM (issue 6) will run a shape: a pure function of the
// problem and an architecture description, so that it is unit-tested on any machine and
// printed by `mxq gemm-plan`. The kernel that consumes it (TMA + wgmma, warp-specialised) is
// the next step; the rules below are the ones it is being built to.
//
// Rules (facts from the PTX ISA and DeepGEMM's published design, not its code):
// - BLOCK_K = 128: one scale block per k-step (four wgmma m64nNk32 FP8 instructions), so the
//   block scales are applied (promoted into the fp32 accumulators) every 128 of K.
// - TMA needs 16-byte aligned rows: K % 16 == 0 for the FP8 operands and D's row pitch a multiple
//   of 16 bytes (N % 8 for bf16, N % 4 for fp32). Other shapes take the generic path (correct
//   for any M, N, K >= 1, never an error).
// - M <= 64 (decode): swap A and B, so that N fills wgmma's 64-row side and M is the (small) N
//   of the instruction (rounded up to 8, the wgmma N granularity); when the N tiles cannot fill
//   the SMs, K is split across CTAs (reduced in fp32).
// - Otherwise BLOCK_M is 128 (two consumer warpgroups of 64 rows), BLOCK_N the candidate (16 to
//   256 in steps of 16, up to N rounded up, leaving room for at least 3 stages) with the fewest
//   waves over the SMs, then the fullest last wave, then the larger block; stages fill the shared memory that remains after the
//   epilogue's staging, at most 8; a 2-CTA cluster multicasts B when M spans at least two
//   BLOCK_M rows and there are at least two waves of tiles.
#pragma once

#include <cstdint>
#include <string>

#include "mxq/dtype.hpp"

namespace mxq {

struct ArchDesc {
  int major = 9, minor = 0;
  int sms = 132;
  int64_t smem_per_block = 232448;  // opt-in maximum (227 KB on sm_90)
  static ArchDesc h200() { return {}; }
};

enum class GemmKind : uint8_t { d1d2 = 0, d1d1 = 1 };  // 1D2D (B 128x128 scales), 1D1D (B 1x128)

struct GemmPlan {
  std::string path;  // "tma-wgmma", "swap-ab", "generic"
  std::string why;   // why this path (the constraint that failed, or the shape rule that chose it)
  int block_m = 0, block_n = 0, block_k = 128;
  int stages = 0;
  int cluster = 1;   // CTAs per cluster (TMA multicast of B)
  int split_k = 1;   // K split across CTAs (swap-ab decode)
  int64_t tiles = 0;  // output tiles (times split_k)
  int64_t waves = 0;  // ceil(tiles / sms)
  double last_wave = 0.0;  // fraction of the SMs busy in the last wave
  int64_t smem_bytes = 0;  // per CTA
};

GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, GemmKind kind, DType out, const ArchDesc& arch);
std::string to_string(const GemmPlan& p);

}  // namespace mxq
