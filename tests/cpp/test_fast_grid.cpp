// The grid of the specialised quantize kernels (cuda/quantize/fast_launch.hpp), a pure function
// of the key and the shape: one CTA per row tile for the memory-bound kernels, two row tiles per
// CTA for MXFP4's rows kernel and three for the other FP4 rows and column-block kernels (two for
// tall bf16 column blocks with transposed codes and row-major scales), two
// persistent waves for NVFP4's 2-D blocks, one wave or a measured few tiles per CTA for fused
// rows kernels, and every row tile covered
// in each case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/quantize/fast_launch.hpp"
#include "mxq/numerics/activations.h"
#include "runtime/jit/compile.hpp"

namespace mxq::cuda {
namespace {

constexpr int kSms = 132, kBlocksPerSm = 4;
constexpr int64_t kH100Gbps = 3352, kH200Gbps = 4915;  // cuda::dram_gbps of an H100 SXM and an H200

FastKey rows_key(num::Scheme s, num::ElemFormat e, int g, int fuse = 0) {
  return FastKey{2, s, e, FastShape::rows, g, 1, num::ScaleLayout::row_major, num::ScaleLayout::row_major, fuse};
}

// Row tiles a CTA walks: ty, ty + grid.y, ... (fast_quantize_kernel's loop).
int64_t tiles_of_busiest_cta(const dim3& grid, int64_t tiles_y) { return (tiles_y + grid.y - 1) / grid.y; }
// A one-launch amax grid (cluster_amax_grid's and grid_amax_grid's, both one_launch_grid): a CTA
// per column tile across, no CTA row without a tile, at most max_ctas CTAs, as many CTA rows as
// that allows (or as there are tiles), each CTA at most kOneLaunchMaxTilesPerCta row tiles.
void expect_one_launch_grid(const dim3& grid, int64_t gx, int64_t tiles_y, int64_t max_ctas) {
  EXPECT_EQ(int64_t(grid.x), gx);
  EXPECT_GE(grid.y, 1u);
  EXPECT_LE(int64_t(grid.y), tiles_y);
  EXPECT_LE(int64_t(grid.x) * grid.y, max_ctas);
  EXPECT_TRUE(int64_t(grid.y) == tiles_y || int64_t(grid.x) * (grid.y + 1) > max_ctas);
  EXPECT_LE(tiles_of_busiest_cta(grid, tiles_y), kOneLaunchMaxTilesPerCta);
}

TEST(FastGrid, MemoryBoundKernelsLaunchOneCtaPerRowTile) {
  for (const FastKey& k : {rows_key(num::Scheme::fp8_block, num::ElemFormat::e4m3fn, 128),
                           rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32),
                           rows_key(num::Scheme::fp8_tensor, num::ElemFormat::e4m3fn, 8)}) {
    const FastGeometry g = fast_geometry(k);
    const dim3 grid = fast_grid(k, 8192, 7168, kSms, kBlocksPerSm);
    EXPECT_EQ(int64_t(grid.x), (7168 + g.tile_cols - 1) / g.tile_cols);
    EXPECT_EQ(int64_t(grid.y), 8192 / g.tile_rows);
    EXPECT_EQ(fast_grid(k, 1, 7168, kSms, kBlocksPerSm).y, 1u);
    // beyond 65535 row tiles grid.y stays at the limit and each CTA loops over several
    const int64_t rows = int64_t(g.tile_rows) * 70000;
    const dim3 big = fast_grid(k, rows, 7168, kSms, kBlocksPerSm);
    EXPECT_EQ(big.y, 65535u);
    EXPECT_EQ(tiles_of_busiest_cta(big, 70000), 2);
  }
}

TEST(FastGrid, Nvfp42dKernelWalksItsRowTilesOverTwoPersistentWaves) {
  const FastKey k{2, num::Scheme::nvfp4, num::ElemFormat::e2m1, FastShape::two_d, 16, 16,
                  num::ScaleLayout::row_major, num::ScaleLayout::row_major};
  ASSERT_TRUE(fast_key_valid(k));
  const FastGeometry g = fast_geometry(k);
  const int64_t tiles_y = 8192 / g.tile_rows;
  const dim3 grid = fast_grid(k, 8192, 7168, kSms, kBlocksPerSm);
  EXPECT_LE(int64_t(grid.x) * grid.y, 2 * kSms * kBlocksPerSm);
  EXPECT_GT(int64_t(grid.x) * grid.y, kSms * kBlocksPerSm);  // more than one wave
  EXPECT_GT(tiles_of_busiest_cta(grid, tiles_y), 1);            // persistent
  EXPECT_GE(int64_t(grid.y) * tiles_of_busiest_cta(grid, tiles_y), tiles_y);
}

// FP4 column blocks walk two row tiles per CTA from 16384 rows when their columnwise output is
// transposed with row-major scales from bf16 (measured faster there, fast_launch.cpp), and three
// otherwise: below 16384 rows, same-shape, swizzled scales, f16 input.
TEST(FastGrid, TallTransposedFp4ColumnBlocksWalkTwoRowTiles) {
  const int64_t cols = 7168;
  for (const auto& [scheme, h] : {std::pair{num::Scheme::mx, 32}, {num::Scheme::nvfp4, 16}, {num::Scheme::fp8_block, 32}}) {
    const FastKey k{2, scheme, num::ElemFormat::e2m1, FastShape::colblocks, h, h, num::ScaleLayout::row_major,
                    num::ScaleLayout::row_major};
    ASSERT_TRUE(fast_key_valid(k)) << runtime::jit::key_text(k);
    const FastGeometry g = fast_geometry(k);
    for (const int64_t rows : {int64_t(8192), int64_t(16383), int64_t(16384), int64_t(32768), int64_t(100003)}) {
      const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      const int64_t want = rows >= 16384 ? 2 : 3;
      EXPECT_EQ(tiles_of_busiest_cta(fast_grid(k, rows, cols, kSms, kBlocksPerSm, true), tiles_y), want)
          << runtime::jit::key_text(k) << " rows " << rows;
      EXPECT_EQ(tiles_of_busiest_cta(fast_grid(k, rows, cols, kSms, kBlocksPerSm, false), tiles_y), 3)
          << "same-shape " << runtime::jit::key_text(k) << " rows " << rows;
      // the launch keeps the choice: its long CTAs walk as many tiles
      const FastLaunch l = fast_launch_shape(k, rows, cols, kSms, kBlocksPerSm, true, false, 0);
      EXPECT_EQ(tiles_of_busiest_cta(dim3(l.grid.x, unsigned(l.long_ctas)), tiles_y - (l.grid.y - l.long_ctas)), want);
    }
    FastKey swizzled = k, f16 = k;
    swizzled.col_layout = num::ScaleLayout::swizzled_128x4;
    f16.dtype = 1;
    for (const FastKey& other : {swizzled, f16}) {
      ASSERT_TRUE(fast_key_valid(other)) << runtime::jit::key_text(other);
      const int64_t tiles_y = 32768 / fast_geometry(other).tile_rows;
      EXPECT_EQ(tiles_of_busiest_cta(fast_grid(other, 32768, cols, kSms, kBlocksPerSm, true), tiles_y), 3)
          << runtime::jit::key_text(other);
    }
  }
  // the rows kernels never look at the column form
  const FastKey nv_rows = rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16);
  EXPECT_EQ(fast_grid(nv_rows, 32768, cols, kSms, kBlocksPerSm, true).y, fast_grid(nv_rows, 32768, cols, kSms, kBlocksPerSm).y);
}

