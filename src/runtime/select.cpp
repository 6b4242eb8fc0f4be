#include <string_view>

#include "mxq/error.hpp"
#include "runtime/backends.hpp"

namespace mxq {
namespace runtime {

Backend select_backend(Backend requested, const Device& device, const char* op) {
  const bool on_cpu = device.kind == DeviceKind::cpu;
  if (requested == Backend::automatic) return on_cpu ? Backend::cpu : Backend::automatic;
  if (requested == Backend::cpu && !on_cpu)
    fail(ErrorCode::unsupported, std::string(op) + ": backend cpu cannot read tensors on " + device.str() +
                                     "; use auto or a cuda backend");
  if (requested != Backend::cpu && on_cpu)
    fail(ErrorCode::unsupported, std::string(op) + ": backend " + backend_name(requested) +
                                     " needs tensors on a CUDA device, got cpu tensors");
  if (requested == Backend::cublaslt) {
    if (std::string_view(op) != "gemm")
      fail(ErrorCode::unsupported, std::string(op) + ": backend cublaslt runs gemm only; use auto, cuda-aot or cuda-jit");
    const std::string why = cublaslt_unavailable_reason();
    if (!why.empty()) fail(ErrorCode::backend_unavailable, std::string(op) + ": backend cublaslt is unavailable: " + why);
  }
  if (requested == Backend::cuda_jit) {
    const std::string why = jit_unavailable_reason();
    if (!why.empty()) fail(ErrorCode::backend_unavailable, std::string(op) + ": backend cuda-jit is unavailable: " + why);
  }
  return requested;
}

}  // namespace runtime

std::vector<BackendStatus> backend_status() {
  std::vector<BackendStatus> s;
  s.push_back({Backend::cpu, true, "reference backend"});
  const std::string why = runtime::cuda_unavailable_reason();
  s.push_back({Backend::cuda_aot, why.empty(), why.empty() ? runtime::cuda_device_summary() : why});
  const std::string jit_why = why.empty() ? runtime::jit_unavailable_reason() : why;
  s.push_back({Backend::cuda_jit, jit_why.empty(), jit_why.empty() ? runtime::jit_summary() : jit_why});
  const std::string lt_why = runtime::cublaslt_unavailable_reason();
  s.push_back({Backend::cublaslt, lt_why.empty(), lt_why.empty() ? "block-scaled FP8 GEMM (gemm only)" : lt_why});
  return s;
}

}  // namespace mxq
