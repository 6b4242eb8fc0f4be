// The CPU reference backend through the public API (mxq::quantize / mxq::dequantize): input
// dtypes, strides and ranks that must not change the result, the columnwise forms against the
// rowwise output of the transpose, poisoned buffers (every byte the plan covers is written),
// empty tensors, round-trip error bounds from the formats' precision, exact dequantization, and
// non-finite inputs.
#include <functional>
#include <limits>

#include "mxq/numerics/formats.h"
#include "test_support.hpp"

namespace mxq::test {
namespace {

// ---- case generators ---------------------------------------------------------------------------
// Every preset plus the variants that change the output layout or direction.
std::vector<std::string> recipe_variants() {
  std::vector<std::string> v;
  const std::string names = Recipe::preset_names();
  for (size_t p = 0; p < names.size();) {
    const size_t e = std::min(names.find(", ", p), names.size());
    v.push_back(names.substr(p, e - p));
    p = e + 2;
  }
  for (const char* extra :
       {"fp8_tensor:pow2=1", "fp8_block_1x128:pow2=1", "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu",
        "fp8_block_1x128:layout=mn_major_tma", "fp8_block_1x128:pow2=1,layout=packed_ue8m0", "mxfp8:rounding=floor",
        "mxfp4:rounding=floor", "mxfp8:layout=swizzled_128x4", "mxfp8:layout=packed_ue8m0",
        "nvfp4:layout=swizzled_128x4", "mxfp8:dir=both", "mxfp8:dir=both,colform=same", "mxfp4:dir=both",
        "mxfp8:dir=both,layout=swizzled_128x4", "nvfp4:dir=both", "nvfp4_2d:dir=both", "fp8_tensor:dir=both",
        "fp8_block_128x128:dir=both", "fp8_block_1x128:dir=both", "mxfp4:dir=col,colform=same",
        "fp4_block_1x32:dir=both"})
    v.push_back(extra);
  return v;
}

// The columnwise-capable recipes, as their rowwise text; ":dir=col" etc. is appended.
std::vector<std::string> columnwise_bases() {
  return {"fp8_tensor", "fp8_block_1x128", "fp8_block_1x32", "fp8_block_128x128", "fp8_block_1x128:pow2=1",
          "mxfp8", "mxfp8_e5m2", "mxfp4", "mxfp8:rounding=floor", "nvfp4", "nvfp4_2d", "fp4_block_1x32",
          "mxfp8:layout=swizzled_128x4", "mxfp4:layout=swizzled_128x4", "mxfp8:layout=packed_ue8m0",
          "nvfp4:layout=swizzled_128x4"};
}

std::string with_options(const std::string& base, const std::string& opts) {
  return base + (base.find(':') == std::string::npos ? ":" : ",") + opts;
}

// Values exactly representable in fp32, bf16 and fp16: 8 significant bits, exponents in fp16's
// normal range, random signs, some zeros.
std::vector<float> values_exact_in_16bit(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const int m = int(rng.range(128, 256)), e = int(rng.range(-21, 8));
    x = rng.uniform() < 0.05 ? 0.0f : std::ldexp(float(m), e) * (rng.uniform() < 0.5 ? -1.0f : 1.0f);
  }
  return v;
}

std::vector<float> transpose(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
  return t;
}

constexpr int64_t kRows = 130, kCols = 200;  // ragged for every block shape, even for FP4

Outputs quantize_row_f32(const std::string& recipe, const std::vector<float>& row) {
  return quantize_f32(recipe, row, 1, int64_t(row.size()));
}

// ---- checks ------------------------------------------------------------------------------------
void expect_same_outputs(const Outputs& a, const Outputs& b, const std::string& what) {
  EXPECT_EQ(a.data, b.data) << what << ": data";
  EXPECT_EQ(a.scales, b.scales) << what << ": scales";
  EXPECT_EQ(a.col_data, b.col_data) << what << ": col_data";
  EXPECT_EQ(a.col_scales, b.col_scales) << what << ": col_scales";
  EXPECT_EQ(a.global_scale, b.global_scale) << what << ": global_scale";
}

TEST(CpuBackend, Fp32Bf16Fp16InputsWithTheSameValuesGiveTheSameBytes) {
  auto x = values_exact_in_16bit(kRows * kCols, 1);
  std::vector<uint16_t> bf(x.size()), hf(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    bf[i] = uint16_t(bits_of(x[i]) >> 16);
    hf[i] = num::float_to_fp16(x[i]);
    ASSERT_EQ(num::bf16_to_float(bf[i]), x[i]);
    ASSERT_EQ(num::fp16_to_float(hf[i]), x[i]);
  }
  for (const auto& recipe : recipe_variants()) {
    Outputs a(recipe, kRows, kCols), b(recipe, kRows, kCols), c(recipe, kRows, kCols);
    a.poison(0xCD);
    b.poison(0xCD);
    c.poison(0xCD);
    quantize(f32_matrix(x, kRows, kCols), a.view());
    quantize(TensorView::matrix(bf.data(), DType::bfloat16, kRows, kCols), b.view());
    quantize(TensorView::matrix(hf.data(), DType::float16, kRows, kCols), c.view());
    expect_same_outputs(a, b, recipe + " fp32 vs bf16");
    expect_same_outputs(a, c, recipe + " fp32 vs fp16");
  }
}

TEST(CpuBackend, StridedRowsGiveTheSameBytesAsContiguous) {
  // Row stride cols + 17 (odd, so also misaligned for vector loads); the gaps hold NaN, which
  // would poison any block maximum that read them.
  const int64_t ld = kCols + 18;  // even: FP4 inputs are not involved, but keep FP4-safe strides
  const auto x = random_matrix(kRows, kCols, 2);
  std::vector<float> xs(size_t(kRows * ld), NAN);
  std::vector<uint16_t> bs(xs.size(), 0x7fc1), bc(x.size());
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      xs[size_t(r * ld + c)] = x[size_t(r * kCols + c)];
      bc[size_t(r * kCols + c)] = bs[size_t(r * ld + c)] = num::float_to_bf16(x[size_t(r * kCols + c)]);
    }
  for (const auto& recipe : recipe_variants()) {
    const Outputs a = quantize_f32(recipe, x, kRows, kCols);
    Outputs b(recipe, kRows, kCols);
    b.poison(0xCD);
    quantize(f32_matrix(xs, kRows, kCols, ld), b.view());
    expect_same_outputs(a, b, recipe + " fp32 strided");
    Outputs c(recipe, kRows, kCols), d(recipe, kRows, kCols);
    c.poison(0xCD);
    d.poison(0x11);
    quantize(TensorView::matrix(bc.data(), DType::bfloat16, kRows, kCols), c.view());
    quantize(TensorView::matrix(bs.data(), DType::bfloat16, kRows, kCols, ld), d.view());
    expect_same_outputs(c, d, recipe + " bf16 strided");
  }
}

