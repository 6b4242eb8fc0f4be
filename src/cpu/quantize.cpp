// CPU reference quantize / dequantize.
//
// The input is walked in tiles: strips of H rows (a multiple of every block height of the
// requested directions) cut into panels of W columns (a multiple of every block width), small
// enough to stay in the core's L1/L2 cache, so that every direction after the first reads the
// tile from cache. Every direction reads the input in its own type:
//  - rowwise 1 x G blocks (MX, NVFP4, DeepSeek groups, per-tensor) block by block: block
//    maximum, scale, then the block's elements, G a template parameter so that each step is a
//    fixed-length vector loop;
//  - everything else (columnwise G x 1, 2-D blocks) block row by block row: column maxima,
//    scales, a multiplier per column, then row after row of elements.
// Inner loops are branch-free over contiguous memory with the element format a template
// parameter (element_codec.hpp), so that the compiler vectorizes them with the baseline
// instruction set. Columnwise output is rowwise quantization of the transpose; its transposed
// form is encoded into a code tile and written out H contiguous codes per column.
// Block maxima are integer maxima of |x|'s bits (numerics' amax_combine): they order like the
// values, every NaN above Inf, and stay below 2^31 so that signed compares (SSE2) apply.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/element_codec.hpp"
#include "mxq/error.hpp"

