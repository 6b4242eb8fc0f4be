// The decode GEMM (M <= 64): swap-AB on the FP8 tensor cores. The weights B[N, K] are the MMA's
// 16-row "A" operand and the few activation rows A[M, K] its 8-column "B" operand
// (mma.sync m16n8k32 e4m3, fp32 accumulators), so a CTA streams 16 weight rows once whatever M
// is: the GEMM is bound by the weight bytes. The 8 warps of a CTA take interleaved 128-wide K
// blocks; each block's products are summed by the MMA, then promoted into fp32 with both block
// scales (as DeepGEMM does, every 128 of K); the warps' sums meet in shared memory.
//
// K order inside a 32-wide MMA step does not matter to a dot product, so each thread loads 16
// contiguous bytes of a row (two MMA steps' worth) and both operands use the same assignment of
// bytes to fragment registers: coalesced 64-byte row segments instead of 4-byte pieces.
#include <cuda_runtime.h>

#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {
namespace {

constexpr int kWarps = gemm_config::kDecodeWarps, kRowsN = gemm_config::kDecodeRowsN,
              kMaxM = gemm_config::kDecodeMaxM;

// d += A . B for one 32-wide step, the step's own sum formed from zero: the tensor cores sum
// the 32 products of an instruction in a narrower format than fp32, so steps are added in fp32.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  float s0, s1, s2, s3;
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %10, %10, %10};\n"
      : "=f"(s0), "=f"(s1), "=f"(s2), "=f"(s3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
  d[0] += s0;
  d[1] += s1;
  d[2] += s2;
  d[3] += s3;
}

__device__ __forceinline__ uint4 load16(const uint8_t* base, int64_t row, int64_t rows, int64_t k, int64_t at) {
  return row < rows ? __ldg(reinterpret_cast<const uint4*>(base + row * k + at)) : uint4{0u, 0u, 0u, 0u};
}

template <int kMT>  // m tiles of 8 activation rows
__global__ void __launch_bounds__(kWarps * 32) gemm_decode_kernel(const GemmParams p) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, q = lane & 3;  // MMA group (row of the 16, column of the 8) and thread in it
  const int64_t n0 = int64_t(blockIdx.x) * kRowsN;
  const int64_t kblocks = p.k / 128;
  float acc[kMT][4] = {};
  for (int64_t kb = warp; kb < kblocks; kb += kWarps) {
    // weights: rows n0 + g and n0 + g + 8, bytes h * 64 + q * 16 .. + 15 of this block
    uint4 w[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      w[h][0] = load16(p.b.codes, n0 + g, p.n, p.k, kb * 128 + h * 64 + q * 16);
      w[h][1] = load16(p.b.codes, n0 + g + 8, p.n, p.k, kb * 128 + h * 64 + q * 16);
    }
    float sb[2];
    sb[0] = n0 + g < p.n ? gemm_operand_scale(p.b, n0 + g, kb) : 0.0f;
    sb[1] = n0 + g + 8 < p.n ? gemm_operand_scale(p.b, n0 + g + 8, kb) : 0.0f;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int64_t m = int64_t(mt) * 8 + g;  // this thread's activation row (MMA column)
      float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint4 x = load16(p.a.codes, m, p.m, p.k, kb * 128 + h * 64 + q * 16);
        // bytes 0-7 are one MMA step, 8-15 the next: (a0, a2) from row g, (a1, a3) from row g + 8
        const uint32_t a_lo[4] = {w[h][0].x, w[h][1].x, w[h][0].y, w[h][1].y};
        const uint32_t a_hi[4] = {w[h][0].z, w[h][1].z, w[h][0].w, w[h][1].w};
        mma_e4m3(part, a_lo, x.x, x.y);
        mma_e4m3(part, a_hi, x.z, x.w);
      }
      // part[0..1]: weight row g, activation rows 8 mt + 2q, +1; part[2..3]: weight row g + 8
      const int64_t m0 = int64_t(mt) * 8 + 2 * q;
      const float sa0 = m0 < p.m ? gemm_operand_scale(p.a, m0, kb) : 0.0f;
      const float sa1 = m0 + 1 < p.m ? gemm_operand_scale(p.a, m0 + 1, kb) : 0.0f;
      acc[mt][0] = __fmaf_rn(part[0], sb[0] * sa0, acc[mt][0]);
      acc[mt][1] = __fmaf_rn(part[1], sb[0] * sa1, acc[mt][1]);
      acc[mt][2] = __fmaf_rn(part[2], sb[1] * sa0, acc[mt][2]);
      acc[mt][3] = __fmaf_rn(part[3], sb[1] * sa1, acc[mt][3]);
    }
  }
  // the warps' partial sums of each (n, m), then the epilogue: D[m, n] = alpha acc (+ C) (+ bias)
  __shared__ float red[kWarps][kMT * 8][kRowsN];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    red[warp][mt * 8 + 2 * q][g] = acc[mt][0];
    red[warp][mt * 8 + 2 * q + 1][g] = acc[mt][1];
    red[warp][mt * 8 + 2 * q][g + 8] = acc[mt][2];
    red[warp][mt * 8 + 2 * q + 1][g + 8] = acc[mt][3];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kMT * 8 * kRowsN; i += kWarps * 32) {
    const int mi = i / kRowsN, ni = i % kRowsN;
    const int64_t m = mi, n = n0 + ni;
    if (m >= p.m || n >= p.n) continue;
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += red[w][mi][ni];
    float out = p.alpha * s;
    if (p.c) out += p.c[m * p.c_stride + n];
    if (p.bias) out += p.bias[n];
    if (p.d_bf16) static_cast<uint16_t*>(p.d)[m * p.d_stride + n] = num::float_to_bf16(out);
    else static_cast<float*>(p.d)[m * p.d_stride + n] = out;
  }
}

template <int kMT>
cudaError_t launch(const GemmParams& p, cudaStream_t stream) {
  gemm_decode_kernel<kMT><<<unsigned((p.n + kRowsN - 1) / kRowsN), kWarps * 32, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace


cudaError_t launch_gemm_decode(const GemmParams& p, cudaStream_t stream) {
  switch (gemm_config::decode_m_tiles(p.m)) {
    case 1: return launch<1>(p, stream);
    case 2: return launch<2>(p, stream);
    case 4: return launch<4>(p, stream);
    default: return launch<kMaxM / 8>(p, stream);
  }
}

}  // namespace mxq::cuda