TEST(CpuBackend, LeadingDimensionsCollapseIntoRows) {
  // (2, 5, 64) contiguous and with padded rows (row stride 80) == (10, 64); (64,) == (1, 64).
  auto x = random_matrix(10, 64, 3);
  std::vector<float> padded(size_t(10 * 80), NAN);
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < 64; ++c) padded[size_t(r * 80 + c)] = x[size_t(r * 64 + c)];
  for (const char* recipe : {"mxfp8:dir=both", "nvfp4", "fp8_tensor", "fp8_block_1x32", "mxfp4"}) {
    const Outputs ref = quantize_f32(recipe, x, 10, 64);
    TensorView v3;
    v3.data = x.data();
    v3.dtype = DType::float32;
    v3.ndim = 3;
    v3.shape = {2, 5, 64};
    v3.strides = {320, 64, 1};
    Outputs a(recipe, 10, 64);
    a.poison(0xCD);
    quantize(v3, a.view());
    expect_same_outputs(ref, a, std::string(recipe) + " 3-D");
    TensorView p3 = v3;
    p3.data = padded.data();
    p3.strides = {400, 80, 1};
    Outputs b(recipe, 10, 64);
    b.poison(0x5A);
    quantize(p3, b.view());
    expect_same_outputs(ref, b, std::string(recipe) + " 3-D padded rows");
    TensorView v1;
    v1.data = x.data();
    v1.dtype = DType::float32;
    v1.ndim = 1;
    v1.shape = {64};
    v1.strides = {1};
    Outputs c(recipe, 1, 64);
    c.poison(0xCD);
    quantize(v1, c.view());
    const Outputs ref1 = quantize_f32(recipe, std::vector<float>(x.begin(), x.begin() + 64), 1, 64);
    expect_same_outputs(ref1, c, std::string(recipe) + " 1-D");
  }
}

