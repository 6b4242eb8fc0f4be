// The generic CUDA GEMM: correct for every shape, layout, alignment and operand family the API
// accepts, not fast (one output per thread). It takes the calls the fast paths cannot, so that a
// valid shape never gets an error, and it is the only CUDA kernel for the MX, NVFP4 and
// per-tensor FP8 families. Each K block (128 for fp8_block, 32 for MX, 16 for NVFP4, 128 for
// per-tensor FP8) is summed in fp32 from the exact code products, then promoted into the fp32
// accumulator with both block scales, as the tensor-core kernels do; the global scales multiply
// the sum at the end.
#include <cuda_runtime.h>

#include "cuda/gemm/params.h"
#include "cuda/pdl.cuh"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {
namespace {

constexpr int kTile = 16;

// Code t of a row: a byte, or an E2M1 nibble (num::unpack_fp4).
__device__ uint32_t code_at(const uint8_t* row, int64_t t, bool fp4) {
  return fp4 ? num::unpack_fp4(row[t >> 1], int(t & 1)) : row[t];
}

__global__ void gemm_generic_kernel(const GemmParams p) {
  __shared__ float lut[2][256];  // code -> value, of A's element format and of B's
  for (int i = threadIdx.y * kTile + threadIdx.x; i < 256; i += kTile * kTile) {
    lut[0][i] = num::decode(uint8_t(i), p.family.a_elem);
    lut[1][i] = num::decode(uint8_t(i), p.family.b_elem);
  }
  __syncthreads();
  pdl_wait();  // the kernel before (pdl.cuh) has completed; the next is scheduled as this one exits
  const int64_t i = int64_t(blockIdx.y) * kTile + threadIdx.y, j = int64_t(blockIdx.x) * kTile + threadIdx.x;
  if (i >= p.m || j >= p.n) return;
  const bool fa = p.family.a_elem == num::ElemFormat::e2m1, fb = p.family.b_elem == num::ElemFormat::e2m1;
  const uint8_t* x = p.a.codes + i * (fa ? p.k / 2 : p.k);
  const uint8_t* y = p.b.codes + j * (fb ? p.k / 2 : p.k);
  const int64_t bk = p.family.block_k;
  float acc = 0.0f;
  for (int64_t k0 = 0, kb = 0; k0 < p.k; k0 += bk, ++kb) {
    float part = 0.0f;
    const int64_t k1 = k0 + bk < p.k ? k0 + bk : p.k;
    for (int64_t t = k0; t < k1; ++t) part = __fmaf_rn(lut[0][code_at(x, t, fa)], lut[1][code_at(y, t, fb)], part);
    acc = __fmaf_rn(part, gemm_family_scale(p.a, p.family.scheme, i, kb) * gemm_family_scale(p.b, p.family.scheme, j, kb), acc);
  }
  // one global scale at a time: their product alone may overflow or underflow where D does not
  if (p.family.a_global) acc = (acc * *p.family.a_global) * *p.family.b_global;
  gemm_store(p, i, j, gemm_output(p, acc, i, j));
}

}  // namespace

cudaError_t launch_gemm_generic(const GemmParams& p, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid(unsigned((p.n + kTile - 1) / kTile), unsigned((p.m + kTile - 1) / kTile));
  return pdl_launch(gemm_generic_kernel, grid, block, stream, p);
}

}  // namespace mxq::cuda
