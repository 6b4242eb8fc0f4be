// Kernels for GpuGemm.WaitsForTheKernelBeforeIt: a predecessor that lets the next kernel launch at
// once (griddepcontrol.launch_dependents) and writes its output late, and a kernel that reads
// without waiting, which shows that the next kernel does start before the writes land (so that
// a GEMM kernel reading its operands before griddepcontrol.wait would fail the test).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/pdl.cuh"
#include "late_writer.hpp"

namespace mxq::gpu_test {
namespace {

__global__ void late_copy_kernel(LateCopy c, long long cycles) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  for (int p = 0; p < LateCopy::kMax; ++p) {
    const auto* s = static_cast<const uint8_t*>(c.src[p]);
    auto* d = static_cast<uint8_t*>(c.dst[p]);
    for (int64_t i = threadIdx.x; i < c.bytes[p]; i += blockDim.x) d[i] = s[i];
  }
}

__global__ void early_peek_kernel(const uint8_t* src, int64_t bytes, uint32_t* nonzero) {
  uint32_t any = 0;
  for (int64_t i = threadIdx.x; i < bytes; i += blockDim.x) any |= src[i];
  if (any) atomicOr(nonzero, 1u);
}

}  // namespace

bool late_copy(const LateCopy& c, long long cycles, void* stream) {
  late_copy_kernel<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(c, cycles);
  return cudaGetLastError() == cudaSuccess;
}

bool early_peek(const void* src, int64_t bytes, uint32_t* nonzero, void* stream) {
  return cuda::pdl_launch(early_peek_kernel, dim3(1), dim3(256), static_cast<cudaStream_t>(stream),
                          static_cast<const uint8_t*>(src), bytes, nonzero) == cudaSuccess;
}

}  // namespace mxq::gpu_test
