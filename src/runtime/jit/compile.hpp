// JIT compilation of the specialised quantize kernels (src/cuda/quantize/fast.cuh) with NVRTC.
// Needs no GPU: a source is the kernel header plus one explicit instantiation generated from the
// key's named fields, compiled to a cubin for one architecture. Loading and launching are in
// src/cuda/jit_kernels.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/quantize/fast_key.h"
#include "runtime/jit/disk_cache.hpp"

namespace mxq::runtime::jit {

// "bf16 mx e4m3fn rows g=32 h=1 row_major/row_major": the configuration in words.
std::string key_text(const cuda::FastKey& k);
// The instantiation's name expression, e.g. mxq::cuda::fast_quantize_kernel<mxq::cuda::FastConfig<2, ...>>.
std::string kernel_name(const cuda::FastKey& k);
std::string kernel_source(const cuda::FastKey& k);
// NVRTC options for compute capability `arch` (90 -> sm_90a: the kernels use sm_90 features).
std::vector<std::string> compile_options(int arch);
std::string nvrtc_version();  // "13.0"; "" when NVRTC cannot be queried
// The architectures the JIT compiles for: NVRTC's supported ones from 90 (the kernels use sm_90
// features: clusters, mbarriers, programmatic launch), ascending.
std::vector<int> jit_archs();

struct Compiled {
  std::string lowered_name;  // the kernel's mangled name in the cubin
  std::vector<uint8_t> cubin;
  std::string log;  // NVRTC's log: ptxas's registers and spills per function (--ptxas-options=-v)
};
// Bytes of local-memory spill stores ptxas reported in a compile log, over all its functions.
int spill_store_bytes(const std::string& log);
// Throws Error(unsupported) carrying the NVRTC log, the NVRTC version and the configuration.
Compiled compile(const cuda::FastKey& k, int arch);
// A specialisation of the TMA + wgmma GEMM kernel (src/cuda/gemm/wgmma.cuh), compiled from the
// header the ahead-of-time build uses: its tile rows (128 or 256, gemm_config::wgmma_block_m),
// its promotion group (32-wide K steps per fp32 promotion: 1, 2 or 4, i.e. promote-k 32, 64 or
// 128) and the N and K it is specialised on (0: taken at run time, as the AOT kernel does), and
// its split-K cluster (1, or 2 and 4 CTAs at 128 rows: gemm_config::wgmma_split_k). M is always a
// run-time value. The tile's stages follow from its rows; the recipe: 1D2D (B 128 x 128 scales), or
// 1D1D (`b1d`: B 1 x 128, a scale per tile column); A's scale format is a run-time value.
struct GemmKey {
  int group = 4;
  int64_t n = 0, k = 0;
  int block_m = 128;
  int split = 1;
  bool b1d = false;
  bool operator==(const GemmKey&) const = default;
};
// The key of a call with GemmOptions::promote_k resolved (32, 64 or 128), block_m-row tiles and
// split-K over `split` CTAs, specialised on n and k, for the 1D1D recipe where b1d.
inline GemmKey gemm_key_for(int promote_k, int block_m, int64_t n, int64_t k, int split = 1, bool b1d = false) {
  return {promote_k / 32, n, k, block_m, split, b1d};
}
constexpr int64_t kGemmKeyMaxNK = int64_t(1) << 24;  // N and K are specialised below this
// "" for a key the kernel can be specialised on (block_m 128 or 256; group 1, 2 or 4; N in
// [0, 2^24); K 0 or in [16, 2^24) with K % 16 == 0; split 1, or 2 or 4 at block_m 128), else what
// is wrong with it, naming the values.
std::string gemm_key_problem(const GemmKey& k);
inline bool gemm_key_valid(const GemmKey& k) { return gemm_key_problem(k).empty(); }
std::string gemm_key_text(const GemmKey& k);  // "wgmma 256x128 promote-k 128 N=7168 K=7168"
std::string gemm_kernel_name(const GemmKey& k);
std::string gemm_kernel_source(const GemmKey& k);
// Throws Error(invalid_argument) for a key gemm_key_valid refuses, Error(unsupported) with the
// NVRTC log, version and configuration where NVRTC fails.
Compiled compile_gemm(const GemmKey& k, int arch);
Key128 gemm_binary_key(const GemmKey& k, int arch);
// The GEMM kernels' memory-cache key (their own cache): tile rows and split, group, N, K, arch and device
// packed, with the widths checked at compile time; device < 64 and arch < 128.
uint64_t pack_gemm_key(const GemmKey& k, int arch, int device);

// Disk-cache key: a content hash over everything that changes the binary (schema, library
// version, the embedded headers, the generated source, options, architecture, NVRTC version).
Key128 binary_key(const cuda::FastKey& k, int arch);
// Compiled <-> disk-cache payload ([u32 name length][name][cubin]).
std::vector<uint8_t> to_payload(const Compiled& c);
bool from_payload(const std::vector<uint8_t>& payload, Compiled& c);

// Memory-cache key: the fields packed into an integer (widths checked at compile time).
uint64_t pack_key(const cuda::FastKey& k, int arch, int device);

// Every key the dispatcher can produce (all that fast_key_valid accepts).
std::vector<cuda::FastKey> all_keys();

}  // namespace mxq::runtime::jit