TEST(CpuBackend, ColumnwiseTransposedIsRowwiseOfTheTranspose) {
  const auto x = random_matrix(kRows, kCols, 4, -12, 12);
  const auto xt = transpose(x, kRows, kCols);
  for (const auto& base : columnwise_bases()) {
    const std::string col = with_options(base, "dir=col,colform=transposed");
    SCOPED_TRACE(col);
    const Outputs c = quantize_f32(col, x, kRows, kCols);
    const Outputs r = quantize_f32(base, xt, kCols, kRows);
    EXPECT_EQ(c.col_data, r.data);
    EXPECT_EQ(c.col_scales, r.scales);
    EXPECT_EQ(c.global_scale, r.global_scale);
    EXPECT_TRUE(c.data.empty() && c.scales.empty());
  }
}

TEST(CpuBackend, ColumnwiseSameShapeIsTheTransposedFormTransposedBack) {
  const auto x = random_matrix(kRows, kCols, 5, -12, 12);
  for (const auto& base : columnwise_bases()) {
    const Recipe rb = Recipe::parse(base);
    if (rb.layout != ScaleLayout::row_major && rb.layout != ScaleLayout::swizzled_128x4) continue;
    SCOPED_TRACE(base);
    const Outputs t = quantize_f32(with_options(base, "dir=col,colform=transposed"), x, kRows, kCols);
    const Outputs s = quantize_f32(with_options(base, "dir=col,colform=same"), x, kRows, kCols);
    const bool fp4 = rb.elem == num::ElemFormat::e2m1;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        ASSERT_EQ(code_at(s.col_data, r * kCols + c, fp4), code_at(t.col_data, c * kRows + r, fp4)) << r << "," << c;
    EXPECT_EQ(s.global_scale, t.global_scale);
    if (rb.layout == ScaleLayout::swizzled_128x4 || rb.is_tensor_scaled()) {
      EXPECT_EQ(s.col_scales, t.col_scales);  // swizzled scales are indexed (mn, kb) in both forms
      continue;
    }
    // compact: same shape stores [kb][mn], transposed [mn][kb]
    const auto& g = t.layout.col_scales.geometry;
    const int64_t unit = rb.scale_type == ScaleType::float32 ? 4 : 1;
    ASSERT_EQ(s.col_scales.size(), t.col_scales.size());
    for (int64_t i = 0; i < g.mn; ++i)
      for (int64_t k = 0; k < g.kb; ++k)
        for (int64_t u = 0; u < unit; ++u)
          ASSERT_EQ(s.col_scales[size_t((k * g.mn + i) * unit + u)], t.col_scales[size_t((i * g.kb + k) * unit + u)]);
  }
}

TEST(CpuBackend, BothDirectionsEqualSeparateCalls) {
  const auto x = random_matrix(kRows, kCols, 6, -12, 12);
  for (const auto& base : columnwise_bases())
    for (const char* form : {"transposed", "same"}) {
      if (std::string(form) == "same" && (Recipe::parse(base).layout == ScaleLayout::packed_ue8m0)) continue;
      const std::string colopt = std::string("colform=") + form;
      SCOPED_TRACE(base + " " + colopt);
      const Outputs both = quantize_f32(with_options(base, "dir=both," + colopt), x, kRows, kCols);
      const Outputs row = quantize_f32(base, x, kRows, kCols);
      const Outputs col = quantize_f32(with_options(base, "dir=col," + colopt), x, kRows, kCols);
      EXPECT_EQ(both.data, row.data);
      EXPECT_EQ(both.scales, row.scales);
      EXPECT_EQ(both.col_data, col.col_data);
      EXPECT_EQ(both.col_scales, col.col_scales);
      EXPECT_EQ(both.global_scale, row.global_scale);
    }
}

