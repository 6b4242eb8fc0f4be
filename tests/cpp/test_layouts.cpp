// Scale layouts of FORMATS.md section 3 and the buffer shapes of plan(): the layout functions
// of numerics/layouts.h against independent descriptions, the CPU backend's placement of every
// scale (padding zero-filled), and plan() for every preset, by hand.
#include <map>
#include <tuple>

#include "mxq/numerics/layouts.h"
#include "test_support.hpp"

namespace mxq::test {
namespace {

using num::ScaleGeometry;

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// ---- swizzled_128x4 ----------------------------------------------------------------------------
// The cuBLAS "block scaling factors layout" description: pad the (R, C) scale matrix to
// (R', C') = (roundup(R, 128), roundup(C, 4)), view it as (R'/128, 4, 32, C'/4, 4) and permute the
// axes to (R'/128, C'/4, 32, 4, 4); storage is that array in row-major order. Returns the
// storage position of every padded entry (i, j), as pos[i * C' + j].
std::vector<int64_t> swizzle_by_permutation(int64_t R, int64_t C) {
  const int64_t Rp = round_up(R, 128), Cp = round_up(C, 4);
  std::vector<int64_t> pos(size_t(Rp * Cp), -1);
  int64_t p = 0;
  for (int64_t a = 0; a < Rp / 128; ++a)        // R'/128
    for (int64_t b = 0; b < Cp / 4; ++b)        // C'/4
      for (int64_t c = 0; c < 32; ++c)          // 32
        for (int64_t d = 0; d < 4; ++d)         // 4 (row groups of 32 inside a 128-row tile)
          for (int64_t e = 0; e < 4; ++e) {     // 4 (columns inside a 4-column tile)
            // source index in the (R'/128, 4, 32, C'/4, 4) view is (a, d, c, b, e)
            const int64_t i = a * 128 + d * 32 + c, j = b * 4 + e;
            pos[size_t(i * Cp + j)] = p++;
          }
  return pos;
}

// (rows, block columns) of scale matrices: below, at and across the 128 x 4 tile boundaries.
std::vector<std::pair<int64_t, int64_t>> scale_matrix_shapes() {
  return {{1, 1}, {1, 4}, {31, 3}, {32, 5}, {127, 4}, {128, 4}, {129, 1}, {200, 17}, {256, 8}, {300, 9}, {7, 33}};
}

TEST(ScaleLayout, Swizzled128x4MatchesTheCublasPermutation) {
  for (const auto& [R, C] : scale_matrix_shapes()) {
    const ScaleGeometry g{num::ScaleLayout::swizzled_128x4, R, C, false};
    const int64_t Cp = round_up(C, 4);
    const auto pos = swizzle_by_permutation(R, C);
    EXPECT_EQ(num::scale_storage_units(g), round_up(R, 128) * Cp) << R << "x" << C;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j)
        ASSERT_EQ(num::scale_offset(g, i, j), pos[size_t(i * Cp + j)]) << "(" << i << ", " << j << ") of " << R << "x" << C;
  }
}

TEST(ScaleLayout, Swizzled128x4FormulaSpotChecks) {
  // FORMATS.md: ((i/128)*(C'/4) + j/4)*512 + (i%32)*16 + ((i%128)/32)*4 + j%4, by hand.
  const ScaleGeometry g{num::ScaleLayout::swizzled_128x4, 300, 9, false};  // C' = 12, 3 column tiles
  EXPECT_EQ(num::scale_offset(g, 0, 0), 0);
  EXPECT_EQ(num::scale_offset(g, 0, 3), 3);
  EXPECT_EQ(num::scale_offset(g, 0, 4), 512);
  EXPECT_EQ(num::scale_offset(g, 1, 0), 16);
  EXPECT_EQ(num::scale_offset(g, 32, 0), 4);
  EXPECT_EQ(num::scale_offset(g, 97, 2), 1 * 16 + 3 * 4 + 2);
  EXPECT_EQ(num::scale_offset(g, 128, 0), 3 * 512);
  EXPECT_EQ(num::scale_offset(g, 299, 8), (2 * 3 + 2) * 512 + (299 % 32) * 16 + ((299 % 128) / 32) * 4 + 0);
}

// ---- mn_major_tma and packed_ue8m0 -------------------------------------------------------------
TEST(ScaleLayout, MnMajorTma) {
  // fp32 scales of an (M, K) tensor as [ceil(K/G)][align(M, 4)], M contiguous.
  for (const auto& [M, KB] : scale_matrix_shapes()) {
    const ScaleGeometry g{num::ScaleLayout::mn_major_tma, M, KB, false};
    const int64_t ld = round_up(M, 4);
    EXPECT_EQ(num::scale_storage_units(g), KB * ld);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < KB; ++j) ASSERT_EQ(num::scale_offset(g, i, j), j * ld + i);
  }
}

