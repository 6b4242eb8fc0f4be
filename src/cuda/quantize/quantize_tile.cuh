// One quantize kernel for every recipe and direction. A CTA owns a tile of kTR rows x 128
// columns, where kTR is the tallest block of the requested directions (16, 32 or 128). Each
// thread loads 8 consecutive columns of kTR/16 rows once; rowwise 1 x G blocks reduce their
// amax across G/8 lanes, column and 2-D maxima go through shared memory, and both directions
// are quantized from the same registers (the input is read once).
#pragma once

#include "cuda/common.cuh"
#include "cuda/pdl.cuh"
#include "cuda/quantize/prepare.cuh"

namespace mxq::cuda {

// Stages of the cp.async ring per tile height: each holds one tile's 16-byte chunks (two per
// row for fp32), and 2-4 tiles in flight per CTA keep enough bytes moving to cover DRAM latency
// whatever the register-limited occupancy.
template <int kDType, int kTR>
struct TileRing {
  static constexpr int kChunkBytes = kDType == 0 ? 32 : 16;           // 8 elements
  static constexpr int kStageBytes = 256 * (kTR / 16) * kChunkBytes;  // all threads, all their rows
  static constexpr int kStages = kStageBytes >= 32768 ? 2 : 4;
  static constexpr int kBytes = kStages * kStageBytes;
};

template <int kDType, num::ElemFormat kElem, int kTR, int kBC>
__global__ void __launch_bounds__(256, kTR >= 64 ? 2 : 4) quantize_tile_kernel(const TileParams p) {
  static_assert(kTR == 16 || kTR == 32 || kTR == 64 || kTR == 128, "the tile height is 16, 32, 64 or 128");
  static_assert(kBC == 8 || kBC == 16 || kBC == 32 || kBC == 64 || kBC == 128,
                "kBC is the block width (8 stands for per-tensor scaling)");
  constexpr int kLanes = kBC / 8;  // 1 x G blocks: G/8 consecutive lanes
  constexpr int kTC = 128;        // tile columns: 16 threads x 8 columns
  constexpr int kRPT = kTR / 16;  // rows per thread (16 row groups)
  constexpr bool kFp4 = kElem == num::ElemFormat::e2m1;
  using T = typename Input<kDType>::T;
  using Ring = TileRing<kDType, kTR>;

  __shared__ uint32_t red[16][kTC];         // per row-group column maxima, as bits
  __shared__ uint32_t colmax[kTC];          // tile column maxima
  __shared__ uint32_t blockmax[kTC / 16];   // 2-D block maxima (bc >= 16)
  __shared__ float colmult[kTC];            // columnwise element multipliers
  __shared__ uint8_t tcodes[kTC][kTR + 1];  // columnwise codes for the transposed store; +1 spreads banks
  extern __shared__ __align__(16) uint8_t ring[];  // Ring::kStages x [kRPT][256 threads][chunk]

  const int t = threadIdx.x, cc = t & 15, rg = t >> 4;

  const bool tensor_scaled = p.rule.scheme == num::Scheme::fp8_tensor;
  const num::ScaleRule rule = prepare_rule(p, kElem);

  // 32-bit tile indices: 64-bit division costs dozens of instructions per tile.
  const uint32_t tiles_x = uint32_t((p.cols + kTC - 1) / kTC);
  const uint32_t ntiles = tiles_x * uint32_t((p.rows + kTR - 1) / kTR);
  const uint32_t stride = gridDim.x;

  // Each thread copies exactly the chunks it later reads, so its own wait_group is all the
  // synchronisation the ring needs.
  auto issue = [&](uint32_t tile, int stage) {
    if (tile < ntiles) {
      const uint32_t ty = tile / tiles_x;
      const int64_t tr = int64_t(ty) * kTR, c0 = int64_t(tile - ty * tiles_x) * kTC + cc * 8;
#pragma unroll
      for (int i = 0; i < kRPT; ++i) {
        const int64_t r = tr + rg * kRPT + i;
        const bool valid = r < p.rows && c0 < p.cols;
        const T* src = static_cast<const T*>(p.x) + (valid ? r * p.row_stride + c0 : 0);
        uint8_t* dst = ring + size_t(stage) * Ring::kStageBytes + (size_t(i) * 256 + t) * Ring::kChunkBytes;
        cp_async16(dst, src, valid);
        if constexpr (kDType == 0) cp_async16(dst + 16, reinterpret_cast<const uint8_t*>(src) + 16, valid);
      }
    }
    cp_async_commit();
  };
  if (p.vec_ok) {
#pragma unroll
    for (int s = 0; s < Ring::kStages - 1; ++s) issue(blockIdx.x + s * stride, s);
  }

  int stage = 0;
  for (uint32_t tile = blockIdx.x; tile < ntiles; tile += stride) {
    const uint32_t ty = tile / tiles_x;
    const int64_t tile_r = int64_t(ty) * kTR, tile_c = int64_t(tile - ty * tiles_x) * kTC;
    const int64_t c0 = tile_c + cc * 8;
    const int ncols = c0 >= p.cols ? 0 : (p.cols - c0 >= 8 ? 8 : int(p.cols - c0));

    // ---- load kRPT rows x 8 columns
    float v[kRPT][8];
    if (p.vec_ok) {
      issue(tile + (Ring::kStages - 1) * stride, (stage + Ring::kStages - 1) % Ring::kStages);
      cp_async_wait<Ring::kStages - 1>();
#pragma unroll
      for (int i = 0; i < kRPT; ++i) {
        const uint8_t* src = ring + size_t(stage) * Ring::kStageBytes + (size_t(i) * 256 + t) * Ring::kChunkBytes;
        load8_vec_shared<kDType>(src, v[i]);
      }
      stage = (stage + 1) % Ring::kStages;
    } else {
#pragma unroll
      for (int i = 0; i < kRPT; ++i) {
        const int64_t r = tile_r + rg * kRPT + i;
        const T* src = static_cast<const T*>(p.x) + r * p.row_stride + c0;
        load8_scalar<kDType>(src, r < p.rows ? ncols : 0, v[i]);
      }
    }

    // ---- column maxima (columnwise blocks and 2-D blocks)
    const bool two_d = p.two_d;
    if (!tensor_scaled && (p.col || two_d)) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        uint32_t m = 0;
#pragma unroll
        for (int i = 0; i < kRPT; ++i) m = num::max_u32(m, num::abs_bits(v[i][j]));
        red[rg][cc * 8 + j] = m;
      }
      __syncthreads();
      if (t < kTC) {
        uint32_t m = 0;
#pragma unroll
        for (int g = 0; g < 16; ++g) m = num::max_u32(m, red[g][t]);
        colmax[t] = m;
      }
      __syncthreads();
      if (two_d && t < 32) {  // warp 0: lane l holds columns 4l..4l+3; groups of bc/4 lanes form a block
        uint32_t m = num::max_u32(num::max_u32(colmax[4 * t], colmax[4 * t + 1]),
                                  num::max_u32(colmax[4 * t + 2], colmax[4 * t + 3]));
        constexpr int kBlockLanes = kBC / 4 < 32 ? (kBC / 4 > 0 ? kBC / 4 : 1) : 32;
#pragma unroll
        for (int off = 1; off < kBlockLanes; off <<= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
        if (t % kBlockLanes == 0) blockmax[t / kBlockLanes] = m;
      }
      __syncthreads();
    }

    // ---- columnwise multipliers and scales (the block runs down kTR rows: bc == kTR)
    if (p.col) {
      if (t < kTC) {
        const int64_t c = tile_c + t;
        if (tensor_scaled) {
          colmult[t] = rule.tensor_factor;
        } else {
          const uint32_t m = two_d ? blockmax[t / kBC] : colmax[t];
          const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(m));
          colmult[t] = bs.multiplier;
          if (c < p.cols) {
            const int64_t kb = tile_r / kTR;
            if (p.per_row_scale) put_scale(p.col_scales, p.col_geom, p.fp32_scales, c, kb, bs.stored);
            else if (!two_d) put_scale(p.col_scales, p.col_geom, p.fp32_scales, c, kb, bs.stored);
            else if (t % kBC == 0) put_scale(p.col_scales, p.col_geom, p.fp32_scales, c / kBC, kb, bs.stored);
          }
        }
      }
      __syncthreads();
    }

