// Specialised quantize kernels: the recipe (scheme, element format, block shape, scale layouts)
// is a set of template arguments, and the data is quantized in registers as loaded (packed 16-bit
// pairs for fp16/bf16). Shared memory holds the row tiles in flight of the 8-row shapes and the
// fused rows kernels (RingLoad), the cross-warp maximum of a 128 x 128 block, the transposed
// output and the staged scales of row+col. Calls these kernels cannot take (unaligned or strided-by-odd inputs, other block
// shapes) go to the generic tile kernel in quantize_tile.cuh; both are held to the CPU
// reference bit for bit.
//
// Three thread shapes (a thread always owns kR rows x 8 consecutive columns):
//   rows       1 x G blocks, rowwise only: a warp is 32 lanes along the columns, kR rows each
//              (4 for 16-bit input; 2 for fp32 and the fused half tiles: fast_geometry).
//   colblocks  columnwise blocks kH rows tall (and optionally 1 x G rowwise): kR = 8 rows per
//              thread, kH / 8 lanes down a column block; a 1 x G block spans G / 8 lanes.
//   two_d      kH x kG blocks (128 x 128 weights, NVFP4 16 x 16): 8 rows per thread, warps of
//              2 x 16 lanes, and a 128-row block spans the 8 warps of the CTA.
#pragma once

#include "cuda/quantize/fast_key.h"
#include "cuda/pdl.cuh"
#include "cuda/cluster.cuh"
#include "cuda/mbarrier.cuh"
#include "mxq/numerics/activations.h"
#include "cuda/quantize/prepare.cuh"

namespace mxq::cuda {

template <int kDType_, num::ElemFormat kElem_, num::Scheme kScheme_, FastShape kShape_, int kG_, int kH_,
          num::ScaleLayout kRowLayout_, num::ScaleLayout kColLayout_, int kFuse_ = 0, bool kColSame_ = false,
          bool kOneLaunch_ = false>
struct FastConfig {
  static constexpr FastKey kKey{kDType_,     kScheme_,    kElem_, kShape_,   kG_,        kH_,
                                kRowLayout_, kColLayout_, kFuse_, kColSame_, kOneLaunch_};
  static constexpr bool kColSame = kColSame_;  // FastKey::col_same: the same-shape NVFP4 kernel
  static constexpr FastGeometry kGeo = fast_geometry(kKey);
  static_assert(fast_key_valid(kKey), "not a specialisation the kernel supports");
  // Fused epilogue (FastKey::fuse): the input dtype is kInDType; the tile holds y = f(x) as fp32.
  static constexpr bool kFused = kFuse_ != 0;
  static constexpr bool kTransform = transforms(kKey);  // else dbias alone: the tile is the input as loaded
  static constexpr num::Activation kAct = num::Activation(kFuse_ & kFuseActMask);
  static constexpr bool kDact = (kFuse_ & kFuseDact) != 0, kDbias = (kFuse_ & kFuseDbias) != 0;
  static constexpr bool kGated = (kFuse_ & kFuseActMask) >= kFirstGated;
  static constexpr int kInDType = kDType_;
  static constexpr int kDType = compute_dtype(kKey);
  static constexpr num::ElemFormat kElem = kElem_;
  static constexpr num::Scheme kScheme = kScheme_;
  static constexpr FastShape kShape = kShape_;
  static constexpr int kG = kG_;  // rowwise block width (8 for per-tensor scaling: no reduction)
  static constexpr int kH = kH_;  // column / 2-D block height (1 for the rows shape)
  static constexpr num::ScaleLayout kRowLayout = kRowLayout_, kColLayout = kColLayout_;

  static constexpr int kR = kGeo.r, kRL = kGeo.rl, kCL = kGeo.cl, kWR = kGeo.wr, kWC = kGeo.wc;
  static constexpr int kThreads = kGeo.threads, kTileRows = kGeo.tile_rows, kTileCols = kGeo.tile_cols;
  static constexpr int kMinBlocks = kGeo.min_blocks;
  static constexpr bool kPrefetch = kGeo.prefetch;
  static constexpr int kLanesG = kG / 8;          // lanes across one 1 x G block
  static constexpr int kW = kDType == 0 ? 8 : 4;  // 32-bit words per 8 elements
  static constexpr bool kTensor = kScheme == num::Scheme::fp8_tensor;

  static_assert(kG == 8 || kG == 16 || kG == 32 || kG == 64 || kG == 128, "block width");
  static_assert(kLanesG <= kCL, "a 1 x G block lies within one warp row");
  static_assert(kShape != FastShape::colblocks || kH == 16 || kH == 32, "column blocks are 16 or 32 rows");
  static_assert(kShape != FastShape::two_d || kH == 16 || (kH == 128 && kG == 128), "2-D blocks");
};

template <int kLanes>
__device__ __forceinline__ uint32_t lane_max(uint32_t m, int first_xor = 1) {
#pragma unroll
  for (int off = 1; off < kLanes; off <<= 1) m = num::max_u32(m, __shfl_xor_sync(0xffffffffu, m, off * first_xor));
  return m;
}

// Maxima of kN values per lane over a group of kL lanes (lane offsets kStride apart), spread so
// that each lane does a share of the scale arithmetic: afterwards lane q of the group holds, in
// m[0 .. kN / P), the group maxima of values q * kN / P + t, where P = min(kL, kN). Each halving
// step costs kN / 2 shuffles instead of kN.
template <int kN, int kL, int kStride>
struct Spread {
  static constexpr int kP = kL < kN ? kL : kN;
  static constexpr int kPer = kN / kP;  // values each lane keeps

  __device__ static void reduce(uint32_t (&m)[kN], int lane) {
    reduce(m, lane, [](uint32_t a, uint32_t b) { return num::max_u32(a, b); });
  }
  // The same with another maximum (max(a, b): amax_words on bf16 pairs).
  template <class Max>
  __device__ static void reduce(uint32_t (&m)[kN], int lane, Max max) {
    const int q = (lane / kStride) % kL;
#pragma unroll
    for (int n = kN, o = kP / 2; o >= 1; n /= 2, o /= 2) {  // keep the upper half when q has bit o
      const bool up = q & o;
#pragma unroll
      for (int t = 0; t < n / 2; ++t) {
        const uint32_t keep = up ? m[t + n / 2] : m[t], give = up ? m[t] : m[t + n / 2];
        m[t] = max(keep, __shfl_xor_sync(0xffffffffu, give, o * kStride));
      }
    }
#pragma unroll
    for (int o = kP; o < kL; o *= 2)  // more lanes than values: plain butterfly on the rest
#pragma unroll
      for (int t = 0; t < kPer; ++t) m[t] = max(m[t], __shfl_xor_sync(0xffffffffu, m[t], o * kStride));
  }
  // Index of the value that slot t of this lane holds.
  __device__ static int index(int lane, int t) { return ((lane / kStride) % kL) % kP * kPer + t; }
  // Value i (0 <= i < kN) of the group, from the lane that holds it.
  __device__ static float fetch(const float (&v)[kPer], int i, int lane) {
    const int q = (lane / kStride) % kL;
    const int src = lane - q * kStride + (i / kPer) * kStride;
    return __shfl_sync(0xffffffffu, v[i % kPer], src);
  }
};

// Type selection: A when kFirst, else B.
template <bool kFirst, class A, class B>
struct Pick {
  using type = A;
};
template <class A, class B>
struct Pick<false, A, B> {
  using type = B;
};

// A fused tile as loaded: the input words of kR rows x 8 columns (x, and the gate half or the
// backward pass's act_input), not yet transformed, so that the next tile's loads can be in
// flight while this one is computed (as the plain kernels do with their input words).
template <class C>
struct RawTile {
  static constexpr int kWin = C::kInDType == 0 ? 8 : 4;  // 32-bit words per 8 input elements
  static constexpr bool kSecond = C::kGated || C::kDact;
  uint32_t x[C::kR][kWin];
  uint32_t second[kSecond ? C::kR : 1][kWin];
};

// How many of the kR rows from r0 exist (0 when column c0 does not): the unrolled loops test
// i < n in 32 bits instead of r0 + i < rows in 64 bits per row.
template <int kR>
__device__ __forceinline__ int live_rows(int64_t r0, int64_t c0, const TileParams& p) {
  const int64_t left = p.rows - r0;
  return c0 < p.cols ? int(left <= 0 ? 0 : (left < kR ? left : kR)) : 0;
}

// Byte offset of element (r, c) in a row-oriented output of `cols` codes per row (c a multiple
// of 8, and cols even for FP4: the fast kernels store whole 8-code pieces).
template <bool kFp4>
__device__ __forceinline__ int64_t code_offset(int64_t r, int64_t c, int64_t cols) {
  return kFp4 ? r * (cols >> 1) + (c >> 1) : r * cols + c;
}

// Block column of element column c (c >= 0: an unsigned shift, not a signed division).
template <int kG>
__device__ __forceinline__ int64_t block_col(int64_t c) {
  return int64_t(uint64_t(c) / kG);
}

// kR rows of 8 input elements as 32-bit words from `src` (this thread's first row), rows `pitch`
// bytes apart; rows i >= n are not read (n <= 0: none, as for a column beyond the input). kZero:
// those rows are zeros, for the shapes whose blocks span rows and for the fused statistics.
// Otherwise w keeps what it held: in the rows shape rows never meet and a dead row is never
// stored, and a lane beyond the last column never loads, so its words stay the zeros they
// started as and add nothing to a partial block's maximum (SASS count of the rows loop: the
// zero fill cost 0.38 (MXFP4, MXFP8) and 0.58 (NVFP4) instructions per element).
template <bool kZero, int kR, int kW>
__device__ __forceinline__ void load_words(uint32_t (&w)[kR][kW], const char* src, int64_t pitch, int n) {
#pragma unroll
  for (int i = 0; i < kR; ++i) {
    const uint4* row = reinterpret_cast<const uint4*>(src + i * pitch);
#pragma unroll
    for (int h = 0; h < kW / 4; ++h) {
      if (kZero || i < n) {
        const uint4 q = i < n ? __ldg(row + h) : uint4{0u, 0u, 0u, 0u};
        w[i][4 * h] = q.x;
        w[i][4 * h + 1] = q.y;
        w[i][4 * h + 2] = q.z;
        w[i][4 * h + 3] = q.w;
      }
    }
  }
}

// Where a thread's kR x 8 input words lie: the input (x) and, fused, the gate half or the
// backward pass's act_input (x2), at this thread's first row; n rows of them exist.
struct TileSrc {
  const char* x;
  const char* x2;
  int64_t pitch, pitch2;
  int n;
};

// The colblocks and two_d shapes: row tiles r0 = first row + k * step, positions recomputed
// from r0 per tile.
// Fused column-block kernels: where their one-wave grid leaves slots empty (its CTAs each take
// one column tile, and the column tiles do not divide the slots), a flat grid instead, each CTA
// walking a contiguous share of the tiles in column-major order, one walk per column tile it
// reaches (TileParams::flat_col_tiles, FastLaunch).
template <class C>
inline constexpr bool kFlatWalk = C::kFused && C::kShape == FastShape::colblocks;

template <class C>
struct TileWalk {
  static constexpr int kInBytes = C::kInDType == 0 ? 4 : 2;
  const TileParams& p;
  int64_t r0, c0, lane_row, step;
  // c0 as the tile code reads it: a flat walk's column moves with the walk, so it is zero-extended
  // from 32 bits (below kFastMaxCols) and no high word stays live across its tiles (bf16 fp8_block
  // 1x32 dgelu+dbias spilled it: 8 bytes)
  __device__ int64_t col() const { return kFlatWalk<C> ? int64_t(uint32_t(c0)) : c0; }
  // Columns from c0 to the end (<= 0: none) in 32 bits (below kFastMaxCols): a tile's column
  // tests are one compare each, not 64-bit ones against a c0 rematerialised for each
  // (SASS count of MXFP8 row+col's interior tile: 11 fewer instructions).
  int cols_left = int(p.cols) - int(c0);

