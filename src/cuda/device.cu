// Device discovery, the architecture check, and device memory for the CLI and tests.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/validate.hpp"
#include "cuda/check.hpp"
#include "runtime/backends.hpp"
#include "runtime/memory.hpp"

namespace mxq::cuda {
namespace {

struct DeviceInfo {
  std::string name;
  int major = 0, minor = 0, sms = 0;
  int64_t l2_bytes = 0;
  int64_t dram_gbps = 0;  // peak: memory clock x 2 (double data rate) x bus width
};

// Queried once per process; nothing here assumes device 0.
const std::vector<DeviceInfo>& devices(std::string* error = nullptr) {
  static std::vector<DeviceInfo> list;
  static std::string err;
  static std::once_flag once;
  std::call_once(once, [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      err = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      cudaGetLastError();
      return;
    }
    for (int i = 0; i < n; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      int khz = 0, bits = 0;
      if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, i) != cudaSuccess ||
          cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, i) != cudaSuccess) {
        cudaGetLastError();
        khz = bits = 0;
      }
      list.push_back({p.name, p.major, p.minor, p.multiProcessorCount, int64_t(p.l2CacheSize),
                      int64_t(khz) * 2 * bits / 8 / 1000000});
    }
  });
  if (error) *error = err;
  return list;
}

}  // namespace

void require_supported_device(const Device& d, const char* op) {
  std::string err;
  const auto& list = devices(&err);
  if (d.kind != DeviceKind::cuda) fail_arg(std::string(op) + ": tensors on " + d.str() + " given to a CUDA backend");
  if (d.index < 0 || d.index >= int(list.size()))
    fail(ErrorCode::backend_unavailable, std::string(op) + ": device " + d.str() + " does not exist (" +
                                             std::to_string(list.size()) + " CUDA devices" +
                                             (err.empty() ? "" : "; " + err) + ")");
  const DeviceInfo& info = list[size_t(d.index)];
  if (info.major != 9 || info.minor != 0)
    fail(ErrorCode::unsupported, std::string(op) + ": " + d.str() + " (" + info.name + ", sm_" +
                                     std::to_string(info.major) + std::to_string(info.minor) +
                                     ") is not supported by the cuda-aot kernels, which are built for sm_90a "
                                     "(Hopper); the cpu backend remains available");
}

int sm_count(int device) {
  const auto& list = devices();
  return device >= 0 && device < int(list.size()) ? list[size_t(device)].sms : 132;
}

int64_t dram_gbps(int device) {
  const auto& list = devices();
  return device >= 0 && device < int(list.size()) ? list[size_t(device)].dram_gbps : 0;
}

int arch_of(int device) {
  const auto& list = devices();
  return device >= 0 && device < int(list.size()) ? list[size_t(device)].major * 10 + list[size_t(device)].minor : 0;
}

namespace {
// Allocation ranges of device pointers that passed the check, the most recent kRanges per thread.
struct CheckedRange {
  uintptr_t begin = 0, end = 0;
  int device = -1;
};
constexpr int kRanges = 16;
thread_local CheckedRange t_ranges[kRanges];
thread_local int t_next_range = 0;

using GetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
GetAddressRange address_range_fn() {
  static const auto fn = reinterpret_cast<GetAddressRange>(driver_entry_point("cuMemGetAddressRange", 12080));
  return fn;
}
using GetCurrentContext = CUresult (*)(CUcontext*);
GetCurrentContext current_context_fn() {
  static const auto fn = reinterpret_cast<GetCurrentContext>(driver_entry_point("cuCtxGetCurrent", 4000));
  return fn;
}
}  // namespace

void* driver_entry_point(const char* name, int version) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &f, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return f;
}

void check_device_pointer(const void* p, const Device& d, const char* what) {
  if (!p) return;
  const auto at = reinterpret_cast<uintptr_t>(p);
  for (const CheckedRange& r : t_ranges)
    if (at >= r.begin && at < r.end && r.device == d.index) return;
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    cudaGetLastError();
    fail_arg(std::string(what) + "=" + ptr_str(p) + " is not a CUDA pointer (" + cudaGetErrorString(e) + ")");
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    fail_arg(std::string(what) + "=" + ptr_str(p) + " is host memory, but the tensor says device " + d.str());
  if (a.type == cudaMemoryTypeDevice && a.device != d.index)
    fail_arg(std::string(what) + "=" + ptr_str(p) + " lives on cuda:" + std::to_string(a.device) +
             ", but the tensor says " + d.str());
  if (a.type != cudaMemoryTypeDevice) return;  // managed memory is checked every time
  // The driver's range query needs a current context, which a thread whose first CUDA call this
  // is has not got yet (the runtime binds one at the call's first launch): then the range is not
  // cached this time, and nothing is made current here (a caller's own context stays as it is).
  CUcontext ctx = nullptr;
  if (const GetCurrentContext current = current_context_fn(); !current || current(&ctx) != CUDA_SUCCESS || !ctx) return;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (const GetAddressRange range = address_range_fn();
      range && range(&base, &size, CUdeviceptr(at)) == CUDA_SUCCESS && size > 0) {
    t_ranges[t_next_range] = {uintptr_t(base), uintptr_t(base) + size, d.index};
    t_next_range = (t_next_range + 1) % kRanges;
  }
}

}  // namespace mxq::cuda

