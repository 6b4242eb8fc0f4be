// Internal: backend selection and the CUDA entry points (stubs report "not built" when the
// library is compiled without CUDA).
#pragma once

#include "core/validate.hpp"

namespace mxq::runtime {

// Resolves `requested` (after the precedence of settings.hpp) for tensors on `device`; throws if
// that backend cannot serve them. For CUDA tensors `automatic` stays automatic: the CUDA entry
// points pick a kernel built ahead of time, else the JIT, else the generic kernel.
Backend select_backend(Backend requested, const Device& device, const char* op);

void cuda_quantize(Backend b, const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt);
void cuda_dequantize(Backend b, const DequantizeCall& call, const QuantizedTensor& q, const DequantizeOptions& opt);
// The CUDA GEMM: cuBLASLt where it takes the call (auto, cublaslt), else the generic kernel.
void cuda_gemm(Backend b, const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& bt,
               const GemmOptions& opt);
// "" when cuBLASLt's block-scaled FP8 GEMM can run here, else why not.
std::string cublaslt_unavailable_reason();

// Why the JIT cannot run ("" when it can).
std::string jit_unavailable_reason();
// Whether the cuda-jit kernel of (recipe, input dtype, fused epilogue bits) is loaded on `device`
// in this process (tests: a first call's path).
bool jit_quantize_loaded(const Recipe& r, DType dtype, int fuse, int device);
std::string jit_summary();

// Why the CUDA backends are or are not usable ("" when usable).
std::string cuda_unavailable_reason();
std::string cuda_device_summary();

}  // namespace mxq::runtime