  // live_rows of the tile at row r, in 32 bits: rows is below kFastMaxRows, and so is r, the
  // start of a tile the loop visits (r - lane_row < rows). SASS count: 10 fewer instructions.
  __device__ int live_at(int64_t r) const {
    const int left = int(p.rows) - int(r);
    return cols_left > 0 ? (left <= 0 ? 0 : (left < C::kR ? left : C::kR)) : 0;
  }
  __device__ int live() const { return live_at(r0); }
  __device__ TileSrc src(int ahead) const {
    const int64_t r = r0 + ahead * step;
    TileSrc s{static_cast<const char*>(p.x) + (r * p.row_stride + col()) * kInBytes, nullptr, p.row_stride * kInBytes,
              0, live_at(r)};
    if constexpr (C::kGated) {
      s.x2 = s.x + p.gate_offset * kInBytes;
      s.pitch2 = s.pitch;
    } else if constexpr (C::kDact) {
      s.x2 = static_cast<const char*>(p.act_x) + (r * p.act_stride + col()) * kInBytes;
      s.pitch2 = p.act_stride * kInBytes;
    }
    return s;
  }
  int64_t end;  // the walk's last row tile starts below this row (p.rows, or a long CTA's share)
  __device__ bool next_exists() const { return r0 - lane_row + step < end; }  // warp-uniform
  __device__ bool ahead_exists(int ahead) const { return r0 - lane_row + ahead * step < end; }
  __device__ bool done() const { return r0 - lane_row >= end; }
  __device__ void advance() { r0 += step; }
};

// The rows shape: this thread's input, codes and (1-byte row_major) scales of its first row, as
// pointers advanced per row tile by steps computed once, and a 32-bit count of the rows from
// that row to the end (rows < 2^31: the launcher's kFastMaxRows) from which each tile's live
// rows come, once per tile for loads and stores. SASS count of the loop: 2.44 (NVFP4), 2.06
// (MXFP4) and 1.80 (MXFP8) fewer instructions per element than the 64-bit r0 * stride,
// code_offset and scale offsets (and the lane indices ptxas rematerialised for them) per tile.
template <class C>
struct RowsWalk {
  static constexpr int kInBytes = C::kInDType == 0 ? 4 : 2;
  static constexpr bool kFp4 = C::kElem == num::ElemFormat::e2m1;
  // MX and NVFP4 scales are always 1 byte; row_major puts block (r, kb) at r * kb_count + kb.
  static constexpr bool kByteScales = C::kScheme == num::Scheme::mx || C::kScheme == num::Scheme::nvfp4;
  static constexpr bool kScalePointer = kByteScales && C::kRowLayout == num::ScaleLayout::row_major;
  // swizzled_128x4 (layouts.h swizzled_row_part + swizzled_block_part): the block part is in
  // `scales`, the row part comes from the row's 32-bit index per store.
  static constexpr bool kSwizzledPointer = kByteScales && C::kRowLayout == num::ScaleLayout::swizzled_128x4;
  const TileParams& p;
  const char* x;
  const char* x2 = nullptr;  // dact: act_input (the gate half is x + gate_offset)
  uint8_t* codes;
  uint8_t* scales = nullptr;
  // rows from this thread's first row to the end of the walk (p.rows, or a long CTA's share's
  // end, below which every tile is whole); <= 0: none
  int left;
  int end;
  int step, lane_row;
  int64_t pitch, pitch2 = 0, code_pitch, xstep, x2step = 0, code_step, scale_step = 0, band = 0;
  int64_t c0;
  bool col_live, block_live;

  __device__ RowsWalk(const TileParams& p_, int64_t r0, int64_t c0_, int64_t step_, int lane_row_, int cl,
                      int64_t end_)
      : p(p_), c0(c0_) {
    end = int(end_);
    left = int(end_ - r0);
    step = int(step_);
    lane_row = lane_row_;
    // 32-bit compares: the columns are below kFastMaxCols
    col_live = int(c0) < int(p.cols);
    block_live = int(c0) - (cl % C::kLanesG) * 8 < int(p.cols);
    pitch = p.row_stride * kInBytes;
    xstep = step_ * pitch;
    x = static_cast<const char*>(p.x) + (r0 * p.row_stride + c0) * kInBytes;
    if constexpr (C::kDact) {
      pitch2 = p.act_stride * kInBytes;
      x2step = step_ * pitch2;
      x2 = static_cast<const char*>(p.act_x) + (r0 * p.act_stride + c0) * kInBytes;
    }
    code_pitch = kFp4 ? p.cols >> 1 : p.cols;
    code_step = step_ * code_pitch;
    codes = p.row_data + r0 * code_pitch + (kFp4 ? c0 >> 1 : c0);
    if constexpr (kScalePointer) {
      scale_step = step_ * p.row_geom.kb;
      // the first row whose scale this lane may store (RowSpread::index(lane, 0))
      scales = static_cast<uint8_t*>(p.row_scales) + (r0 + Spread<C::kR, C::kLanesG, 1>::index(cl, 0)) * p.row_geom.kb +
               block_col<C::kG>(c0);
    } else if constexpr (kSwizzledPointer) {
      const int kb = int(block_col<C::kG>(c0));
      band = num::swizzled_band(p.row_geom.kb);
      scales = static_cast<uint8_t*>(p.row_scales) + num::swizzled_block_part(kb);
    }
  }
  // Live rows of this tile for codes (0 in a column beyond the input).
  __device__ int live() const { return col_live ? left : 0; }
  // The input of the row tile `ahead` tiles on (0: this one); ahead_exists(ahead) says whether
  // it is within the walk (warp-uniform).
  __device__ TileSrc src(int ahead) const {
    const int n = left - ahead * step;
    TileSrc s{x + ahead * xstep, nullptr, pitch, 0, col_live ? n : 0};
    if constexpr (C::kGated) {
      s.x2 = s.x + p.gate_offset * kInBytes;
      s.pitch2 = pitch;
    } else if constexpr (C::kDact) {
      s.x2 = x2 + ahead * x2step;
      s.pitch2 = pitch2;
    }
    return s;
  }
  __device__ bool ahead_exists(int ahead) const { return left + lane_row > ahead * step; }
  // Stores the scale of row i's block, the value t of this lane (RowSpread: i = index(lane, 0) +
  // t), called on the first lanes of a block whether or not their own columns exist (a partial
  // last block may have only one live lane).
  __device__ void put_scale(int i, int t, uint32_t stored) const {
    if (!block_live || i >= left) return;
    if constexpr (kScalePointer) {
      scales[t * p.row_geom.kb] = uint8_t(stored);
    } else if constexpr (kSwizzledPointer) {
      const int r = end - left + i;
      scales[num::swizzled_row_part(r, band)] = uint8_t(stored);
    } else put_scale_for<C::kRowLayout>(p.row_scales, p.row_geom, p.fp32_scales, end - left + i, block_col<C::kG>(c0),
                                      stored);
  }
  __device__ bool next_exists() const { return left + lane_row > step; }  // warp-uniform
  __device__ bool done() const { return left + lane_row <= 0; }
  __device__ void advance() {
    x += xstep;
    if constexpr (C::kDact) x2 += x2step;
    codes += code_step;
    if constexpr (kScalePointer) scales += scale_step;
    left -= step;
  }
};

template <class C>
__device__ __forceinline__ void load_raw(RawTile<C>& t, const TileSrc& s) {
  load_words<true>(t.x, s.x, s.pitch, s.n);
  if constexpr (RawTile<C>::kSecond) load_words<true>(t.second, s.x2, s.pitch2, s.n);
}

// Eight values of y = f(input). The activations with erf or tanh run out of line, a row of 8
// per call: inlining them for every element of a tile made ptxas take seconds per JIT cold
// compile (measured: 9.4 s -> 1.3 s for dgelu+dbias on CI's cores). In the rows shape the sigmoid
// ones (silu, swiglu's gate, qgelu: ~20 instructions per element) are inlined
// (activation_inline): the call cost them ~10% (bench/RESULTS.md session 15, mxfp8 swiglu 0.63 ->
// 0.69 of copy), and the compile stays ~1 s. Kernels with the bf16 table (ActTable) evaluate only
// its misses.
struct Row8 {
  float v[8];
};
template <num::Activation kAct>
__device__ __forceinline__ Row8 act_row_inline(Row8 x) {
#pragma unroll
  for (int j = 0; j < 8; ++j) x.v[j] = num::act_f(kAct, x.v[j]);
  return x;
}
template <num::Activation kAct>
__device__ __forceinline__ Row8 dact_row_inline(Row8 grad, Row8 a) {
#pragma unroll
  for (int j = 0; j < 8; ++j) grad.v[j] = num::mul_rn(grad.v[j], num::dact_f(kAct, a.v[j]));
  return grad;
}
template <num::Activation kAct>
__device__ __noinline__ Row8 act_row_outlined(Row8 x) {
  return act_row_inline<kAct>(x);
}
template <num::Activation kAct>
__device__ __noinline__ Row8 dact_row_outlined(Row8 grad, Row8 a) {
  return dact_row_inline<kAct>(grad, a);
}
template <num::Activation kAct, bool kInline>
__device__ __forceinline__ Row8 act_row(Row8 x) {
  if constexpr (kInline) return act_row_inline<kAct>(x);
  else return act_row_outlined<kAct>(x);
}

// The fused function of a bf16-input kernel (fused_function: activation, gate or derivative)
// looked up in num::Bf16Table, 32 KB of shared memory that the CTA fills before its first tile
// (before the programmatic-launch wait, so it overlaps the previous kernel's tail): a copy of the
// device's table (TileParams::act_table_src), else computed (where that table could not be
// made). Entries are the function's values as the
// evaluation computes them, so a lookup is bit-identical to it. Values outside the table (zero,
// |x| < 2^-24 or >= 256, Inf, NaN) are evaluated.
template <class C>
struct ActTable {
  using T = num::Bf16Table;
  static constexpr bool kOn = act_table_capable(C::kKey);
  static constexpr num::Activation kFn = fused_function(C::kKey);

  __device__ static float* entries() {
    __shared__ __align__(16) float table[T::kSize];  // 16-byte stores of the copy (fill)
    return table;
  }
  // The function's value with NaN canonicalised (num::canonical_nan), as the entries hold it: a
  // lookup needs no NaN test of its own (transform).
  __device__ static float eval(float x) {
    return num::table_function(kFn, C::kDact, x);
  }
  // All threads of the CTA, before any of them returns: the entries copied from `src`
  // (device_act_table, whose kernel computed them with eval's functions: 16 bytes a load, from L2
  // after the first CTAs), else computed.
  __device__ static void fill(const float* src) {
    float* table = entries();
    if (src) {
      // every load in flight before the first store (a loop bounded by threadIdx.x went one round
      // trip at a time)
      constexpr int kN = int(T::kSize) / (4 * C::kThreads);
      static_assert(kN * 4 * C::kThreads == int(T::kSize), "whole float4 loads per thread");
      float4 v[kN];
#pragma unroll
      for (int j = 0; j < kN; ++j) v[j] = __ldg(reinterpret_cast<const float4*>(src) + j * C::kThreads + threadIdx.x);
#pragma unroll
      for (int j = 0; j < kN; ++j) reinterpret_cast<float4*>(table)[j * C::kThreads + threadIdx.x] = v[j];
    } else {
      for (uint32_t i = threadIdx.x; i < T::kSize; i += C::kThreads) table[i] = eval(T::value(i));
    }
    __syncthreads();
  }
  // The function of the 8 bf16 values in k, NaN canonicalised. The words' two halves are indexed
  // together (Bf16Table::pair_offsets: ~7 instructions per value, against ~12 one at a time).
  // Values outside the table are evaluated one at a time in a loop (one inline copy of the
  // function, no call: a call's saved registers spilled the 80-register kernels), which a warp
  // runs only when one of its lanes has such a value, and only in a live row: the zeros loaded
  // for rows and columns outside the tensor would otherwise make the CTAs at its right edge
  // evaluate every element.
  __device__ static Row8 lookup(const uint32_t (&k)[4], bool live) {
    const float* table = entries();
    Row8 f;
    uint32_t outside = 0;  // Bf16Table::pair_outside of the four words at once
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const uint32_t t = T::pair_offsets(k[h]);
      outside |= t ^ T::kPairInside;
      f.v[2 * h] = table[T::entry_low(t, k[h])];  // some entry outside the table: replaced below
      f.v[2 * h + 1] = table[T::entry_high(t, k[h])];
    }
    if (!live || !(outside & T::kPairNibbles)) return f;
    uint32_t miss = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) miss |= T::offset(j & 1 ? k[j / 2] >> 16 : k[j / 2]) >= T::kHalf ? 1u << j : 0u;
    while (miss) {
      const int j = __ffs(int(miss)) - 1;
      miss &= miss - 1;
      const uint32_t w = j < 4 ? (j < 2 ? k[0] : k[1]) : (j < 6 ? k[2] : k[3]);
      const float v = eval(__uint_as_float(j & 1 ? w & 0xffff0000u : w << 16));
#pragma unroll
      for (int i = 0; i < 8; ++i) f.v[i] = i == j ? v : f.v[i];
    }
    return f;
  }
};