// The row tiles CTA row `cy` of a FastLaunch walks, as fast_quantize_kernel computes them.
std::vector<int64_t> walk_of(const FastLaunch& l, int64_t cy, int64_t tiles_y) {
  int64_t first = cy, step = l.grid.y, end = tiles_y;
  if (l.long_ctas > 0) {
    const int64_t shared = tiles_y - (int64_t(l.grid.y) - l.long_ctas);
    if (cy < l.long_ctas) {
      step = l.long_ctas;
      end = shared;
    } else {
      first = shared + (cy - l.long_ctas);
    }
  }
  std::vector<int64_t> t;
  for (int64_t ty = first; ty < end; ty += step) t.push_back(ty);
  return t;
}

// Where the plain FP4 kernels' CTAs walk several row tiles, the last row tiles go one per CTA to
// a wave of short CTAs (the last ones the GPU starts), and every row tile is still walked exactly
// once; fused kernels, NVFP4's 2-D blocks and one-tile grids keep fast_grid's walk.
TEST(FastGrid, MultiTileKernelsEndOnAWaveOfOneTileCtas) {
  const FastKey mx_cols{2, num::Scheme::mx, num::ElemFormat::e2m1, FastShape::colblocks, 32, 32,
                        num::ScaleLayout::row_major, num::ScaleLayout::row_major};
  const FastKey nv2d{2, num::Scheme::nvfp4, num::ElemFormat::e2m1, FastShape::two_d, 16, 16,
                     num::ScaleLayout::row_major, num::ScaleLayout::row_major};
  for (const FastKey& key : {rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32),
                             rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16),
                             rows_key(num::Scheme::fp8_block, num::ElemFormat::e2m1, 32), mx_cols}) {
    ASSERT_TRUE(fast_key_valid(key));
    const FastGeometry g = fast_geometry(key);
    for (const int64_t rows : {int64_t(4096), int64_t(8192), int64_t(32768), int64_t(g.tile_rows) * 1001 - 3}) {
      const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      const dim3 plain = fast_grid(key, rows, 7168, kSms, kBlocksPerSm);
      const FastLaunch l = fast_launch_shape(key, rows, 7168, kSms, kBlocksPerSm, false, false, 0);
      ASSERT_GT(l.long_ctas, 0) << runtime::jit::key_text(key) << " rows " << rows;
      EXPECT_EQ(l.grid.x, plain.x);
      const int64_t wave_rows = kSms * kBlocksPerSm / plain.x;
      EXPECT_EQ(int64_t(l.grid.y) - l.long_ctas, wave_rows) << "a wave of short CTAs";
      std::vector<int> seen(size_t(tiles_y), 0);
      for (int64_t cy = 0; cy < l.grid.y; ++cy) {
        const std::vector<int64_t> w = walk_of(l, cy, tiles_y);
        EXPECT_LE(int64_t(w.size()), tiles_of_busiest_cta(plain, tiles_y)) << "no CTA longer than before";
        if (cy >= l.long_ctas) {
          EXPECT_EQ(w.size(), 1u) << "short CTA " << cy;
        }
        for (const int64_t t : w) ++seen[size_t(t)];
      }
      for (int64_t t = 0; t < tiles_y; ++t) ASSERT_EQ(seen[size_t(t)], 1) << "row tile " << t << " of " << tiles_y;
    }
  }
  // one tile per CTA already, fused, NVFP4's 2-D blocks, or too few tiles for a tail: fast_grid's
  const FastKey mxfp8 = rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32);
  const FastKey fused =
      rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32, fuse_bits(int(num::Activation::silu), false, false));
  for (const FastKey& key : {mxfp8, fused, nv2d}) {
    const FastLaunch l = fast_launch_shape(key, 8192, 7168, kSms, kBlocksPerSm, false, false, 0);
    EXPECT_EQ(l.long_ctas, 0) << runtime::jit::key_text(key);
    EXPECT_EQ(l.grid.y, fast_grid(key, 8192, 7168, kSms, kBlocksPerSm).y);
  }
  EXPECT_EQ(fast_launch_shape(rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16), 64, 7168, kSms, kBlocksPerSm,
                              false, false, 0)
                .long_ctas,
            0);
}

