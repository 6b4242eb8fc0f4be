#include "mxq/gemm_plan.hpp"

#include <cstdio>

#include "core/validate.hpp"
#include "cuda/gemm/config.h"
#include "mxq/error.hpp"
#include "mxq/numerics/layouts.h"

namespace mxq {
namespace {

using num::ceil_div;
using namespace gemm_config;

// Waves of CTAs (tiles) in clusters of p.cluster: the clusters one wave holds bound the slots.
void fill_waves(GemmPlan& p, const ArchDesc& a) {
  const ResidentClusters r = p.path == "tma-wgmma" ? wgmma_resident(a) : decode_resident(a, p.ctas_per_sm);
  const int64_t slots = cluster_slots(int64_t(a.sms) * p.ctas_per_sm, p.cluster, r);
  p.waves = ceil_div(p.tiles, slots);
  const int64_t last = p.tiles - (p.waves - 1) * slots;
  p.last_wave = double(last) / double(slots);
  // the decode launchers' grids: every tile (decode.cu), or at most one wave's CTAs (decode_mma.cu)
  if (p.path == "swap-ab") p.early_launch = decode_pdl(p.tiles < slots ? p.tiles : slots, slots);
}

}  // namespace

ResidentClusters gemm_config::decode_resident(const ArchDesc& arch, int ctas_per_sm) {
  const int cls = ctas_per_sm - 2;
  if (cls >= 0 && cls < 2 && arch.resident_clusters[cls][0] > 0) {
    ResidentClusters r;
    for (int i = 0; i < 4; ++i) r.at[i] = arch.resident_clusters[cls][i];
    return r;
  }
  return model_resident_clusters(int64_t(arch.sms) * ctas_per_sm);
}

ResidentClusters gemm_config::wgmma_resident(const ArchDesc& arch) {
  ResidentClusters r = decode_resident(arch, 2);
  for (int64_t& c : r.at) c /= 2;
  return r;
}

// Both recipes have every kernel: the kind does not move the rule (the operands' check does).
GemmPath gemm_path(int64_t m, int64_t n, int64_t k, GemmKind /*kind*/, const ArchDesc& arch, bool wgmma_operands,
                   int promote_k) {
  if (arch.major != 9) return GemmPath::generic;
  const bool wgmma = k % 16 == 0 && wgmma_operands,
             decode = m <= kDecodeMaxM && k % 128 == 0 && !(wgmma && decode_cedes_short_k(m, k, promote_k));
  if (decode && (m <= kDecodePreferMaxM || !wgmma || decode_one_wave(m, n, arch.sms))) return GemmPath::swap_ab;
  return wgmma ? GemmPath::tma_wgmma : GemmPath::generic;
}

GemmPlan plan_gemm(int64_t m, int64_t n, int64_t k, GemmKind kind, DType out, const ArchDesc& arch, int promote_k) {
  if (m < 1 || n < 1 || k < 1)
    fail_arg("gemm plan: M, N and K must be >= 1, got " + std::to_string(m) + ", " + std::to_string(n) + ", " +
             std::to_string(k));
  // A (M x K), B (N x K) and D (M x N) are tensors: at most mxq::kMaxElements each.
  if (!fits_elements(m, k) || !fits_elements(n, k) || !fits_elements(m, n))
    fail_arg("gemm plan: M, N, K = " + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) +
             " is too large; expected M x K, N x K and M x N each at most 2^48 elements (mxq::kMaxElements)");
  if (arch.sms < 1) fail_arg("gemm plan: arch.sms=" + std::to_string(arch.sms) + "; expected at least 1 SM");
  check_promote_k(promote_k, "gemm plan: promote_k");
  if (out != DType::float32 && out != DType::bfloat16)
    fail_arg(std::string("gemm plan: D dtype ") + dtype_name(out) + " is not supported; expected float32 or bfloat16");
  promote_k = resolve_promote_k(promote_k, out);
  GemmPlan p;
  p.promote_k = promote_k;
  switch (gemm_path(m, n, k, kind, arch, true, promote_k)) {
    case GemmPath::swap_ab:
      p.path = "swap-ab";
      p.why = "M=" + std::to_string(m) + " <= " +
              (m <= kDecodePreferMaxM ? std::to_string(kDecodePreferMaxM)
                                      : std::to_string(kDecodeMaxM) + " (its tiles fit one wave, or the wgmma kernel cannot take the operands)") +
              " and K % 128 == 0: ";
      if (decode_use_mma(m, k)) {  // decode_mma.cu: 16 weight rows per warp, warps split K inside the CTA
        p.why += "the weights are mma.sync's 16-row operand";
        p.block_m = 8;
        p.block_n = decode_mma_rows_per_cta(n, k, arch.sms);
        p.tiles = ceil_div(n, int64_t(p.block_n));
        p.stages = kDecodeMmaStages;
        p.smem_bytes = decode_mma_smem_bytes();
        p.ctas_per_sm = kDecodeMmaCtasPerSm;
      } else {  // decode.cu: 64/128-row tiles, clusters split K
        p.why += "the weights are wgmma's 64-row operand, a cluster of CTAs splits K";
        p.block_m = decode_n(m);  // activation rows of a CTA (wgmma's n)
        p.block_n = decode_tile_rows(m, n, arch.sms);
        p.ctas_per_sm = decode_ctas_per_sm(p.block_n);
        p.cluster = p.split_k = decode_cluster(m, n, k, arch.sms, decode_resident(arch, p.ctas_per_sm));
        p.tiles = decode_tiles(n, p.block_n) * p.split_k;
        p.stages = decode_stages(p.block_n, p.block_m);
        p.smem_bytes = decode_smem_bytes(m, p.block_n);
      }
      break;
    case GemmPath::tma_wgmma:
      p.path = "tma-wgmma";
      p.block_m = wgmma_block_m(m, n, arch.sms);
      p.why = "M=" + std::to_string(m);
      if (m > kDecodeMaxM) p.why += " > " + std::to_string(kDecodeMaxM);
      else if (k % 128 != 0) p.why += ", K % 128 != 0";
      else if (decode_cedes_short_k(m, k, promote_k))
        p.why += ", K=" + std::to_string(k) + " at promote-k 128 (faster here than the decode kernel)";
      else p.why += " (the decode kernel's tiles would take 2 waves)";
      p.why += ": " + std::to_string(p.block_m) +
               "x128 tiles (256 rows where waves times a tile's cost come out smaller), promote-k " +
               std::to_string(promote_k) +
               (kind == GemmKind::d1d1 ? ", B's 1x128 scales applied per tile column at each promotion" : "");
      p.block_n = kWgmmaBN;
      p.stages = wgmma_stages(p.block_m);
      p.cluster = p.split_k = wgmma_split_k(m, n, k, p.block_m, wgmma_resident(arch));
      if (p.split_k == 1) p.why += " on a persistent grid of min(tiles, SMs) CTAs";
      else
        p.why += "; " + std::to_string(wgmma_tiles(m, n, p.block_m)) +
                 " tiles would leave SMs idle: a cluster of " + std::to_string(p.split_k) +
                 " CTAs splits each tile's K (one tile per cluster, partial tiles summed in distributed shared memory)";
      p.tiles = wgmma_tiles(m, n, p.block_m) * p.split_k;
      p.smem_bytes = wgmma_smem_bytes(p.block_m, kind == GemmKind::d1d1);
      break;
    case GemmPath::generic:
      p.path = "generic";
      if (arch.major != 9)
        p.why = "sm_" + std::to_string(arch.major) + std::to_string(arch.minor) +
                ": the tensor-core kernels are built for sm_90a (wgmma, TMA)";
      else
        p.why = "K=" + std::to_string(k) + " is not a multiple of 16 (TMA needs 16-byte aligned FP8 rows)";
      break;
  }
  if (p.path == "generic") {
    p.block_m = p.block_n = 16;  // one output per thread, 16 x 16 threads
    p.block_k = 128;
    p.tiles = ceil_div(m, 16) * ceil_div(n, 16);
    p.smem_bytes = 256 * 4;  // the E4M3 decode table
    p.ctas_per_sm = 2048 / 256;  // 256 threads: the SM's thread limit
  }
  fill_waves(p, arch);
  return p;
}

std::string to_string(const GemmPlan& p) {
  char buf[768];  // the longest `why` is about 370 characters
  std::snprintf(buf, sizeof buf,
                "%s: block %dx%dx%d, %d stages, cluster %d, split-k %d, %lld tiles, %d CTAs per SM, %lld waves (last "
                "%.0f%%), %lld bytes of shared memory, %s; %s",
                p.path.c_str(), p.block_m, p.block_n, p.block_k, p.stages, p.cluster, p.split_k, (long long)p.tiles,
                p.ctas_per_sm, (long long)p.waves, 100.0 * p.last_wave, (long long)p.smem_bytes,
                p.early_launch ? "programmatic launch" : "no programmatic launch (under 2/3 of a wave)", p.why.c_str());
  return buf;
}

}  // namespace mxq