// y = f(input) of a raw tile as fp32 bits, zeros outside the tensor (rows i >= n; the CPU
// reference's act_f / dact_f in the same order, NaN canonicalised as there). A kernel that has the
// bf16 table (ActTable::kOn) always looks the function up: it has no evaluated path besides the
// table's misses, which keeps its JIT compile short (session 40: bf16 MXFP8 row+col dgelu+dbias
// 1.0 -> 0.85 s on the 2-core machine, NVVM and ptxas both; the runtime choice had both paths).
template <class C>
__device__ __forceinline__ void transform(const RawTile<C>& t, uint32_t (&w)[C::kR][8], int n) {
#pragma unroll
  for (int i = 0; i < C::kR; ++i) {
    Row8 y;
    elements<C::kInDType>(t.x[i], y.v);
    if constexpr (ActTable<C>::kOn) {
      const Row8 f = ActTable<C>::lookup(C::kDact ? t.second[i] : t.x[i], i < n);
      if constexpr (C::kGated) {
        Row8 gate;
        elements<C::kInDType>(t.second[i], gate.v);
#pragma unroll
        for (int j = 0; j < 8; ++j) y.v[j] = num::mul_rn(f.v[j], gate.v[j]);
      } else if constexpr (C::kDact) {
#pragma unroll
        for (int j = 0; j < 8; ++j) y.v[j] = num::mul_rn(y.v[j], f.v[j]);
      } else {  // the values are canonical already (lookup): no NaN test per element
#pragma unroll
        for (int j = 0; j < 8; ++j) w[i][j] = i < n ? __float_as_uint(f.v[j]) : 0u;
        continue;
      }
    } else if constexpr (C::kGated) {
      Row8 gate;
      elements<C::kInDType>(t.second[i], gate.v);
      y = act_row<num::gate_of(C::kAct), fused_activation_inline(C::kKey)>(y);
#pragma unroll
      for (int j = 0; j < 8; ++j) y.v[j] = num::mul_rn(y.v[j], gate.v[j]);
    } else if constexpr (C::kDact) {
      Row8 a;
      elements<C::kInDType>(t.second[i], a.v);
      if constexpr (fused_activation_inline(C::kKey)) y = dact_row_inline<C::kAct>(y, a);
      else y = dact_row_outlined<C::kAct>(y, a);
    } else {
      y = act_row<C::kAct, fused_activation_inline(C::kKey)>(y);
    }
    const bool live = i < n;
#pragma unroll
    for (int j = 0; j < 8; ++j) w[i][j] = live ? __float_as_uint(num::canonical_nan(y.v[j])) : 0u;
  }
}

// Fused statistics of y. dbias: a thread sums its columns over the row tiles it visits, then
// the CTA adds its sums to the output (publish: one 16-byte reduction per 4 columns and CTA;
// zeros outside the tensor add nothing). The running sums live in shared memory, two float4 per
// thread (two 16-byte loads and stores per tile): held in registers across the loop they were
// 8 more live registers than the fused kernels had, and ptxas spilled the tiles to local memory
// (72-336 bytes in mxfp8 + dbias, 1x128 + dbias, row+col + dbias, dgelu / dsilu + dbias; the rest
// of those spills went with the half tiles of fast_geometry).
// amax (block recipes given an amax buffer): the largest |y| as fp32 bits, any NaN as the
// canonical one (0x7fc00000 sorts above Inf), one atomicMax per warp.
template <class C>
struct FusedStats {
  uint32_t m = 0;
  __device__ static float4* sums() {
    __shared__ float4 running[2][C::kThreads];
    return &running[0][threadIdx.x];
  }
  __device__ FusedStats() {
    if constexpr (C::kDbias) sums()[0] = sums()[C::kThreads] = float4{0.0f, 0.0f, 0.0f, 0.0f};
  }
  __device__ void add(const uint32_t (&w)[C::kR][C::kW], const TileParams& p) {
    if constexpr (C::kDbias) {
      float t[8];
      elements<C::kDType>(w[0], t);
#pragma unroll
      for (int i = 1; i < C::kR; ++i) {
        float v[8];
        elements<C::kDType>(w[i], v);
#pragma unroll
        for (int j = 0; j < 8; ++j) t[j] = num::add_rn(t[j], v[j]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float4& a = sums()[h * C::kThreads];
        a = float4{a.x + t[4 * h], a.y + t[4 * h + 1], a.z + t[4 * h + 2], a.w + t[4 * h + 3]};
      }
    }
    if constexpr (C::kFused) {
      if (p.amax_out) {
#pragma unroll
        for (int i = 0; i < C::kR; ++i) {
          const uint32_t a = amax8_bits<C::kDType>(w[i]);
          m = num::max_u32(m, a > 0x7f800000u ? 0x7fc00000u : a);
        }
      }
    }
  }
  // dbias: the warp's row lanes are summed by shuffles and the CTA's warps down the rows through
  // shared memory (in warp order), then the first warp row adds each 8 columns with two 16-byte
  // reductions (red.global.add.v4.f32, sm_90; scalar atomics where dbias is not 16-byte aligned):
  // 1/8 of the atomic requests of one atomicAdd per column and warp (bench/RESULTS.md session 11:
  // twice the CTAs, and so twice the atomics, cost mxfp8 + dbias 11 us of 87 at 8192 x 7168).
  __device__ void publish(const TileParams& p, int64_t c0, int lane) {
    if constexpr (C::kDbias) {
      float s[8];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 a = sums()[h * C::kThreads];
        s[4 * h] = a.x;
        s[4 * h + 1] = a.y;
        s[4 * h + 2] = a.z;
        s[4 * h + 3] = a.w;
      }
#pragma unroll
      for (int o = C::kCL; o < 32; o <<= 1)  // across the warp's row lanes
#pragma unroll
        for (int j = 0; j < 8; ++j) s[j] += __shfl_xor_sync(0xffffffffu, s[j], o);
      const int warp = threadIdx.x / 32, wr = warp / C::kWC, wc = warp % C::kWC;
      if constexpr (C::kWR > 1) {
        __shared__ float4 warp_sums[C::kWR][C::kWC][C::kCL][2];
        if (lane < C::kCL) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float4& v = warp_sums[wr][wc][lane][h];
            v.x = s[4 * h];
            v.y = s[4 * h + 1];
            v.z = s[4 * h + 2];
            v.w = s[4 * h + 3];
          }
        }
        __syncthreads();
        if (wr == 0 && lane < C::kCL)
#pragma unroll
          for (int r = 1; r < C::kWR; ++r)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float4 v = warp_sums[r][wc][lane][h];
              s[4 * h] += v.x;
              s[4 * h + 1] += v.y;
              s[4 * h + 2] += v.z;
              s[4 * h + 3] += v.w;
            }
      }
      if (wr == 0 && lane < C::kCL && c0 < p.cols) {
        float* at = p.dbias + c0;
        if ((reinterpret_cast<unsigned long long>(at) & 15) == 0) {  // c0 % 8 == 0 and cols % 8 == 0: whole 8-column pieces
#pragma unroll
          for (int h = 0; h < 2; ++h)
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(at + 4 * h), "f"(s[4 * h]),
                         "f"(s[4 * h + 1]), "f"(s[4 * h + 2]), "f"(s[4 * h + 3])
                         : "memory");
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j) atomicAdd(at + j, s[j]);
        }
      }
    }
    if constexpr (C::kFused) {
      if (p.amax_out) {
        const uint32_t wm = lane_max<32>(m);
        if (lane == 0) atomicMax(p.amax_out, wm);
      }
    }
  }
};

template <class C>
struct FastTile {
  static constexpr int kR = C::kR, kW = C::kW;
  static constexpr num::ElemFormat kElem = C::kElem;
  static constexpr bool kFp4 = kElem == num::ElemFormat::e2m1;
  using RowSpread = Spread<kR, C::kLanesG, 1>;
  using ColSpread = Spread<8, C::kRL, C::kCL>;

  // Eight codes with one multiplier. FP4 from a 16-bit input with a power-of-two multiplier (MX,
  // pow2 block scales) rounds two values per instruction in f16 or bf16 (e2m1x8_from_half2).
  __device__ static uint2 codes8(const float (&v)[8], float m, const num::ScaleRule& rule) {
    if constexpr (kFp4 && C::kDType != 0 && (C::kScheme == num::Scheme::mx || C::kScheme == num::Scheme::fp8_block)) {
      if (C::kScheme == num::Scheme::mx || rule.pow2) return {quantize8_e2m1_pow2(v, m), 0u};
    }
    return quantize8<kElem>(v, m);
  }

  // MX's multipliers are powers of two (or NaN): FP8 from bf16 multiplies in bf16 pairs
  // (quantize8_fp8_pow2_bf16). SASS count of MXFP8 row+col's interior tile: 48 fewer
  // instructions (of 1080).
  static constexpr bool kFp8Bf16Pow2 = !kFp4 && C::kDType == 2 && C::kScheme == num::Scheme::mx;
  // and the columns' multipliers shuffled as those pairs (run_columns)
  static constexpr bool kColPairs = kFp8Bf16Pow2 && C::kShape == FastShape::colblocks && C::kRL <= 4;

  // store_rows' multipliers: with kFp8Bf16Pow2 the bf16 pair (bf16_pair) as fp32 bits, made once
  // per block by the lane that computes it (row_blocks: kPer byte permutes per lane, not one per
  // row after the shuffles).
  __device__ static float row_mult(float m) {
    if constexpr (kFp8Bf16Pow2) return __uint_as_float(bf16_pair(m));
    else return m;
  }

  // The same from a row's input words (the bf16 power-of-two FP4 and FP8 paths work on them
  // directly), m as row_mult gives it.
  __device__ static uint2 codes8_words(const uint32_t (&w)[kW], float m, const num::ScaleRule& rule) {
    if constexpr (kFp4 && C::kDType == 2 && (C::kScheme == num::Scheme::mx || C::kScheme == num::Scheme::fp8_block)) {
      if (C::kScheme == num::Scheme::mx || rule.pow2) return {quantize8_e2m1_pow2_bf16(w, m), 0u};
    }
    if constexpr (kFp8Bf16Pow2) {
      const uint32_t m2 = __float_as_uint(m);  // row_mult's pair
      return quantize8_fp8_pow2_bf16<kElem>(w, {m2, m2, m2, m2});
    }
    float v[8];
    elements<C::kDType>(w, v);
    return codes8(v, m, rule);
  }

