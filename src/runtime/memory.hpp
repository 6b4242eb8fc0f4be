// Internal: device memory helpers for the CLI, benchmarks and tests, so that they need no CUDA
// headers. CPU "devices" use plain host memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "mxq/tensor.hpp"

namespace mxq::runtime {

int cuda_device_count();  // 0 when built without CUDA or no usable device

// Any CUDA device, supported or not: compute capability as 10 * major + minor, SM count, name.
// False when `index` is not a device (or the build has no CUDA).
struct CudaDeviceInfo {
  int arch = 0, sms = 0;
  bool supported = false;  // what mxq's CUDA backends run on (sm_90)
  std::string name;
  int64_t l2_bytes = 0;  // the L2 cache (the benchmarks size their rotations past it)
};
bool cuda_device_info(int index, CudaDeviceInfo* out);
void* device_alloc(const Device& d, int64_t bytes);
void device_free(const Device& d, void* p);
void copy_to_device(const Device& d, void* dst, const void* src, int64_t bytes);
void copy_to_host(const Device& d, void* dst, const void* src, int64_t bytes);
void device_memset(const Device& d, void* p, int value, int64_t bytes);
void device_synchronize(const Device& d);

// Captures fn(stream) into a CUDA graph (global capture mode, which rejects unsafe calls such
// as synchronisation or allocation), replays it `replays` times and synchronises. Returns
// false when capture or replay fails.
bool graph_capture_and_replay(const std::function<void(void*)>& fn, int replays);

// Device milliseconds per call of fn(stream) on device d: fn runs once (warm-up: kernels
// loaded, descriptors made), then `per_graph` calls are captured into one CUDA graph, which is
// replayed 7 times; the median replay over per_graph. Throws with the CUDA error on failure.
double graph_ms_per_call(const Device& d, const std::function<void(void*)>& fn, int per_graph = 10);

}  // namespace mxq::runtime