// The FP4 rows and column-block kernels: two row tiles per CTA for MXFP4's rows kernel, three for
// the others, however many waves that makes (the last CTA may have fewer); grid.y stays within
// its limit.
// (except at decode sizes, where they fit one CTA per SM: a CTA per tile)
TEST(FastGrid, Fp4KernelsTakeTwoOrThreeRowTilesPerCta) {
  const FastKey mx_cols{2, num::Scheme::mx, num::ElemFormat::e2m1, FastShape::colblocks, 32, 32,
                        num::ScaleLayout::row_major, num::ScaleLayout::row_major};
  ASSERT_TRUE(fast_key_valid(mx_cols));
  const struct {
    FastKey key;
    int64_t per_cta;
  } cases[] = {{rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32), 2},
               {rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16), 3},
               {rows_key(num::Scheme::fp8_block, num::ElemFormat::e2m1, 32), 3},
               {mx_cols, 3}};
  for (const auto& c : cases) {
    const FastGeometry g = fast_geometry(c.key);
    for (const int64_t rows : {int64_t(8192), int64_t(32768), int64_t(g.tile_rows) * 1001 - 3}) {
      const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      const dim3 grid = fast_grid(c.key, rows, 7168, kSms, kBlocksPerSm);
      EXPECT_EQ(int64_t(grid.x), (7168 + g.tile_cols - 1) / g.tile_cols);
      EXPECT_EQ(int64_t(grid.y), (tiles_y + c.per_cta - 1) / c.per_cta) << rows;
      EXPECT_EQ(tiles_of_busiest_cta(grid, tiles_y), c.per_cta) << rows;
    }
    EXPECT_EQ(fast_grid(c.key, 8, 7168, kSms, kBlocksPerSm).y, 1u);
    // decode sizes: where a CTA per row tile is at most one CTA per SM, a CTA per tile (a 7 x 18
    // grid of one-tile CTAs is 126 CTAs; one more CTA row of 7 would be 133)
    const int64_t gx = (7168 + g.tile_cols - 1) / g.tile_cols;
    const int64_t fit = kSms / gx;
    EXPECT_EQ(int64_t(fast_grid(c.key, fit * g.tile_rows, 7168, kSms, kBlocksPerSm).y), fit);
    EXPECT_EQ(int64_t(fast_grid(c.key, fit * g.tile_rows - 1, 7168, kSms, kBlocksPerSm).y), fit);
    EXPECT_EQ(int64_t(fast_grid(c.key, (fit + 1) * g.tile_rows, 7168, kSms, kBlocksPerSm).y),
              (fit + 1 + c.per_cta - 1) / c.per_cta);
    const dim3 big = fast_grid(c.key, int64_t(g.tile_rows) * 200000, 64, kSms, kBlocksPerSm);
    EXPECT_EQ(big.y, 65535u);
    EXPECT_EQ(tiles_of_busiest_cta(big, 200000), (200000 + 65534) / 65535);
  }
  // fused FP4 kernels keep their one wave
  const FastKey fused =
      rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32, fuse_bits(int(num::Activation::silu), false, false));
  ASSERT_TRUE(fast_key_valid(fused));
  const dim3 one = fast_grid(fused, 8192, 7168, kSms, kBlocksPerSm);
  EXPECT_LE(int64_t(one.x) * one.y, kSms * kBlocksPerSm);
}

