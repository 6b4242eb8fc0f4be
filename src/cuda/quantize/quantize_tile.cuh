// One quantize kernel for every recipe and direction. A CTA owns a tile of kTR rows x 128
// columns, where kTR is the tallest block of the requested directions (16, 32 or 128). Each
// thread loads 8 consecutive columns of kTR/16 rows once; rowwise 1 x G blocks reduce their
// amax across G/8 lanes, column and 2-D maxima go through shared memory, and both directions
// are quantized from the same registers (the input is read once).
#pragma once

#include "cuda/common.cuh"
#include "cuda/quantize/params.h"

namespace mxq::cuda {

template <int kDType, num::ElemFormat kElem, int kTR>
__global__ void __launch_bounds__(256) quantize_tile_kernel(const TileParams p) {
  static_assert(kTR == 16 || kTR == 32 || kTR == 128, "the tile height is a block height: 16, 32 or 128");
  constexpr int kTC = 128;        // tile columns: 16 threads x 8 columns
  constexpr int kRPT = kTR / 16;  // rows per thread (16 row groups)
  constexpr bool kFp4 = kElem == num::ElemFormat::e2m1;
  using T = typename Input<kDType>::T;

  __shared__ uint32_t red[16][kTC];         // per row-group column maxima, as bits
  __shared__ uint32_t colmax[kTC];          // tile column maxima
  __shared__ uint32_t blockmax[kTC / 16];   // 2-D block maxima (bc >= 16)
  __shared__ float colmult[kTC];            // columnwise element multipliers
  __shared__ uint8_t tcodes[kTC][kTR + 1];  // columnwise codes for the transposed store; +1 spreads banks

  const int t = threadIdx.x, cc = t & 15, rg = t >> 4;
  const int64_t tile_r = int64_t(blockIdx.y) * kTR, tile_c = int64_t(blockIdx.x) * kTC;
  const int64_t c0 = tile_c + cc * 8;
  const int ncols = c0 >= p.cols ? 0 : (p.cols - c0 >= 8 ? 8 : int(p.cols - c0));

  num::ScaleRule rule = p.rule;
  const bool tensor_scaled = rule.scheme == num::Scheme::fp8_tensor;
  if (tensor_scaled) {
    rule.tensor_factor = p.scale_in ? *p.scale_in
                                    : num::fp8_tensor_scale(*p.amax, num::max_finite(kElem), rule.eps, rule.pow2);
  } else if (rule.scheme == num::Scheme::nvfp4) {
    rule.tensor_factor = num::nvfp4_encode_scale(num::amax_from_bits(num::abs_bits(*p.amax)));
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && t == 0) {
    if (p.global_scale_out) {
      *p.global_scale_out = tensor_scaled ? num::div_rn(1.0f, rule.tensor_factor)
                                          : num::nvfp4_decode_scale(rule.tensor_factor);
    }
    if (p.amax_canonical && num::is_nan(*p.amax_canonical)) *p.amax_canonical = num::quiet_nan();
  }

  // ---- load kRPT rows x 8 columns
  float v[kRPT][8];
#pragma unroll
  for (int i = 0; i < kRPT; ++i) {
    const int64_t r = tile_r + rg * kRPT + i;
    const T* src = static_cast<const T*>(p.x) + r * p.row_stride + c0;
    if (r < p.rows && ncols == 8 && p.vec_ok) {
      load8_vec<kDType>(src, v[i]);
    } else {
      load8_scalar<kDType>(src, r < p.rows ? ncols : 0, v[i]);
    }
  }

  // ---- column maxima (columnwise blocks and 2-D blocks)
  const bool two_d = p.br > 1;
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
      const int lanes = p.bc / 4;
      for (int off = 1; off < lanes; off <<= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
      if (t % lanes == 0) blockmax[t / lanes] = m;
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
        const uint32_t m = two_d ? blockmax[t / p.br] : colmax[t];
        const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(m));
        colmult[t] = bs.multiplier;
        if (c < p.cols) {
          const int64_t kb = tile_r / kTR;
          if (p.per_row_scale) put_scale(p.col_scales, p.col_geom, p.fp32_scales, c, kb, bs.stored);
          else if (t % p.br == 0) put_scale(p.col_scales, p.col_geom, p.fp32_scales, c / p.br, kb, bs.stored);
        }
      }
    }
    __syncthreads();
  }

  // ---- rowwise
  if (p.row) {
    const int lanes = p.bc / 8;  // 1 x G blocks: G/8 consecutive lanes
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
        for (int off = 1; off < lanes; off <<= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
        const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(m));
        mult = bs.multiplier;
        if (live && cc % lanes == 0) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r, c0 / p.bc, bs.stored);
      } else {
        const num::BlockScale bs = num::block_scale(rule, num::amax_from_bits(blockmax[(cc * 8) / p.bc]));
        mult = bs.multiplier;
        if (live && c0 % p.bc == 0) {
          if (p.per_row_scale) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r, c0 / p.bc, bs.stored);
          else if (r % p.br == 0) put_scale(p.row_scales, p.row_geom, p.fp32_scales, r / p.br, c0 / p.bc, bs.stored);
        }
      }
      uint8_t codes[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) codes[j] = num::quantize_element(v[i][j], mult, kElem);
      if (live) store8_codes<kFp4>(p.row_data, r * p.cols + c0, codes, ncols, p.out_vec_ok);
    }
  }

  // ---- columnwise
  if (p.col) {
#pragma unroll
    for (int i = 0; i < kRPT; ++i) {
      const int rl = rg * kRPT + i;
      const int64_t r = tile_r + rl;
      uint8_t codes[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) codes[j] = num::quantize_element(v[i][j], colmult[cc * 8 + j], kElem);
      if (!p.col_transposed) {
        if (r < p.rows && ncols > 0) store8_codes<kFp4>(p.col_data, r * p.cols + c0, codes, ncols, p.out_vec_ok);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) tcodes[cc * 8 + j][rl] = codes[j];
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
            for (int k = 0; k < 8 && r + k < p.rows; k += 2) p.col_data[(c * p.rows + r + k) / 2] = num::pack_fp4(s[k], s[k + 1]);
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
}

// Tensor amax (max |x| with NaN propagation) into *out, which the caller zeroed.
template <int kDType>
__global__ void __launch_bounds__(256) amax_kernel(const void* x, int64_t rows, int64_t cols, int64_t row_stride,
                                                  bool vec_ok, unsigned* out) {
  using T = typename Input<kDType>::T;
  const int64_t chunks_per_row = (cols + 7) / 8;
  const int64_t total = rows * chunks_per_row;
  uint32_t m = 0;
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < total; q += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = q / chunks_per_row, c0 = (q % chunks_per_row) * 8;
    const int n = cols - c0 >= 8 ? 8 : int(cols - c0);
    const T* src = static_cast<const T*>(x) + r * row_stride + c0;
    float v[8];
    if (vec_ok && n == 8) load8_vec<kDType>(src, v);
    else load8_scalar<kDType>(src, n, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) m = num::max_u32(m, num::abs_bits(v[j]));
  }
  for (int off = 16; off > 0; off >>= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off));
  __shared__ uint32_t warp_max[8];
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x >> 5); ++w) m = num::max_u32(m, warp_max[w]);
    atomicMax(out, m);
  }
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