TEST(CpuBackend, EveryPlannedByteIsWritten) {
  // Two runs into buffers poisoned with different bytes: any byte left unwritten would differ.
  // Shapes include ragged tails, rows below one 128-row tile and tiny tensors.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{kRows, kCols}, {2, 32}, {1, 16}, {34, 66}, {257, 48}};
  for (const auto& recipe : recipe_variants())
    for (const auto& [rows, cols] : shapes) {
      const Recipe rc = Recipe::parse(recipe);
      if (rc.elem == num::ElemFormat::e2m1 && rc.has_columnwise() && rc.column_form == ColumnForm::transposed &&
          rows % 2)
        continue;
      SCOPED_TRACE(recipe + " " + std::to_string(rows) + "x" + std::to_string(cols));
      const auto x = random_matrix(rows, cols, uint64_t(rows * cols), -10, 10);
      const Outputs a = quantize_f32(recipe, x, rows, cols, 0xCD);
      const Outputs b = quantize_f32(recipe, x, rows, cols, 0x32);
      EXPECT_EQ(a.concat(), b.concat());
    }
}

TEST(CpuBackend, EmptyTensorsWriteOnlyTheGlobalScale) {
  for (const auto& recipe : recipe_variants())
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 64}, {0, 0}}) {
      SCOPED_TRACE(recipe);
      Outputs o(recipe, rows, cols);
      // plan() gives empty data and scale buffers; hand over poisoned stand-ins of 64 bytes so a
      // stray write would show.
      std::vector<uint8_t> stand_in(64, 0xCD);
      o.poison(0xCD);
      QuantizedTensor q = o.view();
      for (Buffer* b : {&q.data, &q.scales, &q.col_data, &q.col_scales}) {
        EXPECT_EQ(b->bytes, 0);
        *b = {stand_in.data(), 64};
      }
      quantize(TensorView::matrix(nullptr, DType::float32, rows, cols), q);
      EXPECT_EQ(stand_in, std::vector<uint8_t>(64, 0xCD));
      if (o.layout.global_scale.present()) {
        EXPECT_EQ(load_f32(o.global_scale.data()), 1.0f);  // scale 1
      }
      EXPECT_EQ(load_f32(o.amax.data()), 0.0f);
    }
}

// ---- dequantize: exact inverse of the decode rule -----------------------------------------------
// Decode scale of entry (i, k) of a direction's own matrix (the transpose for columnwise), read
// from the stored bytes with the layout offset.
float stored_block_scale(const Outputs& o, bool col, int64_t i, int64_t k) {
  const Recipe& rc = o.recipe;
  if (rc.is_tensor_scaled()) return 1.0f;
  const auto& g = col ? o.layout.col_scales.geometry : o.layout.scales.geometry;
  const auto& s = col ? o.col_scales : o.scales;
  const int64_t off = num::scale_offset(g, rc.scale_per_row() ? i : i / rc.block_rows, k / rc.block_cols);
  if (rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0) return load_f32(&s[size_t(off * 4)]);
  const uint8_t code = s[size_t(off)];
  if (rc.scale_type == ScaleType::ue4m3) return RefFormat::make(num::ElemFormat::e4m3fn).decode(code);
  return code == 0xFF ? NAN : std::ldexp(1.0f, int(code) - 127);
}

float stored_global_scale(const Outputs& o) {
  return o.layout.global_scale.present() ? load_f32(o.global_scale.data()) : 1.0f;
}

