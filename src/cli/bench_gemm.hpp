// `mxq bench gemm` and bench/gpu/bench_gemm_gpu: the block-scaled FP8 GEMM timed through
// mxq::gemm on the GPU, each requested backend on each shape.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mxq/api.hpp"
#include "mxq/gemm_plan.hpp"

namespace mxq::cli {

struct GemmBenchRow {
  int64_t m, n, k;
  std::string backend, kernel, error;  // error: why the shape did not run on that backend
  int block_m;                         // the GemmOptions::block_m asked for (0: the plan's)
  int b_copies;                        // the copies of B the timed calls read in turn (weight_copies)
  double us, tflops, peak_pct, weight_gbps;
  double vs_cublaslt;  // cuBLASLt's time over this row's on the same shape (0: not measured)
  double chain_us;     // the activation's quantize then this GEMM, per call (0: not measured, M > kChainMaxM)
};
// The rows up to which the benchmark also times the decode step: quantize A from bf16, then the GEMM.
inline constexpr int64_t kChainMaxM = 128;

// Issue 6's shapes: M in {1, 16, 64, 128, 1024, 4096} x (N, K) of DeepSeek V3's projections, and 8192^3.
std::vector<std::array<int64_t, 3>> gemm_bench_shapes();
// "MxNxK" -> {M, N, K}; throws naming the argument otherwise.
std::array<int64_t, 3> parse_gemm_shape(const std::string& text);

// One timed configuration: a backend and the GemmOptions our wgmma kernel reads.
struct GemmBenchRun {
  Backend backend;
  int promote_k = 0;  // 0: D's dtype's (resolve_promote_k)
  int block_m = 0;  // 0: the plan's choice
};
// How many copies of B[N, K] the benchmark reads in turn: enough for twice the L2 of GPU 0 (50 MB
// where it cannot ask), at most kMaxWeightCopies. With one copy, the replays of a small GEMM would
// find its weights in the L2 the call before left them in: the M <= 16 calls of the 2112 x 7168
// (15 MB) and 7168 x 2048 (15 MB) weights would be timed at L2, not DRAM, bandwidth.
inline constexpr int kMaxWeightCopies = 16;
int weight_copies(const Recipe& rb, int64_t n, int64_t k);
// GPU 0's L2 in bytes, 50 MB (the H100's and H200's) where it cannot ask.
int64_t bench_l2_bytes();

// A 1x128 (mn_major_tma) x B 128x128 (1D2D) or 1x128 (mn_major_tma; 1D1D), bf16 D, operands
// quantized on GPU 0 by mxq::quantize; device time per call under CUDA-graph replay.
std::vector<GemmBenchRow> bench_gemm(const std::vector<std::array<int64_t, 3>>& shapes,
                                     const std::vector<GemmBenchRun>& runs, GemmKind kind = GemmKind::d1d2);

std::string gemm_bench_table(const std::vector<GemmBenchRow>& rows, GemmKind kind = GemmKind::d1d2);

}  // namespace mxq::cli