namespace mxq::runtime {

std::string cuda_unavailable_reason() {
  std::string err;
  const auto& list = cuda::devices(&err);
  if (list.empty()) return err.empty() ? "no CUDA device" : "no CUDA device (" + err + ")";
  for (const auto& d : list)
    if (d.major == 9 && d.minor == 0) return "";
  return "no sm_90 device (found " + list[0].name + ", sm_" + std::to_string(list[0].major) +
         std::to_string(list[0].minor) + "); kernels are built for sm_90a";
}

std::string cuda_device_summary() {
  std::string s;
  const auto& list = cuda::devices();
  for (size_t i = 0; i < list.size(); ++i) {
    if (!s.empty()) s += "; ";
    s += "cuda:" + std::to_string(i) + " " + list[i].name + " sm_" + std::to_string(list[i].major) +
         std::to_string(list[i].minor) + " " + std::to_string(list[i].sms) + " SMs";
  }
  return s;
}

int cuda_device_count() { return cuda_unavailable_reason().empty() ? int(cuda::devices().size()) : 0; }

bool cuda_device_info(int index, CudaDeviceInfo* out) {
  const auto& list = cuda::devices();
  if (index < 0 || index >= int(list.size())) return false;
  const auto& d = list[size_t(index)];
  *out = {d.major * 10 + d.minor, d.sms, d.major == 9 && d.minor == 0, d.name, d.l2_bytes};
  return true;
}

void* device_alloc(const Device& d, int64_t bytes) {
  if (d.kind == DeviceKind::cpu) {
    void* p = std::aligned_alloc(64, size_t((bytes + 63) / 64 * 64));
    if (!p) fail(ErrorCode::internal, "out of host memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  cuda::DeviceGuard g(d.index);
  void* p = nullptr;
  cuda::check_cuda(cudaMalloc(&p, size_t(bytes)), "cudaMalloc");
  return p;
}

void device_free(const Device& d, void* p) {
  if (d.kind == DeviceKind::cpu) std::free(p);
  else cudaFree(p);
}

void copy_to_device(const Device& d, void* dst, const void* src, int64_t n) {
  if (d.kind == DeviceKind::cpu) std::memcpy(dst, src, size_t(n));
  else cuda::check_cuda(cudaMemcpy(dst, src, size_t(n), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void copy_to_host(const Device& d, void* dst, const void* src, int64_t n) {
  if (d.kind == DeviceKind::cpu) std::memcpy(dst, src, size_t(n));
  else cuda::check_cuda(cudaMemcpy(dst, src, size_t(n), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

void device_memset(const Device& d, void* p, int v, int64_t n) {
  if (d.kind == DeviceKind::cpu) std::memset(p, v, size_t(n));
  else cuda::check_cuda(cudaMemset(p, v, size_t(n)), "cudaMemset");
}

void device_synchronize(const Device& d) {
  if (d.kind == DeviceKind::cuda) cuda::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

double graph_ms_per_call(const Device& d, const std::function<void(void*)>& fn, int per_graph) {
  cuda::DeviceGuard guard(d.index);
  cudaStream_t s = nullptr;
  cuda::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "timing stream");
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  struct Cleanup {
    cudaStream_t& s;
    cudaGraph_t& g;
    cudaGraphExec_t& ge;
    cudaEvent_t &a, &b;
    ~Cleanup() {
      if (ge) cudaGraphExecDestroy(ge);
      if (g) cudaGraphDestroy(g);
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      cudaStreamDestroy(s);
    }
  } cleanup{s, g, ge, a, b};
  fn(s);
  cuda::check_cuda(cudaStreamSynchronize(s), "warm-up call");
  cuda::check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "graph capture");
  try {
    for (int i = 0; i < per_graph; ++i) fn(s);
  } catch (...) {
    cudaStreamEndCapture(s, &g);
    throw;
  }
  cuda::check_cuda(cudaStreamEndCapture(s, &g), "graph capture");
  cuda::check_cuda(cudaGraphInstantiate(&ge, g, 0), "graph instantiation");
  cuda::check_cuda(cudaEventCreate(&a), "event");
  cuda::check_cuda(cudaEventCreate(&b), "event");
  std::vector<float> t;
  for (int i = 0; i < 7; ++i) {
    cudaEventRecord(a, s);
    cuda::check_cuda(cudaGraphLaunch(ge, s), "graph replay");
    cudaEventRecord(b, s);
    cuda::check_cuda(cudaEventSynchronize(b), "graph replay");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / float(per_graph));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

bool graph_capture_and_replay(const std::function<void(void*)>& fn, int replays) {
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return false;
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
  if (ok) {
    try {
      fn(s);
    } catch (...) {
      ok = false;
    }
    ok = (cudaStreamEndCapture(s, &g) == cudaSuccess) && ok;
  }
  ok = ok && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess;
  for (int i = 0; ok && i < replays; ++i) ok = cudaGraphLaunch(ge, s) == cudaSuccess;
  ok = ok && cudaStreamSynchronize(s) == cudaSuccess;
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaGetLastError();
  return ok;
}

}  // namespace mxq::runtime
