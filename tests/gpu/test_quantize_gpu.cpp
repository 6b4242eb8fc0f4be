// GPU quantize / dequantize against the CPU reference, byte for byte: data, scales (padding
// included), global scale and amax. Every output is poisoned before each run. Label: gpu.
// Without a usable GPU every test here reports SKIPPED.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli/host_tensor.hpp"
#include "cuda/quantize/fast_key.h"
#include "gpu_test.hpp"
#include "mxq/mxq.hpp"
#include "mxq/numerics/activations.h"
#include "mxq/numerics/formats.h"
#include "runtime/backends.hpp"
#include "runtime/memory.hpp"
#if MXQ_WITH_CUDA
#include "cuda/check.hpp"
#include "cuda/quantize/fast_launch.hpp"
#include "cuda/quantize/quantize_tile_launch.cuh"
#include "runtime/jit/kernels.hpp"
#endif

namespace mxq {
namespace {

using namespace gpu_test;

// ---- case generation (separate from the checks)
// all16_*: every finite fp16 / bf16 value with |x| <= 6, one per element, each 32-element block
// led by a 6 so that MX and pow2 scales give the multiplier 1: the FP4 codes of every input.
// peak_last: normal values below 8 in magnitude and one of 1000 in the last element, the
// tensor's unique amax (in the last row tile: a cluster CTA's second tile in the one-launch
// cases that have two per CTA), which a pass that missed that tile would not see.
enum class Values { normal_outliers, special, all16_fp16, all16_bf16, every_bf16, peak_last };

std::vector<float> all16_le6(bool fp16) {
  std::vector<float> v;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float x = fp16 ? num::fp16_to_float(uint16_t(h)) : num::bf16_to_float(uint16_t(h));
    if (std::fabs(x) <= 6.0f) v.push_back(x);  // false for NaN
  }
  return v;
}

std::vector<float> make_values(int64_t rows, int64_t cols, Values kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * cols));
  if (kind == Values::all16_fp16 || kind == Values::all16_bf16) {
    const std::vector<float> all = all16_le6(kind == Values::all16_fp16);
    for (size_t i = 0, k = 0; i < x.size(); ++i) x[i] = i % 32 == 0 ? 6.0f : all[k++ % all.size()];
    return x;
  }
  if (kind == Values::every_bf16) {  // each bf16 bit pattern in order (a block shares a binade), NaNs too
    for (size_t i = 0; i < x.size(); ++i) x[i] = num::bf16_to_float(uint16_t((i + seed) & 0xffffu));
    return x;
  }
  for (auto& v : x) v = nd(rng);
  if (kind == Values::peak_last) {
    for (auto& v : x) v = std::fmax(-7.5f, std::fmin(7.5f, v));
    x.back() = -1000.0f;
    return x;
  }
  for (int64_t i = 0; i < rows * cols / 97 + 1; ++i) x[size_t(rng() % x.size())] *= 300.0f * ud(rng);  // outliers
  if (kind == Values::special) {
    const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 1e-40f, -3e-39f, 0.0f, -0.0f, 448.0f, 449.0f,
                              57344.0f, 6.0f, 5.0f, 0.25f, 0.75f, 1e30f, -1e-30f};
    for (int64_t i = 0; i < rows * cols / 50 + 1; ++i) x[size_t(rng() % x.size())] = specials[rng() % 17];
    // a whole block of zeros and one of subnormals, when there is room
    if (cols >= 64) {
      for (int c = 0; c < 32; ++c) x[size_t(c)] = 0.0f;
      for (int c = 32; c < 64; ++c) x[size_t(c)] = float(c) * 1e-41f;
    }
    // and a block of the larger subnormals, whose products with the 2^127 multiplier of a block
    // this small reach FP4 codes 1-4 (the bf16 FP4 path multiplies subnormal bf16 operands)
    if (cols >= 96)
      for (int c = 64; c < 96; ++c) x[size_t(c)] = float(c - 62) * (c % 2 ? -3e-40f : 3e-40f);
  }
  return x;
}