// Fused rows kernels (fast_launch.cpp fused_rows_grid): from bf16 with FP8 codes, two row tiles per
// CTA where the kernel prefetches a register set (two inputs, or dbias alone; a tile each at decode
// sizes) on a device of the H100's DRAM bandwidth, one wave on the H200's; where it rings tiles through shared memory
// (one input), four waves with no CTA over four row tiles (with dbias, no cap); FP4 codes and other input dtypes keep
// one wave.
TEST(FastGrid, FusedRowsKernelsTakeTheirMeasuredGrid) {
  using A = num::Activation;
  const auto covers = [](const dim3& grid, int64_t tiles_y) {
    return int64_t(grid.y) * tiles_of_busiest_cta(grid, tiles_y) >= tiles_y;
  };
  for (const int64_t rows : {int64_t(8192), int64_t(32768), int64_t(60001)}) {
    // two inputs (swiglu; dact), dbias alone: two tiles each
    for (const int fuse : {fuse_bits(int(A::swiglu), false, false), fuse_bits(int(A::gelu), true, true),
                           fuse_bits(int(A::none), false, true)}) {
      const FastKey k = rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32, fuse);
      ASSERT_TRUE(fast_key_valid(k));
      const FastGeometry g = fast_geometry(k);
      ASSERT_EQ(g.ring, 0);
      const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      const dim3 grid = fast_grid(k, rows, 7168, kSms, g.min_blocks, false, kH100Gbps);
      EXPECT_EQ(tiles_of_busiest_cta(grid, tiles_y), 2) << rows << " fuse " << fuse;
      EXPECT_TRUE(covers(grid, tiles_y));
      // an unknown bandwidth: as the H100; an H200's: one wave of CTAs that each walk many tiles
      const dim3 unknown = fast_grid(k, rows, 7168, kSms, g.min_blocks);
      EXPECT_EQ(unknown.x * unknown.y, grid.x * grid.y) << rows << " fuse " << fuse;
      const dim3 wide = fast_grid(k, rows, 7168, kSms, g.min_blocks, false, kH200Gbps);
      EXPECT_LE(int64_t(wide.x) * wide.y, int64_t(kSms) * g.min_blocks) << rows << " fuse " << fuse;
      EXPECT_GE(tiles_of_busiest_cta(wide, tiles_y), rows / g.tile_rows * 7168 / g.tile_cols / (kSms * g.min_blocks))
          << rows << " fuse " << fuse;
      EXPECT_TRUE(covers(wide, tiles_y));
    }
    // one input (silu, 1x128 gelu): four waves of CTAs that each walk several tiles, enough for the table
    for (const FastKey& k : {rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32, fuse_bits(int(A::silu), false, true)),
                             FastKey{2, num::Scheme::fp8_block, num::ElemFormat::e4m3fn, FastShape::rows, 128, 1,
                                     num::ScaleLayout::mn_major_tma, num::ScaleLayout::row_major,
                                     fuse_bits(int(A::gelu), false, false)}}) {
      ASSERT_TRUE(fast_key_valid(k));
      const FastGeometry g = fast_geometry(k);
      ASSERT_GT(g.ring, 0);
      const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      const int bps = g.min_blocks;
      const dim3 grid = fast_grid(k, rows, 7168, kSms, bps);
      EXPECT_TRUE(covers(grid, tiles_y));
      if (k.fuse & kFuseDbias) {  // dbias (published per CTA): the four waves, 7+ tiles per CTA
        EXPECT_GT(int64_t(grid.x) * grid.y, 3 * kSms * bps) << rows;
        EXPECT_LE(int64_t(grid.x) * grid.y, 4 * kSms * bps) << rows;
        EXPECT_GE(tiles_of_busiest_cta(grid, tiles_y), 7) << rows;
      } else {  // four waves would give these heights 7+ tiles per CTA: four each, more CTAs
        EXPECT_EQ(tiles_of_busiest_cta(grid, tiles_y), 4) << rows;
        EXPECT_EQ(int64_t(grid.y), (tiles_y + 3) / 4) << rows;
        EXPECT_GT(int64_t(grid.x) * grid.y, 4 * kSms * bps) << rows;
      }
    }
  }
  // the ring kernels where four waves give at most four tiles per CTA: the four waves (1024 x 7168:
  // 128 row tiles, a CTA each; 16 x 7168: 2)
  {
    const FastKey k{2, num::Scheme::fp8_block, num::ElemFormat::e4m3fn, FastShape::rows, 128, 1,
                    num::ScaleLayout::mn_major_tma, num::ScaleLayout::row_major, fuse_bits(int(A::gelu), false, false)};
    const FastGeometry g = fast_geometry(k);
    for (const int64_t rows : {int64_t(16), int64_t(1024)}) {
      const dim3 grid = fast_grid(k, rows, 7168, kSms, g.min_blocks);
      EXPECT_EQ(tiles_of_busiest_cta(grid, rows / g.tile_rows), 1) << rows;
      EXPECT_EQ(int64_t(grid.y), rows / g.tile_rows) << rows;
    }
  }
  // decode sizes (no more tiles than slots): a tile per CTA, not two in turn
  for (const int64_t rows : {int64_t(1), int64_t(16), int64_t(128)}) {
    const FastKey k = rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32,
                               fuse_bits(int(A::swiglu), false, false));
    const FastGeometry g = fast_geometry(k);
    const int64_t tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
    const dim3 grid = fast_grid(k, rows, 3584, kSms, g.min_blocks);
    EXPECT_EQ(tiles_of_busiest_cta(grid, tiles_y), 1) << rows;
    EXPECT_EQ(int64_t(grid.y), tiles_y) << rows;
  }
  // FP4 codes, and f16 input: one wave
  FastKey f16 = rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32, fuse_bits(int(A::swiglu), false, false));
  f16.dtype = 1;
  for (const FastKey& k : {rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16, fuse_bits(int(A::swiglu), false, false)),
                           rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32, fuse_bits(int(A::silu), false, true)), f16}) {
    ASSERT_TRUE(fast_key_valid(k));
    const FastGeometry g = fast_geometry(k);
    const int64_t tiles_y = 8192 / g.tile_rows;
    const dim3 grid = fast_grid(k, 8192, 7168, kSms, g.min_blocks);
    EXPECT_LE(int64_t(grid.x) * grid.y, kSms * g.min_blocks);
    EXPECT_GT(int64_t(grid.x) * grid.y, kSms * g.min_blocks / 2);
    EXPECT_TRUE(covers(grid, tiles_y));
  }
}

// The premise of the GPU tests GpuQuantize.BitExactTallShapesWalkManyTiles and
// GpuFused.TallShapesWalkManyTiles: at their shapes every persistent rows grid (FP4, fused)
// leaves each CTA several row tiles to walk (RowsWalk's pointer steps), even at the most CTAs
// per SM the thread limit allows (the measured occupancy can only be lower).
TEST(FastGrid, TallTestShapesMakeEveryCtaWalkSeveralTiles) {
  struct Case {
    FastKey key;
    int64_t rows, cols;
  };
  FastKey nvfp4_f32 = rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16);
  nvfp4_f32.dtype = 0;
  const Case cases[] = {
      {rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32), 100003, 64},
      {rows_key(num::Scheme::nvfp4, num::ElemFormat::e2m1, 16), 100003, 64},
      {rows_key(num::Scheme::fp8_block, num::ElemFormat::e2m1, 32), 100003, 64},
      {FastKey{2, num::Scheme::nvfp4, num::ElemFormat::e2m1, FastShape::two_d, 16, 16, num::ScaleLayout::row_major,
               num::ScaleLayout::row_major},
       100003, 64},
      {FastKey{2, num::Scheme::mx, num::ElemFormat::e2m1, FastShape::colblocks, 32, 32, num::ScaleLayout::row_major,
               num::ScaleLayout::row_major},
       100003, 64},
      {nvfp4_f32, 50021, 32},
      {rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32, fuse_bits(int(num::Activation::swiglu), false, false)),
       60001, 64},
      {rows_key(num::Scheme::fp8_block, num::ElemFormat::e4m3fn, 128, fuse_bits(int(num::Activation::gelu), true, true)),
       60001, 128},
      {rows_key(num::Scheme::mx, num::ElemFormat::e2m1, 32, fuse_bits(int(num::Activation::silu), false, true)), 60001,
       64},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(fast_key_valid(c.key));
    const FastGeometry g = fast_geometry(c.key);
    const int64_t tiles_y = (c.rows + g.tile_rows - 1) / g.tile_rows;
    const dim3 grid = fast_grid(c.key, c.rows, c.cols, kSms, 2048 / g.threads);
    EXPECT_GE(tiles_of_busiest_cta(grid, tiles_y), 2) << "shape " << int(c.key.shape) << " elem " << int(c.key.elem);
    // the plain ones end on one-tile CTAs (FastLaunch) at the occupancy their register budget
    // gives, which the GPU test then covers too
    if (!c.key.fuse && c.key.shape != FastShape::two_d) {
      EXPECT_GT(fast_launch_shape(c.key, c.rows, c.cols, kSms, g.min_blocks, false, false, 0).long_ctas, 0)
          << runtime::jit::key_text(c.key);
    }
    // and a partial last tile
    EXPECT_NE(c.rows % g.tile_rows, 0);
  }
}