  // One row's 8 codes, stored when `live`: a predicated store, not a branch around one (the
  // branches cost a BSSY / BSYNC pair and a re-derived 64-bit address per row).
  __device__ static void store_codes(uint8_t* at, uint2 codes, bool live) {
    if constexpr (kFp4) {
      asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p st.global.b32 [%0], %1;\n\t}" ::"l"(at),
                   "r"(codes.x), "r"(int(live))
                   : "memory");
    } else {
      asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\t@p st.global.v2.b32 [%0], {%1, %2};\n\t}" ::"l"(at),
                   "r"(codes.x), "r"(codes.y), "r"(int(live))
                   : "memory");
    }
  }

  // The codes of the kR rows with one multiplier per row, stored row-oriented from `out` (this
  // thread's first row), rows `pitch` bytes apart, the first n of them.
  __device__ static void store_rows(uint8_t* out, int64_t pitch, const uint32_t (&w)[kR][kW], const float (&mult)[kR],
                                    int n, const num::ScaleRule& rule) {
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      store_codes(out + i * pitch, codes8_words(w[i], mult[i], rule), i < n);
    }
  }

  // NVFP4's 1 x 16 blocks (the rows and column-block shapes): the block scale's code is the
  // hardware's e4m3 satfinite conversion (the cvt the FP8 elements use) of
  // num::nvfp4_block_scale_value, its multiplier from a shared table of the 128 codes'
  // (fill_scale_table, once per CTA). Equal to block_scale_for: a NaN value converts to code 0x7f,
  // whose entry is NaN. SASS count of the rows loop: 2.29 fewer instructions per element than
  // nvfp4_multiplier's divide per block (the table alone spilled at 64 registers; with the RowsWalk
  // it does not). The column-block kernel takes it for its row and its column blocks alike.
  static constexpr bool kScaleTable = C::kScheme == num::Scheme::nvfp4 && C::kShape != FastShape::two_d;
  __device__ static float (&scale_table())[128] {
    __shared__ float table[128];
    return table;
  }
  __device__ static void fill_scale_table(const num::ScaleRule& rule) {
    if constexpr (kScaleTable) {
      for (int i = threadIdx.x; i < 128; i += C::kThreads)
        scale_table()[i] = num::nvfp4_multiplier(uint8_t(i), rule.tensor_decode);
      __syncthreads();
    }
  }
  // The block scale of a block maximum given as the fp32 bits of |x| (NaN: above 0x7f800000).
  __device__ static num::BlockScale block_scale(const num::ScaleRule& rule, uint32_t m) {
    if constexpr (C::kScheme == num::Scheme::mx) {
      return num::mx_block_scale_bits(m, kElem, rule.rounding);  // without branches
    } else if constexpr (kScaleTable) {
      // finite_amax on |amax| bits (m's sign bit is clear: a test of the bits alone suffices)
      const uint32_t a = m == num::kF32InfBits ? num::kF32MaxBits : m;
      const float v = num::nvfp4_block_scale_value(__uint_as_float(a), rule.tensor_factor);
      unsigned short pair;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(v));  // NaN -> 0x7f
      const uint32_t code = pair & 0x7fu;
      return {scale_table()[code], code};
    } else if constexpr (C::kScheme == num::Scheme::fp8_block) {
      // pow2 scales (DeepSeek V4's FP4, UE8M0 1 x 128) without the divide and the reciprocal
      if (rule.pow2) return num::fp8_block_pow2_scale_bits(m, num::max_finite(C::kElem), rule.eps, rule.ue8m0_out);
      return num::block_scale_for<C::kScheme>(rule, num::amax_from_bits(m));
    } else {
      return num::block_scale_for<C::kScheme>(rule, num::amax_from_bits(m));
    }
  }

  // bf16 block maxima reduced as pairs: words of two values' maxima (amax_words, max.NaN.abs on
  // bf16x2: NaN propagates, and otherwise it picks the larger |x| as max_u32 of the widened |x|
  // bits does) through a Spread of kN / 2 words, then this lane's own words widened to fp32 abs
  // bits in m[0 .. kPer). Where kL <= kN / 2 the word Spread keeps the same values in the same
  // lanes as Spread<kN, kL, kStride> (values 2u, 2u + 1 in word u), with half its shuffles and
  // selects and no widening of the values other lanes keep. SASS count of MXFP8 row+col's
  // interior tile (rows and columns): 53 fewer instructions (of 986).
  template <int kN, int kL, int kStride>
  static constexpr bool kPairSpread = C::kDType == 2 && kL <= kN / 2;
  template <int kN, int kL, int kStride>
  __device__ static void pair_spread(uint32_t (&pairs)[kN / 2], uint32_t (&m)[kN], int lane) {
    using P = Spread<kN / 2, kL, kStride>;
    static_assert(P::kP == Spread<kN, kL, kStride>::kP && 2 * P::kPer == Spread<kN, kL, kStride>::kPer, "same lanes");
    P::reduce(pairs, lane, [](uint32_t a, uint32_t b) { return amax_words<2>(a, b); });
#pragma unroll
    for (int u = 0; u < P::kPer; ++u) {
      const uint32_t x = pairs[u] & 0x7fff7fffu;  // the signs are xorsign's
      m[2 * u] = x << 16;
      m[2 * u + 1] = x & 0xffff0000u;
    }
  }

  // Multipliers of the kR rows' 1 x G blocks; put(i, stored) stores the block scales of rows i ..
  // i + kPer - 1 (this lane's values), called on the first lanes of a block only (the others hold
  // copies), whether or not their own columns exist: once, so that a staged store's address is
  // computed once for all of them.
  template <class Put>
  __device__ static void row_blocks(const uint32_t (&w)[kR][kW], float (&mult)[kR], const num::ScaleRule& rule,
                                    int lane, Put put) {
    uint32_t m[kR];
    if constexpr (kPairSpread<kR, C::kLanesG, 1>) {
      uint32_t pairs[kR / 2];  // rows 2u (low half) and 2u + 1 (high half)
#pragma unroll
      for (int u = 0; u < kR / 2; ++u) {
        uint32_t a = w[2 * u][0], b = w[2 * u + 1][0];
#pragma unroll
        for (int k = 1; k < kW; ++k) {
          a = amax_words<2>(a, w[2 * u][k]);
          b = amax_words<2>(b, w[2 * u + 1][k]);
        }
        pairs[u] = amax_words<2>(__byte_perm(a, b, 0x5410u), __byte_perm(a, b, 0x7632u));
      }
      pair_spread<kR, C::kLanesG, 1>(pairs, m, lane);
    } else {
#pragma unroll
      for (int i = 0; i < kR; ++i) m[i] = amax8_bits<C::kDType>(w[i]);
      RowSpread::reduce(m, lane);
    }
    float mine[RowSpread::kPer];
    uint32_t stored[RowSpread::kPer];
#pragma unroll
    for (int t = 0; t < RowSpread::kPer; ++t) {
      const num::BlockScale bs = block_scale(rule, m[t]);
      mine[t] = row_mult(bs.multiplier);
      stored[t] = bs.stored;
    }
    if ((lane % C::kLanesG) < RowSpread::kP) put(RowSpread::index(lane, 0), stored);
#pragma unroll
    for (int i = 0; i < kR; ++i) mult[i] = RowSpread::fetch(mine, i, lane);
  }

  // Quantizes the kR x 8 elements w of the rows shape's tile at `at`, n of whose rows exist.
  __device__ static void run(const uint32_t (&w)[kR][kW], const RowsWalk<C>& at, int n, const TileParams&,
                             const num::ScaleRule& rule, int lane, int) {
    float mult[kR];
    if constexpr (C::kTensor) {
#pragma unroll
      for (int i = 0; i < kR; ++i) mult[i] = row_mult(rule.tensor_factor);
    } else {
      row_blocks(w, mult, rule, lane, [&](int i, const uint32_t (&stored)[RowSpread::kPer]) {
#pragma unroll
        for (int t = 0; t < RowSpread::kPer; ++t) at.put_scale(i + t, t, stored[t]);
      });
    }
    store_rows(at.codes, at.code_pitch, w, mult, n, rule);
  }

  // Quantizes the kR x 8 elements w of rows r0.. and columns c0.. (colblocks, two_d), n of whose
  // rows exist.
  __device__ static void run(const uint32_t (&w)[kR][kW], const TileWalk<C>& at, int n, const TileParams& p,
                             const num::ScaleRule& rule, int lane, int warp) {
    const int64_t r0 = at.r0, c0 = at.col();
    const int rl = lane / C::kCL, cl = lane % C::kCL;

    // ---- 2-D blocks: one maximum per kH x kG block
    float block_mult = 0.0f;
    uint32_t block_stored = 0;
    if constexpr (C::kShape == FastShape::two_d) {
      uint32_t m = 0;
#pragma unroll
      for (int i = 0; i < kR; ++i) m = num::max_u32(m, amax8_bits<C::kDType>(w[i]));
      m = lane_max<C::kLanesG>(m);      // across the block's columns
      m = lane_max<C::kRL>(m, C::kCL);  // across the warp's row lanes
      if constexpr (C::kH > kR * C::kRL) {  // 128-row blocks span the CTA's warps
        __shared__ uint32_t warp_max[C::kWR * C::kWC];
        if (lane == 0) warp_max[warp] = m;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < C::kWR * C::kWC; ++k) m = num::max_u32(m, warp_max[k]);
        __syncthreads();  // warp_max is rewritten by the next row tile
      }
      const num::BlockScale bs = num::block_scale_for<C::kScheme>(rule, num::amax_from_bits(m));
      block_mult = bs.multiplier;
      block_stored = bs.stored;
    }

    // ---- rowwise
    if (C::kShape == FastShape::two_d || p.row) {
      float mult[kR];
      if constexpr (C::kTensor) {
#pragma unroll
        for (int i = 0; i < kR; ++i) mult[i] = row_mult(rule.tensor_factor);
      } else if constexpr (C::kShape == FastShape::two_d) {
#pragma unroll
        for (int i = 0; i < kR; ++i) mult[i] = row_mult(block_mult);
        // n: this tile's live rows (0 when column c0 does not exist)
        if (cl % C::kLanesG == 0) {
          if constexpr (C::kScheme == num::Scheme::nvfp4 && C::kRowLayout == num::ScaleLayout::row_major) {
            // Recipe::scale_per_row: each row holds its block's 1-byte scale, a row's kb bytes
            // below the last (SASS count of the two-tile loop: 1221 -> 926 instructions against
            // an offset per row with the fp32 and kb_outer branches)
            const int64_t kb = p.row_geom.kb;
            uint8_t* const s = static_cast<uint8_t*>(p.row_scales) + r0 * kb + block_col<C::kG>(c0);
#pragma unroll
            for (int i = 0; i < kR; ++i)
              if (i < n) s[i * kb] = uint8_t(block_stored);
          } else {
#pragma unroll
            for (int i = 0; i < kR; ++i) {
              const int64_t r = r0 + i;
              if (i >= n) continue;
              if (p.per_row_scale) {
                put_scale_for<C::kRowLayout>(p.row_scales, p.row_geom, p.fp32_scales, r, block_col<C::kG>(c0),
                                             block_stored);
              } else if (r % C::kH == 0) {
                put_scale_for<C::kRowLayout>(p.row_scales, p.row_geom, p.fp32_scales, r / C::kH, block_col<C::kG>(c0),
                                             block_stored);
              }
            }
          }
        }
      } else {
        const bool block_live = at.cols_left + (cl % C::kLanesG) * 8 > 0;
        row_blocks(w, mult, rule, lane, [&](int i0, const uint32_t (&stored)[RowSpread::kPer]) {
          if (stage_row_scales(p)) {
            // row i0 + t is staged t rows after row i0: one address for all t (with the columns'
            // likewise, SASS count: 26 fewer instructions)
            const int local_r = ((warp / C::kWC) * C::kRL + rl) * kR + i0;
            uint8_t* const row_stage = &row_scale_stage()[local_r][((warp % C::kWC) * C::kCL + cl) / C::kLanesG];
#pragma unroll
            for (int t = 0; t < RowSpread::kPer; ++t)
              row_stage[t * kRowScaleBytes] = block_live && r0 + i0 + t < p.rows ? uint8_t(stored[t]) : 0;
          } else {
#pragma unroll
            for (int t = 0; t < RowSpread::kPer; ++t)
              if (block_live && r0 + i0 + t < p.rows)
                put_scale_for<C::kRowLayout>(p.row_scales, p.row_geom, p.fp32_scales, r0 + i0 + t,
                                             block_col<C::kG>(c0), stored[t]);
          }
        });
      }
      store_rows(p.row_data + code_offset<kFp4>(r0, c0, p.cols), code_offset<kFp4>(1, 0, p.cols), w, mult, n, rule);
    }

    // ---- columnwise: blocks of kH = kR x kRL rows, one multiplier per column
    if constexpr (C::kShape == FastShape::colblocks) {
      if (p.col) run_columns(w, r0, c0, at.cols_left, p, rule, lane);
    }
  }

  // The schemes whose column-block scales can be 1 byte and are staged: MX (E8M0 always), NVFP4
  // (E4M3 always; from 16-bit input: from fp32 (128 registers) the staging spilled) and
  // fp8_block's 1 x 32 / 32 x 1 blocks where UE8M0 (DeepSeek V4's fp4_block_1x32 by default; fp32
  // when asked, so byte_scales decides at run time), not fused (staged, the bf16 dgelu+dbias
  // kernel of FP8 1 x 32 spilled 125 instructions' worth, none without).
  static constexpr bool kByteScaleScheme = C::kScheme == num::Scheme::mx ||
                                           (C::kScheme == num::Scheme::nvfp4 && C::kDType != 0) ||
                                           (C::kScheme == num::Scheme::fp8_block && !C::kFused);
  // NVFP4 stages only row_major scales, in its transposed kernel (FastKey::col_same false).
  // Measured (H100, bench/RESULTS.md session 35, call 3, same process): row_major transposed 0.62
  // / 0.60 -> 0.76 / 0.74 of copy; swizzled_128x4 (two 4-block groups per 8-block row run) 0.80 /
  // 0.82 -> 0.77 / 0.80, and the same-shape form 0.84 / 0.86 -> 0.77 / 0.80: slower. The
  // same-shape form stayed slower unstaged as long as one kernel served both forms (call 4), hence
  // its own kernel without the staging.
  template <num::ScaleLayout L>
  static constexpr bool kStagedLayout =
      C::kScheme != num::Scheme::nvfp4 || (L == num::ScaleLayout::row_major && !C::kColSame);
  // ... and those whose multipliers can be powers of two (MX always, fp8_block with pow2)
  static constexpr bool kPow2Scheme = C::kScheme == num::Scheme::mx || C::kScheme == num::Scheme::fp8_block;
  // Whether the scales of layout L are stored as 1 byte each in this call (put_scale_for's rule)
  template <num::ScaleLayout L>
  __device__ static bool byte_scales(const TileParams& p) {
    return C::kScheme == num::Scheme::mx || L == num::ScaleLayout::packed_ue8m0 || !p.fp32_scales;
  }

  // Columnwise 1-byte scales of a transposed output: the kWR blocks of a column in this tile
  // (one per warp row) are consecutive bytes in every layout MX uses (row_major of the
  // transposed tensor, packed_ue8m0, swizzled_128x4). They meet in shared memory and go out as
  // one 4-byte store per column instead of four 1-byte stores from four warps (measured: those
  // single-sector stores kept L2 at 84% while DRAM ran at 50% in MXFP8 row+col).
  static constexpr bool kStageColScales = C::kShape == FastShape::colblocks && C::kWR == 4 && kByteScaleScheme &&
                                          kStagedLayout<C::kColLayout> &&
                                          C::kColLayout != num::ScaleLayout::mn_major_tma;
  __device__ static bool stage_col_scales(const TileParams& p) {
    return kStageColScales && p.col_transposed && byte_scales<C::kColLayout>(p);
  }
  __device__ static uint8_t (&col_scale_stage())[C::kTileCols][4] {
    __shared__ __align__(4) uint8_t stage[C::kTileCols][4];
    return stage;
  }
  // Staged 1-byte scales of blocks (i, kb0 .. kb0 + kN - 1), consecutive in layout L: one kN-byte
  // store where its address is aligned and the run is within the matrix, else one byte each. The
  // address, not the offset: the launcher asks only 4-byte alignment of the scales, so an 8-byte
  // run (NVFP4) at an offset that is a multiple of 8 can still be misaligned.
  template <num::ScaleLayout L, int kN>
  __device__ static void store_scale_run(void* scales, const num::ScaleGeometry& g, int64_t i, int64_t kb0,
                                         const uint8_t (&staged)[kN]) {
    static_assert(kN == 2 || kN == 4 || kN == 8, "2-, 4- or 8-byte runs");
    // 8 blocks (NVFP4's 1 x 16 across a 128-column tile) are consecutive in row_major only
    static_assert(kN != 8 || L == num::ScaleLayout::row_major, "8-byte runs in row_major");
    using Word = typename Pick<kN == 8, uint2, typename Pick<kN == 4, uint32_t, uint16_t>::type>::type;
    auto* out = static_cast<uint8_t*>(scales);
    const int64_t at = num::scale_offset_for<L>(g, i, kb0);
    if (kb0 + kN <= g.kb && reinterpret_cast<unsigned long long>(out + at) % kN == 0) {
      *reinterpret_cast<Word*>(out + at) = *reinterpret_cast<const Word*>(staged);
    } else {
      for (int k = 0; k < kN && kb0 + k < g.kb; ++k) out[num::scale_offset_for<L>(g, i, kb0 + k)] = staged[k];
    }
  }
  // swizzled_128x4 with 128 x 128 tiles and 4-byte runs (MXFP8 row+col): the runs of a tile's 128
  // rows (or transposed columns) are exactly one 512-byte atom of the layout, run i at
  // (i % 32) * 16 + (i / 32) * 4 (layouts.h), padding included (the stages hold zeros for rows and
  // blocks beyond the matrix, which the padding must be). Warp 0 stores it, 16 bytes a lane: 4
  // whole lines, where a 4-byte store per run left 16 partial sectors per warp instruction
  // (bench/NOTES.md v10: the row+col scale runs cost MXFP8 row+col 7-13% of copy).
  template <num::ScaleLayout L>
  static constexpr bool kAtomRuns = L == num::ScaleLayout::swizzled_128x4 && C::kTileRows == 128 &&
                                    C::kTileCols == 128 && C::kG == 32;
  // i0 % 128 == 0, kb0 % 4 == 0; false (nothing stored) where the scales are not 16-byte aligned
  template <num::ScaleLayout L>
  __device__ static bool store_atom(void* scales, const num::ScaleGeometry& g, int64_t i0, int64_t kb0,
                                    const uint8_t (&stage)[128][4]) {
    static_assert(kAtomRuns<L>, "one atom per tile");
    if ((reinterpret_cast<unsigned long long>(scales) & 15) != 0) return false;
    if (threadIdx.x < 32) {
      const int t = threadIdx.x;
      const uint4 v{*reinterpret_cast<const uint32_t*>(stage[t]), *reinterpret_cast<const uint32_t*>(stage[t + 32]),
                    *reinterpret_cast<const uint32_t*>(stage[t + 64]), *reinterpret_cast<const uint32_t*>(stage[t + 96])};
      *reinterpret_cast<uint4*>(static_cast<uint8_t*>(scales) + num::scale_offset_for<L>(g, i0, kb0) + 16 * t) = v;
    }
    return true;
  }
  // (Both stores below loop a fixed, unrolled number of times, once where the CTA has a thread
  // per column or row, instead of a loop with its back edge: SASS count of MXFP8 row+col's
  // interior tile, 31 fewer instructions in the threads that store.)
  __device__ static void store_col_scales(int64_t tile_r, int64_t tile_c, const TileParams& p) {
    if constexpr (kAtomRuns<C::kColLayout>) {
      if (store_atom<C::kColLayout>(p.col_scales, p.col_geom, tile_c, tile_r / C::kH, col_scale_stage())) return;
    }
#pragma unroll
    for (int k = 0; k < (C::kTileCols + C::kThreads - 1) / C::kThreads; ++k) {
      const int col = threadIdx.x + k * C::kThreads;
      if (col >= C::kTileCols || tile_c + col >= p.cols) break;
      store_scale_run<C::kColLayout>(p.col_scales, p.col_geom, tile_c + col, tile_r / C::kH, col_scale_stage()[col]);
    }
  }

  // Rowwise 1-byte scales likewise when the CTA also writes columns (row+col in one pass): the
  // kTileCols / kG blocks of a row in the tile are consecutive bytes in row_major,
  // packed_ue8m0 and swizzled_128x4 (the tile starts a 4-block group), so each row goes out as
  // one 2- or 4-byte store instead of one 1-byte store per block.
  static constexpr int kRowScaleBytes = C::kTileCols / C::kG;
  static constexpr bool kStageRowScales = C::kShape == FastShape::colblocks && C::kWR == 4 && kByteScaleScheme &&
                                          kStagedLayout<C::kRowLayout> &&
                                          C::kRowLayout != num::ScaleLayout::mn_major_tma &&
                                          (kRowScaleBytes == 2 || kRowScaleBytes == 4 ||
                                           (kRowScaleBytes == 8 && C::kRowLayout == num::ScaleLayout::row_major));
  __device__ static bool stage_row_scales(const TileParams& p) {
    return kStageRowScales && p.col && byte_scales<C::kRowLayout>(p);
  }
  __device__ static uint8_t (&row_scale_stage())[C::kTileRows][kRowScaleBytes] {
    __shared__ __align__(8) uint8_t stage[C::kTileRows][kRowScaleBytes];
    return stage;
  }
  __device__ static void store_row_scales(int64_t tile_r, int64_t tile_c, const TileParams& p) {
    if constexpr (kAtomRuns<C::kRowLayout> && kRowScaleBytes == 4) {
      if (store_atom<C::kRowLayout>(p.row_scales, p.row_geom, tile_r, tile_c / C::kG, row_scale_stage())) return;
    }
#pragma unroll
    for (int k = 0; k < (C::kTileRows + C::kThreads - 1) / C::kThreads; ++k) {
      const int lr = threadIdx.x + k * C::kThreads;
      if (lr >= C::kTileRows || tile_r + lr >= p.rows) break;
      store_scale_run<C::kRowLayout>(p.row_scales, p.row_geom, tile_r + lr, tile_c / C::kG, row_scale_stage()[lr]);
    }
  }

  // The transposed form's codes of this thread's 8 columns (8 rows each) through fp32 products,
  // column j's at staged + j * col_bytes.
  __device__ static void stage_column_codes(const uint32_t (&w)[kR][kW], const float (&cmult)[8],
                                            const num::ScaleRule& rule, uint8_t* staged, int col_bytes) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = element<C::kDType>(w[i], j);
      const uint2 codes = codes8(v, cmult[j], rule);
      uint8_t* d = staged + j * col_bytes;
      if constexpr (kFp4) *reinterpret_cast<uint32_t*>(d) = codes.x;
      else *reinterpret_cast<uint2*>(d) = codes;
    }
  }

  __device__ static void run_columns(const uint32_t (&w)[kR][kW], int64_t r0, int64_t c0, int cols_left,
                                     const TileParams& p, const num::ScaleRule& rule, int lane) {
    const int rl = lane / C::kCL;
    float cmult[8];
    uint32_t cpair[4];  // kColPairs: the multipliers of columns 2k, 2k + 1 as a bf16 pair
    if constexpr (C::kTensor) {
#pragma unroll
      for (int j = 0; j < 8; ++j) cmult[j] = rule.tensor_factor;
    } else {
      uint32_t cm[8];
      if constexpr (C::kDType == 0) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          uint32_t m = 0;
#pragma unroll
          for (int i = 0; i < kR; ++i) m = amax_words<0>(m, w[i][j]);
          cm[j] = m;
        }
      } else if constexpr (kPairSpread<8, C::kRL, C::kCL>) {
        uint32_t pairs[4];  // columns 2k (low half) and 2k + 1 (high half)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          pairs[k] = w[0][k];
#pragma unroll
          for (int i = 1; i < kR; ++i) pairs[k] = amax_words<2>(pairs[k], w[i][k]);
        }
        pair_spread<8, C::kRL, C::kCL>(pairs, cm, lane);
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          uint32_t m = w[0][k];
#pragma unroll
          for (int i = 1; i < kR; ++i) m = amax_words<C::kDType>(m, w[i][k]);
          cm[2 * k] = half_bits<C::kDType>(m, 0) & 0x7fffffffu;
          cm[2 * k + 1] = half_bits<C::kDType>(m, 1) & 0x7fffffffu;
        }
      }
      if constexpr (!kPairSpread<8, C::kRL, C::kCL>) ColSpread::reduce(cm, lane);
      const int64_t kb_row = r0 - rl * kR;  // the first row of this lane's block, a multiple of kH
      const bool staged = stage_col_scales(p);
      const int warp = threadIdx.x >> 5;
      float mine[ColSpread::kPer];
      uint32_t stored[ColSpread::kPer];
