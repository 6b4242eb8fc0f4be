// Programmatic dependent launch (sm_90): a kernel launched with pdl_launch() may start while
// the previous kernel in the stream drains; it calls pdl_begin() before touching memory, which
// waits for that kernel's completion and lets the next one be scheduled in turn.
#pragma once

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>
#endif

namespace mxq::cuda {

__device__ __forceinline__ void pdl_begin() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

#ifndef __CUDACC_RTC__
// With `smem` bytes of dynamic shared memory (the kernel's limit raised where it exceeds 48 KB).
template <class... KArgs, class... Args>
cudaError_t pdl_launch_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                            Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}
template <class... KArgs, class... Args>
cudaError_t pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
  return pdl_launch_smem(kernel, grid, block, 0, stream, static_cast<Args&&>(args)...);
}
#endif

}  // namespace mxq::cuda
