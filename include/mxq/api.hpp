// The C++ API: quantize and dequantize on the best backend that supports the call.
#pragma once

#include <string>
#include <vector>

#include "mxq/error.hpp"
#include "mxq/numerics/activations.h"
#include "mxq/recipe.hpp"
#include "mxq/tensor.hpp"

namespace mxq {

// cublaslt: NVIDIA cuBLASLt's block-scaled FP8 GEMM (gemm only; CUDA >= 12.9).
enum class Backend : uint8_t { automatic = 0, cpu = 1, cuda_aot = 2, cuda_jit = 3, cublaslt = 4 };
const char* backend_name(Backend b);
Backend parse_backend(std::string_view name, std::string_view argument = "backend");

using num::Activation;  // none, gelu, gelu_tanh, silu, relu, qgelu, srelu, swiglu, geglu, reglu
const char* activation_name(Activation a);
Activation parse_activation(std::string_view name, std::string_view argument = "activation");

struct QuantizeOptions {
  Backend backend = Backend::automatic;
  // ---- fused epilogues (TransformerEngine's): what is quantized is y = f(x), in fp32, with the
  // functions of numerics/activations.h, the same bits on every backend. On CUDA they run in the
  // specialised kernels, compiled on first use by the JIT (none are built ahead of time, so
  // backend cuda-aot falls back to cuda-jit); a call no specialised kernel can take (unaligned,
  // strided by an odd amount), fp8_tensor / nvfp4 with an activation but no amax_in / scale_in
  // (the amax of act(x) is not computed on the device), or noop with fp8_tensor / nvfp4, is
  // Error unsupported. dbias on CUDA is summed in another order than the cpu's fp64 sums (fp32
  // atomics): within rows * 2^-24 * sum|y| of them.
  //   activation: y = act(x); a gated one (swiglu, geglu, reglu) reads x as [M, 2N] rows
  //     [a | b], gives y = act(a) * b, and `out` is planned for [M, N].
  //   act_input: set for the backward pass: x is the incoming gradient and
  //     y = x * act'(act_input) (same shape; activation must be elementwise).
  //   dbias: receives the N column sums of y in fp32 (on the input's device).
  //   noop: a scalar on the input's device; when it is non-zero the call writes nothing at all
  //     (dbias and amax included), so that it can stay inside a CUDA graph.
  Activation activation = Activation::none;
  const TensorView* act_input = nullptr;
  float* dbias = nullptr;
  const float* noop = nullptr;
  // fp8_tensor and nvfp4: use this amax (one fp32 on the input's device) instead of computing
  // it, e.g. a static checkpoint scale (vLLM scaled_fp4_quant) or a delayed-scaling amax.
  const float* amax_in = nullptr;
  // fp8_tensor: use this encode scale directly (one fp32 on the input's device).
  const float* scale_in = nullptr;
  void* stream = nullptr;  // cudaStream_t for CUDA tensors
};

struct DequantizeOptions {
  Backend backend = Backend::automatic;
  bool columnwise = false;  // decode the columnwise output (in its stored orientation)
  void* stream = nullptr;
};

// Quantizes x (fp32, fp16 or bf16; any row stride) into `out`, whose buffers plan() sized.
// Validates everything before the first write; outputs (dbias included) that overlap each other
// or an input are an error (inputs may share a buffer).
void quantize(const TensorView& x, const QuantizedTensor& out, const QuantizeOptions& options = {});

// Decodes q into y (fp32, fp16 or bf16) of q's shape (columnwise transposed: the transpose); y
// may not overlap q's buffers.
void dequantize(const QuantizedTensor& q, const TensorView& y, const DequantizeOptions& options = {});

// ---- Backend selection (precedence: per-call option > set_default_backend > MXQ_BACKEND).
// Backend::automatic clears the process-wide default, so that MXQ_BACKEND or auto apply again.
void set_default_backend(Backend b);
Backend default_backend();
// Strict mode (also MXQ_STRICT=1): every fallback, e.g. from a specialised kernel to the generic
// one or from cuda-jit to cuda-aot, is an Error(fallback_forbidden) instead.
void set_strict(bool on);
bool strict();

// What the calling thread's last quantize / dequantize / gemm ran: backend ("cpu", "cuda-aot",
// "cuda-jit", "cublaslt"), kernel (e.g. "fast bf16 mx e4m3fn rows g=32 ..." or "generic tile"), and the
// fallback taken, if any ("" when none).
struct DispatchInfo {
  std::string op, backend, kernel, fallback;
};
DispatchInfo last_dispatch();

// ---- The cuda-jit kernel cache: in memory, and on disk in $MXQ_CACHE_DIR, else
// $XDG_CACHE_HOME/mxq, else ~/.cache/mxq (MXQ_CACHE_MAX_MB caps it, least recently used first).
struct JitCacheEntry {
  std::string file, config;  // "<content hash>.cubin", "bf16 mx e4m3fn rows g=32 ... sm_90"
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;  // last use
};
struct JitCacheInfo {
  bool jit_available = false;
  std::string detail;  // NVRTC version and disk state, or why the JIT is off
  std::string dir;     // "" when memory-only
  std::vector<JitCacheEntry> entries;
};
JitCacheInfo jit_cache_info();
// Entries removed from disk; a disk cache not in use (refused, read-only: memory-only) is an
// Error (backend_unavailable) naming the directory and why.
uint64_t jit_cache_clear();

// Compiles the JIT kernels of `recipes` (all presets and options when empty) for every input
// dtype; an entry "RECIPE+ACT", "RECIPE+dACT", "RECIPE+dbias" (or several, "mxfp8+dgelu+dbias")
// names a fused kernel, and "gemm:N=7168,K=7168[,promote_k=128][,block_m=256][,kind=1d1d]" the GEMM's TMA +
// wgmma kernel specialised on N and K (what Backend::cuda_jit runs for such a call; without
// promote_k, or with 0, the intervals of both D dtypes' defaults, 32 and 128; without block_m, or
// with 0, both tile heights, since the call's M chooses, and at 128 rows the split-K cluster
// kernels the plan gives some M on an H200), for compute capability `arch` (0: the current
// device's, 90 without one), on `threads` workers (0: one per core), into the memory and disk
// caches: off the hot path, e.g. at start-up.
struct JitWarmupResult {
  int configs = 0;                    // kernels now cached
  std::vector<std::string> failures;  // "config: message"
};
JitWarmupResult jit_warmup(const std::vector<std::string>& recipes = {}, int arch = 0, int threads = 0);

// ---- Block-scaled GEMM: D[M, N] = alpha * A[M, K] . B[N, K]^T (+ C) (+ bias[N]).
// A and B are what quantize() wrote, K-major (rowwise), both of one scale family:
//   1D2D (inference, forward): A fp8_block_1x128, B fp8_block_128x128 (DeepGEMM fp8_gemm_nt);
//   1D1D (weight gradient):    A and B fp8_block_1x128;
//     (float8_e4m3fn, fp32 or UE8M0 (pow2) scales, in any layout quantize() writes);
//   MX:     each of A and B mxfp8, mxfp8_e5m2 or mxfp4 (1 x 32 UE8M0 blocks; FP8 x FP4 mixes);
//   NVFP4:  nvfp4 or nvfp4_2d (1 x 16 UE4M3 blocks times each operand's global scale);
//   fp8_tensor: per-tensor FP8 (each operand's global scale).
// The cpu backend takes every family; the tensor-core kernels below take fp8_block operands,
// per-tensor FP8 runs on cuBLASLt (scalar scales) where it takes the call, and CUDA tensors of the
// other families run on the generic kernel (under auto a fallback, which
// strict mode refuses; docs/ARCHITECTURE.md, "GEMM operand families", has what Hopper and
// Blackwell tensor cores need of them). D is float32 or bfloat16; C
// (optional) is float32 [M, N] and may be D itself (accumulate); bias is float32 [N]. D may
// overlap nothing else (A, B, their scales, bias, or C other than exactly D): an error.
// The cpu backend (the reference) computes each output in fp64 from the exact products
// code * scale and rounds once. On CUDA tensors, auto and cublaslt run cuBLASLt's block-scaled
// FP8 GEMM (CUDA >= 12.9) when it takes the call: fp32 scales, A's in layout mn_major_tma with
// M % 4 == 0, B's 128 x 128 row_major with K % 512 == 0 or 1 x 128 mn_major_tma with N % 4 == 0,
// K % 16 == 0, 16-byte aligned operands and row strides, no bias, C only with an fp32 D.
// Our kernels (cuda-aot; auto prefers them for M <= 16 and, 1D2D, M > 64, cuBLASLt in between
// and for 1D1D where it takes the call): the swap-AB decode kernels for M <= 32 with K % 128 == 0
// and 16-byte aligned A and B (up to 64 where their tiles fit one wave or the wgmma kernel cannot
// run); the TMA + wgmma kernel when A's scales are fp32 in layout mn_major_tma, B's 128 x 128 in
// any layout and format or B's 1 x 128 (1D1D) fp32 in mn_major_tma, K % 16 == 0 and A, B and the
// 1 x 128 scales are 16-byte aligned (any M, N); the generic kernel (correct for any shape, not
// fast; under auto a fallback, which strict mode refuses) for the rest.
// `mxq gemm-plan` and mxq/gemm_plan.hpp give the exact rule.
struct GemmOptions {
  Backend backend = Backend::automatic;
  float alpha = 1.0f;
  // K extent of each tensor-core partial sum before it is scaled into the fp32 accumulators (the
  // wgmma kernel): 32, 64 or 128, or 0 (default) for D's dtype's (resolve_promote_k in
  // mxq/gemm_plan.hpp: 128 for bfloat16 D, 32 for float32). The tensor cores add FP8 products in
  // a format narrower than fp32 (about 14 bits, DeepSeek-V3 section 3.3.2), so a shorter run is
  // more accurate and costs FMAs: on the H200 (bench/RESULTS.md), 32 keeps the fp32 relative
  // error under 2e-4 and 128 (DeepGEMM's interval; cuBLASLt's accuracy, 3.4e-4, far below a
  // bfloat16 D's own rounding) is 1.5x faster. Other kernels ignore it.
  int promote_k = 0;
  // Rows of the wgmma kernel's output tiles: 0 lets the plan choose (gemm_config::wgmma_block_m:
  // 256 where the persistent grid's waves times a tile's cost, a 256-row tile counted as 1.8
  // 128-row ones, come out smaller, else 128); 128 or 256 forces one. Other kernels ignore it.
  int block_m = 0;
  const TensorView* c = nullptr;
  const float* bias = nullptr;
  void* stream = nullptr;
};
void gemm(const QuantizedTensor& a, const QuantizedTensor& b, const TensorView& d, const GemmOptions& options = {});

struct BackendStatus {
  Backend backend;
  bool available;
  std::string detail;  // why not, or what it runs on
};
std::vector<BackendStatus> backend_status();

std::string version();
std::string build_info();  // build type, compiler, CUDA version and target

}  // namespace mxq
