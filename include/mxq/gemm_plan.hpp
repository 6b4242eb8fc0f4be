// How the CUDA block-scaled FP8 GEMM runs a shape with our kernels: a pure function of the
// problem and an architecture description, unit-tested on any machine, printed by
// `mxq gemm-plan`, and the shape rule that gemm() dispatches by (the operands' scale layouts
// and alignment are checked per call on top: see GemmOptions in mxq/api.hpp). The numbers come
// from src/cuda/gemm/config.h, which the kernels compile from.
//
// Rules:
// - sm_90 only (the kernels are sm_90a); any other architecture plans "generic".
// - "swap-ab" (the decode kernels) for M <= 32 with K % 128 == 0, for M <= 64 where the wgmma
//   decode kernel's 64-row tiles fit one wave (config.h decode_one_wave; 2 waves measured slower
//   than the tma-wgmma kernel), and for M <= 64 where the tma-wgmma kernel cannot run; but at
//   promote-k 128 the tma-wgmma kernel takes M = 33..64 at K <= 2048 and M = 17..32 at K <= 512
//   (config.h decode_cedes_short_k: measured faster there).
//   M <= 8 with K < 16384 (decode_use_mma): mma.sync, a warp streams 16 weight rows over a share
//   of K and block_n = 16 x the CTA's row groups (decode_mma_k_split: up to 8 warps share 16
//   rows, fewer for short K or when one wave would not hold them all). Otherwise wgmma with the
//   weights as its 64-row operand, tiles of block_n = 64 rows (128 when N / 64 tiles would not fit
//   one wave, at n <= 32), block_m = n = 16, 32 or 64 activation rows, and a cluster of split_k
//   CTAs splitting K (decode_cluster: up to 8, as many as keep every cluster resident in one
//   wave, ArchDesc::resident_clusters, with >= 4 K blocks each).
// - "tma-wgmma" for 1D2D and 1D1D with K % 16 == 0 otherwise (TMA needs 16-byte aligned FP8 rows;
//   1D1D applies B's 1 x 128 scales per tile column at each promotion):
//   128 x 128 x 128 tiles with 5 stages, or 256 x 128 x 128 with 4 where waves times a tile's
//   cost (a 256-row tile counted as 1.8 128-row ones) come out smaller (gemm_config::
//   wgmma_block_m), a persistent grid of min(tiles, SMs) CTAs. Where 128-row tiles are so few
//   that clusters of 2 or 4 CTAs, one tile each, all fit one wave (and each CTA keeps >= 4 K
//   blocks), the cluster splits the tile's K instead (gemm_config::wgmma_split_k; 128 x 7168 is
//   56 tiles: 112 CTAs).
// - "generic" for the rest (K % 16 != 0): one output per thread; correct for every valid shape,
//   never an error.
// Not planned yet (issue 6): BLOCK_N chosen per shape for the fewest waves, 2-CTA clusters with
// TMA multicast.
#pragma once

#include <cstdint>
#include <string>

#include "mxq/dtype.hpp"

namespace mxq {

struct ArchDesc {
  int major = 9, minor = 0;
  int sms = 132;
  int64_t smem_per_block = 232448;  // opt-in maximum (227 KB on sm_90)
  // Clusters of 1, 2, 4 and 8 CTAs resident at once for a kernel of 2 and 3 CTAs per SM (the
  // wgmma decode kernel's occupancies): resident_clusters[ctas_per_sm - 2][log2 c]. A cluster
  // lives in one GPC, so fewer than sms x ctas_per_sm / c fit. Zeros: a model (about a tenth of
  // the slots lost from clusters of 4 up). h200() holds the H200's (cudaOccupancyMaxActiveClusters);
  // gemm() asks the device it runs on.
  int64_t resident_clusters[2][4] = {};
  static ArchDesc h200() { return {9, 0, 132, 232448, {{264, 132, 62, 30}, {396, 198, 92, 45}}}; }
  // An sm_90 part with `sms` SMs: the H200 at 132, otherwise its cluster residency modelled.
  static ArchDesc sm90(int sms) {
    ArchDesc a = h200();
    if (sms != a.sms) a = ArchDesc{9, 0, sms, a.smem_per_block, {}};
    return a;
  }
};

enum class GemmKind : uint8_t { d1d2 = 0, d1d1 = 1 };  // 1D2D (B 128x128 scales), 1D1D (B 1x128)

struct GemmPlan {
  std::string path;  // "tma-wgmma", "swap-ab", "generic"
  std::string why;   // why this path (the constraint that failed, or the shape rule that chose it)
  int block_m = 0, block_n = 0, block_k = 128;
  int stages = 0;
  int cluster = 1;   // CTAs per cluster (swap-ab, and tma-wgmma's split-K: the CTAs that split K)
  int split_k = 1;   // K split across CTAs (swap-ab decode; tma-wgmma for few tiles, a tile per cluster)
  int64_t tiles = 0;  // output tiles (times split_k)
  int ctas_per_sm = 1;  // CTAs of this kernel resident on an SM at once (shared memory, registers)
  int64_t waves = 0;  // ceil(tiles / slots): sms x ctas_per_sm, or resident clusters x cluster
  double last_wave = 0.0;  // fraction of those slots busy in the last wave
  int64_t smem_bytes = 0;  // per CTA
  // Launched with programmatic dependent launch (cuda/pdl.cuh: starts while the kernel before it
  // drains, waits for it before reading operands): every kernel, except the decode kernels where
  // their grid fills less than two thirds of a wave's slots (gemm_config::decode_pdl), which the
  // launchers ask with the same figures.
  bool early_launch = true;
  // The promotion interval (resolve_promote_k): K summed by the tensor cores before each fp32
  // promotion in the tma-wgmma kernel (the decode kernels promote every 32, generic sums in fp32).
  int promote_k = 32;
};

// The rule alone (no strings, for the per-call dispatch); plan_gemm reports it with the tiles.
// `wgmma_operands`: whether the call's operands suit the wgmma kernel (scale layouts,
// alignment: gemm() asks the kernel); where they do not, the decode kernel keeps M <= 64.
// plan_gemm assumes they do.
enum class GemmPath : uint8_t { swap_ab, tma_wgmma, generic };
// The promotion interval a call with GemmOptions::promote_k = 0 (the default) runs at: the one that
// keeps D's dtype within issue 6's error bar at the lower cost. A bfloat16 D rounds to 8
// significant bits (relative error up to 2^-9, the bar 4e-3), so promote-k 128 (DeepGEMM's
// interval; fp32 error 3.4e-4 on the H200, bench/RESULTS.md) costs it nothing visible and runs
// 1.5x faster; a float32 D keeps 32, the one interval under the 2e-4 bar (1.8e-4). A non-zero
// value is the caller's choice and is returned as is.
constexpr int resolve_promote_k(int promote_k, DType out) {
  return promote_k != 0 ? promote_k : out == DType::bfloat16 ? 128 : 32;
}
// promote_k: the call's interval, resolved (the decode kernel cedes short K to the wgmma kernel at 128).
GemmPath gemm_path(int64_t m, int64_t n, int64_t k, GemmKind kind, const ArchDesc& arch, bool wgmma_operands = true,
                   int promote_k = 32);
// promote_k: GemmOptions::promote_k (0: resolve_promote_k by `out`).
GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, GemmKind kind, DType out, const ArchDesc& arch,
                   int promote_k = 0);
std::string to_string(const GemmPlan& p);

}  // namespace mxq
