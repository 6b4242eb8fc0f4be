// Linked when the library is built without CUDA.
#include "mxq/error.hpp"
#include "runtime/backends.hpp"

namespace mxq::runtime {

std::string cuda_unavailable_reason() { return "not built (configured without CUDA)"; }
std::string cuda_device_summary() { return ""; }
std::string cublaslt_unavailable_reason() { return "not built (configured without CUDA)"; }
void cuda_gemm(Backend, const GemmCall&, const QuantizedTensor&, const QuantizedTensor&, const GemmOptions&) {
  fail(ErrorCode::backend_unavailable, "gemm: CUDA tensors, but this build has no CUDA backends");
}
std::string jit_unavailable_reason() { return "not built (configured without CUDA)"; }
std::string jit_summary() { return jit_unavailable_reason(); }
bool jit_quantize_loaded(const Recipe&, DType, int, int) { return false; }

void cuda_quantize(Backend, const QuantizeCall&, const QuantizedTensor&, const QuantizeOptions&) {
  fail(ErrorCode::backend_unavailable, "quantize: CUDA tensors given, but this mxq build has no CUDA support");
}
void cuda_dequantize(Backend, const DequantizeCall&, const QuantizedTensor&, const DequantizeOptions&) {
  fail(ErrorCode::backend_unavailable, "dequantize: CUDA tensors given, but this mxq build has no CUDA support");
}

}  // namespace mxq::runtime

namespace mxq {
JitCacheInfo jit_cache_info() {
  JitCacheInfo i;
  i.detail = runtime::jit_unavailable_reason();
  return i;
}
uint64_t jit_cache_clear() { return 0; }
JitWarmupResult jit_warmup(const std::vector<std::string>&, int, int) {
  fail(ErrorCode::backend_unavailable, "jit_warmup: the JIT is unavailable: " + runtime::jit_unavailable_reason());
}
}  // namespace mxq

#include <cstdlib>
#include <cstring>

#include "runtime/memory.hpp"

namespace mxq::runtime {
namespace {
void require_cpu(const Device& d) {
  if (d.kind != DeviceKind::cpu) fail(ErrorCode::backend_unavailable, "device " + d.str() + ": built without CUDA");
}
}  // namespace

int cuda_device_count() { return 0; }
bool cuda_device_info(int, CudaDeviceInfo*) { return false; }
void* device_alloc(const Device& d, int64_t bytes) {
  require_cpu(d);
  void* p = std::aligned_alloc(64, size_t((bytes + 63) / 64 * 64));
  if (!p) fail(ErrorCode::internal, "out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}
void device_free(const Device&, void* p) { std::free(p); }
void copy_to_device(const Device& d, void* dst, const void* src, int64_t n) { require_cpu(d); std::memcpy(dst, src, size_t(n)); }
void copy_to_host(const Device& d, void* dst, const void* src, int64_t n) { require_cpu(d); std::memcpy(dst, src, size_t(n)); }
void device_memset(const Device& d, void* p, int v, int64_t n) { require_cpu(d); std::memset(p, v, size_t(n)); }
void device_synchronize(const Device&) {}
bool graph_capture_and_replay(const std::function<void(void*)>&, int) { return false; }
double graph_ms_per_call(const Device&, const std::function<void(void*)>&, int) {
  fail(ErrorCode::backend_unavailable, "timing on a GPU: this build has no CUDA backends");
}

}  // namespace mxq::runtime