#pragma unroll
      for (int t = 0; t < ColSpread::kPer; ++t) {
        const num::BlockScale bs = block_scale(rule, cm[t]);
        mine[t] = bs.multiplier;
        stored[t] = bs.stored;
      }
      // warps below the input store nothing
      auto live = [&](int t) { return ColSpread::index(lane, t) < cols_left && kb_row < p.rows; };
      if (rl < ColSpread::kP && staged) {
        // column c0 + index(lane, t) is column local_c + index(lane, t) of the tile (32-bit, from
        // the thread index alone, not c - tile_c in 64 bits): one address for all t
        const int local_c = ((warp % C::kWC) * C::kCL + lane % C::kCL) * 8;
        uint8_t* const col_stage = &col_scale_stage()[local_c + ColSpread::index(lane, 0)][warp / C::kWC];
#pragma unroll
        for (int t = 0; t < ColSpread::kPer; ++t) col_stage[t * 4] = live(t) ? uint8_t(stored[t]) : 0;
      } else if (rl < ColSpread::kP) {
#pragma unroll
        for (int t = 0; t < ColSpread::kPer; ++t)
          if (live(t))
            put_scale_for<C::kColLayout>(p.col_scales, p.col_geom, p.fp32_scales, c0 + ColSpread::index(lane, t),
                                         kb_row / C::kH, stored[t]);
      }
      if constexpr (kColPairs) {
        // this lane's multipliers as bf16 pairs (exact: powers of two or NaN), shuffled as words:
        // 4 shuffles instead of 8, and kPer / 2 byte permutes instead of 4 after them (SASS
        // count: 18 fewer instructions). cmult (the same-shape form) is their halves, the same
        // fp32 values.
        using P = Spread<4, C::kRL, C::kCL>;
        float mine2[P::kPer];
#pragma unroll
        for (int u = 0; u < P::kPer; ++u)
          mine2[u] = __uint_as_float(bf16_pair(mine[2 * u], mine[2 * u + 1]));
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          cpair[k] = __float_as_uint(P::fetch(mine2, k, lane));
          cmult[2 * k] = __uint_as_float(cpair[k] << 16);
          cmult[2 * k + 1] = __uint_as_float(cpair[k] & 0xffff0000u);
        }
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) cmult[j] = ColSpread::fetch(mine, j, lane);
      }
    }
    if (p.col_transposed) {
      // Output row c holds input column c. Each thread's 8 rows of a column are 8 consecutive
      // codes; they are staged so that the CTA stores whole 16-byte pieces of each output row.
      constexpr int kPer = kFp4 ? 2 : 1;              // codes per byte
      constexpr int kColBytes = C::kTileRows / kPer;  // bytes of one column in this tile
      constexpr int kPieces = kColBytes / 16;         // 16-byte pieces per column
      // Piece q of column c is kept at piece q ^ (c / 8 % kPieces): a warp's column lanes write
      // columns 8 apart, which a padded pitch (any multiple of 16 bytes) put in one bank (an
      // 8-way conflict); swizzled, each write and each 16-byte read takes the fewest wavefronts.
      __shared__ __align__(16) uint8_t stage[C::kTileCols][kColBytes];
      auto piece_at = [](int col, int piece) { return (piece ^ ((col >> 3) & (kPieces - 1))) * 16; };
      const int cl = lane % C::kCL, warp = threadIdx.x >> 5;
      const int local_r = int((warp / C::kWC) * C::kRL + rl) * kR;
      const int64_t tile_r = r0 - local_r;
      const int local_c = ((warp % C::kWC) * C::kCL + cl) * 8;
      // c0 - local_c, which is the kernel's blockIdx.x * kTileCols: from the block index, not from
      // a c0 rematerialised in 64 bits (SASS count: 6 fewer instructions); a flat walk's column
      // tile is not the block's (kFlatWalk)
      const int64_t tile_c = kFlatWalk<C> ? c0 - local_c : int64_t(blockIdx.x) * C::kTileCols;
      // local_c is a multiple of 8, so columns local_c .. local_c + 7 share one swizzle and
      // their staged bytes are kColBytes apart: one address, then constant offsets.
      const int byte = local_r / kPer;  // within one piece: 8 codes are 8 (FP8) or 4 (FP4) bytes
      uint8_t* const staged = &stage[local_c][piece_at(local_c, byte / 16) + byte % 16];
      if constexpr (kFp8Bf16Pow2) {
        // products in bf16 pairs (quantize8_fp8_pow2_bf16): pair k of row i times columns 2k, 2k + 1
        uint32_t m2[4], prod[kR][4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
          m2[k] = kColPairs ? cpair[k] : bf16_pair(cmult[2 * k], cmult[2 * k + 1]);
#pragma unroll
        for (int i = 0; i < kR; ++i)
#pragma unroll
          for (int k = 0; k < 4; ++k) prod[i][k] = bf16x2_mul(w[i][k], m2[k]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          float p[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) p[i] = element<2>(prod[i], j);
          *reinterpret_cast<uint2*>(staged + j * kColBytes) = encode8<kElem>(p);
        }
      } else if constexpr (kFp4 && C::kDType == 2 && kPow2Scheme) {
        // MX, and fp8_block where its scales are powers of two (the row path's rule, codes8_words)
        if (C::kScheme == num::Scheme::mx || rule.pow2) {
          // column j's rows 2k and 2k + 1 as a bf16 pair, one byte permute of the loaded words,
          // times the column's power-of-two multiplier in bf16 (quantize8_e2m1_pow2_bf16's
          // argument, per column): no widening to fp32 and back to f16
          static_assert(kR == 8, "a column's 8 codes are one word");
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const uint32_t m2 = (__float_as_uint(cmult[j]) >> 16) * 0x00010001u;
            uint32_t pair[4], h[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              pair[k] = __byte_perm(w[2 * k][j / 2], w[2 * k + 1][j / 2], j % 2 ? 0x7632u : 0x5410u);
              h[k] = bf16x2_mul(pair[k], m2);
            }
            *reinterpret_cast<uint32_t*>(staged + j * kColBytes) = e2m1x8_from_half2<true>(h, pair, cmult[j]);
          }
        } else {
          stage_column_codes(w, cmult, rule, staged, kColBytes);
        }
      } else {
        stage_column_codes(w, cmult, rule, staged, kColBytes);
      }
      __syncthreads();
      if constexpr (kStageColScales) {
        if (stage_col_scales(p)) store_col_scales(tile_r, tile_c, p);
      }
      if constexpr (kStageRowScales) {
        if (p.row && stage_row_scales(p)) store_row_scales(tile_r, tile_c, p);
      }
      const bool aligned = p.rows % (16 * kPer) == 0;
      // An interior tile (every tile but the right and bottom edges): each thread's piece is
      // the same in every step (kThreads is a multiple of kPieces) and its columns are
      // kColStep apart, so the output pointer advances by a constant and nothing is tested
      // per piece. The general loop below spent 116 of MXFP8 row+col's ~1247 instructions per
      // tile (static SASS walk, session 9) on index and bounds work.
      static_assert(C::kThreads % kPieces == 0 && C::kTileCols * kPieces % C::kThreads == 0, "whole steps");
      if (aligned && cols_left + local_c >= C::kTileCols && tile_r + C::kTileRows <= p.rows) {
        constexpr int kColStep = C::kThreads / kPieces, kSteps = C::kTileCols * kPieces / C::kThreads;
        const int piece = threadIdx.x % kPieces, col0 = threadIdx.x / kPieces;
        // rows is a multiple of 16 * kPer here, so the division by kPer is exact term by term
        uint8_t* dst = p.col_data + ((tile_c + col0) * p.rows + tile_r + piece * 16 * kPer) / kPer;
        const int64_t dstep = kColStep * p.rows / kPer;
        // Column col0 + k * kColStep has swizzle (col0 / 8 + k * kSwStep) % kPieces. Where kSwStep
        // is 0 or kPieces / 2 mod kPieces (MXFP8: 4 of 8; MXFP4: 0 of 4) the addition only
        // touches the top swizzle bit, so it is an XOR: the source is one of two thread-constant
        // offsets plus an immediate (MXFP8: 16 swizzle instructions of 4 steps become 2).
        constexpr int kSwStep = kColStep / 8 % kPieces, kMask = kPieces - 1;
        constexpr bool kSwXor = kColStep % 8 == 0 && (kSwStep == 0 || 2 * kSwStep == kPieces);
        const int sw0 = (col0 >> 3) & kMask;
#pragma unroll
        for (int k = 0; k < kSteps; ++k) {
          const int col = col0 + k * kColStep;
          const uint8_t* src = &stage[col][kSwXor ? (piece ^ sw0 ^ (k * kSwStep & kMask)) * 16 : piece_at(col, piece)];
          *reinterpret_cast<uint4*>(dst + k * dstep) = *reinterpret_cast<const uint4*>(src);
        }
      } else {
        for (int q = threadIdx.x; q < C::kTileCols * kPieces; q += C::kThreads) {
          const int col = q / kPieces, piece = q % kPieces;
          const int64_t c = tile_c + col, r = tile_r + piece * 16 * kPer;
          if (c >= p.cols || r >= p.rows) continue;
          const uint8_t* src = &stage[col][piece_at(col, piece)];
          const int64_t at = (c * p.rows + r) / kPer;
          if (aligned && r + 16 * kPer <= p.rows) {
            *reinterpret_cast<uint4*>(p.col_data + at) = *reinterpret_cast<const uint4*>(src);
          } else {
            for (int k = 0; k < 16 && r + k * kPer < p.rows; ++k) p.col_data[at + k] = src[k];  // rows is even for FP4
          }
        }
      }
      __syncthreads();  // the stage is rewritten by the next row tile
    } else {
      const int n = live_rows<kR>(r0, c0, p);
      uint8_t* out = p.col_data + code_offset<kFp4>(r0, c0, p.cols);
      const int64_t pitch = code_offset<kFp4>(1, 0, p.cols);
      bool done = false;
      if constexpr (kFp4 && C::kDType == 2 && kPow2Scheme) {
        if (C::kScheme == num::Scheme::mx || rule.pow2) {
          // FP4 from bf16 with power-of-two multipliers, as the rows (quantize8_e2m1_pow2_bf16)
          // but one multiplier per column: value 2k of a row times the bf16 pair m2[k] (columns
          // 2k, 2k + 1), exact in bf16; a NaN column (block) gets codes 0, quantize8_each's rule
          uint32_t m2[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) m2[k] = bf16_pair(cmult[2 * k], cmult[2 * k + 1]);
          const uint32_t nan_codes = e2m1_nan_nibbles(cmult);
#pragma unroll
          for (int i = 0; i < kR; ++i) {
            uint32_t h[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) h[k] = bf16x2_mul(w[i][k], m2[k]);
            store_codes(out + i * pitch, {e2m1x8_from_half2<true>(h, w[i]) & ~nan_codes, 0u}, i < n);
          }
          done = true;
        }
      }
      if (!done) {
#pragma unroll
        for (int i = 0; i < kR; ++i) {
          float v[8];
          elements<C::kDType>(w[i], v);
          const uint2 codes = quantize8_each<kElem>(v, cmult);
          store_codes(out + i * pitch, codes, i < n);
        }
      }
      if constexpr (kStageRowScales) {
        if (p.row && stage_row_scales(p)) {  // the same-shape form has no barrier of its own: two for the staged scales
          const int warp = threadIdx.x >> 5;
          __syncthreads();
          store_row_scales(r0 - int((warp / C::kWC) * C::kRL + rl) * kR,
                           c0 - (lane % C::kCL) * 8 - (warp % C::kWC) * 8 * C::kCL, p);
          __syncthreads();  // the stage is rewritten by the next row tile
        }
      }
    }
  }
};

