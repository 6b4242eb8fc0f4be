// The key of a specialised quantize kernel (fast.cuh) and the launch geometry it implies.
// Plain data: included by the host (dispatch, JIT cache), nvcc and NVRTC alike, so that the
// kernel, the ahead-of-time launcher and the JIT launcher agree on one definition.
#pragma once

#include "mxq/numerics/activations.h"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {

// Thread shapes of the specialised kernels (fast.cuh describes them).
enum class FastShape : int { rows = 0, colblocks = 1, two_d = 2 };

struct FastKey {
  int dtype;  // input: 0 float32, 1 float16, 2 bfloat16
  num::Scheme scheme;
  num::ElemFormat elem;
  FastShape shape;
  int g, h;  // rowwise block width (8: per-tensor, no reduction) and column / 2-D block height
  num::ScaleLayout row_layout, col_layout;
  int fuse = 0;  // fused epilogue: fuse_bits(activation, dact, dbias); 0 for a plain quantize
  // NVFP4 column blocks only (keys_column_form): the kernel for same-shape columnwise output, not
  // transposed. The transposed kernel stages its scales (fast.cuh kStagedLayout); compiled into one
  // kernel with it, the same-shape form measured 8% slower (bench/NOTES.md v20).
  bool col_same = false;
  // Per-tensor rows kernels only (one_launch_capable): the kernel that takes a small call's amax
  // itself, in one launch with the cast (fast_launch.hpp: one cluster, or the grid exchange of
  // TileParams::grid_amax).
  // Calls with the amax given, and the cast after an amax kernel, run the kernel without that code:
  // compiled in, it cost them 0.1-0.7 us (H100, bench/NOTES.md v31: fp8_tensor 1024 x 7168 with
  // the amax given 4.72 -> 4.05 us, 512 x 7168 3.20 -> 2.72).
  bool one_launch = false;
  bool operator==(const FastKey&) const = default;
};
// The flat grids of the fused column-block kernels (fast.cuh kFlatWalk, FastLaunch): the
// col_tiles x tiles_y tiles go in bands of `band` row tiles (the last one takes the rest), one band
// after another; within band k, of height h, tile u is column tile u / h and row tile k * band +
// u % h (column-major), and each of the `ctas` CTAs takes a contiguous share of the band's tiles,
// q = tiles / ctas or one more (the first tiles % ctas CTAs). With one tile each in a band, tile b
// is taken in row-major order instead (x fastest, as a 2-D grid starts them). A CTA walks one
// column tile at a time to its share's end (walk), then its share of the next band: so all CTAs
// sweep a band at a time and the tiles in flight stay within a band's rows, as fast_grid's one wave
// keeps them within a few row tiles. Flat indices: band k's tiles start at k * col_tiles * band.
// The kernel and the launcher's tests both walk it through here.
struct FlatShare {
  int first, end;
};
struct FlatStep {
  int row_tile, col_tile, stop;  // a walk: row tiles row_tile.. of col_tile, flat indices to stop
};
struct FlatGrid {
  int col_tiles, tiles_y, band, ctas;
  // floor(tiles_y / band) bands, the last one taking the rest (band to 2 * band - 1 row tiles)
  constexpr MXQ_HD int bands() const { return tiles_y >= 2 * band ? tiles_y / band : 1; }
  constexpr MXQ_HD int height(int k) const { return k == bands() - 1 ? tiles_y - k * band : band; }
  // the flat index of band k's first tile
  constexpr MXQ_HD int base(int k) const { return k * col_tiles * band; }
  // the band of flat index `flat`, and of row tile y (past the last full band: the last band)
  constexpr MXQ_HD int band_of(int flat) const { return last_at_most(flat / (col_tiles * band)); }
  constexpr MXQ_HD int band_of_row(int y) const { return last_at_most(y / band); }
  // the flat index of row tile y of column tile x in band k
  constexpr MXQ_HD int flat_of(int k, int x, int y) const { return base(k) + x * height(k) + (y - k * band); }
  // CTA b's share of band k. The r CTAs with one tile more move on by r each band, so that over
  // the bands no CTA takes more than one tile over the mean.
  constexpr MXQ_HD FlatShare share(int b, int k) const {
    const int h = height(k), tiles = col_tiles * h, q = tiles / ctas, r = tiles % ctas, first = base(k);
    if (q == 1 && r == 0) {
      const int t = first + b % col_tiles * h + b / col_tiles;
      return {t, t + 1};
    }
    // (k * r is below the tiles, 2^31: a band holds at least as many tiles as CTAs, or there is one)
    const int rot = k * r % ctas, c = b >= rot ? b - rot : b - rot + ctas;
    return {first + c * q + (c < r ? c : r), first + (c + 1) * q + (c + 1 < r ? c + 1 : r)};
  }
  // the walk from flat index `flat` (in a share ending at `end`) to the end of its column tile
  constexpr MXQ_HD FlatStep walk(int flat, int end) const {
    const int k = band_of(flat), h = height(k), u = flat - base(k), x = u / h;
    const int stop = base(k) + (x + 1) * h;
    return {k * band + u - x * h, x, end < stop ? end : stop};
  }