TEST(ScaleLayout, PackedUe8m0) {
  // Four codes per int32 along the block index: byte j%4 of word (j/4) * align(MN, 4) + i.
  for (const auto& [MN, KB] : scale_matrix_shapes()) {
    const ScaleGeometry g{num::ScaleLayout::packed_ue8m0, MN, KB, false};
    const int64_t ld = round_up(MN, 4);
    EXPECT_EQ(num::scale_storage_units(g), (KB + 3) / 4 * ld * 4);  // in bytes
    for (int64_t i = 0; i < MN; ++i)
      for (int64_t j = 0; j < KB; ++j) ASSERT_EQ(num::scale_offset(g, i, j), ((j / 4) * ld + i) * 4 + j % 4);
  }
}

// The decode GEMM walks K with a row base plus a block offset: every layout but swizzled_128x4
// must be separable and linear in the row, and swizzled_128x4 must say it is not.
// The split a rows kernel stores swizzled_128x4 scales through (a pointer per block, a term per
// row) gives scale_offset's byte for every block of every shape.
TEST(ScaleLayout, SwizzledSplitMatchesScaleOffset) {
  for (const auto& [MN, KB] : scale_matrix_shapes()) {
    const ScaleGeometry g{num::ScaleLayout::swizzled_128x4, MN, KB, false};
    const int64_t band = num::swizzled_band(KB);
    for (int64_t i = 0; i < MN; ++i)
      for (int64_t j = 0; j < KB; ++j)
        ASSERT_EQ(num::swizzled_row_part(int(i), band) + num::swizzled_block_part(int(j)),
                  num::scale_offset(g, i, j))
            << MN << "x" << KB << " at " << i << ", " << j;
  }
  // rows past 2^16, where the 32-bit row index's band count grows large
  const ScaleGeometry tall{num::ScaleLayout::swizzled_128x4, int64_t(1) << 20, 7, false};
  for (int64_t i : {int64_t(65535), int64_t(65536), int64_t(1000003), (int64_t(1) << 20) - 1})
    for (int64_t j = 0; j < 7; ++j)
      ASSERT_EQ(num::swizzled_row_part(int(i), num::swizzled_band(7)) + num::swizzled_block_part(int(j)),
                num::scale_offset(tall, i, j));
}

// The 4-byte runs (blocks kb0 .. kb0 + 3, kb0 % 4 == 0) of 128 rows from a multiple of 128 are
// one 512-byte swizzled_128x4 atom, run i0 + t + 32k at byte 16t + 4k, padding included: what the
// MXFP8 row+col kernels store as 16 bytes per lane (fast.cuh store_atom).
TEST(ScaleLayout, SwizzledRunsOfATileAreOneAtom) {
  for (const auto& [MN, KB] : scale_matrix_shapes()) {
    const ScaleGeometry g{num::ScaleLayout::swizzled_128x4, MN, KB, false};
    for (int64_t i0 = 0; i0 < MN; i0 += 128)
      for (int64_t kb0 = 0; kb0 < KB; kb0 += 4) {
        const int64_t atom = num::scale_offset(g, i0, kb0);
        ASSERT_EQ(atom % 512, 0);
        for (int t = 0; t < 32; ++t)
          for (int k = 0; k < 4; ++k)
            for (int j = 0; j < 4; ++j)
              ASSERT_EQ(num::scale_offset(g, i0 + t + 32 * k, kb0 + j), atom + 16 * t + 4 * k + j)
                  << MN << "x" << KB << " at " << i0 + t + 32 * k << ", " << kb0 + j;
        ASSERT_LE(atom + 512, num::scale_storage_units(g));
      }
  }
}