std::vector<uint8_t> to_dtype(const std::vector<float>& x, DType t) {
  std::vector<uint8_t> out(x.size() * size_t(dtype_bits(t) / 8));
  for (size_t i = 0; i < x.size(); ++i) {
    if (t == DType::float32) std::memcpy(&out[i * 4], &x[i], 4);
    else {
      const uint16_t h = t == DType::bfloat16 ? num::float_to_bf16(x[i]) : num::float_to_fp16(x[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// The input bytes of a case. Large inputs (over 1M values) are made once per (shape, stride,
// kind, dtype) and shared by every recipe: drawing 58M normal values takes seconds, and that
// was most of BitExactAllRecipesShapesDtypes' time on the GPU machine (349 s on 2026-12-01).
std::vector<uint8_t> input_bytes(int64_t rows, int64_t stride, Values kind, uint64_t seed, DType dt,
                                 const std::vector<uint8_t>** shared) {
  *shared = nullptr;
  if (rows * stride <= 1'000'000) return to_dtype(make_values(rows, stride, kind, seed), dt);
  static std::map<std::tuple<int64_t, int64_t, int, int>, std::vector<uint8_t>> made;
  auto& bytes = made[{rows, stride, int(kind), int(dt)}];
  if (bytes.empty()) bytes = to_dtype(make_values(rows, stride, kind, uint64_t(rows * 31 + stride)), dt);
  *shared = &bytes;
  return {};
}

std::vector<std::string> recipes_under_test() {
  return {
      "fp8_tensor", "fp8_tensor_e5m2", "fp8_tensor:pow2=1", "fp8_tensor:dir=both",
      "fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma", "fp8_block_1x128:pow2=1",
      "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", "fp8_block_1x128:pow2=1,layout=packed_ue8m0",
      "fp8_block_1x64", "fp8_block_1x64:dir=both,colform=same", "fp8_block_1x32:eps=0", "fp8_block_128x128", "fp8_block_128x128:dir=both",
      "fp8_block_1x128:dir=both", "mxfp8", "mxfp8:dir=both", "mxfp8:dir=both,colform=same", "mxfp8:dir=col",
      "mxfp8:rounding=floor", "mxfp8:layout=swizzled_128x4,dir=both", "mxfp8:layout=packed_ue8m0",
      "mxfp8:layout=packed_ue8m0,dir=both", "mxfp8:layout=swizzled_128x4,dir=both,colform=same",
      "mxfp4:layout=packed_ue8m0,dir=both",
      "mxfp8_e5m2:dir=both", "mxfp4", "mxfp4:dir=both", "mxfp4:dir=both,colform=same",
      "mxfp4:layout=swizzled_128x4", "mxfp4:layout=swizzled_128x4,dir=both", "nvfp4", "nvfp4:layout=swizzled_128x4",
      "nvfp4:dir=both", "nvfp4:layout=swizzled_128x4,dir=both", "nvfp4_2d",
      "nvfp4_2d:dir=both", "fp4_block_1x32", "fp4_block_1x32:dir=both",
      // fp8_block column blocks: staged 1-byte scales and bf16 column products where the scales
      // are UE8M0 powers of two; neither with fp32 scales or without pow2 (FastTile::byte_scales)
      "fp4_block_1x32:dir=both,colform=same", "fp4_block_1x32:layout=packed_ue8m0,dir=both",
      "fp4_block_1x32:dir=both,scale=float32", "fp4_block_1x32:dir=both,pow2=0,scale=float32",
      "fp8_block_1x32:dir=both", "fp8_block_1x32:dir=both,pow2=1,scale=float8_e8m0fnu",
      // NVFP4's staged scales in the same-shape form too (8-byte row runs; two 4-block groups
      // in swizzled_128x4)
      "nvfp4:dir=both,colform=same", "nvfp4:layout=swizzled_128x4,dir=both,colform=same",
  };
}

struct Shape {
  int64_t rows, cols;
};

std::vector<Shape> shapes_under_test() {
  std::vector<Shape> s = {{1, 1}, {1, 7168}, {3, 33}, {127, 129}, {2, 2050}, {130, 264}, {33, 1000}, {257, 72}, {16, 7168}};
  if (!small_only()) {
    s.push_back({4096, 7168});
    s.push_back({8192, 7168});
  }
  return s;
}

// FP4 needs even widths (and even heights for transposed columnwise): round those up.
Shape adapt(const Recipe& r, Shape s) {
  if (r.elem == ElemFormat::e2m1) {
    s.cols += s.cols % 2;
    if (r.has_columnwise() && r.column_form == ColumnForm::transposed) s.rows += s.rows % 2;
  }
  return s;
}

std::string first_mismatch(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "byte %zu of %zu: gpu 0x%02x cpu 0x%02x", i, a.size(), a[i], b[i]);
      return buf;
    }
  return "";
}

std::vector<uint8_t> fetch(DeviceBuffer& b) {
  std::vector<uint8_t> v(size_t(b.bytes()));
  if (b.bytes()) b.download(v.data());
  return v;
}

// Every output buffer of the two backends, byte for byte (poison included where unwritten).
void expect_same_outputs(QuantizedBuffers& qg, QuantizedBuffers& qc, const std::string& where) {
  struct Pair {
    const char* name;
    DeviceBuffer& g;
    DeviceBuffer& c;
  } pairs[] = {{"data", qg.data(), qc.data()},
               {"scales", qg.scales(), qc.scales()},
               {"col_data", qg.col_data(), qc.col_data()},
               {"col_scales", qg.col_scales(), qc.col_scales()},
               {"global_scale", qg.global_scale(), qc.global_scale()},
               {"amax", qg.amax(), qc.amax()}};
  for (auto& p : pairs) {
    const auto g = fetch(p.g), c = fetch(p.c);
    ASSERT_EQ(g.size(), c.size());
    const std::string mm = first_mismatch(g, c);
    ASSERT_TRUE(mm.empty()) << where << ": " << p.name << " differs at " << mm;
  }
}

// The backend of the GPU side of check_case, and what that call ran.
Backend g_gpu_backend = Backend::automatic;
DispatchInfo g_gpu_dispatch;

// Runs one case on both backends and compares every output buffer.
void check_case(const std::string& recipe_text, DType dt, Shape shape, Values kind, uint64_t seed,
                int64_t row_pad = 0) {
  const Recipe recipe = Recipe::parse(recipe_text);
  shape = adapt(recipe, shape);
  const int64_t stride = shape.cols + row_pad;
  const std::vector<uint8_t>* shared = nullptr;
  const std::vector<uint8_t> own = input_bytes(shape.rows, stride, kind, seed, dt, &shared);
  const std::vector<uint8_t>& bytes = shared ? *shared : own;
  DeviceBuffer xg(kGpu, int64_t(bytes.size()));
  xg.upload(bytes.data());
  const TensorView xgv = TensorView::matrix(xg.data(), dt, shape.rows, shape.cols, stride, kGpu);
  const TensorView xcv = TensorView::matrix(const_cast<uint8_t*>(bytes.data()), dt, shape.rows, shape.cols, stride);

  QuantizedBuffers qg(recipe, shape.rows, shape.cols, kGpu), qc(recipe, shape.rows, shape.cols, kCpu);
  for (auto* q : {&qg, &qc}) {
    q->data().fill(0xcd);
    q->scales().fill(0xcd);
    q->col_data().fill(0xcd);
    q->col_scales().fill(0xcd);
    q->global_scale().fill(0xcd);
    q->amax().fill(0xcd);
  }
  QuantizeOptions og;
  og.backend = g_gpu_backend;
  quantize(xgv, qg.view(), og);
  g_gpu_dispatch = last_dispatch();
  QuantizeOptions oc;
  oc.backend = Backend::cpu;
  quantize(xcv, qc.view(), oc);
  runtime::device_synchronize(kGpu);
  const std::string where = recipe.name() + " " + dtype_name(dt) + " " + std::to_string(shape.rows) + "x" +
                            std::to_string(shape.cols) + (row_pad ? " stride " + std::to_string(stride) : "") +
                            (kind == Values::special ? " special" : "");
  expect_same_outputs(qg, qc, where);
  if (::testing::Test::HasFatalFailure()) return;
  // Dequantize each direction on both backends: identical bits.
  for (bool col : {false, true}) {
    if (col ? !recipe.has_columnwise() : !recipe.has_rowwise()) continue;
    const bool tr = col && recipe.column_form == ColumnForm::transposed;
    const int64_t yr = tr ? shape.cols : shape.rows, yc = tr ? shape.rows : shape.cols;
    for (DType out : {DType::float32, DType::bfloat16}) {
      const int64_t ybytes = yr * yc * dtype_bits(out) / 8;
      DeviceBuffer yg(kGpu, ybytes), yc_(kCpu, ybytes);
      yg.fill(0xcd);
      yc_.fill(0xcd);
      DequantizeOptions o;
      o.columnwise = col;
      dequantize(qg.view(), TensorView::matrix(yg.data(), out, yr, yc, -1, kGpu), o);
      dequantize(qc.view(), TensorView::matrix(yc_.data(), out, yr, yc, -1, kCpu), o);
      const auto g = fetch(yg), c = fetch(yc_);
      const std::string mm = first_mismatch(g, c);
      ASSERT_TRUE(mm.empty()) << where << ": dequantize " << (col ? "columnwise" : "rowwise") << " to "
                              << dtype_name(out) << " differs at " << mm;
    }
  }
}

TEST(GpuQuantize, BitExactAllRecipesShapesDtypes) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  int cases = 0;
  for (const auto& r : recipes_under_test())
    for (DType dt : {DType::bfloat16, DType::float16, DType::float32})
      for (const Shape& s : shapes_under_test()) {
        if (s.rows * s.cols > 1'000'000 && dt != DType::bfloat16 && r.find("dir=both") == std::string::npos) continue;
        check_case(r, dt, s, Values::normal_outliers, seed++);
        if (HasFatalFailure()) return;
        ++cases;
      }
  std::printf("bit-exact cases: %d\n", cases);
}

TEST(GpuQuantize, BitExactSpecialValues) {
  REQUIRE_GPU();
  uint64_t seed = 1000;
  for (const auto& r : recipes_under_test())
    for (DType dt : {DType::bfloat16, DType::float32})
      for (Shape s : {Shape{3, 33}, Shape{127, 129}, Shape{256, 512}}) {
        check_case(r, dt, s, Values::special, seed++);
        if (HasFatalFailure()) return;
      }
}

// The FP4 encoders (fp32 and the f16 pair path of power-of-two multipliers) on every 16-bit
// input up to 6, rowwise and transposed columnwise.
TEST(GpuQuantize, BitExactEveryFp4Input) {
  REQUIRE_GPU();
  for (const char* r : {"mxfp4:dir=both", "fp4_block_1x32:pow2=1", "fp4_block_1x32", "nvfp4"}) {
    check_case(r, DType::float16, Shape{32, 32 * 32 * 38}, Values::all16_fp16, 0);  // each row holds every value
    if (HasFatalFailure()) return;
    check_case(r, DType::bfloat16, Shape{32, 32 * 32 * 34}, Values::all16_bf16, 0);
    if (HasFatalFailure()) return;
  }
}

// Scale buffers with only the 4-byte alignment the fast kernels ask of them: the row+col kernels
// store staged scale runs of up to 8 bytes (NVFP4's 8 blocks across a 128-column tile) only where
// the address allows, so an 8-byte aligned offset from a base 4 bytes past an 8-byte boundary
// must not fault (cudaErrorMisalignedAddress) and must give the reference's scales.
TEST(GpuQuantize, ScaleRunsAtFourByteAlignedBuffers) {
  REQUIRE_GPU();
  const Shape s{128, 512};  // 32 blocks of 16 per row: every tile row's run at an offset % 8 == 0
  for (const char* r : {"nvfp4:dir=both", "mxfp4:dir=both", "fp4_block_1x32:dir=both", "mxfp8:dir=both"}) {
    const Recipe recipe = Recipe::parse(r);
    // bf16: the input the staging kernels take (NVFP4 from fp32 stores its scales directly)
    std::vector<uint8_t> bytes = to_dtype(make_values(s.rows, s.cols, Values::normal_outliers, 5), DType::bfloat16);
    DeviceBuffer xg(kGpu, int64_t(bytes.size()));
    xg.upload(bytes.data());
    QuantizedBuffers qg(recipe, s.rows, s.cols, kGpu), qc(recipe, s.rows, s.cols, kCpu);
    // the GPU's scales 4 bytes into a larger allocation (cudaMalloc's base is 256-byte aligned)
    const int64_t sb = qg.scales().bytes(), csb = qg.col_scales().bytes();
    DeviceBuffer rows4(kGpu, sb + 8), cols4(kGpu, csb + 8);
    rows4.fill(0xcd);
    cols4.fill(0xcd);
    QuantizedTensor out = qg.view();
    out.scales = Buffer{static_cast<uint8_t*>(rows4.data()) + 4, sb};
    out.col_scales = Buffer{static_cast<uint8_t*>(cols4.data()) + 4, csb};
    quantize(TensorView::matrix(xg.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu), out);
    const DispatchInfo ran = last_dispatch();
    EXPECT_NE(ran.kernel.find("colblocks"), std::string::npos) << r << ": ran " << ran.kernel;
    QuantizeOptions oc;
    oc.backend = Backend::cpu;
    quantize(TensorView::matrix(bytes.data(), DType::bfloat16, s.rows, s.cols, -1), qc.view(), oc);
    runtime::device_synchronize(kGpu);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << r;
    std::vector<uint8_t> g4 = fetch(rows4), c4 = fetch(cols4);
    const std::vector<uint8_t> gs(g4.begin() + 4, g4.begin() + 4 + sb), gcs(c4.begin() + 4, c4.begin() + 4 + csb);
    EXPECT_EQ(first_mismatch(gs, fetch(qc.scales())), "") << r << ": row scales";
    EXPECT_EQ(first_mismatch(gcs, fetch(qc.col_scales())), "") << r << ": column scales";
    EXPECT_EQ(first_mismatch(fetch(qg.data()), fetch(qc.data())), "") << r << ": data";
    EXPECT_EQ(first_mismatch(fetch(qg.col_data()), fetch(qc.col_data())), "") << r << ": column data";
  }
}

TEST(GpuQuantize, BitExactStridedRows) {
  REQUIRE_GPU();
  uint64_t seed = 2000;
  for (const auto& r : recipes_under_test())
    for (int64_t pad : {1, 8, 13}) {
      check_case(r, DType::bfloat16, Shape{130, 264}, Values::normal_outliers, seed++, pad);
      if (HasFatalFailure()) return;
    }
}

// More row tiles than the persistent rows grids (FP4: two or three tiles per CTA, fused: one wave
// of CTAs) have CTAs, so that every CTA walks several tiles (RowsWalk's pointer steps and its
// 32-bit row count) and the last one is partial (tests/cpp/test_fast_grid.cpp checks that
// premise); the other tests' shapes give most CTAs a single tile. The column-block ones
// (mxfp4:dir=both, nvfp4:dir=both: transposed, row-major scales, this tall) walk two row tiles per
// CTA (TileWalk; three below 16384 rows); the FP8 rows recipes launch a
// CTA per tile: they are here for the long tall input and its partial last tile. The plain FP4
// rows and column-block kernels end on a wave of one-tile CTAs (FastLaunch), which take the last
// row tiles, the partial one included; nvfp4_2d walks its tiles over two persistent waves.
TEST(GpuQuantize, BitExactTallShapesWalkManyTiles) {
  REQUIRE_GPU();
  uint64_t seed = 3000;
  for (const char* r : {"mxfp4", "nvfp4", "fp4_block_1x32", "mxfp4:dir=both", "nvfp4:dir=both", "nvfp4:layout=swizzled_128x4", "nvfp4_2d",
                        "mxfp8",
                        "fp8_block_1x128:pow2=1,layout=packed_ue8m0,scale=float8_e8m0fnu", "fp8_tensor"}) {
    check_case(r, DType::bfloat16, Shape{100003, 64}, Values::normal_outliers, seed++);
    if (HasFatalFailure()) return;
  }
  check_case("nvfp4", DType::float32, Shape{50021, 32}, Values::normal_outliers, seed++);
}

TEST(GpuQuantize, RandomShapes) {
  REQUIRE_GPU();
  std::mt19937_64 rng(77);
  for (int i = 0; i < 12; ++i) {
    const Shape s{int64_t(1 + rng() % 700), int64_t(1 + rng() % 3000)};
    for (const char* r : {"mxfp8:dir=both", "nvfp4", "fp8_block_1x128:layout=mn_major_tma", "mxfp4:dir=both",
                          "fp8_block_128x128", "fp8_tensor"}) {
      check_case(r, DType::bfloat16, s, Values::normal_outliers, rng());
      if (HasFatalFailure()) return;
    }
  }
}

// Per-tensor FP8 and NVFP4 with a caller-given amax (static checkpoint scales), and FP8 with a
// caller-given scale (its amax still taken on the device). The given amax reaches the output's
// amax through the quantize kernel's block (0, 0) (TileParams::amax_canonical), so every output is
// poisoned first: a launch that skipped the copy, an empty tensor's included, leaves 0xcd there.
// Widths 512 (the specialised kernels, AOT and JIT) and 510 (the generic tile kernel), an empty
// tensor, and amax 0 (a zero scale's edge) as well as 123.5; bf16 input.
TEST(GpuQuantize, CallerGivenAmaxAndScale) {
  REQUIRE_GPU();
  uint64_t seed = 5;
  for (const char* rt : {"nvfp4", "fp8_tensor", "fp8_tensor:pow2=1", "nvfp4:layout=swizzled_128x4"})
    for (Shape s : {Shape{64, 512}, Shape{64, 510}, Shape{0, 512}})
      for (Backend b : {Backend::automatic, Backend::cuda_jit})
        for (int mode = 0; mode < 3; ++mode) {  // amax 123.5, amax 0, scale_in (fp8_tensor only)
          const Recipe r = Recipe::parse(rt);
          if (mode == 2 && r.scheme != Scheme::fp8_tensor) continue;
          const std::vector<uint8_t> bytes =
              s.rows == 0 ? std::vector<uint8_t>{}
                          : to_dtype(make_values(s.rows, s.cols, Values::normal_outliers, seed++), DType::bfloat16);
          DeviceBuffer xg(kGpu, int64_t(bytes.size())), given_g(kGpu, 4);
          if (!bytes.empty()) xg.upload(bytes.data());
          const float given = mode == 0 ? 123.5f : mode == 1 ? 0.0f : 0.03125f;
          given_g.upload(&given);
          QuantizedBuffers qg(r, s.rows, s.cols, kGpu), qc(r, s.rows, s.cols, kCpu);
          for (auto* q : {&qg, &qc})
            for (DeviceBuffer* buf : {&q->data(), &q->scales(), &q->global_scale(), &q->amax()}) buf->fill(0xcd);
          QuantizeOptions og, oc;
          og.backend = b;
          oc.backend = Backend::cpu;
          if (mode == 2) {
            og.scale_in = static_cast<const float*>(given_g.data());
            oc.scale_in = &given;
          } else {
            og.amax_in = static_cast<const float*>(given_g.data());
            oc.amax_in = &given;
          }
          quantize(TensorView::matrix(xg.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu), qg.view(), og);
          const std::string ran = last_dispatch().kernel;
          quantize(TensorView::matrix(const_cast<uint8_t*>(bytes.data()), DType::bfloat16, s.rows, s.cols), qc.view(),
                   oc);
          runtime::device_synchronize(kGpu);
          const std::string where = std::string(rt) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                                    " " + backend_name(b) + (mode == 2 ? " scale_in " : " amax_in ") +
                                    std::to_string(given) + " (ran " + ran + ")";
          expect_same_outputs(qg, qc, where);
          if (HasFatalFailure()) return;
          // only mode 2 takes its amax in one launch (64 x 512; 510 columns: the generic kernel), in
          // the kernel with the exchange; an empty call records nothing
          if (s.rows > 0) {
            EXPECT_EQ(ran.find(" one-launch") != std::string::npos, mode == 2 && s.cols % 8 == 0) << where;
          }
          if (mode != 2) {
            float a = -1.0f;
            qg.amax().download(&a);
            EXPECT_EQ(std::memcmp(&a, &given, 4), 0) << where << ": the output amax is not the given one";
          }
        }
}

// A global-scale buffer given with a recipe that has no global scale is ignored by both backends
// (the CUDA kernels wrote the NVFP4 decode scale of a tensor factor of 0 there until session 32):
// it keeps its poison, through the fast kernels (512 columns) and the generic one (510).
TEST(GpuQuantize, GlobalScaleBufferOfABlockRecipeIsLeftAlone) {
  REQUIRE_GPU();
  for (const char* rt : {"mxfp8", "fp8_block_1x128", "mxfp4"})
    for (Shape s : {Shape{64, 512}, Shape{64, 510}}) {
      const Recipe r = Recipe::parse(rt);
      const std::vector<uint8_t> bytes = to_dtype(make_values(s.rows, s.cols, Values::normal_outliers, 21), DType::bfloat16);
      DeviceBuffer xg(kGpu, int64_t(bytes.size())), gs_g(kGpu, 4);
      xg.upload(bytes.data());
      gs_g.fill(0xcd);
      uint32_t gs_c = 0xcdcdcdcdu;
      QuantizedBuffers qg(r, s.rows, s.cols, kGpu), qc(r, s.rows, s.cols, kCpu);
      QuantizedTensor vg = qg.view(), vc = qc.view();
      vg.global_scale = gs_g.buffer();
      vc.global_scale = Buffer{&gs_c, 4};
      quantize(TensorView::matrix(xg.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu), vg);
      quantize(TensorView::matrix(const_cast<uint8_t*>(bytes.data()), DType::bfloat16, s.rows, s.cols), vc);
      runtime::device_synchronize(kGpu);
      const std::string where = std::string(rt) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
      EXPECT_EQ(fetch(gs_g), std::vector<uint8_t>(4, 0xcd)) << where << ": the CUDA backend wrote the global scale";
      EXPECT_EQ(gs_c, 0xcdcdcdcdu) << where << ": the CPU backend wrote the global scale";
      EXPECT_EQ(first_mismatch(fetch(qg.data()), fetch(qc.data())), "") << where;
    }
}

// Quantize inside a captured CUDA graph: no host synchronisation, no allocation, same bytes.
TEST(GpuQuantize, CapturableInCudaGraph) {
  REQUIRE_GPU();
  const Shape s{256, 7168};
  for (const char* rt : {"mxfp8:dir=both", "nvfp4", "fp8_tensor", "fp8_block_1x128"}) {
    const Recipe r = Recipe::parse(rt);
    const std::vector<float> vals = make_values(s.rows, s.cols, Values::normal_outliers, 9);
    const auto bytes = to_dtype(vals, DType::bfloat16);
    DeviceBuffer xg(kGpu, int64_t(bytes.size()));
    xg.upload(bytes.data());
    QuantizedBuffers eager(r, s.rows, s.cols, kGpu), graphed(r, s.rows, s.cols, kGpu);
    const TensorView xv = TensorView::matrix(xg.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu);
    quantize(xv, eager.view());
    graphed.data().fill(0xcd);
    ASSERT_TRUE(runtime::graph_capture_and_replay([&](void* stream) {
      QuantizeOptions o;
      o.stream = stream;
      quantize(xv, graphed.view(), o);
    }, 3)) << rt;
    EXPECT_EQ(first_mismatch(fetch(graphed.data()), fetch(eager.data())), "") << rt;
    EXPECT_EQ(first_mismatch(fetch(graphed.scales()), fetch(eager.scales())), "") << rt;
    EXPECT_EQ(first_mismatch(fetch(graphed.col_data()), fetch(eager.col_data())), "") << rt;
  }
}

#if MXQ_WITH_CUDA
// A small per-tensor call (fp8_tensor, NVFP4) takes its amax and its cast in one launch: one
// cluster (cuda::cluster_amax_grid: the CTAs share the amax through distributed shared memory)
// up to its element cap and 8 column tiles; beyond, up to one CTA per SM (cuda::grid_amax_grid:
// the CTAs meet in global memory, a cooperative launch); past those, the amax kernel and then the
// cast kernel. All bit-exact with the CPU reference (amax and global scale included), with NaN and
// Inf in the input too, with the amax's unique peak in the last element (a CTA's second, partial
// tile), in every input dtype and through both the AOT and the JIT kernels, in a cluster of 16
// CTAs and with rows further apart than their width; the dispatch record says which ran ("+amax":
// a cluster, "+amax-grid": the grid exchange), and each case expects the one the rules pick (for
// 114 SMs or more: an H100 PCIe has 114, an H100 SXM or H200 132). The cases run one after another
// on one stream, so each grid exchange starts from the words the one before left.
TEST(GpuQuantize, PerTensorSmallCallsInOneLaunch) {
  REQUIRE_GPU();
  if (cuda::sm_count(0) < 114) GTEST_SKIP() << "the expected paths assume 114 SMs or more";
  const int64_t cap_rows = cuda::kOneLaunchMaxElements / 7168;
  enum Mode { two, cluster, grid };
  struct Case {
    Shape s;
    Mode m, m_f32;  // fp32 rows kernels have 4-row tiles, and a CTA takes at most two
  };
  const Case cases[] = {
      {{1, 8}, cluster, cluster},        {{1, 7168}, cluster, cluster},     {{16, 7168}, cluster, cluster},
      {{5, 4104}, cluster, cluster},     {{cap_rows, 7168}, cluster, grid}, {{cap_rows + 1, 7168}, grid, grid},
      {{1, 8 * 1024}, cluster, cluster}, {{1, 8 * 1024 + 8}, grid, grid},  // 9 column tiles: past a cluster's 8
      {{197, 1024}, cluster, grid},      {{264, 512}, grid, grid},         // 33 (66) row tiles of one column tile
      {{128, 7168}, grid, grid},        // 16 x 7 tiles: 112 CTAs (fp32: 2 tiles each)
      {{256, 7168}, grid, two},         // 32 x 7 tiles over 18 x 7 CTAs (fp32: 64 down)
      {{300, 7168}, two, two},          // 38 tiles down: 3 for some of 18 CTAs
      {{16, 8192}, cluster, cluster}};  // 8 x 2 CTAs: a cluster of 16, the non-portable size
  struct Restore {
    ~Restore() { g_gpu_backend = Backend::automatic; }
  } restore;
  uint64_t seed = 7000;
  int cases_run = 0, counts[3] = {};
  for (Backend b : {Backend::cuda_aot, Backend::cuda_jit}) {
    g_gpu_backend = b;
    for (const char* rt :
         {"fp8_tensor", "fp8_tensor_e5m2", "fp8_tensor:pow2=1", "nvfp4", "nvfp4:layout=swizzled_128x4"})
      for (DType dt : {DType::bfloat16, DType::float16, DType::float32})
        for (const Case& c : cases)
          for (Values v : {Values::normal_outliers, Values::special, Values::peak_last}) {
            if (b == Backend::cuda_jit && (dt != DType::bfloat16 || v == Values::special)) continue;
            check_case(rt, dt, c.s, v, seed++);
            if (HasFatalFailure()) return;
            const std::string& k = g_gpu_dispatch.kernel;
            const Mode m = dt == DType::float32 ? c.m_f32 : c.m;
            const std::string ran = k.find("+amax-grid ") != std::string::npos ? "grid"
                                    : k.find("+amax ") != std::string::npos    ? "cluster"
                                                                               : "two kernels";
            const char* names[] = {"two kernels", "cluster", "grid"};
            ASSERT_EQ(ran, names[m]) << rt << " " << dtype_name(dt) << " " << c.s.rows << "x" << c.s.cols << ": " << k;
            if (m != two) {  // by the backend asked for
              ASSERT_EQ(k.rfind(b == Backend::cuda_jit ? "jit+" : "fast+", 0), 0u) << k;
            }
            // only a one-launch call runs the kernel with the exchange compiled in (FastKey::one_launch)
            ASSERT_EQ(k.find(" one-launch") != std::string::npos, m != two) << k;
            ++cases_run;
            ++counts[m];
          }
  }
  // rows further apart than their width (the amax pass walks the row stride as the cast does)
  for (const char* rt : {"fp8_tensor", "nvfp4"}) {
    g_gpu_backend = Backend::cuda_aot;
    check_case(rt, DType::bfloat16, Shape{24, 7168}, Values::peak_last, seed++, /*row_pad=*/72);
    if (HasFatalFailure()) return;
    ASSERT_EQ(g_gpu_dispatch.kernel.rfind("fast+amax ", 0), 0u) << rt << " with a row stride: " << g_gpu_dispatch.kernel;
    check_case(rt, DType::bfloat16, Shape{128, 7168}, Values::peak_last, seed++, /*row_pad=*/72);
    if (HasFatalFailure()) return;
    ASSERT_EQ(g_gpu_dispatch.kernel.rfind("fast+amax-grid ", 0), 0u)
        << rt << " with a row stride: " << g_gpu_dispatch.kernel;
  }
  std::printf("per-tensor cases: %d; %d in a cluster, %d in a grid exchange, %d in two kernels\n", cases_run,
              counts[cluster], counts[grid], counts[two]);
}

// The grid exchange's words are the stream's and are left zero by every launch; a graph captured
// with such calls takes words of its own. Here a graph of two calls (128 x 7168, 200 x 4096) is
// replayed between eager rounds of the same calls on the same stream, while a second stream runs
// the same calls into outputs of its own; each round has new input values over poisoned outputs,
// and every output equals the CPU reference's (a stale, shared or mixed-up amax would show in the
// amax, the global scale and the codes), through the AOT and the JIT kernels.
TEST(GpuQuantize, GridExchangeInGraphsAndStreams) {
  REQUIRE_GPU();
  if (cuda::sm_count(0) < 114) GTEST_SKIP() << "the grid exchange's shapes assume 114 SMs or more";
  struct Restore {
    ~Restore() { g_gpu_backend = Backend::automatic; }
  } restore;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  struct Streams {
    cudaStream_t a, b;
    ~Streams() { cudaStreamDestroy(a), cudaStreamDestroy(b); }
  } streams{s1, s2};
  const Shape shapes[2] = {{128, 7168}, {200, 4096}};
  uint64_t seed = 9100;
  for (Backend b : {Backend::cuda_aot, Backend::cuda_jit})
    for (const char* rt : {"fp8_tensor", "nvfp4"}) {
      g_gpu_backend = b;
      const Recipe r = Recipe::parse(rt);
      std::vector<std::unique_ptr<DeviceBuffer>> xs;
      std::vector<std::unique_ptr<QuantizedBuffers>> mine, side, want;
      for (const Shape& s : shapes) {
        xs.push_back(std::make_unique<DeviceBuffer>(kGpu, s.rows * s.cols * 2));
        mine.push_back(std::make_unique<QuantizedBuffers>(r, s.rows, s.cols, kGpu));
        side.push_back(std::make_unique<QuantizedBuffers>(r, s.rows, s.cols, kGpu));
        want.push_back(std::make_unique<QuantizedBuffers>(r, s.rows, s.cols, kCpu));
      }
      auto x_of = [&](int i) {
        return TensorView::matrix(xs[i]->data(), DType::bfloat16, shapes[i].rows, shapes[i].cols, -1, kGpu);
      };
      auto run = [&](std::vector<std::unique_ptr<QuantizedBuffers>>& out, cudaStream_t st) {
        QuantizeOptions o;
        o.backend = b;
        o.stream = st;
        for (int i = 0; i < 2; ++i) quantize(x_of(i), out[i]->view(), o);
      };
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      run(mine, s1);
      ASSERT_EQ(cudaStreamEndCapture(s1, &graph), cudaSuccess);
      const std::string k = last_dispatch().kernel;
      ASSERT_EQ(k.rfind(b == Backend::cuda_jit ? "jit+amax-grid " : "fast+amax-grid ", 0), 0u) << rt << ": " << k;
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      struct Graph {
        cudaGraph_t g;
        cudaGraphExec_t e;
        ~Graph() { cudaGraphExecDestroy(e), cudaGraphDestroy(g); }
      } owned{graph, exec};
      for (int round = 0; round < 4; ++round) {
        const bool replay = round % 2 == 0;
        for (int i = 0; i < 2; ++i) {
          const auto bytes =
              to_dtype(make_values(shapes[i].rows, shapes[i].cols, Values::peak_last, seed++), DType::bfloat16);
          xs[i]->upload(bytes.data());
          QuantizeOptions oc;
          oc.backend = Backend::cpu;
          quantize(TensorView::matrix(const_cast<uint8_t*>(bytes.data()), DType::bfloat16, shapes[i].rows,
                                      shapes[i].cols, -1),
                   want[i]->view(), oc);
          for (auto* q : {mine[i].get(), side[i].get()}) {
            q->data().fill(0xcd);
            q->scales().fill(0xcd);
            q->global_scale().fill(0xcd);
            q->amax().fill(0xcd);
          }
        }
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        if (replay) {
          ASSERT_EQ(cudaGraphLaunch(exec, s1), cudaSuccess);
        } else {
          run(mine, s1);
        }
        run(side, s2);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        for (int i = 0; i < 2; ++i) {
          const std::string where = std::string(rt) + " " + std::to_string(shapes[i].rows) + "x" +
                                    std::to_string(shapes[i].cols) + " round " + std::to_string(round);
          expect_same_outputs(*mine[i], *want[i], where + (replay ? " (graph)" : " (eager)"));
          expect_same_outputs(*side[i], *want[i], where + " (second stream)");
        }
        if (HasFailure()) return;
      }
    }
}

// The grid exchange under every capture mode and on the streams users pass without creating them:
// a capture in global, thread-local and relaxed mode (the words of a graph are handed out inside
// the capture, a new block of them allocated there when one runs out), the legacy default stream, and
// cudaStreamPerThread from two threads at once (each thread its own stream, so its own words). Every output equals the
// CPU reference's; the device's cooperative launch is printed.
TEST(GpuQuantize, GridExchangeUnderEveryCaptureModeAndStream) {
  REQUIRE_GPU();
  if (cuda::sm_count(0) < 114) GTEST_SKIP() << "the grid exchange's shapes assume 114 SMs or more";
  const cuda::CooperativeLaunch coop = cuda::cooperative_launch(0);
  std::printf("[ info ] cooperative launch: %s\n", coop == cuda::CooperativeLaunch::with_pdl ? "with PDL"
                                                   : coop == cuda::CooperativeLaunch::plain  ? "without PDL"
                                                                                             : "none");
  ASSERT_NE(coop, cuda::CooperativeLaunch::none) << "an H100 / H200 takes cooperative launches";
  const Shape sh{128, 7168};
  uint64_t seed = 9300;
  auto check = [&](const char* rt, const std::string& where, auto&& run_on) {
    const Recipe r = Recipe::parse(rt);
    DeviceBuffer x(kGpu, sh.rows * sh.cols * 2);
    QuantizedBuffers got(r, sh.rows, sh.cols, kGpu), want(r, sh.rows, sh.cols, kCpu);
    const auto bytes = to_dtype(make_values(sh.rows, sh.cols, Values::peak_last, seed++), DType::bfloat16);
    x.upload(bytes.data());
    QuantizeOptions oc;
    oc.backend = Backend::cpu;
    quantize(TensorView::matrix(const_cast<uint8_t*>(bytes.data()), DType::bfloat16, sh.rows, sh.cols, -1), want.view(),
             oc);
    got.data().fill(0xcd);
    got.scales().fill(0xcd);
    got.global_scale().fill(0xcd);
    got.amax().fill(0xcd);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    run_on(TensorView::matrix(x.data(), DType::bfloat16, sh.rows, sh.cols, -1, kGpu), got.view());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << where;
    const std::string k = last_dispatch().kernel;
    EXPECT_NE(k.find("amax-grid"), std::string::npos) << where << ": " << k;
    expect_same_outputs(got, want, where);
  };
  for (const char* rt : {"fp8_tensor", "nvfp4"}) {
    for (const auto mode :
         {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed}) {
      const std::string where = std::string(rt) + " capture mode " + std::to_string(int(mode));
      cudaStream_t st = nullptr;
      ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
      check(rt, where, [&](const TensorView& x, const QuantizedTensor& out) {
        QuantizeOptions o;
        o.stream = st;
        cudaGraph_t g = nullptr;
        cudaGraphExec_t e = nullptr;
        ASSERT_EQ(cudaStreamBeginCapture(st, mode), cudaSuccess) << where;
        quantize(x, out, o);
        ASSERT_EQ(cudaStreamEndCapture(st, &g), cudaSuccess) << where;
        ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess) << where;
        EXPECT_EQ(cudaGraphLaunch(e, st), cudaSuccess) << where;
        EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess) << where;
        cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
      });
      cudaStreamDestroy(st);
    }
    check(rt, std::string(rt) + " legacy stream", [&](const TensorView& x, const QuantizedTensor& out) {
      QuantizeOptions o;
      o.stream = cudaStreamLegacy;
      quantize(x, out, o);
    });
    // two threads on cudaStreamPerThread, three calls each, each into its own outputs
    const Recipe r = Recipe::parse(rt);
    QuantizedBuffers want(r, sh.rows, sh.cols, kCpu);
    const auto bytes = to_dtype(make_values(sh.rows, sh.cols, Values::peak_last, seed++), DType::bfloat16);
    QuantizeOptions oc;
    oc.backend = Backend::cpu;
    quantize(TensorView::matrix(const_cast<uint8_t*>(bytes.data()), DType::bfloat16, sh.rows, sh.cols, -1), want.view(),
             oc);
    DeviceBuffer x(kGpu, sh.rows * sh.cols * 2);
    x.upload(bytes.data());
    std::vector<std::unique_ptr<QuantizedBuffers>> outs;
    for (int i = 0; i < 6; ++i) outs.push_back(std::make_unique<QuantizedBuffers>(r, sh.rows, sh.cols, kGpu));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::thread> threads;
    std::atomic<int> errors{0}, ready{0};
    unsigned* words[2] = {};
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        try {
          QuantizeOptions o;
          o.stream = cudaStreamPerThread;
          ++ready;
          while (ready.load() < 2) {
          }  // both threads' calls at once
          for (int i = 0; i < 3; ++i)
            quantize(TensorView::matrix(x.data(), DType::bfloat16, sh.rows, sh.cols, -1, kGpu),
                     outs[size_t(t * 3 + i)]->view(), o);
          words[t] = cuda::grid_amax_slot(0, cudaStreamPerThread);  // the set those calls used
          if (cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess) ++errors;
        } catch (const std::exception&) {
          ++errors;
        }
      });
    for (auto& th : threads) th.join();
    ASSERT_EQ(errors.load(), 0) << rt << " per-thread streams";
    // each thread's cudaStreamPerThread is a stream of its own, with words of its own
    EXPECT_NE(words[0], nullptr) << rt;
    EXPECT_NE(words[0], words[1]) << rt << ": two threads' per-thread streams share the exchange words";
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (int i = 0; i < 6; ++i)
      expect_same_outputs(*outs[size_t(i)], want, std::string(rt) + " per-thread call " + std::to_string(i));
    if (HasFailure()) return;
  }
}

