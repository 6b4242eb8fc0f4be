// Entry points of the C++ API: validate, pick a backend, run.
#include <string>

#include "core/validate.hpp"
#include "cpu/cpu_backend.hpp"
#include "mxq/api.hpp"
#include "runtime/backends.hpp"
#include "runtime/settings.hpp"

namespace mxq {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda_aot: return "cuda-aot";
    case Backend::cublaslt: return "cublaslt";
    default: return "cuda-jit";
  }
}

Backend parse_backend(std::string_view name, std::string_view argument) {
  for (Backend b : {Backend::automatic, Backend::cpu, Backend::cuda_aot, Backend::cuda_jit, Backend::cublaslt})
    if (name == backend_name(b)) return b;
  fail_arg(std::string(argument) + ": unknown backend '" + std::string(name) +
           "'; valid: auto, cpu, cuda-aot, cuda-jit, cublaslt");
}

namespace {
constexpr const char* kActivationNames[] = {"none",  "gelu",  "gelu_tanh", "silu",  "relu",
                                            "qgelu", "srelu", "swiglu",    "geglu", "reglu"};
}  // namespace

const char* activation_name(Activation a) {
  return int(a) <= int(Activation::reglu) ? kActivationNames[int(a)] : "invalid";
}

Activation parse_activation(std::string_view name, std::string_view argument) {
  for (int i = 0; i <= int(Activation::reglu); ++i)
    if (name == kActivationNames[i]) return Activation(i);
  fail_arg(std::string(argument) + ": unknown activation '" + std::string(name) +
           "'; valid: none, gelu, gelu_tanh, silu, relu, qgelu, srelu, swiglu, geglu, reglu");
}

std::string version() { return MXQ_VERSION; }
std::string build_info() { return MXQ_BUILD_INFO; }

void quantize(const TensorView& x, const QuantizedTensor& out, const QuantizeOptions& options) {
  runtime::begin_dispatch();  // first: a call refused below leaves no record of the one before
  const QuantizeCall call = check_quantize(x, out, options);
  const Backend b = runtime::select_backend(runtime::requested_backend(options.backend), call.x.device, "quantize");
  const bool fused = call.fused(options);
  if (b == Backend::cpu) {
    if (fused) cpu::quantize_fused(call, out, options);
    else cpu::quantize(call, out, options);
    runtime::record_dispatch("quantize", Backend::cpu, fused ? "reference fused" : "reference");
  } else {
    runtime::cuda_quantize(b, call, out, options);  // fused epilogues: the JIT-compiled kernels
  }
}

void gemm(const QuantizedTensor& a, const QuantizedTensor& b, const TensorView& d, const GemmOptions& options) {
  runtime::begin_dispatch();
  const GemmCall call = check_gemm(a, b, d, options);
  const Backend be = runtime::select_backend(runtime::requested_backend(options.backend), call.d.device, "gemm");
  if (be != Backend::cpu) return runtime::cuda_gemm(be, call, a, b, options);
  cpu::gemm(call, a, b, options);
  runtime::record_dispatch("gemm", Backend::cpu, "reference fp64");
}

void dequantize(const QuantizedTensor& q, const TensorView& y, const DequantizeOptions& options) {
  runtime::begin_dispatch();
  const DequantizeCall call = check_dequantize(q, y, options);
  const Backend b = runtime::select_backend(runtime::requested_backend(options.backend), call.y.device, "dequantize");
  if (b == Backend::cpu) {
    cpu::dequantize(call, q, options.columnwise);
    runtime::record_dispatch("dequantize", Backend::cpu, "reference");
  } else {
    runtime::cuda_dequantize(b, call, q, options);
  }
}

}  // namespace mxq