// The dequantized value of input element (r, c): q * block scale * global scale, in fp32.
float expected_dequantized(const Outputs& o, bool col, int64_t r, int64_t c) {
  const Recipe& rc = o.recipe;
  const bool fp4 = rc.elem == num::ElemFormat::e2m1;
  const bool tr = col && rc.column_form == ColumnForm::transposed;
  const int64_t index = tr ? c * o.rows + r : r * o.cols + c;
  const uint8_t code = code_at(col ? o.col_data : o.data, index, fp4);
  const float q = RefFormat::make(rc.elem).decode(code);
  const float block = col ? stored_block_scale(o, true, c, r) : stored_block_scale(o, false, r, c);
  return float(double(float(double(q) * double(block))) * double(stored_global_scale(o)));
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }

TEST(CpuBackend, DequantizeInvertsTheDecodeRuleExactly) {
  const auto x = random_matrix(kRows, kCols, 7, -10, 10);
  for (const auto& recipe : recipe_variants()) {
    SCOPED_TRACE(recipe);
    Outputs o = quantize_f32(recipe, x, kRows, kCols);
    for (bool col : {false, true}) {
      if (col ? !o.recipe.has_columnwise() : !o.recipe.has_rowwise()) continue;
      const bool tr = col && o.recipe.column_form == ColumnForm::transposed;
      const int64_t yr = tr ? kCols : kRows, yc = tr ? kRows : kCols;
      DequantizeOptions dopt;
      dopt.columnwise = col;
      std::vector<float> y(size_t(yr * yc)), y2(y.size());
      std::vector<uint16_t> ybf(y.size()), yhf(y.size());
      std::memset(y.data(), 0xCD, y.size() * 4);
      std::memset(y2.data(), 0x32, y2.size() * 4);
      dequantize(o.view(), f32_matrix(y, yr, yc), dopt);
      dequantize(o.view(), f32_matrix(y2, yr, yc), dopt);
      dequantize(o.view(), TensorView::matrix(ybf.data(), DType::bfloat16, yr, yc), dopt);
      dequantize(o.view(), TensorView::matrix(yhf.data(), DType::float16, yr, yc), dopt);
      EXPECT_EQ(0, std::memcmp(y.data(), y2.data(), y.size() * 4)) << "unwritten output elements";
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kCols; ++c) {
          const float want = expected_dequantized(o, col, r, c);
          const size_t at = size_t(tr ? c * kRows + r : r * kCols + c);
          ASSERT_TRUE(same_value(y[at], want)) << "col=" << col << " (" << r << ", " << c << "): " << y[at] << " vs " << want;
          // 16-bit outputs: the fp32 product rounded once (RNE; conversions checked in tests/python)
          ASSERT_EQ(ybf[at], num::float_to_bf16(want)) << r << "," << c;
          ASSERT_EQ(yhf[at], num::float_to_fp16(want)) << r << "," << c;
        }
    }
  }
}

TEST(CpuBackend, DequantizeIntoStridedRowsLeavesTheGapsAlone) {
  const auto x = random_matrix(kRows, kCols, 8);
  Outputs o = quantize_f32("mxfp4", x, kRows, kCols);
  const int64_t ld = kCols + 6;
  std::vector<float> y(size_t(kRows * ld), 0.0f), dense(size_t(kRows * kCols));
  std::vector<uint32_t> gap_bits;
  for (auto& v : y) v = float_of(0x7fc0dead);
  dequantize(o.view(), f32_matrix(y, kRows, kCols, ld));
  dequantize(o.view(), f32_matrix(dense, kRows, kCols));
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) ASSERT_EQ(bits_of(y[size_t(r * ld + c)]), bits_of(dense[size_t(r * kCols + c)]));
    for (int64_t c = kCols; c < ld; ++c) ASSERT_EQ(bits_of(y[size_t(r * ld + c)]), 0x7fc0deadu);
  }
}