// The bf16 activation table (fast.cuh ActTable): which keys look their function up, and the fused
// 8-row shapes' grid: one wave where each CTA then fills the table once for at least twice its
// entries of elements, else a CTA per tile.
TEST(FastGrid, FusedRowColShapesTakeOneWaveWhereTheTablePays) {
  using A = num::Activation;
  const auto key = [](FastShape shape, int dtype, A a, bool dact) {
    return FastKey{dtype, num::Scheme::mx, num::ElemFormat::e4m3fn, shape, 32, shape == FastShape::rows ? 1 : 32,
                   num::ScaleLayout::row_major, num::ScaleLayout::row_major, fuse_bits(int(a), dact, true)};
  };
  const FastKey dgelu = key(FastShape::colblocks, 2, A::gelu, true);
  ASSERT_TRUE(fast_key_valid(dgelu));
  EXPECT_TRUE(act_table_capable(dgelu));
  EXPECT_TRUE(act_table_capable(key(FastShape::colblocks, 2, A::swiglu, false)));
  EXPECT_TRUE(act_table_capable(key(FastShape::rows, 2, A::geglu, false)));
  EXPECT_TRUE(act_table_capable(key(FastShape::rows, 2, A::gelu_tanh, true)));
  EXPECT_TRUE(act_table_capable(key(FastShape::rows, 2, A::swiglu, false)));  // the sigmoid ones too
  EXPECT_TRUE(act_table_capable(key(FastShape::rows, 2, A::silu, true)));
  EXPECT_TRUE(act_table_capable(key(FastShape::rows, 2, A::qgelu, false)));
  EXPECT_FALSE(act_table_capable(key(FastShape::rows, 1, A::silu, false)));  // fp16 input
  EXPECT_FALSE(act_table_capable(key(FastShape::rows, 2, A::srelu, false)));
  EXPECT_FALSE(act_table_capable(key(FastShape::colblocks, 2, A::relu, true)));
  EXPECT_FALSE(act_table_capable(key(FastShape::colblocks, 2, A::reglu, false)));
  EXPECT_FALSE(act_table_capable(key(FastShape::colblocks, 1, A::gelu, false)));  // fp16 input
  EXPECT_FALSE(act_table_capable(key(FastShape::colblocks, 2, A::none, false)));  // dbias alone

  const FastGeometry g = fast_geometry(dgelu);
  const int bps = 2;
  // 8192 x 7168: one wave, every CTA with at least twice the table's entries, and the table on
  const dim3 big = fast_grid(dgelu, 8192, 7168, kSms, bps);
  EXPECT_LE(int64_t(big.x) * big.y, kSms * bps);
  EXPECT_GE(int64_t(big.y) * tiles_of_busiest_cta(big, 8192 / g.tile_rows), 8192 / g.tile_rows);
  EXPECT_TRUE(act_table_fill_pays(8192, 7168, big));
  EXPECT_LT(big.y, 8192u / unsigned(g.tile_rows));  // not a CTA per tile
  // 256 x 7168: two row tiles, a CTA each, which still fills the table (a full tile of
  // 128 x 128 is twice its entries)
  const dim3 small = fast_grid(dgelu, 256, 7168, kSms, bps);
  EXPECT_EQ(int64_t(small.y), 256 / g.tile_rows);
  EXPECT_TRUE(act_table_fill_pays(256, 7168, small));
  // 8192 x 64: half-width tiles, too few elements per CTA to fill the table once per CTA of a
  // wave: a CTA per tile (which copies it too)
  const dim3 narrow = fast_grid(dgelu, 8192, 64, kSms, bps);
  EXPECT_EQ(int64_t(narrow.x) * narrow.y, 8192 / g.tile_rows);
  EXPECT_FALSE(act_table_fill_pays(8192, 64, narrow));
  // the same shape without a table-capable function: a CTA per tile
  const FastKey relu = key(FastShape::colblocks, 2, A::relu, true);
  EXPECT_EQ(int64_t(fast_grid(relu, 8192, 7168, kSms, bps).y), 8192 / g.tile_rows);
}