TEST(ScaleLayout, SeparableWalkMatchesScaleOffset) {
  using L = num::ScaleLayout;
  EXPECT_FALSE(num::scale_offset_separable(L::swizzled_128x4));
  for (L l : {L::row_major, L::mn_major_tma, L::packed_ue8m0})
    for (bool kb_outer : {false, true})
      for (const auto& [MN, KB] : scale_matrix_shapes()) {
        ASSERT_TRUE(num::scale_offset_separable(l));
        const ScaleGeometry g{l, MN, KB, kb_outer && l == L::row_major};
        const num::SeparableWalk w = num::separable_walk(g);
        for (int64_t i = 0; i < MN; ++i)
          for (int64_t j = 0; j < KB; ++j)
            ASSERT_EQ(w.row(i) + w.block(j), num::scale_offset(g, i, j))
                << int(l) << " " << MN << "x" << KB << " at " << i << ", " << j;
      }
}

TEST(ScaleLayout, RowMajorAndColumnwiseSameShape) {
  const ScaleGeometry rm{num::ScaleLayout::row_major, 5, 7, false};
  const ScaleGeometry same{num::ScaleLayout::row_major, 5, 7, true};  // [kb][mn]
  EXPECT_EQ(num::scale_storage_units(rm), 35);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      EXPECT_EQ(num::scale_offset(rm, i, j), i * 7 + j);
      EXPECT_EQ(num::scale_offset(same, i, j), j * 5 + i);
    }
}

// ---- the CPU backend puts every scale where the layout says, and zero-fills padding ----------
// Reads scale (i, j) of a compact row_major output.
uint32_t row_major_scale(const Outputs& o, bool col, int64_t i, int64_t j, bool fp32) {
  const auto& g = col ? o.layout.col_scales.geometry : o.layout.scales.geometry;
  const auto& s = col ? o.col_scales : o.scales;
  const int64_t off = g.kb_outer ? j * g.mn + i : i * g.kb + j;
  return fp32 ? bits_of(load_f32(&s[size_t(off * 4)])) : s[size_t(off)];
}

struct LayoutCase {
  std::string compact, laid_out;  // the same recipe with row_major scales and with the layout
  int64_t rows, cols;
};

std::vector<LayoutCase> layout_cases() {
  return {
      {"mxfp8", "mxfp8:layout=swizzled_128x4", 200, 520},
      {"mxfp8:dir=col", "mxfp8:dir=col,layout=swizzled_128x4", 96, 300},
      {"mxfp4", "mxfp4:layout=swizzled_128x4", 130, 64},
      {"nvfp4", "nvfp4:layout=swizzled_128x4", 129, 208},
      {"nvfp4_2d", "nvfp4_2d:layout=swizzled_128x4", 40, 48},
      {"mxfp8", "mxfp8:layout=packed_ue8m0", 37, 520},
      {"mxfp8:dir=col", "mxfp8:dir=col,layout=packed_ue8m0", 200, 66},
      {"fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", "fp8_block_1x128:pow2=1,layout=packed_ue8m0", 9, 1100},
      {"fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma", 9, 1100},
      {"fp8_block_1x32", "fp8_block_1x32:layout=mn_major_tma", 130, 70},
  };
}