// What a thread loads per row tile: the input words themselves (plain kernels, quantized as
// loaded), or a RawTile that transform() turns into y (fused kernels). Both start as zeros (the
// rows shape's dead columns rely on it: see load_words).
template <class C>
struct PlainLoad {
  // the fused statistics (dbias alone) add every row: zeros for the dead ones
  static constexpr bool kZero = C::kShape != FastShape::rows || C::kFused;
  uint32_t w[C::kR][C::kW];
  __device__ void load(const TileSrc& s) { load_words<kZero>(w, s.x, s.pitch, s.n); }
  __device__ const uint32_t (&tile(int))[C::kR][C::kW] { return w; }
};

template <class C>
struct FusedLoad {
  RawTile<C> raw;
  uint32_t y[C::kR][8];
  __device__ void load(const TileSrc& s) { load_raw<C>(raw, s); }
  __device__ const uint32_t (&tile(int n))[C::kR][8] {
    transform<C>(raw, y, n);
    return y;
  }
};

// The 8-row shapes' plain kernels and the fused rows kernels (FastGeometry::ring): the input of
// the next kRing row tiles is in flight, copied by cp.async into this thread's own slots of
// dynamic shared memory (slot d holds tile i with i % kRing == d), and a slot is refilled with
// the tile kRing on as soon as it has been read into registers, in program order: a thread reads
// only the slots it filled, so its own wait_group is all the synchronisation there is (the
// generic kernel's cp.async ring relies on the same). Piece k of slot d of thread t is at
// (d * kPieces + k) * kThreads + t: a warp's copies and reads of one piece are 512 contiguous
// bytes. Rows that do not exist are zeros (cp.async of source size 0, given the input's base
// address, which exists), as load_words<true> and load_raw give them. The registers are
// PlainLoad's words (quantized as loaded) or FusedLoad's raw tile (transformed first).
template <class C>
struct RingLoad : Pick<C::kTransform, FusedLoad<C>, PlainLoad<C>>::type {
  static constexpr int kRing = C::kGeo.ring;
  static constexpr int kRowPieces = (C::kTransform ? RawTile<C>::kWin : C::kW) / 4;  // 16-byte pieces per row
  // one input: the two-input fused kernels (gated, dact) keep their register prefetch (fast_geometry)
  static_assert(!C::kTransform || !RawTile<C>::kSecond, "a ring of one input");
  static constexpr int kPieces = C::kR * kRowPieces;  // per slot
  static_assert(kRing >= 1 && C::kGeo.slot_bytes == kRing * kPieces * 16 * C::kThreads,
                "the launchers' size is these slots");
  __device__ static uint4* slot(int d) {
    extern __shared__ __align__(16) uint4 fast_slots[];
    return fast_slots + d * kPieces * C::kThreads + threadIdx.x;
  }
  // Copies tile s into slot d (no commit: the caller commits one group per tile, empty or not).
  __device__ static void issue(const TileSrc& s, int d, const void* base) {
    uint4* to = slot(d);
    // Every row exists (all tiles but the bottom and right edges): addresses a pitch apart and no
    // selects or source sizes (SASS count of MXFP8 row+col's interior tile: 46 fewer instructions).
    if (s.n >= C::kR) {
      const char* row = s.x;
#pragma unroll
      for (int i = 0; i < C::kR; ++i, row += s.pitch)
#pragma unroll
        for (int h = 0; h < kRowPieces; ++h)
          cp_async16(to + (i * kRowPieces + h) * C::kThreads, reinterpret_cast<const uint4*>(row) + h);
      return;
    }
#pragma unroll
    for (int i = 0; i < C::kR; ++i)
#pragma unroll
      for (int h = 0; h < kRowPieces; ++h) {
        const bool live = i < s.n;
        cp_async16(to + (i * kRowPieces + h) * C::kThreads,
                   live ? static_cast<const void*>(reinterpret_cast<const uint4*>(s.x + i * s.pitch) + h) : base, live);
      }
  }
  // Reads slot d (its group complete) into the registers.
  __device__ void take(int d) {
    const uint4* from = slot(d);
#pragma unroll
    for (int i = 0; i < C::kR; ++i)
#pragma unroll
      for (int h = 0; h < kRowPieces; ++h) {
        const uint4 q = from[(i * kRowPieces + h) * C::kThreads];
        uint32_t* w;
        if constexpr (C::kTransform) w = &this->raw.x[i][4 * h];
        else w = &this->w[i][4 * h];
        w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
      }
  }
};