    // ---- rowwise
    if (p.row) {
#pragma unroll
      for (int i = 0; i < kRPT; ++i) {
        const int64_t r = tile_r + rg * kRPT + i;
        const bool live = r < p.rows && ncols > 0;
        float mult;
        if (tensor_scaled) {
          mult = rule.tensor_factor;
        } else if (!two_d) {
          uint32_t m = 0;
#pragma unroll
          for (int j = 0; j < 8; ++j) m = num::max_u32(m, num::abs_bits(v[i][j]));
#pragma unroll
          for (int off = 1; off < kLanes; off <<= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
          const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(m));
          mult = bs.multiplier;
          if (live && cc % kLanes == 0) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r, c0 / kBC, bs.stored);
        } else {
          // 2-D blocks are kTR x kBC (16 x 16 or 128 x 128)
          const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(blockmax[(cc * 8) / kBC]));
          mult = bs.multiplier;
          if (live && c0 % kBC == 0) {
            if (p.per_row_scale) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r, c0 / kBC, bs.stored);
            else if (r % kTR == 0) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r / kTR, c0 / kBC, bs.stored);
          }
        }
        const uint2 w = quantize8<kElem>(v[i], mult);
        if (live) store8_packed<kElem>(p.row_data, r * p.cols + c0, w, ncols, p.out_vec_ok);
      }
    }

    // ---- columnwise
    if (p.col) {
#pragma unroll
      for (int i = 0; i < kRPT; ++i) {
        const int rl = rg * kRPT + i;
        const int64_t r = tile_r + rl;
        if (!p.col_transposed) {
          // each column has its own multiplier: quantize element by element, then pack
          uint8_t codes[8];
#pragma unroll
          for (int j = 0; j < 8; ++j) codes[j] = num::quantize_element(v[i][j], colmult[cc * 8 + j], kElem);
          uint2 w = {0u, 0u};
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if constexpr (kFp4) w.x |= unsigned(codes[j]) << (4 * j);
            else (j < 4 ? w.x : w.y) |= unsigned(codes[j]) << (8 * (j & 3));
          }
          if (r < p.rows && ncols > 0) store8_packed<kElem>(p.col_data, r * p.cols + c0, w, ncols, p.out_vec_ok);
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j) tcodes[cc * 8 + j][rl] = num::quantize_element(v[i][j], colmult[cc * 8 + j], kElem);
        }
      }
      if (p.col_transposed) {
        __syncthreads();
        // Output row c (an input column) holds rows [tile_r, tile_r + kTR) of it: words of 4 (FP8)
        // or 8 (FP4) codes, consecutive threads on consecutive words.
        constexpr int kPer = kFp4 ? 8 : 4;
        constexpr int kWordsPerCol = kTR / kPer;
        for (int w = t; w < kTC * kWordsPerCol; w += 256) {
          const int cl = w / kWordsPerCol, rl = (w % kWordsPerCol) * kPer;
          const int64_t c = tile_c + cl, r = tile_r + rl;
          if (c >= p.cols || r >= p.rows) continue;
          const uint8_t* s = &tcodes[cl][rl];
          if constexpr (kFp4) {
            if (p.colT_vec_ok && r + 8 <= p.rows) {
              unsigned word = 0;
#pragma unroll
              for (int k = 0; k < 4; ++k) word |= unsigned(num::pack_fp4(s[2 * k], s[2 * k + 1])) << (8 * k);
              *reinterpret_cast<unsigned*>(p.col_data + (c * p.rows + r) / 2) = word;
            } else {
              for (int k = 0; k < 8 && r + k < p.rows; k += 2)
                p.col_data[(c * p.rows + r + k) / 2] = num::pack_fp4(s[k], s[k + 1]);
            }
          } else {
            if (p.colT_vec_ok && r + 4 <= p.rows) {
              const unsigned word = unsigned(s[0]) | unsigned(s[1]) << 8 | unsigned(s[2]) << 16 | unsigned(s[3]) << 24;
              *reinterpret_cast<unsigned*>(p.col_data + c * p.rows + r) = word;
            } else {
              for (int k = 0; k < 4 && r + k < p.rows; ++k) p.col_data[c * p.rows + r + k] = s[k];
            }
          }
        }
      }
    }
    // The next tile reuses red/colmax/colmult/tcodes.
    if (p.col || two_d) __syncthreads();
  }
  if (p.vec_ok) cp_async_wait<0>();
}