 private:
  constexpr MXQ_HD int last_at_most(int k) const { return k < bands() ? k : bands() - 1; }
};

// Whether the column form (transposed or same-shape) is part of a column-block key: NVFP4 only,
// so that every other recipe keeps one kernel (and its AOT entry) for both forms.
constexpr bool keys_column_form(num::Scheme s) { return s == num::Scheme::nvfp4; }

// FastKey::fuse: the activation (num::Activation, 4 bits), then dact and dbias flags. A fused
// kernel computes y = f(input) in fp32 as it loads (numerics/activations.h, the CPU reference's
// functions) and quantizes y as an fp32 input.
inline constexpr int kFuseActMask = 15, kFuseDact = 16, kFuseDbias = 32;
inline constexpr int kActivations = 10;  // num::Activation none .. reglu
inline constexpr int kFirstGated = 7;    // swiglu, geglu, reglu
constexpr int fuse_bits(int activation, bool dact, bool dbias) {
  return activation | (dact ? kFuseDact : 0) | (dbias ? kFuseDbias : 0);
}
// Whether a fused kernel transforms its input (an activation or dact): then the tile holds y as
// fp32. dbias alone quantizes the input words as loaded, like a plain kernel.
constexpr bool transforms(const FastKey& k) { return (k.fuse & (kFuseActMask | kFuseDact)) != 0; }
// The function a fused kernel evaluates per element of its activated input: the activation, a
// gated one's gate, or (dact) the derivative.
constexpr num::Activation fused_function(const FastKey& k) {
  const auto a = num::Activation(k.fuse & kFuseActMask);
  return num::is_gated(a) ? num::gate_of(a) : a;
}
// Whether a kernel of this shape evaluates the elementwise activation (a gated one's gate)
// inline: relu and srelu always, the sigmoid ones (~20 instructions per element) in the rows
// shape, whose 2-4 rows per thread leave the registers for it (the 8-row shapes spilled). The
// rest (erf, tanh) are called out of line, 8 values per call, which keeps the JIT's cold
// compile near a second (fast.cuh).
constexpr bool activation_inline(num::Activation a, FastShape shape) {
  return a == num::Activation::none || a == num::Activation::relu || a == num::Activation::srelu ||
         (shape == FastShape::rows && (a == num::Activation::silu || a == num::Activation::qgelu));
}
constexpr bool fused_activation_inline(const FastKey& k) { return activation_inline(fused_function(k), k.shape); }
// Whether a fused kernel may look that function up in a bf16 table (num::Bf16Table) instead of
// evaluating it: bf16 input and a function that costs more than the lookup's ~7 instructions per
// value (not relu or srelu, or their derivatives). The sigmoid ones (silu, qgelu, swiglu's gate,
// ~20 instructions evaluated) take it too since the lookup indexes two values at once
// (Bf16Table::pair_offsets); before that (~12 per value) the table measured no faster for them
// (sessions 15 and 17). Such a kernel always looks it up (fast.cuh transform).
constexpr bool act_table_capable(const FastKey& k) {
  const num::Activation f = fused_function(k);
  return k.dtype == 2 && transforms(k) && f != num::Activation::none && f != num::Activation::relu &&
         f != num::Activation::srelu;
}
// The dtype the tile quantizes.
constexpr int compute_dtype(const FastKey& k) { return transforms(k) ? 0 : k.dtype; }