TEST(ScaleLayout, CpuBackendPlacesEveryScaleAndZeroFillsPadding) {
  for (const auto& c : layout_cases()) {
    SCOPED_TRACE(c.laid_out);
    const auto x = random_matrix(c.rows, c.cols, uint64_t(c.rows * 7 + c.cols), -20, 20);
    const Outputs a = quantize_f32(c.compact, x, c.rows, c.cols);
    const Outputs b = quantize_f32(c.laid_out, x, c.rows, c.cols);
    const bool col = b.recipe.has_columnwise();
    const auto& g = col ? b.layout.col_scales.geometry : b.layout.scales.geometry;
    const auto& s = col ? b.col_scales : b.scales;
    const bool fp32 = b.recipe.scale_type == ScaleType::float32;
    const int64_t unit = fp32 ? 4 : 1;
    EXPECT_EQ(col ? a.col_data : a.data, col ? b.col_data : b.data);  // the layout changes scales only
    std::vector<bool> used(s.size(), false);
    for (int64_t i = 0; i < g.mn; ++i)
      for (int64_t j = 0; j < g.kb; ++j) {
        const int64_t off = num::scale_offset(g, i, j) * unit;
        const uint32_t want = row_major_scale(a, col, i, j, fp32);
        uint32_t got;
        if (b.recipe.layout == ScaleLayout::packed_ue8m0) {
          // the int32 word holding block j, and its byte j % 4 by value (not by memory order)
          uint32_t word;
          std::memcpy(&word, &s[size_t((off / 4) * 4)], 4);
          got = (word >> (8 * (j % 4))) & 0xffu;
        } else {
          got = fp32 ? bits_of(load_f32(&s[size_t(off)])) : s[size_t(off)];
        }
        ASSERT_EQ(got, want) << "scale (" << i << ", " << j << ")";
        for (int64_t u = 0; u < unit; ++u) used[size_t(off + u)] = true;
      }
    int64_t padding = 0;
    for (size_t k = 0; k < s.size(); ++k)
      if (!used[k]) {
        ++padding;
        ASSERT_EQ(s[k], 0) << "padding byte " << k << " not zero";
      }
    EXPECT_GT(padding, 0) << "case without padding proves nothing about padding";
  }
}

// ---- plan(): shapes and bytes for every preset, by hand ------------------------------------------
struct Spec {
  const char* dtype;
  int64_t rows, cols, bytes;
};
void expect_spec(const BufferSpec& got, const Spec& want, const char* what) {
  if (want.bytes == 0) {
    EXPECT_FALSE(got.present()) << what;
    return;
  }
  EXPECT_STREQ(dtype_name(got.dtype), want.dtype) << what;
  EXPECT_EQ(got.rows, want.rows) << what;
  EXPECT_EQ(got.cols, want.cols) << what;
  EXPECT_EQ(got.bytes, want.bytes) << what;
}

struct PlanCase {
  const char* recipe;
  Spec data, scales, col_data, col_scales, global;
};

constexpr Spec kNone{"", 0, 0, 0};
constexpr Spec kScalar{"float32", 1, 1, 4};