// The cast of a two-kernel per-tensor call loads its first tile before its programmatic wait
// (TileParams::early_loads): safe because its amax kernel released it only after waiting for
// everything before it in the stream. Here the input is written just before the call by a copy
// (its upper rows) and by the library's zero kernel (its lower rows), a programmatic-launch kernel
// that lets the next one start before it writes; over a poison that would change the amax, the
// scales and the codes, with new values each time and no host synchronisation between. Both amax
// kernels (1024 x 7168: a reset and the many-CTA kernel; 512 x 64: the one-CTA kernel), AOT and
// JIT: bit-exact with the same call on the finished input.
TEST(GpuQuantize, TwoKernelCastReadsWhatTheStreamWroteJustBefore) {
  REQUIRE_GPU();
  struct Restore {
    ~Restore() {
      g_gpu_backend = Backend::automatic;
      cuda::refuse_grid_amax_slots(false);
    }
  } restore;
  cuda::refuse_grid_amax_slots(true);  // 512 x 64 would take the grid exchange: the two kernels here
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  uint64_t seed = 7700;
  for (Backend b : {Backend::cuda_aot, Backend::cuda_jit})
    for (const char* rt : {"fp8_tensor", "nvfp4"})
      for (const Shape s : {Shape{1024, 7168}, Shape{512, 64}}) {
        g_gpu_backend = b;
        const Recipe r = Recipe::parse(rt);
        const std::string where = std::string(rt) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
        const size_t row_bytes = size_t(s.cols) * 2, top = size_t(s.rows / 2) * row_bytes;
        const size_t all = size_t(s.rows) * row_bytes;
        DeviceBuffer src(kGpu, int64_t(all)), x(kGpu, int64_t(all)), ref(kGpu, int64_t(all));
        QuantizedBuffers want(r, s.rows, s.cols, kGpu), got(r, s.rows, s.cols, kGpu);
        for (int rep = 0; rep < 3; ++rep) {
          auto bytes = to_dtype(make_values(s.rows, s.cols, Values::normal_outliers, seed++), DType::bfloat16);
          src.upload(bytes.data());
          std::fill(bytes.begin() + std::ptrdiff_t(top), bytes.end(), uint8_t(0));  // what the zero kernel leaves
          ref.upload(bytes.data());
          quantize(TensorView::matrix(ref.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu), want.view());
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          ASSERT_EQ(cudaMemsetAsync(x.data(), 0x7f, all, st), cudaSuccess);  // bf16 0x7f7f: 3.4e38
          ASSERT_EQ(cudaMemsetAsync(got.data().data(), 0xcd, size_t(got.data().bytes()), st), cudaSuccess);
          ASSERT_EQ(cudaMemsetAsync(got.scales().data(), 0xcd, size_t(got.scales().bytes()), st), cudaSuccess);
          ASSERT_EQ(cudaMemcpyAsync(x.data(), src.data(), top, cudaMemcpyDeviceToDevice, st), cudaSuccess);
          ASSERT_EQ(cuda::launch_zero(static_cast<char*>(x.data()) + top, int64_t(all - top), nullptr, st),
                    cudaSuccess);
          QuantizeOptions o;
          o.stream = st;
          o.backend = b;
          quantize(TensorView::matrix(x.data(), DType::bfloat16, s.rows, s.cols, -1, kGpu), got.view(), o);
          ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);
          const std::string k = last_dispatch().kernel;
          ASSERT_EQ(k.rfind(b == Backend::cuda_jit ? "jit " : "fast ", 0), 0u)
              << where << ": the two-kernel path ran " << k;
          EXPECT_EQ(first_mismatch(fetch(got.amax()), fetch(want.amax())), "") << where;
          EXPECT_EQ(first_mismatch(fetch(got.scales()), fetch(want.scales())), "") << where;
          EXPECT_EQ(first_mismatch(fetch(got.data()), fetch(want.data())), "") << where;
          if (HasFailure()) break;
        }
      }
  cudaStreamDestroy(st);
}