// Fused column-block kernels always launch flat (fast.cuh kFlatWalk): one CTA per tile where
// fast_grid gives a CTA per tile, else a CTA per slot of the wave (fast_grid's one wave leaves
// slots empty where the column tiles do not divide them: 56 column tiles of 7168 fill 224 of 264)
// so long as the table still pays, walking bands of at most 8192 rows (kFlatBandRows); the shares
// cover every tile once, stay in their bands, are never empty nor more than one tile over the
// mean, and some cross into the next column tile.
TEST(FastGrid, FusedRowColKernelsLaunchFlat) {
  const FastKey dgelu{2, num::Scheme::mx, num::ElemFormat::e4m3fn, FastShape::colblocks, 32, 32,
                      num::ScaleLayout::row_major, num::ScaleLayout::row_major,
                      fuse_bits(int(num::Activation::gelu), true, true)};
  ASSERT_TRUE(fast_key_valid(dgelu));
  const FastGeometry g = fast_geometry(dgelu);
  struct Case {
    int64_t rows, cols;
    int bps;
    int64_t ctas;  // expected; 0: the tile count
    int band;      // expected row tiles per band; 0: all of them
  };
  // 32768 x 7168: 4 bands of 64 row tiles (8192 rows); 40000 x 7168: 313 row tiles, 4 bands of 78
  // (the last 79); 30001 x 600: 235 row tiles in 5 column tiles, bands of at least 4 x 264 / 5 = 212
  // row tiles: one; 70001 x 600: 547, two bands of 273 (the last 274); 60001 x 128: one band
  for (const Case c : {Case{8192, 7168, 2, 264, 0}, {32768, 7168, 2, 264, 64}, {30001, 600, 2, 264, 0},
                       {70001, 600, 2, 264, 273}, {30001, 600, 3, 396, 0}, {1100, 7168, 2, 264, 0},
                       {60001, 128, 2, 264, 0}, {8192, 128 * 66, 2, 264, 0}, {40000, 7168, 2, 264, 78},
                       {256, 7168, 2, 0, 0}, {300, 1024, 2, 0, 0}, {8192, 64, 2, 0, 0}}) {
    const int64_t gx = (c.cols + g.tile_cols - 1) / g.tile_cols, tiles_y = (c.rows + g.tile_rows - 1) / g.tile_rows;
    const int64_t total = gx * tiles_y, want = c.ctas ? c.ctas : total;
    const FastLaunch l = fast_launch_shape(dgelu, c.rows, c.cols, kSms, c.bps, true, false, 0);
    const dim3 two_d = fast_grid(dgelu, c.rows, c.cols, kSms, c.bps, true);
    EXPECT_EQ(l.flat_col_tiles, gx) << c.rows << " x " << c.cols;
    EXPECT_EQ(int64_t(l.grid.x), want) << c.rows << " x " << c.cols;
    EXPECT_EQ(l.grid.y, 1u);
    EXPECT_EQ(l.long_ctas, 0);
    EXPECT_GE(int64_t(l.grid.x), int64_t(two_d.x) * two_d.y) << "no fewer CTAs than fast_grid's";
    EXPECT_EQ(act_table_fill_pays(c.rows, c.cols, l.grid), act_table_fill_pays(c.rows, c.cols, two_d))
        << c.rows << " x " << c.cols << ": a CTA per slot exactly where fast_grid gives one wave";
    EXPECT_EQ(l.flat_band, c.band ? c.band : tiles_y) << c.rows << " x " << c.cols;
    // every CTA's walk as the kernel takes it (its share of each band, one column tile at a time
    // to the share's end): each tile exactly once, no CTA idle, none more than one tile over the
    // mean, and every band's tiles in that band's rows
    const int64_t n = l.grid.x;
    const FlatGrid fg{l.flat_col_tiles, int(tiles_y), l.flat_band, int(n)};
    std::vector<int> seen(size_t(total), 0);
    int64_t crossing = 0;
    for (int64_t b = 0; b < n; ++b) {
      int walks = 0, tiles = 0;
      for (int k = 0; k < fg.bands(); ++k) {
        const FlatShare sh = fg.share(int(b), k);
        for (int flat = sh.first; flat < sh.end; ++walks) {
          const FlatStep w = fg.walk(flat, sh.end);
          ASSERT_GT(w.stop, flat) << "CTA " << b;
          ASSERT_LT(w.col_tile, gx);
          ASSERT_GE(w.row_tile, k * fg.band) << "CTA " << b << " band " << k;
          ASSERT_LE(w.row_tile + (w.stop - flat), k + 1 == fg.bands() ? tiles_y : (k + 1) * int64_t(fg.band));
          for (int t = flat; t < w.stop; ++t) {
            // flat index t: band k, column tile w.col_tile, row tile w.row_tile + (t - flat)
            const int64_t row = w.row_tile + (t - flat), band_h = fg.height(k);
            const int64_t at = int64_t(k) * gx * fg.band + int64_t(w.col_tile) * band_h + (row - int64_t(k) * fg.band);
            ASSERT_EQ(at, t);
            ++seen[size_t(t)];
          }
          // the kernel finds where the walk ended from the row tile it advanced to (fast.cuh)
          const int y = w.row_tile + (w.stop - flat);
          ASSERT_EQ(fg.band_of_row(y - 1), k);
          ASSERT_EQ(fg.flat_of(k, w.col_tile, y), w.stop) << "CTA " << b;
          tiles += w.stop - flat;
          flat = w.stop;
        }
      }
      ASSERT_GT(tiles, 0) << "CTA " << b << " idle";
      ASSERT_LE(tiles, (total + n - 1) / n + 1) << "CTA " << b;
      crossing += walks > fg.bands();
    }
    for (int64_t t = 0; t < total; ++t) ASSERT_EQ(seen[size_t(t)], 1) << "tile " << t << " of " << total;
    if (want == total) {  // a tile each, in row-major order: CTA b's tile is column b % gx, row b / gx
      if (gx > 1) {
        EXPECT_EQ(fg.share(1, 0).first, tiles_y) << "CTA 1 takes column tile 1's first row tile";
      }
      continue;
    }
    if (c.cols == 600 || c.rows == 1100) {  // column tiles that divide neither wave
      EXPECT_GT(crossing, 0) << "some CTAs walk two column tiles in a band (tests/gpu GpuFused.TallShapesWalkManyTiles)";
    }
  }
}

