// Hopper (sm_90a) building blocks of the tensor-core GEMM: mbarriers, the bulk tensor copy
// (TMA), wgmma shared-memory descriptors and the m64n128k32 FP8 wgmma. Each wrapper is one PTX
// instruction, named after it; PTX ISA 8.x defines them (sections "mbarrier", "cp.async.bulk.
// tensor", "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" and "setmaxnreg").
#pragma once

#include "mxq/numerics/config.h"
#include "mxq/numerics/formats.h"  // float_to_bf16
#include "cuda/cluster.cuh"
#include "cuda/mbarrier.cuh"

#if defined(__CUDACC_RTC__)
// NVRTC has no cuda.h: the tensor map is 128 opaque bytes, 64-byte aligned, under the driver
// API's name (so that the kernels' mangled names match the ahead-of-time build's).
typedef struct CUtensorMap_st {
  alignas(64) unsigned long long opaque[16];
} CUtensorMap;
#else
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace mxq::cuda::sm90 {

using cuda::smem_addr;

// The bf16 pair {lo, hi} (lo in the low half) of two floats, rounded to nearest even by one cvt
// (F2FP): num::float_to_bf16 of each, except that a NaN becomes cvt's canonical NaN.
__device__ __forceinline__ uint32_t bf16x2_cvt(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // the first source goes high
  return r;
}
// num::float_to_bf16 of both, NaNs included (GpuNumerics.Bf16PairEqualsTheFormulaOnEveryFloat).
__device__ __forceinline__ uint32_t bf16x2_rn(float lo, float hi) {
  if (lo != lo || hi != hi) return uint32_t(num::float_to_bf16(lo)) | (uint32_t(num::float_to_bf16(hi)) << 16);
  return bf16x2_cvt(lo, hi);
}

// ---- mbarrier (cuda/mbarrier.cuh) ------------------------------------------------------------
using cuda::mbar_arrive;
using cuda::mbar_arrive_expect_tx;
using cuda::mbar_init;
using cuda::mbar_init_fence;
using cuda::mbar_wait;

// ---- TMA -------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// Copies the box at (c0, c1) (innermost first) of `map` to shared memory; completes on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// Copies `src` (the box's bytes in the map's swizzle) to the box at (c0, c1) of `map`; elements
// outside the matrix are not written. Completes as a bulk group (bulk_commit, bulk_wait_read).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int32_t c0, int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most kPending committed bulk groups still read their shared-memory source.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Waits until at most kPending committed bulk groups are incomplete (their writes done).
template <int kPending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kPending) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// ---- warpgroup register budget ---------------------------------------------------------------
template <uint32_t kRegs>
__device__ __forceinline__ void regs_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <uint32_t kRegs>
__device__ __forceinline__ void regs_claim() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// ---- wgmma -----------------------------------------------------------------------------------
// Descriptor of a K-major tile whose rows are 128 bytes, stored with the 128-byte swizzle that
// TMA's CU_TENSOR_MAP_SWIZZLE_128B writes: 8-row groups 1024 bytes apart (stride byte offset),
// leading byte offset unused, layout type 1 (bits 62-63). `p` is the first byte of the K step
// inside a 1024-byte aligned tile; the hardware applies the swizzle from the address bits.
// desc_k_major_sw128_at takes the address in 16-byte units (a shared-memory address is below
// 2^18, so it fits the 14-bit field): kernels step through stages and K steps by adding to it.
__device__ __forceinline__ uint64_t desc_k_major_sw128_at(uint32_t addr16) {
  return uint64_t(addr16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ uint64_t desc_k_major_sw128(const void* p) {
  return desc_k_major_sw128_at((smem_addr(p) & 0x3FFFF) >> 4);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// d (+)= A[64 x 32] . B[128 x 32]^T, e4m3 x e4m3 -> f32. `accumulate` false starts from zero
// (the instruction's scale-d), so that the accumulators are written by wgmma alone.
#define MXQ_R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                  "+f"(d[i + 6]), "+f"(d[i + 7])
__device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[64], uint64_t da, uint64_t db, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n}"
      : MXQ_R8(0), MXQ_R8(8), MXQ_R8(16), MXQ_R8(24), MXQ_R8(32), MXQ_R8(40), MXQ_R8(48), MXQ_R8(56)
      : "l"(da), "l"(db), "r"(int(accumulate)));
}
#undef MXQ_R8

// The narrow shapes of the swap-AB decode GEMM: d (+)= A[64 x 32] . B[N x 32]^T, N activation rows.
__device__ __forceinline__ void wgmma_m64n16k32_e4m3(float (&d)[8], uint64_t da, uint64_t db, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(da), "l"(db), "r"(int(accumulate)));
}
__device__ __forceinline__ void wgmma_m64n32k32_e4m3(float (&d)[16], uint64_t da, uint64_t db, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(int(accumulate)));
}
__device__ __forceinline__ void wgmma_m64n64k32_e4m3(float (&d)[32], uint64_t da, uint64_t db, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(int(accumulate)));
}

// ---- clusters (distributed shared memory): cuda/cluster.cuh
using cuda::cluster_ctas;
using cuda::cluster_rank;
using cuda::cluster_sync;
using cuda::ld_cluster_f32;
using cuda::ld_cluster_f32x4;

}  // namespace mxq::cuda::sm90