// cuda::dram_gbps, which picks the FP8 fused rows kernels' grid (fast_launch.cpp kWideDramGbps): an
// H100's and an H200's peak DRAM bandwidth from the driver's memory clock and bus width, on each
// side of the line; no device is 0.
TEST(GpuQuantize, DramBandwidthTellsAnH200FromAnH100) {
  REQUIRE_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const int64_t gbps = cuda::dram_gbps(0);
  const std::string name = prop.name;
  std::printf("%s: peak DRAM %lld GB/s\n", prop.name, static_cast<long long>(gbps));
  EXPECT_GT(gbps, 1000) << name;
  EXPECT_LT(gbps, 20000) << name;
  if (name.find("H200") != std::string::npos && name.find("GH200") == std::string::npos) {  // (a GH200: ~4 TB/s)
    EXPECT_GE(gbps, 4400) << name;
  }
  if (name.find("H100") != std::string::npos) {
    EXPECT_LT(gbps, 4400) << name;
  }
  EXPECT_EQ(cuda::dram_gbps(-1), 0);
}

// cuda::cluster_fits, which keeps one-launch calls off a device that cannot co-schedule their
// cluster (a MIG instance, an MPS share): a whole H100 or H200 (GPCs of 16 or more SMs) holds
// every size up to kOneLaunchCtas; larger sizes and no device are a no, and asking leaves no error.
TEST(GpuQuantize, OneLaunchClustersFitAWholeGpu) {
  REQUIRE_GPU();
  for (int ctas : {1, 2, 4, 8, 12, 16}) EXPECT_TRUE(cuda::cluster_fits(0, ctas)) << ctas;
  EXPECT_TRUE(cuda::cluster_fits(0, 16));  // the cached answer
  EXPECT_FALSE(cuda::cluster_fits(0, cuda::kOneLaunchCtas + 1));
  EXPECT_FALSE(cuda::cluster_fits(-1, 2));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}
