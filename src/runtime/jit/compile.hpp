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

struct Compiled {
  std::string lowered_name;  // the kernel's mangled name in the cubin
  std::vector<uint8_t> cubin;
};
// Throws Error(unsupported) carrying the NVRTC log, the NVRTC version and the configuration.
Compiled compile(const cuda::FastKey& k, int arch);
// The TMA + wgmma GEMM kernel (src/cuda/gemm/wgmma.cuh) for one promotion interval, from the
// same header the ahead-of-time build compiles. Compiled and tested in CI; the GEMM does not
// load JIT kernels yet (issue 6: specialisation on N, K and tiles is the next step).
Compiled compile_gemm_wgmma(int promote_k, int arch);

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
