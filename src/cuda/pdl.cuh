// Programmatic dependent launch (sm_90): a kernel launched with pdl_launch() may start while
// the previous kernel in the stream drains; it calls pdl_wait() before touching global memory,
// which waits for that kernel's completion, and pdl_trigger() to let the next one be scheduled
// in turn. The fast quantize kernels and the GEMM kernels are launched so, AOT and JIT (the decode
// kernels where gemm/config.h decode_pdl finds their grid full enough).
#pragma once

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>
#endif

namespace mxq::cuda {

// Waits until the kernel before has completed and its writes are visible (every thread that
// touches global memory after it).
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the next kernel be scheduled once every CTA of this one has called it (one thread of a
// CTA suffices) or exited; it then starts on the SM slots that free up and waits in pdl_wait.
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// Both at once, at a kernel's start (the fast quantize kernels).
__device__ __forceinline__ void pdl_begin() {
  pdl_wait();
  pdl_trigger();
}

#ifndef __CUDACC_RTC__
// A launch configuration: clusters of `cluster` CTAs where cluster.x > 0 (an int n: n CTAs along
// x; 0: no cluster attribute; an occupancy query of clusters needs one, of 1 CTA too), and
// programmatic serialization where `pdl` (pdl_launch_cluster's launches; an occupancy query
// takes none).
struct LaunchConfig {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[3] = {};
  LaunchConfig(const LaunchConfig&) = delete;  // cfg points at attr
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  LaunchConfig(dim3 grid, dim3 block, size_t smem, dim3 cluster, cudaStream_t stream, bool pdl,
               bool cooperative = false) {
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    if (cluster.x > 0) {
      cudaLaunchAttribute& a = attr[cfg.numAttrs++];
      a.id = cudaLaunchAttributeClusterDimension;
      a.val.clusterDim.x = cluster.x;
      a.val.clusterDim.y = cluster.y;
      a.val.clusterDim.z = cluster.z;
    }
    if (pdl) {
      cudaLaunchAttribute& a = attr[cfg.numAttrs++];
      a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      a.val.programmaticStreamSerializationAllowed = 1;
    }
    if (cooperative) {  // every CTA resident at once (a grid that meets in global memory)
      cudaLaunchAttribute& a = attr[cfg.numAttrs++];
      a.id = cudaLaunchAttributeCooperative;
      a.val.cooperative = 1;
    }
  }
};
// With `smem` bytes of dynamic shared memory (the kernel's limit raised where it exceeds 48 KB),
// in clusters of `cluster` CTAs (LaunchConfig; 0: no clusters).
// `pdl` false: an ordinary launch (the kernel's pdl_wait and pdl_trigger then do nothing).
template <class... KArgs, class... Args>
cudaError_t pdl_launch_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, dim3 cluster,
                               cudaStream_t stream, bool pdl, Args&&... args) {
  LaunchConfig c(grid, block, smem, cluster, stream, pdl);
  return cudaLaunchKernelEx(&c.cfg, kernel, static_cast<KArgs>(args)...);
}
template <class... KArgs, class... Args>
cudaError_t pdl_launch_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                            Args&&... args) {
  return pdl_launch_cluster(kernel, grid, block, smem, 0, stream, true, static_cast<Args&&>(args)...);
}
template <class... KArgs, class... Args>
cudaError_t pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
  return pdl_launch_smem(kernel, grid, block, 0, stream, static_cast<Args&&>(args)...);
}
#endif

}  // namespace mxq::cuda