// The one-launch amax of a small fp8_tensor / NVFP4 input: the rows kernels of those recipes keyed
// FastKey::one_launch, whose grid is one cluster (cluster_amax_grid) or, with
// TileParams::grid_amax, the grid exchange's. Each CTA takes the amax of its one or two row tiles
// and shares it, then quantizes them (the tiles come again from L2): `amax` is not read and
// amax_canonical is written.
template <class C>
inline constexpr bool kClusterAmax = C::kKey.one_launch;
// The plain per-tensor rows kernels, with or without it, may load their first tile before the
// wait (TileParams::early_loads).
template <class C>
inline constexpr bool kEarlyLoads = one_launch_capable(C::kKey);

// The largest |x| (fp32 abs bits) of the kR x 8 elements of a thread's tile at s, zeros where
// rows are absent (s.n <= 0: none). Volatile loads: the compiler would otherwise merge them with
// the walk's own loads of the tile and keep those words live across the prologue (NVFP4's rows
// kernel then spilled).
template <class C>
__device__ uint32_t tile_amax_bits(const TileSrc& s) {
  uint32_t w[C::kR][C::kW] = {};
#pragma unroll
  for (int i = 0; i < C::kR; ++i)
#pragma unroll
    for (int h = 0; h < C::kW / 4; ++h)
      if (i < s.n)
        asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %4;\n\tld.global.nc.v4.u32 {%0, %1, %2, %3}, [g];\n\t}"
                     : "=r"(w[i][4 * h]), "=r"(w[i][4 * h + 1]), "=r"(w[i][4 * h + 2]), "=r"(w[i][4 * h + 3])
                     : "l"(s.x + i * s.pitch + 16 * h));
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < C::kR; ++i) m = num::max_u32(m, amax8_bits<C::kDType>(w[i]));
  return m;
}

// The one-launch amax's exchange, in each CTA's shared memory: CTA r's maximum lands in cta_max[r]
// of every CTA (st.async), and `bar` completes once all of them have.
struct AmaxExchange {
  uint64_t bar;
  uint32_t cta_max[kOneLaunchCtas];
  uint32_t warp_max[32];
};
__device__ __forceinline__ AmaxExchange& amax_exchange() {
  __shared__ AmaxExchange x;
  return x;
}
// At the kernel's start, before anything reads global memory: thread 0 sets the exchange's
// mbarrier to expect 4 bytes from each CTA of the cluster (one arrival, its own), and every thread
// arrives on a relaxed cluster barrier that publishes the initialisation (fence.mbarrier_init);
// cluster_amax_bits waits on it before any CTA pushes its maximum.
__device__ __forceinline__ void cluster_amax_open() {
  AmaxExchange& x = amax_exchange();
  if (threadIdx.x == 0) {
    mbar_init(&x.bar, 1);
    mbar_arrive_expect_tx(&x.bar, 4 * cluster_ctas());
    mbar_init_fence();
  }
  cluster_arrive_relaxed();
}

// The one-launch exchanges' first step: each warp's maximum of m into warp_max, visible to the
// whole CTA (a barrier); cta_max_of_warps then takes the CTA's, in one thread.
template <class C>
__device__ void publish_warp_maxima(uint32_t m) {
  static_assert(C::kThreads / 32 <= 32, "a warp_max slot per warp");
  m = lane_max<32>(m);
  if ((threadIdx.x & 31) == 0) amax_exchange().warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
}
template <class C>
__device__ uint32_t cta_max_of_warps() {
  uint32_t c = 0;
#pragma unroll
  for (int w = 0; w < C::kThreads / 32; ++w) c = num::max_u32(c, amax_exchange().warp_max[w]);
  return c;
}

// The amax pass of a one-launch call: the largest |x| of the whole input as fp32 abs bits (a
// NaN above Inf, as the amax kernel gives it). A CTA takes the maximum of its own row tiles (at
// most kOneLaunchMaxTilesPerCta = 2: cluster_amax_grid), loading both at once while the walk's
// loads of the first are in flight (those L2 lines come once; the loop loads the second again,
// from L2, while it quantizes the first). Then each CTA pushes its maximum into every CTA's
// exchange (thread t to CTA t, st.async completing on that CTA's mbarrier) and waits on its own
// (acquire at cluster scope) until all have landed; a cluster of one CTA takes its warps' maxima: no release fence and no barrier at the exit, since nothing reads another
// CTA's shared memory and a CTA leaves only after every push into it (the barriers of session 25's
// exchange, cluster_sync and a wait before exit, compiled to a GPU-wide fence and two L1
// invalidations).
// (Session 24's version read the input in chunks spread evenly over the cluster, 32 words per
// thread in flight, and gathered the CTAs' maxima one remote load after another: at 16 x 7168 a
// thread's four chunks missed its batch and went one round trip at a time.)
template <class C>
__device__ uint32_t cluster_amax_bits(uint32_t m) {
  static_assert(kClusterAmax<C>, "the rows kernels of fp8_tensor and NVFP4");
  constexpr int kWarps = C::kThreads / 32;
  static_assert(C::kThreads >= kOneLaunchCtas, "a thread per CTA of the cluster pushes");
  AmaxExchange& x = amax_exchange();
  const uint32_t lane = threadIdx.x & 31, ctas = cluster_ctas();
  publish_warp_maxima<C>(m);
  cluster_wait();  // every CTA's exchange is initialised (cluster_amax_open)
  if (ctas == 1) {  // no exchange (st.async is defined in clusters of more than one CTA only)
    m = lane < kWarps ? x.warp_max[lane] : 0u;
    return lane_max<32>(m);
  }
  if (threadIdx.x < ctas) st_async_u32(&x.cta_max[cluster_rank()], cta_max_of_warps<C>(), &x.bar, threadIdx.x);
  mbar_wait_cluster(&x.bar, 0);  // every CTA's maximum is here
  m = lane < ctas ? x.cta_max[lane] : 0u;
  return lane_max<32>(m);
}

// The same exchange for a grid larger than a cluster (TileParams::grid_amax: every CTA of the
// grid resident at once, a cooperative launch), through kGridAmaxSlots words of global memory, one
// per CTA: CTA i stores its maximum (fp32 abs bits, so bit 31 is free) into word i with bit 31 the
// launch's parity, and a warp of every CTA reads the grid's words until all carry that parity, then
// takes their maximum. No read-modify-write, no fence and no "last CTA": a word's value and its
// flag are one single-copy-atomic store (session 44's arrival counter, published result and
// acquire polls took 0.4-0.7 us more on an H100; the wait still costs ~1.6 us over the same launch
// without it, bench/NOTES.md v30). The parity is the complement of the one the CTA
// finds in its own word, which only it writes in a launch; CTA 0 also sets the words past the grid,
// so that every word carries the same parity after each launch (the next launch on the same words,
// of any grid size, reads them after its programmatic wait: the stream orders them). Words shared
// by two launches at once (which the host's slots rule out, save a captured graph run concurrently
// with itself, or a foreign kernel between two calls that is launched with PDL and never waits:
// grid_amax_slot) give a maximum drawn from both inputs or a wait that never ends,
// which traps after 10 s by %globaltimer rather than hang the stream.
// The exchange's word accesses: relaxed at GPU scope (each word has one writer a launch; the
// parity, not an ordering, tells a reader that a word is this launch's).
__device__ __forceinline__ unsigned word_load(const unsigned* w) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
  return v;
}
__device__ __forceinline__ void word_store(unsigned* w, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(w), "r"(v) : "memory");
}
template <class C>
__device__ uint32_t grid_amax_bits(uint32_t m, unsigned* words) {
  static_assert(kClusterAmax<C>, "the rows kernels of fp8_tensor and NVFP4");
  constexpr unsigned kFlag = 0x80000000u;
  AmaxExchange& x = amax_exchange();
  publish_warp_maxima<C>(m);
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x, ctas = gridDim.x * gridDim.y, cta = blockIdx.y * gridDim.x + blockIdx.x;
    if (ctas > unsigned(kGridAmaxSlots)) __trap();  // grid_amax_grid's cap
    const unsigned own = lane == 0 ? word_load(words + cta) : 0u;
    const unsigned parity = ~__shfl_sync(0xffffffffu, own, 0) & kFlag;
    if (lane == 0) {
      const unsigned c = cta_max_of_warps<C>();
      if (c & kFlag) __trap();  // not abs bits
      word_store(words + cta, parity | c);
    }
    if (cta == 0) {  // the words past the grid: the same parity for the next launch
      for (unsigned i = ctas + lane; i < unsigned(kGridAmaxSlots); i += 32) word_store(words + i, parity);
    }
    uint64_t start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned mx;
    for (;;) {
      unsigned stale = 0;
      mx = 0;
#pragma unroll
      for (int k = 0; k < kGridAmaxSlots / 32; ++k) {  // every word's load in flight at once
        const unsigned i = lane + 32u * unsigned(k);
        if (i < ctas) {
          const unsigned w = word_load(words + i);
          stale |= (w ^ parity) & kFlag;
          mx = num::max_u32(mx, w & ~kFlag);
        }
      }
      if (!__any_sync(0xffffffffu, stale != 0)) {
        mx = lane_max<32>(mx);
        break;
      }
      uint64_t t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (int64_t(t - start) > 10'000'000'000ll) __trap();  // 10 s (ns; a clock stepping back never traps)
    }
    if (lane == 0) x.cta_max[0] = mx;
  }
  __syncthreads();
  return x.cta_max[0];
}

