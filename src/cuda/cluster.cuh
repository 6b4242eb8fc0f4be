// Thread-block clusters (sm_90): the CTA's rank, the cluster barrier and loads from another
// CTA's shared memory (distributed shared memory). Each wrapper is one PTX instruction (PTX ISA
// 8.x: "barrier.cluster", "mapa", "ld" with the .shared::cluster state space). Used by the GEMM
// kernels' split-K sums and the quantize kernels' one-launch amax (fast.cuh).
#pragma once

#include "mxq/numerics/config.h"

namespace mxq::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// CTAs in this CTA's cluster (1 for a launch without clusters)
__device__ __forceinline__ uint32_t cluster_ctas() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// All threads of every CTA of the cluster: writes before it are visible to reads after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The two halves of a cluster barrier that publishes only fence-published state, such as
// mbarriers initialised before a fence.mbarrier_init (mbarrier.cuh): every thread arrives
// (relaxed: no fence of its own; the release form would put a GPU-wide fence there) and later
// waits (an acquire); work between the two overlaps the wait.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// The shared-memory address p in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t cluster_map(const void* p, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
  return remote;
}
// The 32-bit word at the same shared-memory address in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t ld_cluster_u32(const void* p, uint32_t rank) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(cluster_map(p, rank)) : "memory");
  return v;
}
__device__ __forceinline__ float ld_cluster_f32(const void* p, uint32_t rank) {
  return __uint_as_float(ld_cluster_u32(p, rank));
}
// The 16 bytes at the same (16-byte aligned) shared-memory address in CTA `rank` of the cluster.
__device__ __forceinline__ float4 ld_cluster_f32x4(const void* p, uint32_t rank) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_map(p, rank))
               : "memory");
  return v;
}

}  // namespace mxq::cuda
