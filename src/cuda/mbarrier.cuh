// Shared-memory mbarriers (sm_90) and the asynchronous store that completes on one: the GEMM
// kernels' stage ring (gemm/sm90.cuh) and the quantize kernels' one-launch amax exchange
// (quantize/fast.cuh). Each wrapper is one PTX instruction, named after it (PTX ISA 8.x sections
// "mbarrier" and "st.async").
#pragma once

#include "cuda/cluster.cuh"
#include "mxq/numerics/config.h"

namespace mxq::cuda {

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (the copy engine) and to the other
// CTAs of the cluster before use.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// Waits until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// mbar_wait with acquire semantics at cluster scope: for a phase completed by other CTAs' pushes
// (st_async_u32 releases at cluster scope; a CTA-scoped acquire does not pair with it).
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
  for (uint32_t done = 0; !done;)
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
}

// Stores v at `slot` and completes 4 bytes of the transaction count of `bar`, both at the same
// shared-memory addresses in CTA `rank` of the cluster; no wait (the receiver waits on its bar,
// mbar_wait_cluster). PTX defines st.async only in clusters of more than one CTA.
__device__ __forceinline__ void st_async_u32(const void* slot, uint32_t v, const uint64_t* bar, uint32_t rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];" ::"r"(
                   cluster_map(slot, rank)),
               "r"(v), "r"(cluster_map(bar, rank))
               : "memory");
}

}  // namespace mxq::cuda
