// The decode GEMM for M <= 8 below K = 16384 (config.h decode_use_mma; decode.cu takes the rest up
// to 64 rows): swap-AB on mma.sync. The weights B[N, K] are the MMA's 16-row "A" operand and the
// activation rows A[M, K] its 8-column "B" operand (m16n8k32 e4m3, fp32 accumulators). On sm_90
// ptxas lowers this FP8 mma.sync to fp16 HMMA plus F2FP conversions (exact), so the wgmma kernel
// does more per instruction; this one stays there because it streams the weights faster at
// M <= 4 and K <= 7168 (H200, bench/RESULTS.md session 10) and sums exactly in fp32 every 32 of K.
//
// - Work: a warp owns 16 weight rows and every kS-th 128-wide K block of them; the CTA's 8 warps
//   are 8 / kS groups of 16 rows (config.h, decode_mma_k_split: each warp streams at least 4
//   blocks where K allows, short K gets more rows per CTA instead, and all CTAs fit in one wave
//   where N allows; a CTA takes further chunks of rows in turn otherwise).
// - Streaming: each thread copies its own 64 bytes of a block (16 bytes of rows g and g + 8, at
//   two places) with cp.async into a private ring of kDecodeMmaStages slots, kDecodeMmaStages - 1
//   blocks ahead of the block it multiplies; a thread reads back only what it copied, so the
//   ring needs no barrier. The activation bytes and the scales (L2 hits) are loaded one block
//   ahead.
// - Numerics: each 32-wide MMA step is summed from zero and added in fp32, and every 128 of K
//   the block's sum is promoted with both block scales; the warps of a row group meet in shared
//   memory. K order inside a block does not matter to a dot product, so both operands use the
//   same assignment of bytes to fragment registers.
#include <cuda_runtime.h>


#include "cuda/check.hpp"
#include "cuda/common.cuh"
#include "cuda/gemm/config.h"
#include "cuda/gemm/params.h"
#include "cuda/pdl.cuh"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {
namespace {

using namespace gemm_config;
constexpr int kWarps = kDecodeMmaWarps, kRowsN = kDecodeMmaRowsN, kStages = kDecodeMmaStages;
constexpr int kThreads = kWarps * 32;
static_assert(kDecodeMmaStageBytes == 4 * 16, "a thread's share of a block: 4 chunks of 16 bytes");

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

// The thread's activation bytes of block kb: row 8 mt + g of the CTA's rows, bytes h * 64 + q * 16
// .. + 15 (`x0` points at byte q * 16 of that row g; m_left rows exist from the CTA's first).
template <int kMT>
__device__ __forceinline__ void load_x(uint4 (&x)[kMT][2], const GemmParams& p, const uint8_t* x0, int m_left, int g,
                                       int64_t kb) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const uint8_t* at = x0 + int64_t(mt) * 8 * p.k + kb * 128;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      x[mt][h] = mt * 8 + g < m_left ? __ldg(reinterpret_cast<const uint4*>(at + h * 64)) : uint4{0u, 0u, 0u, 0u};
  }
}

// What a thread needs of one K block besides the weights: its activation bytes and the decode
// multipliers of its activation rows (8 mt + 2q, + 1) and weight rows (g, g + 8).
template <int kMT>
struct Side {
  uint4 x[kMT][2];
  float sa[kMT][2], sb[2];
};

// Registers per thread allow 2 CTAs of 256 threads per SM (128 registers; config.h counts on it).
constexpr int kMinCtas = kDecodeMmaCtasPerSm;