namespace mxq::cpu {
namespace {

// ---- threads -----------------------------------------------------------------------------------

int64_t hardware_threads() { return std::max<int64_t>(1, std::thread::hardware_concurrency()); }

// Runs body(begin, end) over [0, n) in contiguous chunks of `chunk` that up to `threads`
// workers (the calling thread included) take in order, so that a core slowed down by other
// work takes fewer chunks instead of holding up the whole call.
template <class Body>
void run_chunks(int64_t n, int64_t chunk, int64_t threads, const Body& body) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  threads = std::min(threads, num::ceil_div(n, chunk));
  if (threads <= 1) {
    body(int64_t(0), n);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr err;
  std::mutex mu;
  auto worker = [&] {
    try {
      for (int64_t b; (b = next.fetch_add(chunk)) < n;) body(b, std::min(n, b + chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!err) err = std::current_exception();
      next = n;
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

// Worker count for a call that touches `elements` values: one thread per ~256K elements, so
// that small calls do not pay for thread start-up.
int64_t threads_for(int64_t elements) {
  return std::clamp<int64_t>(elements / (int64_t(1) << 18), 1, hardware_threads());
}

// Chunk size that gives every worker several chunks (load balance) of contiguous work items.
int64_t chunk_for(int64_t items, int64_t threads) { return std::max<int64_t>(1, items / (threads * 8)); }

// ---- input ---------------------------------------------------------------------------------------

enum class In : uint8_t { f32, bf16, f16 };

In input_kind(DType t) { return t == DType::float32 ? In::f32 : (t == DType::bfloat16 ? In::bf16 : In::f16); }

const char* row_ptr(const Matrix& x, int64_t r) {
  return static_cast<const char*>(x.data) + r * x.row_stride * (dtype_bits(x.dtype) / 8);
}

template <In K>
using Elem = std::conditional_t<K == In::f32, float, uint16_t>;

template <In K>
inline float to_float(Elem<K> v) {
  if constexpr (K == In::f32)
    return v;
  else if constexpr (K == In::bf16)
    return num::bf16_to_float(v);
  else
    return fp16_to_float(v);
}

inline int32_t abs_bits(float x) { return int32_t(num::float_bits(x) & num::kF32AbsMask); }
inline int32_t max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
inline int16_t max_i16(int16_t a, int16_t b) { return a > b ? a : b; }

// max |x| over x[0, n) as fp32 bits. 16-bit inputs are reduced on their own bits (8 per SSE2
// register); |x|'s bits order like |x| in all three input types.
template <In K>
inline int32_t amax_bits(const Elem<K>* x, int64_t n) {
  if constexpr (K == In::f32) {
    int32_t m = 0;
    for (int64_t i = 0; i < n; ++i) m = max_i32(m, abs_bits(x[i]));
    return m;
  } else {
    int16_t m = 0;
    for (int64_t i = 0; i < n; ++i) m = max_i16(m, int16_t(x[i] & 0x7fffu));
    return abs_bits(to_float<K>(uint16_t(m)));
  }
}

// Tensor amax, computed on every worker's rows and combined.
float tensor_amax(const Matrix& x) {
  const int64_t threads = threads_for(x.rows * x.cols);
  int32_t total = 0;
  std::mutex mu;
  run_chunks(x.rows, chunk_for(x.rows, threads), threads, [&](int64_t b, int64_t e) {
    int32_t m = 0;
    for (int64_t r = b; r < e; ++r) {
      const char* p = row_ptr(x, r);
      switch (input_kind(x.dtype)) {
        case In::f32:
          m = max_i32(m, amax_bits<In::f32>(reinterpret_cast<const float*>(p), x.cols));
          break;
        case In::bf16:
          m = max_i32(m, amax_bits<In::bf16>(reinterpret_cast<const uint16_t*>(p), x.cols));
          break;
        case In::f16:
          m = max_i32(m, amax_bits<In::f16>(reinterpret_cast<const uint16_t*>(p), x.cols));
          break;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    total = max_i32(total, m);
  });
  return num::amax_from_bits(uint32_t(total));
}

// ---- element encoding --------------------------------------------------------------------------

// Packs FP4 codes (one per byte, n even) two per byte: element 2i in the low nibble.
inline void pack_fp4_codes(const uint8_t* __restrict codes, uint8_t* __restrict dst, int64_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    for (int64_t i = 0; i < n / 2; ++i) {  // 16-bit loads: GCC vectorizes these, not byte pairs
      uint16_t w;
      std::memcpy(&w, codes + 2 * i, 2);
      dst[i] = uint8_t(w | (w >> 4));
    }
  } else {
    for (int64_t i = 0; i < n / 2; ++i) dst[i] = uint8_t(codes[2 * i] | (codes[2 * i + 1] << 4));
  }
}

// dst = codes of x[i] * m (one multiplier); FP4 packs element pairs into bytes (n even).
template <ElemFormat F, In K>
inline void encode_uniform(const Elem<K>* __restrict x, float m, uint8_t* __restrict dst, int64_t n) {
  if constexpr (F == ElemFormat::e2m1) {
    // Fixed-size chunks, so that both loops vectorize when n is a small constant (a block).
    constexpr int64_t kChunk = 16;
    uint8_t codes[kChunk];
    int64_t i0 = 0;
    for (; i0 + kChunk <= n; i0 += kChunk) {
      for (int64_t i = 0; i < kChunk; ++i) codes[i] = encode_satfinite<F>(num::mul_rn(to_float<K>(x[i0 + i]), m));
      pack_fp4_codes(codes, dst + i0 / 2, kChunk);
    }
    for (int64_t i = i0; i < n; ++i) codes[i - i0] = encode_satfinite<F>(num::mul_rn(to_float<K>(x[i]), m));
    pack_fp4_codes(codes, dst + i0 / 2, n - i0);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = encode_satfinite<F>(num::mul_rn(to_float<K>(x[i]), m));
  }
}

// dst = codes of x[i] * m[i] (a multiplier per column); FP4 packs pairs unless kUnpacked.
template <ElemFormat F, In K, bool kUnpacked>
void encode_columns(const Elem<K>* __restrict x, const float* __restrict m, uint8_t* __restrict dst, int64_t n) {
  if constexpr (F == ElemFormat::e2m1 && !kUnpacked) {
    for (int64_t i = 0; i < n / 2; ++i) {
      const uint8_t lo = encode_satfinite<F>(num::mul_rn(to_float<K>(x[2 * i]), m[2 * i]));
      const uint8_t hi = encode_satfinite<F>(num::mul_rn(to_float<K>(x[2 * i + 1]), m[2 * i + 1]));
      dst[i] = uint8_t(lo | (hi << 4));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = encode_satfinite<F>(num::mul_rn(to_float<K>(x[i]), m[i]));
  }
}

// ---- scales ------------------------------------------------------------------------------------

// num::block_scale(rule, amax) memoised on amax's bits. The scale is a pure function of the
// block maximum, and blocks of 16-bit inputs share few distinct maxima, so most blocks skip the
// divisions (and NVFP4's scale encode and decode) of the rule.
class BlockScaleCache {
 public:
  explicit BlockScaleCache(const num::ScaleRule& rule) : rule_(rule), slots_(size_t(1) << kBits) {}
  num::BlockScale operator()(int32_t amax_bits) {
    Slot& s = slots_[(uint32_t(amax_bits) * 0x9e3779b1u) >> (32 - kBits)];
    if (s.key != uint32_t(amax_bits)) {
      s.key = uint32_t(amax_bits);
      s.scale = num::block_scale(rule_, num::amax_from_bits(uint32_t(amax_bits)));
    }
    return s.scale;
  }

 private:
  static constexpr int kBits = 10;
  struct Slot {
    uint32_t key = 0xffffffffu;  // never the bits of an |amax|
    num::BlockScale scale{};
  };
  num::ScaleRule rule_;
  std::vector<Slot> slots_;
};

// One output direction: blocks of (bh x bw) over the input, and where the results go.
struct DirectionPlan {
  bool columnwise;
  bool transposed;  // columnwise data stored as the transpose (C, R)
  int bh, bw;
  uint8_t* data;
  void* scales;
  num::ScaleGeometry geom;
  bool per_row_scale;
  int br;  // the recipe's block_rows (mn granularity of the scale matrix)
  bool fp32_scales;
  // log2 of bh, bw and br (all powers of two): block indices by shifts, not divisions
  int bh_log2 = std::countr_zero(unsigned(bh)), bw_log2 = std::countr_zero(unsigned(bw)),
      br_log2 = std::countr_zero(unsigned(br));

  void put_scale(int64_t i, int64_t j, uint32_t stored) const {
    const int64_t off = num::scale_offset(geom, i, j);
    if (fp32_scales) {
      static_cast<uint32_t*>(scales)[off] = stored;
    } else {
      static_cast<uint8_t*>(scales)[off] = uint8_t(stored);
    }
  }
  // Scale of block column b (global) of the block row starting at input row xr, bhr rows tall;
  // c0, c1 bound the block's input columns. Indices are those of the direction's own matrix.
  void put_block_scale(int64_t xr, int64_t bhr, int64_t b, int64_t c0, int64_t c1, uint32_t stored) const {
    if (!columnwise) {
      if (per_row_scale) {
        for (int64_t r = xr; r < xr + bhr; ++r) put_scale(r, b, stored);
      } else {
        put_scale(xr >> br_log2, b, stored);
      }
    } else if (per_row_scale) {
      for (int64_t c = c0; c < c1; ++c) put_scale(c, xr >> bh_log2, stored);
    } else {
      put_scale(c0 >> br_log2, xr >> bh_log2, stored);
    }
  }
  // Rowwise 1 x G blocks are quantized block by block, straight from the input.
  bool blockwise() const { return !columnwise && bh == 1; }
};

struct Job {
  const Matrix* x;
  num::ScaleRule rule;
  bool tensor_scaled;
  std::vector<DirectionPlan> dirs;
  int64_t strip_rows, panel_cols;
  bool code_tile;  // some direction writes transposed output through a code tile
};

// Per-thread scratch, sized once per chunk of work.
struct Workspace {
  std::vector<uint8_t> codes;     // (strip_rows, panel_cols) element codes, transposed output only
  std::vector<int16_t> colmax16;  // (panel_cols) column maxima of a block row, 16-bit inputs
  std::vector<int32_t> colmax;    // (panel_cols) column maxima of a block row as fp32 bits
  std::vector<float> mult;        // (panel_cols) element multipliers of a block row
  BlockScaleCache scale_of;
  explicit Workspace(const Job& j)
      : codes(j.code_tile ? size_t(j.strip_rows * j.panel_cols) : 0),
        colmax16(size_t(j.panel_cols)),
        colmax(size_t(j.panel_cols)),
        mult(size_t(j.panel_cols)),
        scale_of(j.rule) {}
};

// ---- rowwise 1 x G blocks ------------------------------------------------------------------------

// One block of n <= G elements of row xr: maximum, scale, codes. `row_scales` is the row's
// first scale in a row-major scale matrix, else null.
template <ElemFormat F, In K>
inline void quantize_block(const DirectionPlan& d, Workspace& ws, const Elem<K>* x, int64_t n, int64_t xr, int64_t b,
                           int64_t c0, uint8_t* dst, void* row_scales) {
  const num::BlockScale s = ws.scale_of(amax_bits<K>(x, n));
  if (!row_scales)
    d.put_block_scale(xr, 1, b, c0, c0 + n, s.stored);
  else if (d.fp32_scales)
    static_cast<uint32_t*>(row_scales)[b] = s.stored;
  else
    static_cast<uint8_t*>(row_scales)[b] = uint8_t(s.stored);
  encode_uniform<F, K>(x, s.multiplier, dst, n);
}

// Columns [c0, c0 + w) of input row xr (x points at column c0) in 1 x G blocks; c0 is a
// multiple of G. G is a template parameter for the common sizes (fixed-length loops).
template <ElemFormat F, In K, int G>
void quantize_row_blocks(const Job& j, const DirectionPlan& d, Workspace& ws, const Elem<K>* x, int64_t xr, int64_t c0,
                         int64_t w) {
  constexpr int64_t per_byte = F == ElemFormat::e2m1 ? 2 : 1;
  const int64_t g = G > 0 ? G : d.bw;
  uint8_t* dst = d.data + (xr * j.x->cols + c0) / per_byte;  // cols and c0 are even for FP4
  void* row_scales = nullptr;  // scale (xr, b) of a compact row-major scale matrix: row_scales[b]
  if (d.geom.layout == ScaleLayout::row_major && !d.geom.kb_outer) {
    const int64_t row = num::scale_offset(d.geom, xr >> d.br_log2, 0);  // blockwise: br == 1 or per-row scales
    row_scales = d.fp32_scales ? static_cast<void*>(static_cast<uint32_t*>(d.scales) + row)
                               : static_cast<void*>(static_cast<uint8_t*>(d.scales) + row);
  }
  int64_t c = 0;
  for (; c + g <= w; c += g)
    quantize_block<F, K>(d, ws, x + c, G > 0 ? G : g, xr, (c0 + c) >> d.bw_log2, c0 + c, dst + c / per_byte,
                         row_scales);
  if (c < w)
    quantize_block<F, K>(d, ws, x + c, w - c, xr, (c0 + c) >> d.bw_log2, c0 + c, dst + c / per_byte, row_scales);
}

template <ElemFormat F, In K>
void quantize_rows_blockwise(const Job& j, const DirectionPlan& d, Workspace& ws, const Elem<K>* tile, int64_t ld,
                             int64_t r0, int64_t sh, int64_t c0, int64_t w) {
  for (int64_t r = 0; r < sh; ++r) {
    const Elem<K>* x = tile + r * ld;
    const int64_t xr = r0 + r;
    if (j.tensor_scaled) {
      constexpr int64_t per_byte = F == ElemFormat::e2m1 ? 2 : 1;
      encode_uniform<F, K>(x, j.rule.tensor_factor, d.data + (xr * j.x->cols + c0) / per_byte, w);
      continue;
    }
    switch (d.bw) {
      case 16:
        quantize_row_blocks<F, K, 16>(j, d, ws, x, xr, c0, w);
        break;
      case 32:
        quantize_row_blocks<F, K, 32>(j, d, ws, x, xr, c0, w);
        break;
      case 64:
        quantize_row_blocks<F, K, 64>(j, d, ws, x, xr, c0, w);
        break;
      case 128:
        quantize_row_blocks<F, K, 128>(j, d, ws, x, xr, c0, w);
        break;
      default:
        quantize_row_blocks<F, K, 0>(j, d, ws, x, xr, c0, w);
        break;
    }
  }
}

// ---- columnwise and 2-D blocks ------------------------------------------------------------------

// Scales of one block row (bhr input rows from `rows`, the first is input row xr) and the
// multiplier of every column.
template <In K>
void block_row_multipliers(const Job& j, const DirectionPlan& d, Workspace& ws, const Elem<K>* rows, int64_t ld,
                           int64_t bhr, int64_t xr, int64_t c0, int64_t w) {
  float* mult = ws.mult.data();
  if (j.tensor_scaled) {
    std::fill(mult, mult + w, j.rule.tensor_factor);
    return;
  }
  int32_t* colmax = ws.colmax.data();
  if constexpr (K == In::f32) {
    for (int64_t c = 0; c < w; ++c) colmax[c] = abs_bits(rows[c]);
    for (int64_t r = 1; r < bhr; ++r) {
      const float* row = rows + r * ld;
      for (int64_t c = 0; c < w; ++c) colmax[c] = max_i32(colmax[c], abs_bits(row[c]));
    }
  } else {  // on the 16-bit patterns, 8 per SSE2 register
    int16_t* m16 = ws.colmax16.data();
    for (int64_t c = 0; c < w; ++c) m16[c] = int16_t(rows[c] & 0x7fffu);
    for (int64_t r = 1; r < bhr; ++r) {
      const uint16_t* row = rows + r * ld;
      for (int64_t c = 0; c < w; ++c) m16[c] = max_i16(m16[c], int16_t(row[c] & 0x7fffu));
    }
    for (int64_t c = 0; c < w; ++c) colmax[c] = abs_bits(to_float<K>(uint16_t(m16[c])));
  }
  for (int64_t c = 0; c < w; c += d.bw) {
    const int64_t c1 = std::min<int64_t>(w, c + d.bw);
    int32_t m = 0;
    for (int64_t k = c; k < c1; ++k) m = max_i32(m, colmax[k]);
    const num::BlockScale s = ws.scale_of(m);
    d.put_block_scale(xr, bhr, (c0 + c) >> d.bw_log2, c0 + c, c0 + c1, s.stored);
    for (int64_t k = c; k < c1; ++k) mult[k] = s.multiplier;
  }
}

// Writes a code tile (sh, w) with row stride ld, input rows [r0, r0 + sh) and columns
// [c0, c0 + w), into the transposed output (cols, rows): sh contiguous codes per column.
template <ElemFormat F>
void store_transposed(const uint8_t* codes, int64_t ld, int64_t sh, int64_t w, uint8_t* data, int64_t rows, int64_t r0,
                      int64_t c0) {
  int64_t c = 0;
  if constexpr (F != ElemFormat::e2m1 && std::endian::native == std::endian::little) {
    // 8 x 8 byte blocks: load 8 rows as 64-bit words, transpose them in registers, store 8 columns.
    for (; c + 8 <= w; c += 8) {
      int64_t r = 0;
      for (; r + 8 <= sh; r += 8) {
        uint64_t v[8];
        for (int i = 0; i < 8; ++i) std::memcpy(&v[i], codes + (r + i) * ld + c, 8);
        for (int i = 0; i < 8; i += 2) {  // swap bytes between row pairs
          const uint64_t t = ((v[i] >> 8) ^ v[i + 1]) & 0x00ff00ff00ff00ffull;
          v[i + 1] ^= t;
          v[i] ^= t << 8;
        }
        for (int i : {0, 1, 4, 5}) {  // 16-bit units between rows i and i + 2
          const uint64_t t = ((v[i] >> 16) ^ v[i + 2]) & 0x0000ffff0000ffffull;
          v[i + 2] ^= t;
          v[i] ^= t << 16;
        }
        for (int i = 0; i < 4; ++i) {  // 32-bit units between rows i and i + 4
          const uint64_t t = ((v[i] >> 32) ^ v[i + 4]) & 0x00000000ffffffffull;
          v[i + 4] ^= t;
          v[i] ^= t << 32;
        }
        for (int i = 0; i < 8; ++i) std::memcpy(data + (c0 + c + i) * rows + r0 + r, &v[i], 8);
      }
      for (; r < sh; ++r)
        for (int i = 0; i < 8; ++i) data[(c0 + c + i) * rows + r0 + r] = codes[r * ld + c + i];
    }
  }
  for (; c < w; ++c) {
    const uint8_t* src = codes + c;
    if constexpr (F == ElemFormat::e2m1) {  // r0 and sh are even (plan() demands even rows)
      uint8_t* dst = data + ((c0 + c) * rows + r0) / 2;
      for (int64_t r = 0; r < sh / 2; ++r) dst[r] = uint8_t(src[2 * r * ld] | (src[(2 * r + 1) * ld] << 4));
    } else {
      uint8_t* dst = data + (c0 + c) * rows + r0;
      for (int64_t r = 0; r < sh; ++r) dst[r] = src[r * ld];
    }
  }
}

// Quantizes the tile (input rows [r0, r0 + sh), columns [c0, c0 + w), row stride ld) in
// direction d, block row by block row.
template <ElemFormat F, In K>
void quantize_rows_by_columns(const Job& j, const DirectionPlan& d, Workspace& ws, const Elem<K>* tile, int64_t ld,
                              int64_t r0, int64_t sh, int64_t c0, int64_t w) {
  constexpr int64_t per_byte = F == ElemFormat::e2m1 ? 2 : 1;
  const bool to_codes = d.columnwise && d.transposed;
  for (int64_t s0 = 0; s0 < sh; s0 += d.bh) {
    const int64_t bhr = std::min<int64_t>(d.bh, sh - s0);
    // per-tensor scaling: one multiplier for the whole tensor, filled once per tile
    if (!j.tensor_scaled || s0 == 0) block_row_multipliers<K>(j, d, ws, tile + s0 * ld, ld, bhr, r0 + s0, c0, w);
    for (int64_t r = s0; r < s0 + bhr; ++r) {
      const Elem<K>* x = tile + r * ld;
      if (to_codes) {
        encode_columns<F, K, true>(x, ws.mult.data(), ws.codes.data() + r * j.panel_cols, w);
      } else {
        encode_columns<F, K, false>(x, ws.mult.data(), d.data + ((r0 + r) * j.x->cols + c0) / per_byte, w);
      }
    }
  }
  if (to_codes) store_transposed<F>(ws.codes.data(), j.panel_cols, sh, w, d.data, j.x->rows, r0, c0);
}

// ---- the walk over tiles ---------------------------------------------------------------------------

template <ElemFormat F, In K>
void quantize_tiles(const Job& j) {
  const Matrix& x = *j.x;
  const int64_t H = j.strip_rows, W = j.panel_cols;
  const int64_t strips = num::ceil_div(x.rows, H), panels = num::ceil_div(x.cols, W);
  const int64_t threads = threads_for(x.rows * x.cols);
  run_chunks(strips * panels, chunk_for(strips * panels, threads), threads, [&](int64_t b, int64_t e) {
    Workspace ws(j);
    for (int64_t item = b; item < e; ++item) {
      const int64_t r0 = (item / panels) * H, c0 = (item % panels) * W;
      const int64_t sh = std::min(H, x.rows - r0), w = std::min(W, x.cols - c0);
      const Elem<K>* tile = reinterpret_cast<const Elem<K>*>(row_ptr(x, r0)) + c0;
      for (const DirectionPlan& d : j.dirs) {
        if (d.blockwise()) {
          quantize_rows_blockwise<F, K>(j, d, ws, tile, x.row_stride, r0, sh, c0, w);
        } else {
          quantize_rows_by_columns<F, K>(j, d, ws, tile, x.row_stride, r0, sh, c0, w);
        }
      }
    }
  });
}

template <ElemFormat F>
void quantize_tiles(const Job& j) {
  switch (input_kind(j.x->dtype)) {
    case In::f32:
      quantize_tiles<F, In::f32>(j);
      break;
    case In::bf16:
      quantize_tiles<F, In::bf16>(j);
      break;
    case In::f16:
      quantize_tiles<F, In::f16>(j);
      break;
  }
}

}  // namespace

void quantize(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt) {
  const Matrix& x = call.x;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = out.recipe;
  float tensor_factor = 0.0f;
  const bool needs_global = rc.has_global_scale();
  if (needs_global || out.amax.data) {
    float amax = 0.0f;
    if (opt.amax_in)
      amax = *opt.amax_in;
    else if (!(opt.scale_in))
      amax = tensor_amax(x);
    else if (out.amax.data)
      amax = tensor_amax(x);
    if (out.amax.data) *static_cast<float*>(out.amax.data) = amax;
    if (rc.scheme == Scheme::fp8_tensor) {
      tensor_factor =
          opt.scale_in ? *opt.scale_in : num::fp8_tensor_scale(amax, num::max_finite(rc.elem), rc.eps, rc.pow2);
      *static_cast<float*>(out.global_scale.data) = num::div_rn(1.0f, tensor_factor);
    } else if (rc.scheme == Scheme::nvfp4) {
      tensor_factor = num::nvfp4_encode_scale(amax);
      *static_cast<float*>(out.global_scale.data) = num::nvfp4_decode_scale(tensor_factor);
    }
  }
  if (x.empty()) return;

  Job j;
  j.x = &x;
  j.rule = rc.scale_rule(tensor_factor);
  j.tensor_scaled = rc.is_tensor_scaled();
  const bool fp32_scales = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  const int br = j.tensor_scaled ? 1 : rc.block_rows;
  const int bc = j.tensor_scaled ? 1 : rc.block_cols;
  const bool transposed = rc.column_form == ColumnForm::transposed;
  if (rc.has_rowwise()) {
    j.dirs.push_back({false, false, br, bc, static_cast<uint8_t*>(out.data.data), out.scales.data, L.scales.geometry,
                      rc.scale_per_row(), br, fp32_scales});
  }
  if (rc.has_columnwise()) {
    j.dirs.push_back({true, transposed, bc, br, static_cast<uint8_t*>(out.col_data.data), out.col_scales.data,
                      L.col_scales.geometry, rc.scale_per_row(), br, fp32_scales});
  }
  // Padding must read as zero (FORMATS.md section 3); every other entry is written below.
  auto zero_padding = [](const BufferSpec& spec, void* scales) {
    const num::ScaleGeometry& g = spec.geometry;
    if (spec.present() && num::scale_storage_units(g) != g.mn * g.kb) std::memset(scales, 0, size_t(spec.bytes));
  };
  zero_padding(L.scales, out.scales.data);
  zero_padding(L.col_scales, out.col_scales.data);

  // Strips: a multiple of every block height; at least 32 rows when a transposed output is
  // written, so that each of its columns receives 32 contiguous codes (16 bytes of FP4).
  int64_t H = 1, bw_max = 2;  // FP4 panels start on even columns
  for (const auto& d : j.dirs) {
    H = std::max<int64_t>(H, d.bh);
    bw_max = std::max<int64_t>(bw_max, d.bw);
  }
  if (rc.has_columnwise() && transposed) H = std::max<int64_t>(H, 32);
  // Panels: up to 256K elements per tile (at most 1 MiB of input, which the directions after the
  // first read from L2), a multiple of every block width. Long row segments keep the hardware
  // prefetchers streaming; narrower panels measured slower.
  constexpr int64_t kTileElements = int64_t(1) << 18;
  const int64_t W =
      std::min(num::round_up(x.cols, bw_max), std::max<int64_t>(bw_max, (kTileElements / H) / bw_max * bw_max));
  j.strip_rows = H;
  j.panel_cols = W;
  j.code_tile = rc.has_columnwise() && transposed;
  switch (rc.elem) {
    case ElemFormat::e4m3fn:
      quantize_tiles<ElemFormat::e4m3fn>(j);
      break;
    case ElemFormat::e5m2:
      quantize_tiles<ElemFormat::e5m2>(j);
      break;
    default:
      quantize_tiles<ElemFormat::e2m1>(j);
      break;
  }
}

// ---- dequantize --------------------------------------------------------------------------------

namespace {

void store_span(const Matrix& y, int64_t r, const float* src) {
  auto* base = static_cast<char*>(y.data) + r * y.row_stride * (dtype_bits(y.dtype) / 8);
  switch (y.dtype) {
    case DType::float32:
      std::memcpy(base, src, size_t(y.cols) * 4);
      break;
    case DType::bfloat16: {
      auto* p = reinterpret_cast<uint16_t*>(base);
      for (int64_t c = 0; c < y.cols; ++c) p[c] = float_to_bf16(src[c]);
      break;
    }
    default: {
      auto* p = reinterpret_cast<uint16_t*>(base);
      for (int64_t c = 0; c < y.cols; ++c) p[c] = float_to_fp16(src[c]);
      break;
    }
  }
}

}  // namespace

void dequantize(const DequantizeCall& call, const QuantizedTensor& q, bool columnwise) {
  const Matrix& y = call.y;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = q.recipe;
  if (y.empty()) return;
  const bool fp4 = rc.elem == ElemFormat::e2m1;
  const auto* data = static_cast<const uint8_t*>(columnwise ? q.col_data.data : q.data.data);
  const void* scales = columnwise ? q.col_scales.data : q.scales.data;
  const num::ScaleGeometry g = columnwise ? L.col_scales.geometry : L.scales.geometry;
  // (i, k) of element (r, c) in the direction's own matrix: the transpose for same-shape columnwise
  const bool swap_ik = columnwise && rc.column_form == ColumnForm::same_shape;
  const bool fp32 = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  // Only fp8_tensor and nvfp4 have a global scale; a buffer given with another recipe is ignored.
  const bool has_global = rc.has_global_scale();
  const float global = has_global ? *static_cast<const float*>(q.global_scale.data) : 1.0f;
  const bool tensor_scaled = rc.is_tensor_scaled();
  const bool ue8m0 = rc.scale_type == ScaleType::ue8m0;
  float decoded[256];
  for (int code = 0; code < 256; ++code) decoded[code] = num::decode(uint8_t(code), rc.elem);
  auto block_scale_at = [&](int64_t i, int64_t k) {
    const int64_t mn = rc.scale_per_row() ? i : i / rc.block_rows;
    const int64_t off = num::scale_offset(g, mn, k / rc.block_cols);
    const uint32_t stored = fp32 ? static_cast<const uint32_t*>(scales)[off] : static_cast<const uint8_t*>(scales)[off];
    return num::block_decode_scale(rc.scheme, ue8m0, stored);
  };
  const int64_t threads = threads_for(y.rows * y.cols);
  run_chunks(y.rows, chunk_for(y.rows, threads), threads, [&](int64_t b, int64_t e) {
    std::vector<float> vals(size_t(y.cols)), block(size_t(y.cols), 1.0f);
    int64_t block_key = -1;  // the scale row that `block` holds
    for (int64_t r = b; r < e; ++r) {
      const uint8_t* row = data + (fp4 ? r * y.cols / 2 : r * y.cols);
      if (fp4) {
        for (int64_t c = 0; c + 1 < y.cols; c += 2) {
          vals[size_t(c)] = decoded[row[c / 2] & 0xf];
          vals[size_t(c + 1)] = decoded[row[c / 2] >> 4];
        }
      } else {
        for (int64_t c = 0; c < y.cols; ++c) vals[size_t(c)] = decoded[row[c]];
      }
      if (!tensor_scaled) {
        if (swap_ik) {  // i = c, k = r: the scales change every block_cols rows
          const int64_t key = r / rc.block_cols;
          if (key != block_key) {
            for (int64_t c = 0; c < y.cols; ++c) block[size_t(c)] = block_scale_at(c, r);
            block_key = key;
          }
        } else {  // i = r, k = c: one scale per block_cols columns
          const int64_t key = rc.scale_per_row() ? r : r / rc.block_rows;
          if (key != block_key) {
            for (int64_t c0 = 0; c0 < y.cols; c0 += rc.block_cols) {
              const float s = block_scale_at(r, c0);
              std::fill(block.begin() + c0, block.begin() + std::min<int64_t>(y.cols, c0 + rc.block_cols), s);
            }
            block_key = key;
          }
        }
      }
      for (int64_t c = 0; c < y.cols; ++c)
        vals[size_t(c)] = num::canonical_nan(num::mul_rn(num::mul_rn(vals[size_t(c)], block[size_t(c)]), global));
      store_span(y, r, vals.data());
    }
  });
}

}  // namespace mxq::cpu