// Maximum over the CTA (at most kWarps warps), valid in thread 0.
template <int kWarps>
__device__ __forceinline__ uint32_t cta_max(uint32_t m) {
  for (int off = 16; off > 0; off >>= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
  __shared__ uint32_t warp_max[kWarps];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < int(blockDim.x >> 5); ++w) m = num::max_u32(m, warp_max[w]);
  return m;
}

// Tensor amax (max |x| with NaN propagation) into *out, which the caller zeroed. A thread owns
// 8 columns and walks rows blockIdx.y, blockIdx.y + gridDim.y, ... four at a time, counted from
// the last row up: the rows read last, the ones still in L2 when the cast pass starts, are then
// the first rows, which the cast pass reads first (its CTAs start at row 0). The maxima stay
// packed (pairs of 16-bit values) until the end.
template <int kDType>
__global__ void __launch_bounds__(128) amax_kernel(const void* x, int64_t rows, int64_t cols, int64_t row_stride,
                                                  bool vec_ok, unsigned* out) {
  pdl_begin();
  using T = typename Input<kDType>::T;
  constexpr int kW = kDType == 0 ? 8 : 4;
  const int64_t c0 = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  const T* base = static_cast<const T*>(x) + c0 + (rows - 1) * row_stride;  // the last row
  uint32_t m = 0;
  if (c0 < cols) {
    const int n = cols - c0 >= 8 ? 8 : int(cols - c0);
    const int64_t gy = gridDim.y;
    int64_t r = blockIdx.y;
    if (vec_ok && n == 8) {
      uint32_t acc = 0;
      for (; r + 3 * gy < rows; r += 4 * gy) {
        uint4 q[4][kW / 4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int h = 0; h < kW / 4; ++h) q[u][h] = __ldg(reinterpret_cast<const uint4*>(base - (r + u * gy) * row_stride) + h);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int h = 0; h < kW / 4; ++h) {
            acc = amax_words<kDType>(acc, q[u][h].x);
            acc = amax_words<kDType>(acc, q[u][h].y);
            acc = amax_words<kDType>(acc, q[u][h].z);
            acc = amax_words<kDType>(acc, q[u][h].w);
          }
      }
      for (; r < rows; r += gy) {
#pragma unroll
        for (int h = 0; h < kW / 4; ++h) {
          const uint4 q = __ldg(reinterpret_cast<const uint4*>(base - r * row_stride) + h);
          acc = amax_words<kDType>(acc, amax_words<kDType>(q.x, q.y));
          acc = amax_words<kDType>(acc, amax_words<kDType>(q.z, q.w));
        }
      }
      m = kDType == 0 ? (acc & 0x7fffffffu) : num::max_u32(half_bits<kDType>(acc, 0), half_bits<kDType>(acc, 1));
    } else {
      for (; r < rows; r += gy) {
        float v[8];
        load8_scalar<kDType>(base - r * row_stride, n, v);
#pragma unroll
        for (int j = 0; j < 8; ++j) m = num::max_u32(m, num::abs_bits(v[j]));
      }
    }
  }
  m = cta_max<4>(m);
  if (threadIdx.x == 0 && m) atomicMax(out, m);
}

