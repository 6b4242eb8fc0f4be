// The generic CUDA GEMM: correct for every shape, layout and alignment the API accepts, not
// fast (one output per thread). It takes the calls the fast paths cannot, so that a valid shape
// never gets an error. Each 128-wide K block is summed in fp32 from the exact code products,
// then promoted into the fp32 accumulator with both block scales, as the tensor-core kernels do.
#include <cuda_runtime.h>

#include "cuda/gemm/params.h"
#include "cuda/pdl.cuh"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {
namespace {

constexpr int kTile = 16;

__global__ void gemm_generic_kernel(const GemmParams p) {
  __shared__ float lut[256];  // e4m3fn code -> value
  for (int i = threadIdx.y * kTile + threadIdx.x; i < 256; i += kTile * kTile)
    lut[i] = num::decode(uint8_t(i), num::ElemFormat::e4m3fn);
  __syncthreads();
  pdl_wait();  // the kernel before (pdl.cuh) has completed; the next is scheduled as this one exits
  const int64_t i = int64_t(blockIdx.y) * kTile + threadIdx.y, j = int64_t(blockIdx.x) * kTile + threadIdx.x;
  if (i >= p.m || j >= p.n) return;
  const uint8_t* x = p.a.codes + i * p.k;
  const uint8_t* y = p.b.codes + j * p.k;
  float acc = 0.0f;
  for (int64_t k0 = 0, kb = 0; k0 < p.k; k0 += 128, ++kb) {
    float part = 0.0f;
    const int64_t k1 = k0 + 128 < p.k ? k0 + 128 : p.k;
    for (int64_t t = k0; t < k1; ++t) part = __fmaf_rn(lut[x[t]], lut[y[t]], part);
    acc = __fmaf_rn(part, gemm_operand_scale(p.a, i, kb) * gemm_operand_scale(p.b, j, kb), acc);
  }
  gemm_store(p, i, j, gemm_output(p, acc, i, j));
}

}  // namespace

cudaError_t launch_gemm_generic(const GemmParams& p, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid(unsigned((p.n + kTile - 1) / kTile), unsigned((p.m + kTile - 1) / kTile));
  return pdl_launch(gemm_generic_kernel, grid, block, stream, p);
}

}  // namespace mxq::cuda