// Input (130, 200): 130 = 128 + 2 rows, 200 = 6 * 32 + 8 = 12 * 16 + 8 = 128 + 72 columns.
std::vector<PlanCase> plan_cases() {
  return {
      {"fp8_tensor", {"float8_e4m3fn", 130, 200, 26000}, kNone, kNone, kNone, kScalar},
      {"fp8_tensor_e5m2", {"float8_e5m2", 130, 200, 26000}, kNone, kNone, kNone, kScalar},
      {"fp8_block_1x128", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 130, 2, 1040}, kNone, kNone, kNone},
      {"fp8_block", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 130, 2, 1040}, kNone, kNone, kNone},
      {"fp8_block_1x64", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 130, 4, 2080}, kNone, kNone, kNone},
      {"fp8_block_1x32", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 130, 7, 3640}, kNone, kNone, kNone},
      {"fp8_block_128x128", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 2, 2, 16}, kNone, kNone, kNone},
      {"fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", {"float8_e4m3fn", 130, 200, 26000},
       {"float8_e8m0fnu", 130, 2, 260}, kNone, kNone, kNone},
      // mn_major_tma: [ceil(200/128)][align(130, 4)] fp32
      {"fp8_block_1x128:layout=mn_major_tma", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 2, 132, 1056}, kNone,
       kNone, kNone},
      // packed_ue8m0: [ceil(2/4)][align(130, 4)] int32
      {"fp8_block_1x128:pow2=1,layout=packed_ue8m0", {"float8_e4m3fn", 130, 200, 26000}, {"int32", 1, 132, 528},
       kNone, kNone, kNone},
      {"mxfp8", {"float8_e4m3fn", 130, 200, 26000}, {"float8_e8m0fnu", 130, 7, 910}, kNone, kNone, kNone},
      {"mxfp8_e4m3", {"float8_e4m3fn", 130, 200, 26000}, {"float8_e8m0fnu", 130, 7, 910}, kNone, kNone, kNone},
      {"mxfp8_e5m2", {"float8_e5m2", 130, 200, 26000}, {"float8_e8m0fnu", 130, 7, 910}, kNone, kNone, kNone},
      // swizzled: (roundup(130, 128), roundup(7, 4)) = (256, 8)
      {"mxfp8:layout=swizzled_128x4", {"float8_e4m3fn", 130, 200, 26000}, {"float8_e8m0fnu", 256, 8, 2048}, kNone,
       kNone, kNone},
      {"mxfp8:layout=packed_ue8m0", {"float8_e4m3fn", 130, 200, 26000}, {"int32", 2, 132, 1056}, kNone, kNone, kNone},
      // FP4: (R, C) elements occupy (R, C/2) bytes
      {"mxfp4", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e8m0fnu", 130, 7, 910}, kNone, kNone, kNone},
      {"nvfp4", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e4m3fn", 130, 13, 1690}, kNone, kNone, kScalar},
      {"nvfp4_2d", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e4m3fn", 130, 13, 1690}, kNone, kNone, kScalar},
      {"nvfp4:layout=swizzled_128x4", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e4m3fn", 256, 16, 4096}, kNone,
       kNone, kScalar},
      {"fp4_block_1x32", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e8m0fnu", 130, 7, 910}, kNone, kNone, kNone},
      // columnwise, transposed (default): data (200, 130); scales of 32x1 blocks: [200][ceil(130/32)]
      {"mxfp8:dir=col", kNone, kNone, {"float8_e4m3fn", 200, 130, 26000}, {"float8_e8m0fnu", 200, 5, 1000}, kNone},
      {"mxfp8:dir=both", {"float8_e4m3fn", 130, 200, 26000}, {"float8_e8m0fnu", 130, 7, 910},
       {"float8_e4m3fn", 200, 130, 26000}, {"float8_e8m0fnu", 200, 5, 1000}, kNone},
      // same shape: data (130, 200), compact scales in the input's orientation [5][200]
      {"mxfp8:dir=col,colform=same", kNone, kNone, {"float8_e4m3fn", 130, 200, 26000},
       {"float8_e8m0fnu", 5, 200, 1000}, kNone},
      {"mxfp8:dir=col,layout=swizzled_128x4", kNone, kNone, {"float8_e4m3fn", 200, 130, 26000},
       {"float8_e8m0fnu", 256, 8, 2048}, kNone},
      {"mxfp4:dir=both", {"float4_e2m1fn", 130, 200, 13000}, {"float8_e8m0fnu", 130, 7, 910},
       {"float4_e2m1fn", 200, 130, 13000}, {"float8_e8m0fnu", 200, 5, 1000}, kNone},
      {"fp8_block_128x128:dir=both", {"float8_e4m3fn", 130, 200, 26000}, {"float32", 2, 2, 16},
       {"float8_e4m3fn", 200, 130, 26000}, {"float32", 2, 2, 16}, kNone},
      {"fp8_tensor:dir=both", {"float8_e4m3fn", 130, 200, 26000}, kNone, {"float8_e4m3fn", 200, 130, 26000}, kNone,
       kScalar},
      {"nvfp4:dir=col", kNone, kNone, {"float4_e2m1fn", 200, 130, 13000}, {"float8_e4m3fn", 200, 9, 1800}, kScalar},
  };
}

TEST(Plan, EveryPresetByHand) {
  std::map<std::string, bool> presets_seen;
  for (const auto& c : plan_cases()) {
    SCOPED_TRACE(c.recipe);
    const QuantizedLayout L = plan(Recipe::parse(c.recipe), 130, 200);
    expect_spec(L.data, c.data, "data");
    expect_spec(L.scales, c.scales, "scales");
    expect_spec(L.col_data, c.col_data, "col_data");
    expect_spec(L.col_scales, c.col_scales, "col_scales");
    expect_spec(L.global_scale, c.global, "global_scale");
    presets_seen[std::string(c.recipe).substr(0, std::string(c.recipe).find(':'))] = true;
  }
  // Every preset the library lists is covered by a hand-written row.
  const std::string names = Recipe::preset_names();
  for (size_t p = 0; p < names.size();) {
    const size_t e = std::min(names.find(", ", p), names.size());
    EXPECT_TRUE(presets_seen.count(names.substr(p, e - p))) << "no plan case for preset " << names.substr(p, e - p);
    p = e + 2;
  }
}

TEST(Plan, Fp4BytesAreHalfTheElements) {
  for (const char* r : {"mxfp4", "nvfp4", "nvfp4_2d", "fp4_block_1x32"})
    for (int64_t rows : {1, 2, 17, 128})
      for (int64_t cols : {2, 16, 34, 1000}) {
        const QuantizedLayout L = plan(Recipe::parse(r), rows, cols);
        EXPECT_EQ(L.data.bytes, rows * cols / 2) << r << " " << rows << "x" << cols;
        EXPECT_EQ(L.data.rows, rows);
        EXPECT_EQ(L.data.cols, cols);  // logical shape, never unpacked bytes
      }
}

TEST(Plan, EmptyShapes) {
  for (const char* r : {"mxfp8:dir=both,layout=swizzled_128x4", "nvfp4", "fp8_block_128x128", "fp8_tensor"})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 64}, {64, 0}, {0, 0}}) {
      const QuantizedLayout L = plan(Recipe::parse(r), rows, cols);
      EXPECT_EQ(L.data.bytes + L.scales.bytes + L.col_data.bytes + L.col_scales.bytes, 0)
          << r << " " << rows << "x" << cols;
      // of 0 bytes, but the recipe's buffers all the same (their dtypes are what callers allocate)
      const Recipe rc = Recipe::parse(r);
      const bool blocks = !rc.is_tensor_scaled();
      EXPECT_EQ(L.data.planned, rc.has_rowwise()) << r;
      EXPECT_EQ(L.scales.planned, rc.has_rowwise() && blocks) << r;
      EXPECT_EQ(L.col_data.planned, rc.has_columnwise()) << r;
      EXPECT_EQ(L.col_scales.planned, rc.has_columnwise() && blocks) << r;
      EXPECT_EQ(L.global_scale.planned, rc.has_global_scale()) << r;
      EXPECT_EQ(L.amax.planned, rc.has_global_scale()) << r;
    }
}

