#include "mxq/error.hpp"
#include "runtime/backends.hpp"

namespace mxq {
namespace runtime {

Backend select_backend(Backend requested, const Device& device, const char* op) {
  const bool on_cpu = device.kind == DeviceKind::cpu;
  if (requested == Backend::cuda_jit)
    fail(ErrorCode::backend_unavailable, std::string(op) + ": backend cuda-jit is not built yet");
  if (requested == Backend::automatic) return on_cpu ? Backend::cpu : Backend::cuda_aot;
  if (requested == Backend::cpu && !on_cpu)
    fail(ErrorCode::unsupported, std::string(op) + ": backend cpu cannot read tensors on " + device.str() +
                                     "; use auto or a cuda backend");
  if (requested != Backend::cpu && on_cpu)
    fail(ErrorCode::unsupported, std::string(op) + ": backend " + backend_name(requested) +
                                     " needs tensors on a CUDA device, got cpu tensors");
  return requested;
}

}  // namespace runtime

std::vector<BackendStatus> backend_status() {
  std::vector<BackendStatus> s;
  s.push_back({Backend::cpu, true, "reference backend"});
  const std::string why = runtime::cuda_unavailable_reason();
  s.push_back({Backend::cuda_aot, why.empty(), why.empty() ? runtime::cuda_device_summary() : why});
  s.push_back({Backend::cuda_jit, false, "not built yet"});
  return s;
}

}  // namespace mxq