#endif

// Each backend value runs its own kernels: cuda-aot a kernel built ahead of time, cuda-jit an
// NVRTC-compiled one, auto the AOT kernel when there is one and the JIT otherwise; all exact.
TEST(GpuDispatch, EachBackendValueRunsItsBackend) {
  REQUIRE_GPU();
  struct Case {
    const char* recipe;
    Backend backend;
    const char* want_backend;
    const char* want_kernel;
  } cases[] = {
      {"mxfp8:dir=both", Backend::cuda_aot, "cuda-aot", "fast bf16 mx e4m3fn colblocks"},
      {"mxfp8:dir=both", Backend::cuda_jit, "cuda-jit", "jit bf16 mx e4m3fn colblocks"},
      {"mxfp8:dir=both", Backend::automatic, "cuda-aot", "fast bf16 mx e4m3fn colblocks"},
      {"mxfp8:layout=packed_ue8m0", Backend::automatic, "cuda-jit", "jit bf16 mx e4m3fn rows g=32 h=1 packed_ue8m0"},
      {"nvfp4:dir=both", Backend::automatic, "cuda-jit", "jit bf16 nvfp4 e2m1 colblocks g=16 h=16"},
      // fp8_block column blocks (the byte-scale staging and the bf16 column products)
      {"fp4_block_1x32:dir=both", Backend::automatic, "cuda-jit", "jit bf16 fp8_block e2m1 colblocks g=32 h=32"},
      {"fp8_block_1x32:dir=both,pow2=1,scale=float8_e8m0fnu", Backend::automatic, "cuda-jit",
       "jit bf16 fp8_block e4m3fn colblocks g=32 h=32"},
  };
  for (const Case& c : cases) {
    g_gpu_backend = c.backend;
    check_case(c.recipe, DType::bfloat16, Shape{256, 512}, Values::normal_outliers, 11);
    g_gpu_backend = Backend::automatic;
    if (HasFatalFailure()) return;
    EXPECT_EQ(g_gpu_dispatch.backend, c.want_backend) << c.recipe;
    EXPECT_EQ(g_gpu_dispatch.kernel.rfind(c.want_kernel, 0), 0u) << c.recipe << ": ran " << g_gpu_dispatch.kernel;
    EXPECT_EQ(g_gpu_dispatch.fallback, "") << c.recipe;
  }
}

