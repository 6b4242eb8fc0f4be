// Host-side CUDA helpers: error checks that throw mxq::Error, the device guard, and the
// architecture check that turns "no kernel image" into a clear message.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "mxq/error.hpp"
#include "mxq/tensor.hpp"

namespace mxq::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    fail(ErrorCode::device_error, std::string(what) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// Switches to a device for a scope and back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    check_cuda(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != index) {
      check_cuda(cudaSetDevice(index), "cudaSetDevice");
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
  bool changed_ = false;
};

// Relaxes this thread's stream-capture mode for a scope: calls that enqueue nothing but that a
// capturing thread may not make (module loads, handle and workspace creation) can then run when
// a first call comes inside CUDA-graph capture (torch.compile's CUDA graphs).
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// Sets kKernel's attribute kAttr to `value` on `device`, once per device (a first call may come
// inside CUDA-graph capture).
template <auto kKernel, cudaFuncAttribute kAttr>
cudaError_t func_attribute_once(int device, int value) {
  static std::atomic<bool> set[64] = {};
  const bool known = device >= 0 && device < 64;
  if (known && set[device].load(std::memory_order_acquire)) return cudaSuccess;
  RelaxedCapture relaxed;
  const cudaError_t e = cudaFuncSetAttribute(kKernel, kAttr, value);
  if (e == cudaSuccess && known) set[device].store(true, std::memory_order_release);
  return e;
}

// Raises kKernel's dynamic shared-memory limit to `bytes` on `device`.
template <auto kKernel>
cudaError_t allow_dynamic_smem(int device, int bytes) {
  return func_attribute_once<kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize>(device, bytes);
}

// Lets kKernel run in clusters of more than the portable 8 CTAs (up to 16 on sm_90).
template <auto kKernel>
cudaError_t allow_large_clusters(int device) {
  return func_attribute_once<kKernel, cudaFuncAttributeNonPortableClusterSizeAllowed>(device, 1);
}

// CTAs of kKernel resident on one SM at once with `threads` threads and `smem` bytes of dynamic
// shared memory (its limit raised first), looked up once per device; at least 1.
template <auto kKernel>
int resident_ctas(int device, int threads, int smem) {
  static std::atomic<int> per_sm[64] = {};
  const int slot = device & 63;
  int n = per_sm[slot].load(std::memory_order_relaxed);
  if (n == 0) {
    allow_dynamic_smem<kKernel>(device, smem);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kKernel, threads, smem) != cudaSuccess || n < 1) n = 1;
    per_sm[slot].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Throws unless `d` is a CUDA device the precompiled kernels run on (sm_90: they are built for
// sm_90a). The message names the device, its architecture and the way out.
void require_supported_device(const Device& d, const char* op);
int sm_count(int device);
// The device's peak DRAM bandwidth in GB/s from its memory clock and bus width (H100 SXM ~3350,
// H200 ~4900), 0 where unknown.
int64_t dram_gbps(int device);
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
int arch_of(int device);
// A driver API function through the runtime (the library links no libcuda), or null.
void* driver_entry_point(const char* name, int version);  // major * 10 + minor, from the per-process device list

// Throws unless p (when not null) is device or managed memory of device d; `what` names the
// argument. Allocation ranges already checked are remembered per thread, so that a warm call
// makes no driver query for buffers it has seen (a freed range is still device memory while
// the driver keeps its address space; a pointer into memory freed and mapped anew elsewhere
// cannot be told from a valid one by any query).
void check_device_pointer(const void* p, const Device& d, const char* what);

}  // namespace mxq::cuda