template <int kMT, int kS>  // kMT tiles of 8 activation rows; kS warps per 16 weight rows
__global__ void __launch_bounds__(kThreads, kMinCtas) gemm_decode_mma_kernel(const GemmParams p) {
  constexpr int kGroups = kWarps / kS, kChunkRows = kRowsN * kGroups;
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, q = lane & 3;  // MMA group (row of the 16, column of the 8) and thread in it
  const int group = warp / kS, split = warp % kS;
  const int kblocks = int(p.k / 128);  // K < 2^31: the dispatch checks (gemm_decode_takes)
  const int steps = (kblocks - split + kS - 1) / kS;  // this warp's blocks (decode_mma_k_split: split < kblocks)
  const int64_t chunks = (p.n + kChunkRows - 1) / kChunkRows;

  // fp8_block scale layouts are separable (num::separable_walk); A's offsets fit 32 bits (the
  // dispatch checks its scale storage)
  const num::SeparableWalk walk_a = num::separable_walk(p.a.geom), walk_b = num::separable_walk(p.b.geom);
  // activation rows m_base .. m_base + 8 kMT - 1, m_left of them real (one CTA row: M <= 8)
  const int m_base = 0, m_left = int(p.m) - m_base;
  const uint8_t* x0 = p.a.codes + int64_t(m_base + g) * p.k + q * 16;

  // The start of each weight row of the CTA's first chunk into the L2 (kWeightPrefetchBytes in
  // all), while the kernel before drains: one row per thread, rows contiguous from K byte 0
  if (blockIdx.x < chunks && threadIdx.x < kChunkRows) {
    const int64_t row = int64_t(blockIdx.x) * kChunkRows + threadIdx.x;
    const int64_t piece = (kWeightPrefetchBytes / kChunkRows) / 128 * 128;  // K is a multiple of 128
    if (row < p.n) l2_prefetch_bulk(p.b.codes + row * p.k, uint32_t(piece < p.k ? piece : p.k));
  }
  pdl_wait();  // the kernel before (pdl.cuh) has completed

  // Each CTA takes chunks of kChunkRows weight rows in turn (a grid of at most one wave).
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const int64_t row_n = chunk * kChunkRows + group * kRowsN + g;
    const bool ok0 = row_n < p.n, ok1 = row_n + 8 < p.n;
    const int64_t b_row0 = walk_b.row(ok0 ? row_n / p.b.block_rows : 0), b_row1 = walk_b.row(ok1 ? row_n + 8 : 0);  // used with 1 x 128 scales only
    // The thread's ring: slot s, chunk j (rows g / g + 8 at bytes q * 16 and 64 + q * 16) at
    // smem[(s * 4 + j) * kThreads + threadIdx.x], so a warp's accesses are 512 contiguous bytes.
    const uint8_t* w0 = p.b.codes + (ok0 ? row_n : 0) * p.k + split * 128 + q * 16;
    const uint8_t* w1 = p.b.codes + (ok1 ? row_n + 8 : 0) * p.k + split * 128 + q * 16;
    auto fetch = [&](int i, int slot_index) {  // the weights of this warp's i-th block into a slot
      if (i < steps) {
        const int64_t at = int64_t(i) * (kS * 128);
        uint4* slot = smem + slot_index * 4 * kThreads + threadIdx.x;
        cp_async16(slot, w0 + at, ok0);
        cp_async16(slot + kThreads, w1 + at, ok1);
        cp_async16(slot + 2 * kThreads, w0 + at + 64, ok0);
        cp_async16(slot + 3 * kThreads, w1 + at + 64, ok1);
      }
      cp_async_commit();  // an empty group past the end keeps the wait count uniform
    };
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) fetch(i, i);

    float acc[kMT][4] = {};
    // The activation bytes and the scales of a block (L2 hits) are loaded one block ahead, so that
    // their round trip overlaps a block's work.
    auto load_side = [&](Side<kMT>& sd, int kb) {
      load_x(sd.x, p, x0, m_left, g, kb);
      const int32_t col_a = int32_t(walk_a.block(kb));
      const int64_t col_b = walk_b.block(kb);
      sd.sb[0] = ok0 ? gemm_scale_at(p.b, b_row0 + col_b) : 0.0f;
      // 128 x 128 weight scales: rows g and g + 8 of a 16-row group share their block
      sd.sb[1] = !ok1 ? 0.0f : p.b.block_rows == 128 ? sd.sb[0] : gemm_scale_at(p.b, b_row1 + col_b);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const int m0 = mt * 8 + 2 * q, stride_a = int32_t(walk_a.row_stride);
        sd.sa[mt][0] = m0 < m_left ? gemm_scale_at(p.a, (m_base + m0) * stride_a + col_a) : 0.0f;
        sd.sa[mt][1] = m0 + 1 < m_left ? gemm_scale_at(p.a, (m_base + m0 + 1) * stride_a + col_a) : 0.0f;
      }
    };
    Side<kMT> cur, next;
    load_side(cur, split);