// Tensor amax of a small input (fewer than 2^24 8-element chunks) by one CTA of 1024 threads,
// written to *out directly: no reset and no atomics, so a decode-sized per-tensor quantize is
// two kernels.
template <int kDType>
__global__ void __launch_bounds__(1024) amax_small_kernel(const void* x, int64_t rows, int64_t cols,
                                                          int64_t row_stride, bool vec_ok, unsigned* out) {
  pdl_begin();
  using T = typename Input<kDType>::T;
  const uint32_t cpr = uint32_t((cols + 7) / 8), total = uint32_t(rows) * cpr;
  uint32_t m = 0;
  for (uint32_t q = threadIdx.x; q < total; q += blockDim.x) {
    const uint32_t r = q / cpr, c0 = (q - r * cpr) * 8;
    const int n = cols - c0 >= 8 ? 8 : int(cols - c0);
    const T* src = static_cast<const T*>(x) + int64_t(r) * row_stride + c0;
    float v[8];
    if (vec_ok && n == 8) load8_vec<kDType>(src, v);
    else load8_scalar<kDType>(src, n, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) m = num::max_u32(m, num::abs_bits(v[j]));
  }
  m = cta_max<32>(m);
  if (threadIdx.x == 0) *out = m;
}

template <num::ElemFormat kElem, int kOutDType>
__global__ void __launch_bounds__(256) dequantize_kernel(const DequantParams p) {
  const int64_t total = p.rows * p.cols;
  const float global = p.global_scale ? *p.global_scale : 1.0f;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / p.cols, c = e % p.cols;
    const uint8_t code = kElem == num::ElemFormat::e2m1 ? num::unpack_fp4(p.data[e >> 1], int(e & 1)) : p.data[e];
    float block = 1.0f;
    if (!p.tensor_scaled) {
      const int64_t i = p.swap_ik ? c : r, k = p.swap_ik ? r : c;
      const int64_t mn = p.per_row_scale ? i : i / p.br;
      const int64_t off = num::scale_offset(p.geom, mn, k / p.bc);
      const uint32_t stored = p.fp32_scales ? static_cast<const uint32_t*>(p.scales)[off]
                                            : static_cast<const uint8_t*>(p.scales)[off];
      block = num::block_decode_scale(p.scheme, p.ue8m0, stored);
    }
    const float y = num::dequantize_value(code, kElem, block, global);
    char* row = static_cast<char*>(p.y) + r * p.y_stride * (kOutDType == 0 ? 4 : 2);
    if constexpr (kOutDType == 0) reinterpret_cast<float*>(row)[c] = y;
    else if constexpr (kOutDType == 1) reinterpret_cast<uint16_t*>(row)[c] = num::float_to_fp16(y);
    else reinterpret_cast<uint16_t*>(row)[c] = num::float_to_bf16(y);
  }
}

}  // namespace mxq::cuda