// The JIT kernels of every recipe and dtype against the CPU reference.
TEST(GpuDispatch, JitBitExactAllRecipes) {
  REQUIRE_GPU();
  // every configuration compiled in parallel first (and the warm-up API with it)
  const JitWarmupResult w = jit_warmup();
  EXPECT_TRUE(w.failures.empty()) << w.failures.front();
  EXPECT_GT(w.configs, 100);
  g_gpu_backend = Backend::cuda_jit;
  int jit = 0;
  for (const auto& r : recipes_under_test())
    for (DType dt : {DType::bfloat16, DType::float16, DType::float32})
      for (Shape s : {Shape{1, 7168}, Shape{130, 264}, Shape{257, 72}, Shape{3, 33}}) {
        check_case(r, dt, s, Values::normal_outliers, 77);
        if (HasFatalFailure()) break;
        jit += g_gpu_dispatch.backend == "cuda-jit";
      }
  g_gpu_backend = Backend::automatic;
  std::printf("cases run by JIT kernels: %d (the rest fell back to the generic kernel)\n", jit);
  EXPECT_GT(jit, 100);
}

// Strict mode turns the fallback to the generic kernel into an error before anything is
// written; a shape the specialised kernels take runs.
TEST(GpuDispatch, StrictModeRefusesTheGenericKernel) {
  REQUIRE_GPU();
  const Recipe r = Recipe::parse("mxfp8");
  set_strict(true);
  for (Shape s : {Shape{3, 33}, Shape{64, 512}}) {
    const std::vector<float> vals = make_values(s.rows, s.cols, Values::normal_outliers, 3);
    DeviceBuffer xg(kGpu, int64_t(vals.size() * 4));
    xg.upload(vals.data());
    QuantizedBuffers q(r, s.rows, s.cols, kGpu);
    q.data().fill(0xcd);
    try {
      quantize(TensorView::matrix(xg.data(), DType::float32, s.rows, s.cols, -1, kGpu), q.view());
      EXPECT_EQ(s.cols, 512) << "strict mode let the generic kernel run";
      EXPECT_EQ(last_dispatch().kernel.rfind("fast", 0), 0u) << last_dispatch().kernel;
    } catch (const Error& e) {
      EXPECT_EQ(s.cols, 33) << e.what();
      EXPECT_EQ(e.code(), ErrorCode::fallback_forbidden) << e.what();
      EXPECT_NE(std::string(e.what()).find("generic tile kernel"), std::string::npos) << e.what();
      for (uint8_t b : fetch(q.data())) ASSERT_EQ(b, 0xcd) << "written despite the error";
    }
  }
  set_strict(false);
}