TEST(CpuBackend, DequantizeIgnoresAGlobalScaleTheRecipeDoesNotHave) {
  // MX and fp8_block recipes have no global scale (plan() gives none, quantize writes none). A
  // caller that happens to pass a buffer there must not have its output multiplied by whatever
  // that buffer holds (or the call must be rejected).
  const auto x = random_matrix(4, 64, 9);
  for (const char* recipe : {"mxfp8", "fp8_block_1x32", "mxfp4"}) {
    SCOPED_TRACE(recipe);
    Outputs o = quantize_f32(recipe, x, 4, 64);
    std::vector<float> plain(256), with_stray(256);
    dequantize(o.view(), f32_matrix(plain, 4, 64));
    float stray = 2.0f;
    QuantizedTensor q = o.view();
    q.global_scale = {&stray, 4};
    try {
      dequantize(q, f32_matrix(with_stray, 4, 64));
      EXPECT_EQ(0, std::memcmp(plain.data(), with_stray.data(), 256 * 4))
          << "output scaled by a global scale the recipe does not have: " << plain[0] << " -> " << with_stray[0];
    } catch (const Error&) {
      // rejecting the stray buffer is acceptable too
    }
  }
}

// ---- round-trip error bounds ---------------------------------------------------------------------
// Per element: |dequantize(quantize(x)) - x| <= max(rel * |x|, half_sub * S) (plus fp32 rounding),
// where rel is half an ulp relative to the value in the element format's normal range (2^-4 E4M3,
// 2^-3 E5M2, 2^-2 E2M1), half_sub half its subnormal spacing (2^-10, 2^-17, 2^-2) and S an upper
// bound of the block's decode scale derived from the INPUT block maximum A (not read back from
// the output, so that a wrong scale fails):
//   MX rceil: S < 2 A / fmax;  MX floor: S <= A / 2^emax (block maxima may saturate: rel becomes
//   the saturation loss 1 - fmax / 2^(emax+1), 12.5% E4M3 / E5M2, 25% E2M1);
//   fp8_block: max(A, eps) / fmax (x2 with pow2);  fp8_tensor: tensor amax / fmax (x2 with pow2);
//   NVFP4: (A / 6) (1 + 2^-4) (the UE4M3 block scale rounds to 4 bits; the data keep it normal).
struct ElementBound {
  double rel, half_sub;
};
ElementBound element_bound(num::ElemFormat f) {
  switch (f) {
    case num::ElemFormat::e4m3fn: return {0x1p-4, 0x1p-10};
    case num::ElemFormat::e5m2: return {0x1p-3, 0x1p-17};
    default: return {0x1p-2, 0x1p-2};
  }
}

double scale_upper_bound(const Recipe& rc, double block_amax, double tensor_amax) {
  const double fmax = RefFormat::make(rc.elem).max_value();
  switch (rc.scheme) {
    case Scheme::mx:
      if (rc.rounding == MxRounding::rceil) return 2 * block_amax / fmax;
      return block_amax / pow2d(rc.elem == num::ElemFormat::e4m3fn ? 8 : rc.elem == num::ElemFormat::e5m2 ? 15 : 2);
    case Scheme::fp8_block: return std::max(block_amax, double(rc.eps)) / fmax * (rc.pow2 ? 2 : 1);
    case Scheme::fp8_tensor: return tensor_amax / fmax * (rc.pow2 ? 2 : 1);
    default: return block_amax / 6 * (1 + 0x1p-4);
  }
}

double relative_bound(const Recipe& rc) {
  double rel = element_bound(rc.elem).rel;
  if (rc.scheme == Scheme::mx && rc.rounding == MxRounding::floor)
    rel = std::max(rel, rc.elem == num::ElemFormat::e2m1 ? 0.25 : 0.125);
  return rel;
}