// Whether a kernel can take a per-tensor call's amax itself, in one launch with the cast
// (FastKey::one_launch, fast_launch.hpp cluster_amax_grid): the rows kernels of fp8_tensor
// and NVFP4, not fused.
constexpr bool one_launch_capable(const FastKey& k) {
  const bool per_tensor = k.scheme == num::Scheme::fp8_tensor || k.scheme == num::Scheme::nvfp4;
  return per_tensor && k.shape == FastShape::rows && k.fuse == 0;
}
// The same kernel with the one-launch amax compiled in (valid where one_launch_capable).
constexpr FastKey one_launch_twin(FastKey k) {
  k.one_launch = true;
  return k;
}
// Such a launch is one cluster of at most kOneLaunchCtas CTAs (a non-portable size above 8),
// each walking at most kOneLaunchMaxTilesPerCta row tiles (fast_launch.hpp cluster_amax_grid):
// this one and the next, whose amax the kernel takes before it quantizes them (fast.cuh
// tile_amax_bits).
inline constexpr int kOneLaunchCtas = 16;
inline constexpr int kOneLaunchMaxTilesPerCta = 2;
// The grid exchange's words (TileParams::grid_amax, fast.cuh grid_amax_bits): one per CTA, so its
// grids (fast_launch.hpp grid_amax_grid, up to as many CTAs as SMs) have at most this many CTAs.
inline constexpr int kGridAmaxSlots = 256;

// The fast kernels index columns in 32 bits: widths up to this (the generic kernel takes wider).
constexpr int64_t kFastMaxCols = (int64_t(1) << 31) - (int64_t(1) << 16);
// ... and heights below this: the rows shape counts the rows left in 32 bits (RowsWalk), with
// room for a tile's lane offset on top.
constexpr int64_t kFastMaxRows = (int64_t(1) << 31) - (int64_t(1) << 16);

struct FastGeometry {
  int r, rl, cl, wr, wc;  // rows per thread, row / column lanes per warp, warps down / across
  int threads, tile_rows, tile_cols, max_regs, min_blocks;
  bool prefetch;  // the next row tile is loaded while this one is quantized (a second register set)
  // Row tiles in flight in shared memory instead (0: none): cp.async into this thread's ring of
  // `ring` slots of dynamic shared memory, each refilled as soon as it is read: the prefetch of the
  // 8-row shapes, which have no registers to spare for a second set, and of the fused rows kernels.
  // slot_bytes: the CTA's dynamic shared memory (0: none).
  int ring;
  int slot_bytes;
};

// Whether the kernel template supports the key (the AOT table and the JIT take only these).
constexpr bool fast_key_valid(const FastKey& k) {
  const bool g_ok = k.g == 8 || k.g == 16 || k.g == 32 || k.g == 64 || k.g == 128;
  const bool tensor = k.scheme == num::Scheme::fp8_tensor;
  if (k.dtype < 0 || k.dtype > 2 || !g_ok || (k.g == 8) != tensor) return false;
  const int act = k.fuse & kFuseActMask;
  if (k.fuse < 0 || k.fuse > (kFuseActMask | kFuseDact | kFuseDbias) || act >= kActivations) return false;
  if ((k.fuse & kFuseDact) && (act == 0 || act >= kFirstGated)) return false;  // dact: an elementwise activation
  if ((k.scheme == num::Scheme::nvfp4) != (k.elem == num::ElemFormat::e2m1) && k.scheme != num::Scheme::mx &&
      k.scheme != num::Scheme::fp8_block)
    return false;  // fp8_tensor is FP8 only, NVFP4 is E2M1 only
  if (k.col_same && (k.shape != FastShape::colblocks || !keys_column_form(k.scheme))) return false;
  if (k.one_launch && !one_launch_capable(k)) return false;
  switch (k.shape) {
    case FastShape::rows: return k.h == 1;
    case FastShape::colblocks: return (k.h == 32 && k.g <= 64) || (k.h == 16 && k.g <= 128);
    default: return !tensor && ((k.h == 16 && k.g == 16) || (k.h == 128 && k.g == 128));
  }
}