#pragma unroll 1
    for (int i = 0; i < steps; ++i) {
      const int kb = split + i * kS;
      fetch(i + kStages - 1, (i + kStages - 1) % kStages);
      if (i + 1 < steps) load_side(next, kb + kS);
      cp_async_wait<kStages - 1>();  // this thread's copies of block i have landed
      const uint4* slot = smem + (i % kStages) * 4 * kThreads + threadIdx.x;
      const uint4 w[2][2] = {{slot[0], slot[kThreads]}, {slot[2 * kThreads], slot[3 * kThreads]}};
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // bytes 0-7 are one MMA step, 8-15 the next: (a0, a2) from row g, (a1, a3) from row g + 8
          const uint32_t a_lo[4] = {w[h][0].x, w[h][1].x, w[h][0].y, w[h][1].y};
          const uint32_t a_hi[4] = {w[h][0].z, w[h][1].z, w[h][0].w, w[h][1].w};
          mma_e4m3(part, a_lo, cur.x[mt][h].x, cur.x[mt][h].y);
          mma_e4m3(part, a_hi, cur.x[mt][h].z, cur.x[mt][h].w);
        }
        // part[0..1]: weight row g, activation rows 8 mt + 2q, +1; part[2..3]: weight row g + 8
        acc[mt][0] = __fmaf_rn(part[0], cur.sb[0] * cur.sa[mt][0], acc[mt][0]);
        acc[mt][1] = __fmaf_rn(part[1], cur.sb[0] * cur.sa[mt][1], acc[mt][1]);
        acc[mt][2] = __fmaf_rn(part[2], cur.sb[1] * cur.sa[mt][0], acc[mt][2]);
        acc[mt][3] = __fmaf_rn(part[3], cur.sb[1] * cur.sa[mt][1], acc[mt][3]);
      }
      cur = next;
    }
    cp_async_wait<0>();
    // the CTA's last chunk is read: the next kernel may be scheduled (pdl.cuh; decode.cu)
    if (threadIdx.x == 0 && chunk + gridDim.x >= chunks) pdl_trigger();
    __syncthreads();  // every ring is drained: the shared memory now holds the partial sums

    // red[warp][m][n of the 16], then D[m, n] = alpha * (sum over the group's kS warps) (+ C) (+ bias)
    float* red = reinterpret_cast<float*>(smem);
    constexpr int kM = kMT * 8;
    auto at = [&](int w, int m, int n) -> float& { return red[(w * kM + m) * kRowsN + n]; };
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      at(warp, mt * 8 + 2 * q, g) = acc[mt][0];
      at(warp, mt * 8 + 2 * q + 1, g) = acc[mt][1];
      at(warp, mt * 8 + 2 * q, g + 8) = acc[mt][2];
      at(warp, mt * 8 + 2 * q + 1, g + 8) = acc[mt][3];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kM * kChunkRows; i += kThreads) {
      const int mi = i / kChunkRows, nn = i % kChunkRows, gi = nn / kRowsN, ni = nn % kRowsN;
      const int64_t m = m_base + mi, n = chunk * kChunkRows + nn;
      if (mi >= m_left || n >= p.n) continue;
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < kS; ++w) s += at(gi * kS + w, mi, ni);
      gemm_store(p, m, n, gemm_output(p, s, m, n));
    }
    __syncthreads();  // the sums are read out before the next chunk's copies overwrite them
  }
}

template <int kMT, int kS>
cudaError_t launch(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  constexpr auto kernel = gemm_decode_mma_kernel<kMT, kS>;
  constexpr int kSmem = int(decode_mma_smem_bytes());
  if (const cudaError_t e = allow_dynamic_smem<kernel>(device, kSmem); e != cudaSuccess) return e;
  // One wave: every CTA resident at once, so that the weight stream keeps all SMs busy to the end.
  const int fit = resident_ctas<kernel>(device, kThreads, kSmem);
  const int rows = decode_mma_rows_per_cta(p.n, p.k, sms);
  const int64_t chunks = (p.n + rows - 1) / rows;
  const int64_t grid = chunks < int64_t(sms) * fit ? chunks : int64_t(sms) * fit;
  return pdl_launch_cluster(kernel, dim3(unsigned(grid)), dim3(kThreads), size_t(kSmem), 0, stream,
                            decode_pdl(grid, int64_t(sms) * fit), p);
}

}  // namespace

cudaError_t launch_gemm_decode_mma(const GemmParams& p, int device, int sms, cudaStream_t stream) {
  switch (decode_mma_k_split(p.n, p.k, sms)) {  // M <= 8: one tile of 8 activation rows
    case 1: return launch<1, 1>(p, device, sms, stream);
    case 2: return launch<1, 2>(p, device, sms, stream);
    case 4: return launch<1, 4>(p, device, sms, stream);
    default: return launch<1, 8>(p, device, sms, stream);
  }
}

}  // namespace mxq::cuda