// The per-tensor recipes' one launch (cluster_amax_grid): the rows kernels of fp8_tensor and
// NVFP4, not fused, over at most kOneLaunchMaxElements elements and kOneLaunchMaxColTiles column
// tiles; the grid is then one cluster of at most kOneLaunchCtas CTAs that covers every column
// tile and no more row tiles than there are, and fast_launch_shape launches that grid as its
// cluster.
TEST(FastGrid, SmallPerTensorCallsAreOneClusterOfAtMost16Ctas) {
  using S = num::Scheme;
  using E = num::ElemFormat;
  const FastKey fp8 = rows_key(S::fp8_tensor, E::e4m3fn, 8), nvfp4 = rows_key(S::nvfp4, E::e2m1, 16);
  FastKey nvfp4_swizzled = nvfp4;
  nvfp4_swizzled.row_layout = num::ScaleLayout::swizzled_128x4;
  FastKey fp8_f32 = fp8;
  fp8_f32.dtype = 0;
  for (const FastKey& k : {fp8, nvfp4, nvfp4_swizzled, fp8_f32}) {
    ASSERT_TRUE(one_launch_capable(k));
    const FastGeometry g = fast_geometry(k);
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 8}, {1, 7168}, {3, 40}, {16, 7168}, {127, 136}, {1, 8 * 1024}, {kOneLaunchMaxElements / 7168, 7168},
             {197, 1024}}) {
      // fp32's 4-row tiles: 32 x 7168 and 197 x 1024 would give a CTA 4 tiles (below)
      if (k.dtype == 0 && (rows == kOneLaunchMaxElements / 7168 || rows == 197)) continue;
      const auto grid = cluster_amax_grid(k, rows, cols);
      ASSERT_TRUE(grid.has_value()) << rows << "x" << cols;
      const int64_t gx = (cols + g.tile_cols - 1) / g.tile_cols, tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
      expect_one_launch_grid(*grid, gx, tiles_y, kOneLaunchCtas);
      const FastLaunch l = fast_launch_shape(one_launch_twin(k), rows, cols, kSms, kBlocksPerSm, false, false, 0);
      EXPECT_EQ(l.grid.x, grid->x);
      EXPECT_EQ(l.grid.y, grid->y);
      EXPECT_EQ(l.cluster.x, grid->x);
      EXPECT_EQ(l.cluster.y, grid->y);
      EXPECT_EQ(l.long_ctas, 0);
    }
    // beyond the element cap, or more than 8 column tiles: the amax kernel, then the cast
    EXPECT_FALSE(cluster_amax_grid(k, kOneLaunchMaxElements / 7168 + 1, 7168).has_value());
    EXPECT_FALSE(cluster_amax_grid(k, 1, int64_t(kOneLaunchMaxColTiles) * g.tile_cols + 8).has_value());
    EXPECT_FALSE(cluster_amax_grid(k, 0, 7168).has_value());
    EXPECT_FALSE(cluster_amax_grid(k, 3, 33).has_value());  // not whole 8-element chunks
    // narrow and tall: more than kOneLaunchMaxTilesPerCta row tiles for each of the 16 CTAs
    EXPECT_FALSE(cluster_amax_grid(k, 16 * kOneLaunchMaxTilesPerCta * g.tile_rows + 1, 128).has_value());
    EXPECT_TRUE(cluster_amax_grid(k, 16 * kOneLaunchMaxTilesPerCta * g.tile_rows, 128).has_value());
    EXPECT_FALSE(cluster_amax_grid(k, 28672, 8).has_value());
    // two row tiles per CTA at most: the two the kernel's amax pass loads (fast.cuh)
    EXPECT_EQ(cluster_amax_grid(k, 32, 7168).has_value(), g.tile_rows >= 8);  // 4 x 7 tiles of 16-bit input
    EXPECT_EQ(cluster_amax_grid(k, 264, 512).has_value(), false);             // 33 x 1 tiles for 16 CTAs
    EXPECT_EQ(fast_launch_shape(k, 4096, 7168, kSms, kBlocksPerSm, false, false, 0).cluster.x,
              0u);  // no cluster otherwise
    // the grid follows the kernel: one cluster for the twin keyed one_launch, none without it
    EXPECT_TRUE(fast_key_valid(one_launch_twin(k)));
    EXPECT_EQ(fast_launch_shape(k, 16, 7168, kSms, kBlocksPerSm, false, false, 0).cluster.x, 0u);
    EXPECT_GT(fast_launch_shape(one_launch_twin(k), 16, 7168, kSms, kBlocksPerSm, false, false, 0).cluster.x, 0u);
  }
  // no other kernel has the one-launch code
  EXPECT_FALSE(fast_key_valid(one_launch_twin(rows_key(S::mx, E::e4m3fn, 32))));
  EXPECT_FALSE(fast_key_valid(
      one_launch_twin(rows_key(S::fp8_tensor, E::e4m3fn, 8, fuse_bits(int(num::Activation::silu), false, false)))));
  // other recipes, shapes and fused kernels take no one-launch amax
  EXPECT_FALSE(cluster_amax_grid(rows_key(S::mx, E::e4m3fn, 32), 1, 7168).has_value());
  EXPECT_FALSE(cluster_amax_grid(rows_key(S::fp8_block, E::e4m3fn, 128), 1, 7168).has_value());
  const FastKey fused = rows_key(S::fp8_tensor, E::e4m3fn, 8, fuse_bits(int(num::Activation::silu), false, false));
  EXPECT_FALSE(cluster_amax_grid(fused, 1, 7168).has_value());
  FastKey cols = fp8;
  cols.shape = FastShape::colblocks;
  cols.h = 32;
  EXPECT_FALSE(cluster_amax_grid(cols, 64, 7168).has_value());
  const FastKey two_d{2, S::nvfp4, E::e2m1, FastShape::two_d, 16, 16, num::ScaleLayout::row_major,
                      num::ScaleLayout::row_major};
  EXPECT_FALSE(cluster_amax_grid(two_d, 16, 7168).has_value());
}