constexpr FastGeometry fast_geometry(const FastKey& k) {
  FastGeometry g{};
  const bool rows = k.shape == FastShape::rows, colblocks = k.shape == FastShape::colblocks;
  const int dtype = compute_dtype(k);
  // Fused rows kernels with two inputs (gated, dact) or dbias alone take 2 rows of 16-bit input
  // per thread, not 4: the tiles then fit 80 and 64 registers without spills (3 and 4 CTAs of
  // 256 threads per SM, against 2 at 128; session 15: mxfp8 + dbias 0.74 -> 0.92-0.97 of copy,
  // nvfp4 swiglu 0.53 -> 0.56-0.59; a single-input activation was faster with 4 rows). An
  // activation called out of line (erf, tanh) keeps 128 registers, at 80 its calls spilled, unless
  // the kernel looks it up in the bf16 table (max_regs below).
  const bool two_inputs = (k.fuse & kFuseDact) || (k.fuse & kFuseActMask) >= kFirstGated;
  const bool half_tile = k.fuse != 0 && k.dtype != 0 && (two_inputs || !transforms(k));
  g.r = rows ? (k.dtype == 0 || half_tile ? 2 : 4) : 8;  // the input's dtype: a fused tile loads the input words
  g.rl = rows ? 1 : (colblocks ? k.h / 8 : 2);
  g.cl = 32 / g.rl;
  // colblocks: 4 warps down the rows, so that a CTA's transposed output is 128 rows (one full
  // 128-byte line of FP8 codes per column) and is stored through shared memory. FP8 in 32-row
  // blocks (MXFP8) also takes 2 warps across: a 128 x 128 tile whose rows are whole 128-byte
  // lines of codes and whole 4-byte words of scales (ncu, session 7: at 128 x 64 the row+col
  // kernel sent 2x the L2 requests per byte of the rowwise one, half of them 1-byte scales,
  // and L2 ran at 89% with DRAM at 62%).
  const bool wide = colblocks && k.h == 32 && k.elem != num::ElemFormat::e2m1;
  // Fused rows kernels with half tiles: 4 warps down and 2 across, 512-column tiles. Their
  // one-wave grids give every CTA the same row tiles, so a column tile half beyond the output
  // (3584 columns, a swiglu of 7168, in 1024-column tiles) left a quarter of the CTAs half idle
  // (bench/RESULTS.md session 25, run 3, of copy at 8192 / 32768 x 7168: mxfp8 swiglu 0.72 /
  // 0.75 -> 0.79 / 0.84, nvfp4 swiglu 0.55 / 0.57 -> 0.59 / 0.64, mxfp8 + dbias 0.92 / 0.96 ->
  // 0.93 / 0.96). The single-input ones (silu, gelu: 4 rows per thread) lost 1-4% in 512
  // columns and keep 1024.
  g.wr = rows ? (half_tile ? 4 : 2) : (colblocks ? 4 : (k.h > 16 ? k.h / 16 : 1));
  g.wc = (colblocks ? (wide ? 8 : 4) : 8) / g.wr;
  g.threads = 32 * g.wr * g.wc;
  g.tile_rows = g.r * g.rl * g.wr;
  g.tile_cols = 8 * g.cl * g.wc;
  // Register budget: 64 for the rows shape (2 x 16 data words: this tile and the next); the
  // 8-row shapes hold 32 (64 for fp32) and need occupancy more than prefetch (measured: a
  // second register set at 128 registers made MXFP8 row+col and 128 x 128 slower).
  // Fused: the input words of two tiles (and of their gate / act_input halves) plus y as fp32;
  // the half tiles above in 80 (two inputs) and 64 (dbias alone). Every fused 8-row kernel,
  // dbias alone included (232 bytes of spills at 80), takes 128.
  g.max_regs = [&] {
    if (rows && !k.fuse) return 64;
    // two inputs: 80 where the function is inline (activation_inline) or looked up in the bf16
    // table (act_table_capable: only the table's misses evaluate it), 128 where a kernel without
    // the table calls it out of line
    if (rows && half_tile) return !two_inputs ? 64 : fused_activation_inline(k) || act_table_capable(k) ? 80 : 128;
    if (rows) return two_inputs ? 128 : transforms(k) ? 96 : 80;
    if (dtype == 0 || k.fuse) return 128;
    // FP4 column blocks (128 threads) from bf16: 128 registers, 4 CTAs per SM. They had 168 (3
    // CTAs, 12 warps: the staged scales once spilled below it); since the bf16 products and
    // bf16x2_round_odd_abs they fit 128 (and 96) with no spills and 0-16 more SASS instructions
    // (of 2904-5120), and these issue-bound kernels get 16 warps per SM to hide their latencies
    // with. Measured (H100, bench/RESULTS.md session 36, calls 3 and 4, same process): 2-4% faster
    // than at 168 at 8192 x 7168 (mxfp4 row+col 0.848 -> 0.862 of copy, NVFP4 same-shape 0.873 ->
    // 0.910), the same within 0.3% at 32768 rows but for NVFP4's same-shape and swizzled forms
    // (+3%); 96 registers (5 CTAs) ran as fast or up to 3% slower than 128. From f16 (no bf16
    // products) the swizzled MX and packed fp8_block kernels spill 4-8 bytes at 128: f16 keeps 168.
    return k.elem != num::ElemFormat::e2m1 ? 80 : (colblocks && dtype == 1 ? 168 : 128);
  }();
  g.min_blocks = 65536 / (g.threads * g.max_regs);
  g.prefetch = rows;
  // The ring: as many tiles as the SM's shared memory holds beside the kernel's own (the bf16
  // table, dbias sums, the row+col staging: `own`, an upper bound) at min_blocks CTAs per SM,
  // within [lo, hi]. The 8-row plain kernels keep one tile (deeper rings measured slower: MXFP4
  // row+col 0.730 -> 0.716, NVFP4 16 x 16 0.874 -> 0.815 of copy at 8192 x 7168, bench/NOTES.md
  // v13); the single-input fused rows kernels keep 4 instead of one register tile ahead (1x128
  // gelu 0.65 -> 0.73-0.78, silu +2%); the two-input ones (gated, dact) keep their register
  // prefetch (a ring measured slower: mxfp8 swiglu 0.793 -> 0.737).
  const int tile_bytes = g.threads * g.r * (k.dtype == 0 ? 32 : 16);  // one input (the ring is single-input)
  auto ring = [&](int own, int lo, int hi) {
    const int fit = (224 * 1024 / g.min_blocks - own) / tile_bytes;
    return fit < lo ? lo : (fit > hi ? hi : fit);
  };
  const int table = act_table_capable(k) ? int(sizeof(float) * num::Bf16Table::kSize) : 0;
  const int sums = (k.fuse & kFuseDbias) ? 16 * 1024 : 0;
  if (!rows && k.fuse == 0) g.ring = 1;
  if (rows && transforms(k) && !two_inputs) {
    g.ring = ring(table + sums + 2048, 2, 4);
    g.prefetch = false;
  }
  g.slot_bytes = g.ring * tile_bytes;
  return g;
}

}  // namespace mxq::cuda