TEST(CpuBackend, RoundTripErrorIsWithinTheFormatPrecision) {
  const int64_t rows = 64, cols = 256;
  for (const auto& recipe : recipe_variants()) {
    const Recipe rc = Recipe::parse(recipe);
    if (!rc.has_rowwise()) continue;
    SCOPED_TRACE(recipe);
    const bool nvfp4 = rc.scheme == Scheme::nvfp4;
    const auto x = random_matrix(rows, cols, 10, nvfp4 ? -2 : -8, nvfp4 ? 2 : 8);
    Outputs o = quantize_f32(recipe, x, rows, cols);
    std::vector<float> y(x.size());
    dequantize(o.view(), f32_matrix(y, rows, cols));
    double tensor_amax = 0;
    for (float v : x) tensor_amax = std::max(tensor_amax, double(std::fabs(v)));
    EXPECT_EQ(load_f32(o.amax.data()), float(tensor_amax));  // the amax buffer, when given, is written
    // block maxima over the recipe's (block_rows x block_cols) blocks
    const int64_t bh = rc.is_tensor_scaled() ? rows : rc.block_rows, bw = rc.is_tensor_scaled() ? cols : rc.block_cols;
    const ElementBound eb = element_bound(rc.elem);
    const double rel = relative_bound(rc);
    double worst = 0;  // largest error / bound seen
    for (int64_t r0 = 0; r0 < rows; r0 += bh)
      for (int64_t c0 = 0; c0 < cols; c0 += bw) {
        double a = 0;
        for (int64_t r = r0; r < std::min(rows, r0 + bh); ++r)
          for (int64_t c = c0; c < std::min(cols, c0 + bw); ++c) a = std::max(a, double(std::fabs(x[size_t(r * cols + c)])));
        const double s_max = scale_upper_bound(rc, a, tensor_amax) * (1 + 0x1p-20);
        for (int64_t r = r0; r < std::min(rows, r0 + bh); ++r)
          for (int64_t c = c0; c < std::min(cols, c0 + bw); ++c) {
            const double xv = x[size_t(r * cols + c)], yv = y[size_t(r * cols + c)];
            const double bound = std::max(rel * std::fabs(xv), eb.half_sub * s_max) * (1 + 0x1p-20) +
                                 std::fabs(xv) * 0x1p-21 + 1e-44;
            ASSERT_LE(std::fabs(yv - xv), bound) << "(" << r << ", " << c << ") x=" << xv << " y=" << yv << " A=" << a;
            worst = std::max(worst, std::fabs(yv - xv) / bound);
          }
      }
    EXPECT_GT(worst, 0.25) << "the bound is far from tight; it would hardly catch a wrong rounding";
  }
}

// ---- non-finite inputs ----------------------------------------------------------------------------
// FORMATS.md section 2: a NaN makes its block's scale NaN and its elements NaN codes (E2M1: 0); an
// Inf block maximum is treated as FLT_MAX (Inf elements saturate); other blocks are unaffected.
struct NonFiniteCase {
  const char* recipe;
  uint32_t inf_block_scale;  // expected stored scale of the Inf block (fp32 bits or code)
};

std::vector<NonFiniteCase> nonfinite_cases() {
  const float flt_max = std::numeric_limits<float>::max();
  return {
      {"fp8_block_1x128", bits_of(float(double(flt_max) / 448))},
      {"fp8_block_1x32", bits_of(float(double(flt_max) / 448))},
      {"fp8_block_128x128", bits_of(float(double(flt_max) / 448))},
      {"fp8_block_1x128:pow2=1", bits_of(std::ldexp(1.0f, 120))},  // 2^119.2 -> 2^120
      {"fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", 127 + 120},
      {"fp4_block_1x32", 127 + 126},  // FLT_MAX / 6 = 2^125.4 -> 2^126
      {"mxfp8", 247},
      {"mxfp8_e5m2", 240},
      {"mxfp4", 253},
      {"mxfp8:rounding=floor", 246},  // 127 - 8 + 127
  };
}