// The grid exchange (grid_amax_grid): the same kernels over at most kGridAmaxMaxElements elements,
// at most as many CTAs as SMs and kGridAmaxSlots (the exchange's words, one per CTA), each CTA at most
// kOneLaunchMaxTilesPerCta row tiles, every column tile covered and as many CTA rows as the SMs allow;
// fast_launch_shape launches it cooperatively, without a cluster.
TEST(FastGrid, GridExchangeHoldsACtaPerSmAndWordAtMostAndTwoTilesEach) {
  using S = num::Scheme;
  using E = num::ElemFormat;
  const FastKey fp8 = rows_key(S::fp8_tensor, E::e4m3fn, 8), nvfp4 = rows_key(S::nvfp4, E::e2m1, 16);
  FastKey fp8_f32 = fp8;
  fp8_f32.dtype = 0;
  for (const FastKey& k : {fp8, nvfp4, fp8_f32}) {
    const FastGeometry g = fast_geometry(k);
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 8}, {33, 7168}, {128, 7168}, {1, 8 * 1024 + 8}, {264, 512}, {100, 4096}, {7, 136 * 1024}}) {
      const auto grid = grid_amax_grid(k, rows, cols, kSms);
      const int64_t gx = (cols + g.tile_cols - 1) / g.tile_cols, tiles_y = (rows + g.tile_rows - 1) / g.tile_rows;
      if (gx > kSms) {  // more column tiles than SMs
        EXPECT_FALSE(grid.has_value()) << rows << "x" << cols;
        continue;
      }
      ASSERT_TRUE(grid.has_value()) << rows << "x" << cols;
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
      expect_one_launch_grid(*grid, gx, tiles_y, kSms);
      const FastLaunch l = fast_launch_shape(one_launch_twin(k), rows, cols, kSms, kBlocksPerSm, false, true, 0);
      EXPECT_EQ(l.grid.x, grid->x);
      EXPECT_EQ(l.grid.y, grid->y);
      EXPECT_EQ(l.cluster.x, 0u);
      EXPECT_EQ(l.long_ctas, 0);
      EXPECT_TRUE(l.cooperative);
    }
    // 128 x 7168 of 16-bit input: 16 x 7 tiles, a CTA each; 256 rows: 32 tiles down over 18 CTA rows
    if (k.dtype != 0) {
      EXPECT_EQ(grid_amax_grid(k, 128, 7168, kSms).value().y, 16u);
      EXPECT_EQ(grid_amax_grid(k, 256, 7168, kSms).value().y, unsigned(kSms / 7));
      EXPECT_FALSE(grid_amax_grid(k, 300, 7168, kSms).has_value());  // 38 tiles down for 18 CTA rows
    }
    EXPECT_FALSE(grid_amax_grid(k, 0, 7168, kSms).has_value());
    EXPECT_FALSE(grid_amax_grid(k, 3, 33, kSms).has_value());                            // not whole 8-element chunks
    EXPECT_FALSE(grid_amax_grid(k, kGridAmaxMaxElements / 8 + 1, 8, kSms).has_value());  // past the element cap
    EXPECT_FALSE(grid_amax_grid(k, 1, 7168, 0).has_value());
    // a GPU with more SMs than the exchange has words: the grid keeps to the words
    for (const int sms : {kGridAmaxSlots - 1, kGridAmaxSlots, kGridAmaxSlots + 1, 2 * kGridAmaxSlots}) {
      SCOPED_TRACE("sms " + std::to_string(sms));
      const int64_t tile_rows = fast_geometry(k).tile_rows;
      const int64_t rows = 2 * int64_t(sms) * tile_rows, cols = 8;  // one column tile of 2 * sms row tiles
      const auto grid = grid_amax_grid(k, rows, cols, sms);
      if (sms > kGridAmaxSlots) {  // 2 * sms tiles need more than kGridAmaxSlots CTAs of two tiles
        EXPECT_FALSE(grid.has_value());
        EXPECT_TRUE(grid_amax_grid(k, 2 * int64_t(kGridAmaxSlots) * tile_rows, cols, sms).has_value());
      } else {
        ASSERT_TRUE(grid.has_value());
        expect_one_launch_grid(*grid, 1, 2 * int64_t(sms), sms);
      }
      if (grid) {
        EXPECT_LE(int64_t(grid->x) * grid->y, kGridAmaxSlots);
      }
      if (const auto all = grid_amax_grid(k, 2 * int64_t(kGridAmaxSlots) * tile_rows, cols, sms)) {
        EXPECT_LE(int64_t(all->x) * all->y, std::min(sms, kGridAmaxSlots));
      }
    }
    EXPECT_FALSE(fast_launch_shape(k, 4096, 7168, kSms, kBlocksPerSm, false, false, 0).cooperative);
  }
  EXPECT_FALSE(grid_amax_grid(rows_key(S::mx, E::e4m3fn, 32), 128, 7168, kSms).has_value());
  const FastKey fused = rows_key(S::fp8_tensor, E::e4m3fn, 8, fuse_bits(int(num::Activation::silu), false, false));
  EXPECT_FALSE(grid_amax_grid(fused, 128, 7168, kSms).has_value());
}

// The cp.async ring (FastGeometry::ring): the single-input fused rows kernels keep 2-4 row tiles
// in flight and no second register set; the two-input ones (gated, dact) and the plain rows
// kernels their register prefetch; the 8-row plain kernels one tile; the fused 8-row none.
TEST(FastGrid, RingSizes) {
  using A = num::Activation;
  using L = num::ScaleLayout;
  const auto fused = [](A a, bool dact, bool dbias) {
    return FastKey{2, num::Scheme::mx, num::ElemFormat::e4m3fn, FastShape::rows, 32, 1, L::row_major, L::row_major,
                   fuse_bits(int(a), dact, dbias)};
  };
  for (const FastKey& k : {fused(A::silu, false, false), fused(A::gelu, false, false), fused(A::gelu, false, true)}) {
    const FastGeometry g = fast_geometry(k);
    EXPECT_GE(g.ring, 2);
    EXPECT_LE(g.ring, 4);
    EXPECT_FALSE(g.prefetch);
    EXPECT_EQ(g.slot_bytes, g.ring * g.threads * g.r * 16);
    // beside the table and the dbias sums the CTAs of min_blocks fit the SM's 228 KB
    const int own = (act_table_capable(k) ? 32768 : 0) + ((k.fuse & kFuseDbias) ? 16384 : 0);
    EXPECT_LE(g.min_blocks * (g.slot_bytes + own + 1024), 228 * 1024);
  }
  EXPECT_EQ(fast_geometry(fused(A::silu, false, false)).ring, 4);
  EXPECT_EQ(fast_geometry(fused(A::gelu, false, false)).ring, 4);
  for (const FastKey& k : {fused(A::swiglu, false, false), fused(A::gelu, true, true), fused(A::none, false, true),
                           rows_key(num::Scheme::mx, num::ElemFormat::e4m3fn, 32)}) {
    EXPECT_EQ(fast_geometry(k).ring, 0);
    EXPECT_EQ(fast_geometry(k).slot_bytes, 0);
    EXPECT_TRUE(fast_geometry(k).prefetch);
  }
  const FastKey mxfp4_both{2, num::Scheme::mx, num::ElemFormat::e2m1, FastShape::colblocks, 32, 32, L::row_major,
                           L::row_major};
  EXPECT_EQ(fast_geometry(mxfp4_both).ring, 1);
  FastKey both_fused = mxfp4_both;
  both_fused.fuse = fuse_bits(int(A::relu), false, false);
  EXPECT_EQ(fast_geometry(both_fused).ring, 0);
}

}  // namespace
}  // namespace mxq::cuda