TEST(Plan, ScaleBytesMatchTheLayoutStorageForManyShapes) {
  // plan() and scale_storage_units() agree for every layout over a grid of shapes, in units of
  // the scale type (fp32: 4 bytes; packed_ue8m0 counts bytes already).
  const char* recipes[] = {"mxfp8:layout=swizzled_128x4", "nvfp4:layout=swizzled_128x4", "mxfp8:layout=packed_ue8m0",
                           "fp8_block_1x128:layout=mn_major_tma", "fp8_block_1x64", "fp8_block_128x128",
                           "mxfp8:dir=col,layout=swizzled_128x4"};
  for (const char* r : recipes)
    for (int64_t rows : {1, 127, 128, 129, 257})
      for (int64_t cols : {2, 32, 130, 512, 1030}) {
        const Recipe rc = Recipe::parse(r);
        const QuantizedLayout L = plan(rc, rows, cols);
        const BufferSpec& s = rc.has_rowwise() ? L.scales : L.col_scales;
        const int64_t unit = (rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0) ? 4 : 1;
        EXPECT_EQ(s.bytes, num::scale_storage_units(s.geometry) * unit) << r << " " << rows << "x" << cols;
        const int64_t m = rc.has_rowwise() ? rows : cols, k = rc.has_rowwise() ? cols : rows;
        const int64_t expect_mn = rc.scheme == Scheme::nvfp4 ? m : (m + rc.block_rows - 1) / rc.block_rows;
        EXPECT_EQ(s.geometry.mn, expect_mn) << r;
        EXPECT_EQ(s.geometry.kb, (k + rc.block_cols - 1) / rc.block_cols) << r;
      }
}

}  // namespace
}  // namespace mxq::test