TEST(CpuBackend, NanAndInfBlocksFollowTheContract) {
  auto x = random_matrix(kRows, kCols, 12, -4, 4);
  auto clean = x;
  const std::pair<int64_t, int64_t> nan_at{5, 7}, pinf_at{70, 150}, ninf_at{70, 151};
  x[size_t(nan_at.first * kCols + nan_at.second)] = NAN;
  x[size_t(pinf_at.first * kCols + pinf_at.second)] = INFINITY;
  x[size_t(ninf_at.first * kCols + ninf_at.second)] = -INFINITY;
  for (const auto& nc : nonfinite_cases()) {
    SCOPED_TRACE(nc.recipe);
    const Outputs o = quantize_f32(nc.recipe, x, kRows, kCols);
    const Outputs ref = quantize_f32(nc.recipe, clean, kRows, kCols);
    const Recipe& rc = o.recipe;
    const bool fp4 = rc.elem == num::ElemFormat::e2m1;
    const RefFormat f = RefFormat::make(rc.elem);
    const bool fp32 = rc.scale_type == ScaleType::float32;
    auto block_of = [&](int64_t r, int64_t c) { return std::pair<int64_t, int64_t>{r / rc.block_rows, c / rc.block_cols}; };
    auto scale_bits = [&](const Outputs& out, std::pair<int64_t, int64_t> b) -> uint32_t {
      const int64_t off = num::scale_offset(out.layout.scales.geometry, b.first, b.second);
      return fp32 ? bits_of(load_f32(&out.scales[size_t(off * 4)])) : out.scales[size_t(off)];
    };
    const auto nan_block = block_of(nan_at.first, nan_at.second), inf_block = block_of(pinf_at.first, pinf_at.second);
    const uint32_t nan_scale = scale_bits(o, nan_block);
    if (fp32) {
      EXPECT_TRUE(std::isnan(float_of(nan_scale)));
    } else {
      EXPECT_EQ(nan_scale, 0xFFu);
    }
    EXPECT_EQ(scale_bits(o, inf_block), nc.inf_block_scale);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c) {
        const auto b = block_of(r, c);
        const int64_t i = r * kCols + c;
        const uint8_t code = code_at(o.data, i, fp4);
        if (b == nan_block) {
          ASSERT_EQ(code, f.nan_code) << r << "," << c;
        } else if (b == inf_block) {
          if (r == pinf_at.first && c == pinf_at.second) {
            EXPECT_EQ(code, f.max_code);
          } else if (r == ninf_at.first && c == ninf_at.second) {
            EXPECT_EQ(code, f.max_code | (1 << f.sign_shift));
          } else {
            ASSERT_EQ(code & f.max_code, 0) << "finite element of an Inf block must underflow to +-0";
          }
        } else {
          ASSERT_EQ(code, code_at(ref.data, i, fp4)) << "block unaffected by the specials changed at " << r << "," << c;
          ASSERT_EQ(scale_bits(o, b), scale_bits(ref, b));
        }
      }
    // Dequantized: the whole NaN block is NaN (for E2M1 the NaN scale carries it).
    Outputs q = quantize_f32(nc.recipe, x, kRows, kCols);
    std::vector<float> y(x.size());
    dequantize(q.view(), f32_matrix(y, kRows, kCols));
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kCols; ++c)
        if (block_of(r, c) == nan_block) {
          ASSERT_TRUE(std::isnan(y[size_t(r * kCols + c)])) << r << "," << c;
        }
  }
}

TEST(CpuBackend, NonFiniteTensorScaledRecipes) {
  // fp8_tensor: a NaN or Inf tensor amax gives scale 1 (section 2.1): elements convert as they are.
  std::vector<float> row = {1.5f, NAN, -INFINITY, 1000.0f, -0.0f, 0.001953125f};
  const Outputs t = quantize_row_f32("fp8_tensor", row);
  EXPECT_EQ(load_f32(t.global_scale.data()), 1.0f);
  // E4M3: 1.5 (field 7, m 4); NaN; -Inf -> -448; 1000 -> 448; -0; 2^-9 (smallest subnormal)
  const uint8_t nan4 = RefFormat::make(num::ElemFormat::e4m3fn).nan_code;
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0x3C, nan4, 0xFE, 0x7E, 0x80, 0x01}));
  const Outputs e = quantize_row_f32("fp8_tensor_e5m2", row);
  // E5M2: 1.5 (field 15, m 2); NaN; -Inf -> -57344; 1000 -> 1024 (2^10, field 25); -0; 2^-9 (field 6)
  const uint8_t nan5 = RefFormat::make(num::ElemFormat::e5m2).nan_code;
  EXPECT_EQ(e.data, (std::vector<uint8_t>{0x3E, nan5, 0xFB, 0x64, 0x80, 0x18}));
}

}  // namespace
}  // namespace mxq::test