TEST(GpuQuantize, RejectsHostPointersAndMissingDevices) {
  REQUIRE_GPU();
  const Recipe r = Recipe::parse("mxfp8");
  std::vector<uint16_t> host(64 * 64);
  QuantizedBuffers qg(r, 64, 64, kGpu);
  qg.data().fill(0xcd);
  try {
    quantize(TensorView::matrix(host.data(), DType::bfloat16, 64, 64, -1, kGpu), qg.view());
    FAIL() << "host memory passed as a CUDA tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  const auto d = fetch(qg.data());
  for (uint8_t b : d) ASSERT_EQ(b, 0xcd) << "output written despite the error";
  DeviceBuffer xg(kGpu, 64 * 64 * 2);
  QuantizedTensor q = qg.view();
  q.device = {DeviceKind::cuda, 57};
  try {
    quantize(TensorView::matrix(xg.data(), DType::bfloat16, 64, 64, -1, {DeviceKind::cuda, 57}), q);
    FAIL() << "cuda:57 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

// ---- fused epilogues (JIT-compiled kernels) against the CPU reference --------------------------

float dtype_value(const std::vector<uint8_t>& b, DType t, size_t i) {
  if (t == DType::float32) {
    float f;
    std::memcpy(&f, &b[i * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &b[i * 2], 2);
  return t == DType::bfloat16 ? num::bf16_to_float(h) : num::fp16_to_float(h);
}

struct Fused {
  Activation act = Activation::none;
  bool dact = false, dbias = false, noop = false;
  bool dbias_unaligned = false;  // dbias 4 bytes past a 16-byte boundary (the kernels' scalar atomics)
};

// One fused call on both backends. `shape` is the output's; a gated activation reads 2x the
// columns. Data, scales, global scale and amax must be equal byte for byte. dbias is a sum in
// another order (fp32 atomics on the GPU, fp64 on the CPU): |gpu - cpu| <= rows * 2^-24 * sum|y|
// per column, the bound of any fp32 summation order, plus rows * 2^-126 (float atomics flush
// subnormals). With noop every GPU output, dbias
// included, must still hold its poison.
// graphed: the GPU call is captured into a CUDA graph (global capture mode) and replayed once.
void check_fused(const std::string& recipe_text, DType dt, Shape shape, Fused f, uint64_t seed, bool graphed = false,
                 Values values = Values::normal_outliers) {
  const Recipe recipe = Recipe::parse(recipe_text);
  shape = adapt(recipe, shape);
  const bool gated = num::is_gated(f.act);
  const int64_t in_cols = gated ? 2 * shape.cols : shape.cols;
  const std::vector<uint8_t> xb = to_dtype(make_values(shape.rows, in_cols, values, seed), dt);
  const std::vector<uint8_t> ab = to_dtype(make_values(shape.rows, in_cols, values, seed + 7), dt);
  DeviceBuffer xg(kGpu, int64_t(xb.size())), ag(kGpu, int64_t(ab.size()));
  xg.upload(xb.data());
  ag.upload(ab.data());
  const TensorView xgv = TensorView::matrix(xg.data(), dt, shape.rows, in_cols, -1, kGpu);
  const TensorView xcv = TensorView::matrix(const_cast<uint8_t*>(xb.data()), dt, shape.rows, in_cols);
  const TensorView agv = TensorView::matrix(ag.data(), dt, shape.rows, in_cols, -1, kGpu);
  const TensorView acv = TensorView::matrix(const_cast<uint8_t*>(ab.data()), dt, shape.rows, in_cols);

  QuantizedBuffers qg(recipe, shape.rows, shape.cols, kGpu), qc(recipe, shape.rows, shape.cols, kCpu);
  for (auto* q : {&qg, &qc})
    for (DeviceBuffer* b : {&q->data(), &q->scales(), &q->col_data(), &q->col_scales(), &q->global_scale(), &q->amax()})
      b->fill(0xcd);
  DeviceBuffer dbg(kGpu, (shape.cols + 1) * 4), amax_g(kGpu, 4), noop_g(kGpu, 4);
  float* const dbias_gpu = static_cast<float*>(dbg.data()) + (f.dbias_unaligned ? 1 : 0);
  dbg.fill(0xcd);
  std::vector<float> dbc(size_t(shape.cols));
  const float amax_given = 40.0f, one = 1.0f;
  amax_g.upload(&amax_given);
  noop_g.upload(&one);
  const bool per_tensor = recipe.scheme == Scheme::fp8_tensor || recipe.scheme == Scheme::nvfp4;
  QuantizeOptions og, oc;
  og.backend = g_gpu_backend;
  oc.backend = Backend::cpu;
  og.activation = oc.activation = f.act;
  if (f.dact) {
    og.act_input = &agv;
    oc.act_input = &acv;
  }
  if (f.dbias) {
    og.dbias = dbias_gpu;
    oc.dbias = dbc.data();
  }
  if (per_tensor) {
    og.amax_in = static_cast<const float*>(amax_g.data());
    oc.amax_in = &amax_given;
  }
  if (f.noop) og.noop = static_cast<const float*>(noop_g.data());
  const std::string where = recipe.name() + " " + dtype_name(dt) + " " + std::to_string(shape.rows) + "x" +
                            std::to_string(shape.cols) + " " + (f.dact ? "d" : "") + activation_name(f.act) +
                            (f.dbias ? "+dbias" : "") + (f.noop ? " noop" : "") + (graphed ? " graphed" : "");
  if (graphed) {
    std::string error;
    const bool ok = runtime::graph_capture_and_replay([&](void* stream) {
      og.stream = stream;
      try {
        quantize(xgv, qg.view(), og);
      } catch (const Error& e) {
        error = e.what();
        throw;
      }
    }, 1);
    ASSERT_TRUE(ok) << where << ": capture or replay failed " << error;
  } else {
    quantize(xgv, qg.view(), og);
  }
  g_gpu_dispatch = last_dispatch();
  runtime::device_synchronize(kGpu);
  if (f.noop) {
    for (DeviceBuffer* b : {&qg.data(), &qg.scales(), &qg.col_data(), &qg.col_scales(), &qg.global_scale(), &qg.amax(), &dbg})
      for (uint8_t v : fetch(*b)) ASSERT_EQ(v, 0xcd) << where << ": a noop call wrote";
    return;
  }
  quantize(xcv, qc.view(), oc);
  expect_same_outputs(qg, qc, where);
  if (::testing::Test::HasFatalFailure()) return;
  if (!f.dbias) return;
  std::vector<float> dg_all(size_t(shape.cols + 1));
  dbg.download(dg_all.data());
  const std::vector<float> dg(dg_all.begin() + (f.dbias_unaligned ? 1 : 0), dg_all.begin() + (f.dbias_unaligned ? 1 : 0) + shape.cols);
  for (int64_t c = 0; c < shape.cols; ++c) {
    double abs_sum = 0;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const size_t i = size_t(r * in_cols + c);
      const float x = dtype_value(xb, dt, i);
      float y;
      if (gated) y = num::mul_rn(num::act_f(num::gate_of(f.act), x), dtype_value(xb, dt, i + size_t(shape.cols)));
      else if (f.dact) y = num::mul_rn(x, num::dact_f(f.act, dtype_value(ab, dt, i)));
      else y = num::act_f(f.act, x);
      abs_sum += std::fabs(double(y));
    }
    // plus rows * 2^-126: float atomicAdd flushes subnormal sums to zero
    const double tol = double(shape.rows) * (std::ldexp(1.0, -24) * abs_sum + std::ldexp(1.0, -126));
    if (std::isnan(dbc[size_t(c)]) || std::isinf(abs_sum)) {
      ASSERT_EQ(std::isnan(dg[size_t(c)]), std::isnan(dbc[size_t(c)])) << where << ": dbias[" << c << "]";
      continue;
    }
    ASSERT_LE(std::fabs(double(dg[size_t(c)]) - double(dbc[size_t(c)])), tol)
        << where << ": dbias[" << c << "] gpu " << dg[size_t(c)] << " cpu " << dbc[size_t(c)];
  }
}

TEST(GpuFused, EveryActivationBitExact) {
  REQUIRE_GPU();
  int cases = 0;
  for (int a = 1; a <= int(Activation::reglu); ++a)
    for (const Shape& s : {Shape{128, 512}, Shape{33, 1032}}) {
      check_fused("mxfp8:dir=both", DType::bfloat16, s, {Activation(a), false, true, false}, uint64_t(a));
      if (HasFatalFailure()) return;
      ++cases;
      if (!num::is_gated(Activation(a))) {
        check_fused("mxfp8:dir=both", DType::bfloat16, s, {Activation(a), true, true, false}, uint64_t(a) + 50);
        if (HasFatalFailure()) return;
        ++cases;
      }
      // NaN, Inf and subnormal inputs (NaNs the activations make, canonicalised on both sides);
      // no dbias, whose NaN sums have no tolerance to compare within
      check_fused("mxfp8:dir=both", DType::bfloat16, s, {Activation(a), false, false, false}, uint64_t(a) + 90, false,
                  Values::special);
      if (HasFatalFailure()) return;
      ++cases;
      if (!num::is_gated(Activation(a))) {
        check_fused("mxfp8", DType::bfloat16, s, {Activation(a), true, false, false}, uint64_t(a) + 130, false,
                    Values::special);
        if (HasFatalFailure()) return;
        ++cases;
      }
    }
  std::printf("fused activation cases: %d\n", cases);
}

TEST(GpuFused, RecipesAndDtypesBitExact) {
  REQUIRE_GPU();
  const char* recipes[] = {"mxfp8", "fp8_block_1x128", "fp8_block_1x128:layout=mn_major_tma",
                           "fp8_block_1x128:pow2=1,layout=packed_ue8m0", "fp8_block_128x128", "mxfp4:dir=both",
                           "nvfp4", "nvfp4_2d", "fp8_tensor", "fp8_tensor:dir=both", "fp4_block_1x32",
                           "mxfp8:layout=swizzled_128x4", "mxfp8_e5m2:dir=both,colform=same"};
  std::vector<Shape> shapes = {{1, 7168}, {130, 256}, {257, 1024}};
  if (!small_only()) shapes.push_back({4096, 7168});
  int cases = 0;
  for (const char* r : recipes)
    for (DType dt : {DType::bfloat16, DType::float16, DType::float32})
      for (const Shape& s : shapes) {
        if (s.rows * s.cols > 1'000'000 && dt != DType::bfloat16) continue;
        // bf16: three fusions on every recipe (dbias alone on two); fp16 / fp32: swiglu on three.
        // Each distinct configuration is one JIT compile, so the matrix is kept to ~50 of them.
        const std::string rs = r;
        const bool core = rs == "mxfp8" || rs == "fp8_block_1x128" || rs == "nvfp4";
        if (s.rows * s.cols > 1'000'000 && !core) continue;  // the CPU reference of a large fused case is slow
        for (Fused f : {Fused{Activation::swiglu, false, true}, Fused{Activation::gelu, false, false},
                        Fused{Activation::silu, true, true}, Fused{Activation::none, false, true}}) {
          if (dt != DType::bfloat16 && (f.act != Activation::swiglu || !core)) continue;
          if (f.act == Activation::none && rs != "mxfp8" && rs != "fp8_block_1x128") continue;
          check_fused(r, dt, s, f, uint64_t(cases) + 100);
          if (HasFatalFailure()) return;
          ++cases;
        }
      }
  std::printf("fused recipe cases: %d (last: %s)\n", cases, g_gpu_dispatch.kernel.c_str());
}

#if MXQ_WITH_CUDA
// The bf16 lookup table of the fused functions (fast.cuh ActTable) wired into the kernels: every
// bf16 value through each function the table takes, forward and backward, on the rows and the
// row+col kernels, the same codes and scales as the CPU reference, with the table (copied from the
// device's) wherever the key allows it (every function but relu), which then always looks its
// function up. The quantizer rounds most one-ulp differences away:
// GpuNumerics.Bf16TableEqualsTheHostForEveryValue compares the looked-up values themselves. The
// same values as fp32 and f16 input take the kernels that evaluate the functions (no table).
TEST(GpuFused, Bf16TableWiredIntoTheKernels) {
  REQUIRE_GPU();
  int cases = 0, on = 0;
  for (DType dt : {DType::bfloat16, DType::float32, DType::float16})
  for (Activation a : {Activation::gelu, Activation::gelu_tanh, Activation::silu, Activation::qgelu, Activation::swiglu,
                       Activation::geglu, Activation::reglu, Activation::relu})
    for (bool dact : {false, true}) {
      if (dact && num::is_gated(a)) continue;
      for (const char* r : {"mxfp8", "mxfp8:dir=both"}) {
        check_fused(r, dt, Shape{64, 1024}, {a, dact, false, false}, uint64_t(cases), false, Values::every_bf16);
        if (HasFatalFailure()) return;
        const num::Activation f = num::is_gated(a) ? num::gate_of(a) : a;
        // bf16 input: every function that costs more than a lookup
        const bool capable = dt == DType::bfloat16 && f != Activation::relu;
        const std::string where = std::string(dtype_name(dt)) + " " + r + " " + (dact ? "d" : "") +
                                  activation_name(a) + ": " + g_gpu_dispatch.kernel;
        ASSERT_EQ(g_gpu_dispatch.kernel.rfind("jit ", 0), 0u) << where;  // a fused fast kernel ran
        ASSERT_EQ(cuda::last_act_table(), capable) << where;
        // the entries come from the device's table (device_act_table)
        ASSERT_EQ(cuda::last_act_table_copied(), capable) << where;
        on += cuda::last_act_table();
        ++cases;
      }
    }
  std::printf("table cases: %d, %d of them with the table\n", cases, on);
}

// The device's table (cuda::device_act_table) is made inside a graph capture too: a graph captured
// on a configuration's first call copies it. With tables refused, the CTAs compute the entries
// (the path a failed table takes). All bit-exact against the CPU reference, rows and row+col.
TEST(GpuFused, Bf16TableCopiedEvenInACapture) {
  REQUIRE_GPU();
  struct Refuse {
    Refuse() { cuda::refuse_device_act_tables(true); }
    ~Refuse() { cuda::refuse_device_act_tables(false); }
  };
  for (const char* r : {"mxfp8", "mxfp8:dir=both"}) {
    const Fused f{Activation::gelu, true, true, false};
    {
      const Refuse refuse;
      cuda::forget_device_act_tables();
      check_fused(r, DType::bfloat16, Shape{256, 1024}, f, 50);
      if (HasFatalFailure()) return;
      EXPECT_TRUE(cuda::last_act_table()) << r;
      EXPECT_FALSE(cuda::last_act_table_copied()) << r << ": tables refused, the CTAs compute it";
      check_fused(r, DType::bfloat16, Shape{256, 1024}, f, 51, /*graphed=*/true);
      if (HasFatalFailure()) return;
      EXPECT_FALSE(cuda::last_act_table_copied()) << r;
    }
    cuda::forget_device_act_tables();  // the next call is the first again, and captured
    check_fused(r, DType::bfloat16, Shape{256, 1024}, f, 52, /*graphed=*/true);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(cuda::last_act_table_copied()) << r << ": made inside the capture";
    check_fused(r, DType::bfloat16, Shape{256, 1024}, f, 53);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(cuda::last_act_table_copied()) << r;
  }
}
#endif

#if MXQ_WITH_CUDA
// The cp.async ring of the fused rows kernels and the 8-row shapes (FastGeometry::ring) is sized
// from the SM's shared memory beside the kernels' own (bf16 table, dbias sums, staging): each must
// still reach the CTAs per SM its registers allow, min_blocks, or the ring would cost the
// occupancy it was to make up for.
TEST(GpuQuantize, RingKeepsTheRegisterOccupancy) {
  REQUIRE_GPU();
  if (!runtime::jit::unavailable_reason().empty()) GTEST_SKIP() << runtime::jit::unavailable_reason();
  int keys = 0;
  for (int dtype : {0, 1, 2})
    for (Activation a : {Activation::gelu, Activation::gelu_tanh, Activation::silu, Activation::relu,
                         Activation::swiglu, Activation::geglu})
      for (int dact : {0, cuda::kFuseDact})
        for (int dbias : {0, cuda::kFuseDbias}) {
          const cuda::FastKey k{dtype, num::Scheme::mx, num::ElemFormat::e4m3fn, cuda::FastShape::rows, 32, 1,
                                num::ScaleLayout::row_major, num::ScaleLayout::row_major, int(a) | dact | dbias};
          if (!cuda::fast_key_valid(k)) continue;
          const cuda::FastGeometry g = cuda::fast_geometry(k);
          if (g.ring == 0) continue;  // the register prefetch
          EXPECT_GE(runtime::jit::prepare(k, 0), g.min_blocks)
              << runtime::jit::key_text(k) << ": ring of " << g.ring << " tiles, " << g.slot_bytes << " bytes";
          ++keys;
        }
  EXPECT_GE(keys, 20);
  // the 8-row shapes' kernels: MXFP8 / MXFP4 / NVFP4 column blocks (rows too), 128 x 128, NVFP4 16 x 16
  using E = num::ElemFormat;
  using S = num::Scheme;
  using L = num::ScaleLayout;
  for (int dtype : {0, 2})
    for (const cuda::FastKey& k0 :
         {cuda::FastKey{2, S::mx, E::e4m3fn, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major, 0},
          cuda::FastKey{2, S::mx, E::e2m1, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major, 0},
          cuda::FastKey{2, S::nvfp4, E::e2m1, cuda::FastShape::colblocks, 16, 16, L::row_major, L::row_major, 0},
          cuda::FastKey{2, S::fp8_block, E::e4m3fn, cuda::FastShape::two_d, 128, 128, L::row_major, L::row_major, 0},
          cuda::FastKey{2, S::nvfp4, E::e2m1, cuda::FastShape::two_d, 16, 16, L::row_major, L::row_major, 0},
          // and the fused row+col kernels' (a ring where it fits beside the table and the sums)
          cuda::FastKey{2, S::mx, E::e4m3fn, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major,
                        int(Activation::relu)},
          cuda::FastKey{2, S::mx, E::e4m3fn, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major,
                        int(Activation::silu)},
          cuda::FastKey{2, S::mx, E::e4m3fn, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major,
                        int(Activation::gelu) | cuda::kFuseDact | cuda::kFuseDbias}}) {
      cuda::FastKey k = k0;
      k.dtype = dtype;
      ASSERT_TRUE(cuda::fast_key_valid(k)) << runtime::jit::key_text(k);
      const cuda::FastGeometry g = cuda::fast_geometry(k);
      EXPECT_GE(runtime::jit::prepare(k, 0), g.min_blocks)
          << runtime::jit::key_text(k) << ": ring of " << g.ring << " tiles, " << g.slot_bytes << " bytes";
    }
}
#endif

// Fused kernels keep one wave of CTAs: a tall input makes each walk many row tiles.
TEST(GpuFused, TallShapesWalkManyTiles) {
  REQUIRE_GPU();
  check_fused("mxfp8", DType::bfloat16, Shape{60001, 64}, {Activation::swiglu, false, false, false}, 4000);
  if (HasFatalFailure()) return;
  check_fused("fp8_block_1x128", DType::bfloat16, Shape{60001, 128}, {Activation::gelu, true, true, false}, 4001);
  if (HasFatalFailure()) return;
#if MXQ_WITH_CUDA
  // row+col over one wave whose CTAs copy the bf16 table (fast_grid, act_table_fill_pays): 7.7M
  // elements against 16384 per CTA of a wave at up to 3 CTAs per SM on 132 SMs
  check_fused("mxfp8:dir=both", DType::bfloat16, Shape{60001, 128}, {Activation::gelu, true, true, false}, 4003);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(cuda::last_act_table_copied()) << g_gpu_dispatch.kernel;
  // ... and a flat wave (fast_launch_shape: 5 column tiles, the last one partial, do not divide
  // the slots) whose CTAs' shares cross from one column tile to the next, dbias published per
  // column tile (tests/cpp/test_fast_grid.cpp FusedRowColKernelsLaunchFlat); 1100 x 7168 too, whose
  // dbias tolerance (rows * 2^-24 * sum |y|) is small enough to catch a tile walked twice (at 30001
  // rows a 128-row tile's sum is within it); 70001 x 600 walks two bands (273 and 274 row tiles:
  // the last takes the rest, the CTAs with one tile more rotate)
  check_fused("mxfp8:dir=both", DType::bfloat16, Shape{30001, 600}, {Activation::gelu, true, true, false}, 4004);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(cuda::last_act_table_copied()) << g_gpu_dispatch.kernel;
  check_fused("mxfp8:dir=both", DType::bfloat16, Shape{70001, 600}, {Activation::swiglu, false, true, false}, 4005);
  if (HasFatalFailure()) return;
  check_fused("mxfp8:dir=both", DType::bfloat16, Shape{1100, 7168}, {Activation::gelu, true, true, false}, 4006);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(cuda::last_act_table_copied()) << g_gpu_dispatch.kernel;
#endif
  check_fused("mxfp4", DType::bfloat16, Shape{60001, 64}, {Activation::silu, false, true, false}, 4002);
}

// dbias at an address that is not 16-byte aligned takes the kernels' scalar atomics (16-byte
// reductions otherwise), on each thread shape: rows, colblocks (row+col) and 128 x 128 blocks.
TEST(GpuFused, DbiasAtAnyFloatAlignment) {
  REQUIRE_GPU();
  const std::pair<const char*, Activation> cases[] = {
      {"mxfp8", Activation::none}, {"mxfp8:dir=both", Activation::gelu}, {"fp8_block_128x128", Activation::swiglu}};
  for (auto [r, act] : cases)
    for (bool unaligned : {false, true}) {
      Fused f{act, false, true, false};
      f.dbias_unaligned = unaligned;
      check_fused(r, DType::bfloat16, {300, 1024}, f, 5);
      if (HasFatalFailure()) return;
    }
}

TEST(GpuFused, NoopWritesNothing) {
  REQUIRE_GPU();
  for (const char* r : {"mxfp8:dir=both", "fp8_block_1x128:layout=mn_major_tma", "mxfp8:layout=swizzled_128x4,dir=both"})
    for (Fused f : {Fused{Activation::silu, false, true, true}, Fused{Activation::none, false, true, true},
                    Fused{Activation::geglu, false, false, true}}) {
      check_fused(r, DType::bfloat16, {256, 1024}, f, 3);
      if (HasFatalFailure()) return;
    }
}

// A configuration's first call may come inside CUDA-graph capture (torch.compile's CUDA graphs):
// the JIT compiles and loads the kernel there without invalidating the capture.
TEST(GpuFused, FirstCallInsideGraphCapture) {
  REQUIRE_GPU();
  const char* rt = "fp8_block_1x128:pow2=1,layout=packed_ue8m0";  // fp16 + dqgelu: no other test's configuration
  const Fused f{Activation::qgelu, true, true, false};
  const int fuse = cuda::fuse_bits(int(f.act), f.dact, f.dbias);
  ASSERT_FALSE(runtime::jit_quantize_loaded(Recipe::parse(rt), DType::float16, fuse, 0))
      << "another test loaded this configuration first: choose one that no other test uses";
  check_fused(rt, DType::float16, {256, 1024}, f, 21, /*graphed=*/true);
  EXPECT_TRUE(runtime::jit_quantize_loaded(Recipe::parse(rt), DType::float16, fuse, 0));
  EXPECT_EQ(g_gpu_dispatch.backend, "cuda-jit");
}

TEST(GpuFused, UnsupportedCombinationsSaySo) {
  REQUIRE_GPU();
  auto message = [](const std::string& recipe, Fused f, Backend b = Backend::automatic) -> std::string {
    const Recipe r = Recipe::parse(recipe);
    DeviceBuffer x(kGpu, 64 * 256 * 2), noop(kGpu, 4);
    x.fill(0);
    noop.fill(0);
    QuantizedBuffers q(r, 64, num::is_gated(f.act) ? 128 : 256, kGpu);
    QuantizeOptions o;
    o.backend = b;
    o.activation = f.act;
    if (f.noop) o.noop = static_cast<const float*>(noop.data());
    try {
      quantize(TensorView::matrix(x.data(), DType::bfloat16, 64, 256, -1, kGpu), q.view(), o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("fp8_tensor", {Activation::gelu}).find("needs options.amax_in"), std::string::npos);
  EXPECT_NE(message("nvfp4", {Activation::none, false, false, true}).find("noop with a per-tensor recipe"),
            std::string::npos);
  set_strict(true);
  EXPECT_NE(message("mxfp8", {Activation::silu}, Backend::cuda_aot).find("no fused kernel is built ahead of time"),
            std::string::npos);
  set_strict(false);
  EXPECT_EQ(message("mxfp8", {Activation::silu}, Backend::cuda_aot), "");
  EXPECT_EQ(last_dispatch().backend, "cuda-jit");
}

}  // namespace
}  // namespace mxq