// Row tiles ty = blockIdx.y, blockIdx.y + gridDim.y, ...; with kPrefetch the next tile's loads
// are in flight while this one is quantized (two register sets, used in turn); the 8-row shapes
// and the fused rows kernels keep a ring of tiles in flight in shared memory instead (RingLoad). The walk over
// the tiles is a RowsWalk (pointers and a 32-bit row count) in the rows shape, else a TileWalk.
template <class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) fast_quantize_kernel(const TileParams p) {
  using Tile = FastTile<C>;
  using L = typename Pick<C::kGeo.ring != 0, RingLoad<C>,
                          typename Pick<C::kTransform, FusedLoad<C>, PlainLoad<C>>::type>::type;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rl = lane / C::kCL, cl = lane % C::kCL;
  const int wr = warp / C::kWC, wc = warp % C::kWC;
  // this thread's first column in column tile x, below kFastMaxCols (the launcher's condition):
  // 32-bit arithmetic, no high word to keep
  auto column_of = [&](uint32_t x) { return int64_t((x * C::kWC + wc) * uint32_t(8 * C::kCL) + uint32_t(cl * 8)); };
  int64_t c0 = column_of(blockIdx.x);
  const int lane_row = (wr * C::kRL + rl) * C::kR;

  if constexpr (ActTable<C>::kOn) {
    // ahead of the wait: its source, if any, is no earlier kernel's output (device_act_table)
    ActTable<C>::fill(p.act_table_src);
  }
  if constexpr (kClusterAmax<C>) {
    if (!p.grid_amax) cluster_amax_open();  // reads no global memory either
  }
  // launched with programmatic dependent launch (cuda/pdl.cuh); the second pass of a per-tensor
  // call waits after its first tile's loads (TileParams::early_loads)
  bool early = false;
  // (nothing of a fused kernel runs before the wait: the noop flag, the table's source)
  static_assert(!kEarlyLoads<C> || (!C::kFused && !ActTable<C>::kOn), "early loads: plain per-tensor kernels only");
  if constexpr (kEarlyLoads<C>) early = p.early_loads;
  if (!early) pdl_begin();
  if constexpr (C::kFused) {
    if (p.noop && *p.noop != 0.0f) return;  // a device flag: usable inside CUDA graphs
  }
  // One launch for both passes of a small per-tensor call (the kernel keyed one_launch): the amax
  // (cluster_amax_bits of the CTA's one or two row tiles, tile_amax_bits), then the rule from it.
  // Every CTA takes part in the exchange (the cluster's, opened above, or the grid's) exactly once.
  uint32_t amax_bits = 0;
  auto take_amax = [&](auto local_max) {
    if constexpr (kClusterAmax<C>)
      amax_bits = p.grid_amax ? grid_amax_bits<C>(local_max(), p.grid_amax) : cluster_amax_bits<C>(local_max());
  };
  auto rule_for_launch = [&] {
    if constexpr (kClusterAmax<C>)
      return prepare_rule_with(p, C::kElem, [&] { return __uint_as_float(amax_bits); });
    else
      return prepare_rule(p, C::kElem);
  };

  // The row tiles of this CTA: blockIdx.y, + gridDim.y, ... to the end; or, with a short tail
  // (long_ctas, FastLaunch), the long CTAs' stride over the tiles ahead of the last
  // gridDim.y - long_ctas, each of which one short CTA takes.
  // (32-bit: rows is below kFastMaxRows)
  int first = int(blockIdx.y), step_tiles = int(gridDim.y), end = int(p.rows);
  // Fused column blocks (kFlatWalk) walk flat, every launch (fast_launch_shape): CTA b takes its
  // share of each band's tiles (fast_key.h FlatGrid), one column tile after another (the loop
  // below moves the walk on). 32-bit, no 64-bit divisions but the tile rows' (a shift), and only
  // walk_left lives across the loop: where the walk ends comes again from the walk's own row and
  // column (at.r0, at.c0), the rest from p and the indices (kept live, the flat index and the band
  // arithmetic spilled 8 bytes of bf16 mxfp8 dgelu+dbias).
  auto tiles_down = [&] { return int((p.rows + C::kTileRows - 1) / C::kTileRows); };
  auto flat_grid = [&] { return FlatGrid{p.flat_col_tiles, tiles_down(), p.flat_band, int(gridDim.x)}; };
  int walk_left = 0;  // the walk's tiles to go (a 32-bit count, not at.end's 64-bit row)
  // the walk from flat tile f to the end of its column tile or of the CTA's share of its band
  auto flat_walk = [&](int f) {
    const FlatGrid g = flat_grid();
    const FlatStep w = g.walk(f, g.share(int(blockIdx.x), g.band_of(f)).end);
    first = w.row_tile;
    step_tiles = 1;
    end = int(min(p.rows, int64_t(w.row_tile + (w.stop - f)) * C::kTileRows));
    c0 = column_of(uint32_t(w.col_tile));
    walk_left = w.stop - f;
  };
  // the first tile of the CTA's share of band k or of the next band where it has one (-1: none)
  auto next_share = [&](int k) {
    const FlatGrid g = flat_grid();
    for (; k < g.bands(); ++k) {
      const FlatShare s = g.share(int(blockIdx.x), k);
      if (s.first < s.end) return s.first;
    }
    return -1;
  };
  static_assert(!kFlatWalk<C> || (C::kGeo.ring == 0 && !C::kPrefetch), "a flat walk moves on in the plain loop");
  if constexpr (kFlatWalk<C>) {
    if (p.flat_col_tiles <= 0 || p.flat_band <= 0) __trap();  // fast_launch_shape always makes it flat
    if (const int f = next_share(0); f >= 0) {
      flat_walk(f);
    } else {
      first = tiles_down();  // no tile (no rows, or a band narrower than the grid): the empty launch below
    }
  } else if (p.long_ctas > 0) {
    const int shared = tiles_down() - (step_tiles - p.long_ctas);  // the long CTAs' tiles
    if (first < p.long_ctas) {
      step_tiles = p.long_ctas;
      end = shared * C::kTileRows;
    } else {
      first = shared + (first - p.long_ctas);  // one tile: the next is past the end
    }
  }
  // a flat walk steps one tile at a time: a constant, not two registers
  const int64_t step = kFlatWalk<C> ? int64_t(C::kTileRows) : int64_t(step_tiles) * C::kTileRows;
  const int64_t r0 = int64_t(first) * C::kTileRows + lane_row;
  if (int64_t(first) * C::kTileRows >= p.rows) {
    if (early) pdl_begin();
    take_amax([] { return 0u; });
    rule_for_launch();  // block (0, 0) of an empty launch still publishes the global scale
    return;
  }
  using Walk = typename Pick<C::kShape == FastShape::rows, RowsWalk<C>, TileWalk<C>>::type;
  Walk at = [&] {
    if constexpr (C::kShape == FastShape::rows) {
      return RowsWalk<C>(p, r0, c0, step, lane_row, cl, end);
    } else {
      return TileWalk<C>{p, r0, c0, lane_row, step, int(p.cols) - int(c0), end};
    }
  }();
  FusedStats<C> stats;
  L a{};
  if constexpr (C::kGeo.ring != 0) {
    static_assert(!kClusterAmax<C>, "the one-launch kernels load their tiles twice (tile_amax_bits)");
#pragma unroll
    for (int d = 0; d < L::kRing; ++d) {  // one group per tile, empty past the walk's end
      if (d == 0 || at.ahead_exists(d)) L::issue(at.src(d), d, p.x);  // tile 0 exists (the return above)
      cp_async_commit();
    }
  } else {
    a.load(at.src(0));
  }
  if (early) pdl_begin();  // the amax, the scales and the outputs only after it
  if constexpr (kClusterAmax<C>) {
    // both tiles read again for the amax (tile_amax_bits): the first one's lines are in flight
    // already, the second's are L2 hits when the loop loads them while quantizing the first
    take_amax([&] {
      // cluster_amax_grid gives no CTA a third tile (FastGrid.SmallPerTensorCallsAreOneCluster...
      // holds it to that); a third would be quantized without counting in the amax
      static_assert(kOneLaunchMaxTilesPerCta == 2, "a CTA's tiles: this one and the next");
      return num::max_u32(tile_amax_bits<C>(at.src(0)), at.next_exists() ? tile_amax_bits<C>(at.src(1)) : 0u);
    });
  }
  num::ScaleRule rule = rule_for_launch();
  rule.elem = C::kElem;  // a constant from here on: the scale arithmetic folds it in
  Tile::fill_scale_table(rule);
  auto quantize_tile = [&](L& t) {
    const int n = at.live();
    const auto& w = t.tile(n);
    stats.add(w, p);
    Tile::run(w, at, n, p, rule, lane, warp);
  };
  if constexpr (C::kGeo.ring != 0) {
    // groups committed before tile i's wait: kRing + i; tile i's is complete once at most
    // kRing - 1 are pending
    for (int d = 0;;) {
      cp_async_wait<L::kRing - 1>();
      a.take(d);
      if (at.ahead_exists(L::kRing)) L::issue(at.src(L::kRing), d, p.x);  // warp-uniform
      cp_async_commit();
      quantize_tile(a);
      at.advance();
      if (at.done()) break;
      if constexpr (L::kRing > 1) d = d + 1 == L::kRing ? 0 : d + 1;
    }
  } else if constexpr (C::kPrefetch) {
    L b{};
    for (;;) {
      // tile starts are warp-uniform, so the loop exits are too
      if (at.next_exists()) b.load(at.src(1));
      quantize_tile(a);
      at.advance();
      if (at.done()) break;
      if (at.next_exists()) a.load(at.src(1));
      quantize_tile(b);
      at.advance();
      if (at.done()) break;
    }
  } else {
    for (;;) {
      quantize_tile(a);
      at.advance();
      if constexpr (kFlatWalk<C>) {
        if (--walk_left == 0) {
          // the share goes on in the next column tile, or in the next band: the flat index past
          // the walk's last tile, from the row tile the walk has advanced to and its column tile
          const FlatGrid g = flat_grid();
          const int y = int((at.r0 - lane_row) / C::kTileRows), k = g.band_of_row(y - 1);
          int f = g.flat_of(k, int(at.c0) / C::kTileCols, y);
          if (f >= g.share(int(blockIdx.x), k).end) f = next_share(k + 1);
          // one call site of publish and of load (each one inlined once: a second copy of either
          // cost ptxas half its time; bench_jit's fused compile)
          stats.publish(p, at.col(), lane);  // the walk's own copy, not a second 64-bit value live
          if (f < 0) break;
          __syncthreads();  // publish's shared sums are read before the next walk's add writes them
          stats = FusedStats<C>();
          flat_walk(f);
          at.r0 = int64_t(first) * C::kTileRows + lane_row;
          at.c0 = c0;
          at.cols_left = int(p.cols) - int(c0);
          at.end = end;
        }
      } else if (at.done()) {
        break;
      }
      a.load(at.src(0));
    }
  }
  if constexpr (!kFlatWalk<C>) stats.publish(p, c0, lane);
}

}  // namespace mxq::cuda
