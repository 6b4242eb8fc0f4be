// mxq_testhooks: a C interface over the numerics headers and the C++ API, for the Python tests
// (ctypes). Array functions convert n values in one call so that the exhaustive sweeps are not
// bound by the ctypes call overhead. Nothing here computes anything itself: every result comes
// from include/mxq/numerics or from mxq::quantize / mxq::plan, which is what the tests check.
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "mxq/mxq.hpp"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/recipes.h"

namespace num = mxq::num;

namespace {

thread_local std::string g_last_error;

// Runs fn, turning an exception into status 1 plus a message for mxq_th_last_error().
template <class Fn>
int guarded(Fn&& fn) {
  try {
    fn();
    g_last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return 1;
  }
}

num::ElemFormat elem_format(int fmt) { return static_cast<num::ElemFormat>(fmt); }
num::Saturation saturation(int sat) {
  return sat ? num::Saturation::non_saturating : num::Saturation::satfinite;
}

}  // namespace

extern "C" {

// Bumped whenever a signature below changes; the Python side checks it.
int mxq_th_abi_version() { return 2; }
const char* mxq_th_last_error() { return g_last_error.c_str(); }

// ---- element formats. fmt: 0 float8_e4m3fn, 1 float8_e5m2, 2 float4_e2m1fn (num::ElemFormat);
// sat: 0 satfinite, 1 non_saturating. FP4 codes are returned one per byte (low nibble).
void mxq_th_encode(const float* x, uint8_t* codes, int64_t n, int fmt, int sat) {
  const num::ElemFormat f = elem_format(fmt);
  const num::Saturation s = saturation(sat);
  for (int64_t i = 0; i < n; ++i) codes[i] = num::encode(x[i], f, s);
}

// The element code quantize() writes for a NaN product (one fixed code per format).
int mxq_th_quantized_nan_code(int fmt) { return num::quantized_nan_code(elem_format(fmt)); }

void mxq_th_decode(const uint8_t* codes, float* x, int64_t n, int fmt) {
  const num::ElemFormat f = elem_format(fmt);
  for (int64_t i = 0; i < n; ++i) x[i] = num::decode(codes[i], f);
}

void mxq_th_encode_e8m0(const float* x, uint8_t* codes, int64_t n) {
  for (int64_t i = 0; i < n; ++i) codes[i] = num::encode_e8m0(x[i]);
}

void mxq_th_decode_e8m0(const uint8_t* codes, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = num::decode_e8m0(codes[i]);
}

void mxq_th_pack_fp4(const uint8_t* codes, uint8_t* packed, int64_t n_pairs) {
  for (int64_t i = 0; i < n_pairs; ++i) packed[i] = num::pack_fp4(codes[2 * i], codes[2 * i + 1]);
}

// ---- 16-bit input / output types.
void mxq_th_float_to_bf16(const float* x, uint16_t* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = num::float_to_bf16(x[i]);
}
void mxq_th_bf16_to_float(const uint16_t* h, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = num::bf16_to_float(h[i]);
}
void mxq_th_float_to_fp16(const float* x, uint16_t* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = num::float_to_fp16(x[i]);
}
void mxq_th_fp16_to_float(const uint16_t* h, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = num::fp16_to_float(h[i]);
}

// ---- scale rules of FORMATS.md section 2, over arrays of block maxima.
void mxq_th_mx_scale_code(const float* amax, uint8_t* codes, int64_t n, int fmt, int rounding) {
  const auto r = static_cast<num::MxRounding>(rounding);
  for (int64_t i = 0; i < n; ++i) codes[i] = num::mx_scale_code(amax[i], elem_format(fmt), r);
}

void mxq_th_fp8_block_scale(const float* amax, float* s, int64_t n, float fmax, float eps, int pow2) {
  for (int64_t i = 0; i < n; ++i) s[i] = num::fp8_block_scale(amax[i], fmax, eps, pow2 != 0);
}

void mxq_th_fp8_tensor_scale(const float* amax, float* s, int64_t n, float fmax, float eps, int pow2) {
  for (int64_t i = 0; i < n; ++i) s[i] = num::fp8_tensor_scale(amax[i], fmax, eps, pow2 != 0);
}

float mxq_th_nvfp4_encode_scale(float global_amax) { return num::nvfp4_encode_scale(global_amax); }

void mxq_th_nvfp4_block_scale_code(const float* amax, uint8_t* codes, int64_t n, float s_enc) {
  for (int64_t i = 0; i < n; ++i) codes[i] = num::nvfp4_block_scale_code(amax[i], s_enc);
}

// ---- the public API. Buffers are passed in this order (kPlanBuffers of them): data, scales,
// col_data, col_scales, global_scale, amax.
constexpr int kPlanBuffers = 6;

// sizes[kPlanBuffers] receives the byte sizes that plan() computes for (recipe, rows, cols).
int mxq_th_plan(const char* recipe, int64_t rows, int64_t cols, int64_t* sizes) {
  return guarded([&] {
    const mxq::QuantizedLayout L = mxq::plan(mxq::Recipe::parse(recipe), rows, cols);
    const mxq::BufferSpec* specs[kPlanBuffers] = {&L.data,       &L.scales,       &L.col_data,
                                                  &L.col_scales, &L.global_scale, &L.amax};
    for (int i = 0; i < kPlanBuffers; ++i) sizes[i] = specs[i]->bytes;
  });
}

// Quantizes a contiguous fp32 (rows, cols) matrix on the CPU backend. bufs / bytes: the buffers
// in plan() order (null / 0 where the recipe has none). amax_in may be null.
int mxq_th_quantize(const char* recipe, const float* x, int64_t rows, int64_t cols, void* const* bufs,
                    const int64_t* bytes, const float* amax_in) {
  return guarded([&] {
    mxq::QuantizedTensor q;
    q.recipe = mxq::Recipe::parse(recipe);
    q.rows = rows;
    q.cols = cols;
    mxq::Buffer* targets[kPlanBuffers] = {&q.data, &q.scales, &q.col_data, &q.col_scales, &q.global_scale, &q.amax};
    for (int i = 0; i < kPlanBuffers; ++i) *targets[i] = {bufs[i], bytes[i]};
    mxq::QuantizeOptions opt;
    opt.backend = mxq::Backend::cpu;
    opt.amax_in = amax_in;
    mxq::quantize(mxq::TensorView::matrix(const_cast<float*>(x), mxq::DType::float32, rows, cols), q, opt);
  });
}

}  // extern "C"
