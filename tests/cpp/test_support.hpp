// Shared helpers of the mxq unit tests: owning, poisonable output buffers sized by plan(),
// a deterministic random source, bit casts, and an element encoder written from the format
// definitions (independent of include/mxq/numerics/formats.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mxq/mxq.hpp"
#include "mxq/numerics/recipes.h"

namespace mxq::test {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float load_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// splitmix64: small and identical on every platform.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo)); }  // [lo, hi)
};

// Normal values, each row scaled by its own power of two in [2^-lo_exp, 2^hi_exp].
inline std::vector<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed, int lo_exp = -8, int hi_exp = 8) {
  Rng rng(seed);
  std::vector<float> x(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, int(rng.range(lo_exp, hi_exp + 1)));
    for (int64_t c = 0; c < cols; ++c) x[size_t(r * cols + c)] = float(rng.normal()) * scale;
  }
  return x;
}

// Every buffer that plan() asks for (and the optional amax), owned and poisonable.
struct Outputs {
  Recipe recipe;
  int64_t rows, cols;
  QuantizedLayout layout;
  std::vector<uint8_t> data, scales, col_data, col_scales, global_scale, amax;

  Outputs(const Recipe& r, int64_t rows_, int64_t cols_)
      : recipe(r), rows(rows_), cols(cols_), layout(plan(r, rows_, cols_)) {
    data.resize(size_t(layout.data.bytes));
    scales.resize(size_t(layout.scales.bytes));
    col_data.resize(size_t(layout.col_data.bytes));
    col_scales.resize(size_t(layout.col_scales.bytes));
    global_scale.resize(size_t(layout.global_scale.bytes));
    amax.resize(4);  // always given: required for fp8_tensor / nvfp4, optional otherwise
  }
  Outputs(const std::string& recipe_text, int64_t rows_, int64_t cols_)
      : Outputs(Recipe::parse(recipe_text), rows_, cols_) {}

  std::vector<std::vector<uint8_t>*> all() {
    return {&data, &scales, &col_data, &col_scales, &global_scale, &amax};
  }
  void poison(uint8_t byte) {
    for (auto* b : all()) std::memset(b->data(), byte, b->size());
  }
  static Buffer buf(std::vector<uint8_t>& v) { return {v.empty() ? nullptr : v.data(), int64_t(v.size())}; }
  QuantizedTensor view() {
    QuantizedTensor q;
    q.recipe = recipe;
    q.rows = rows;
    q.cols = cols;
    q.data = buf(data);
    q.scales = buf(scales);
    q.col_data = buf(col_data);
    q.col_scales = buf(col_scales);
    q.global_scale = buf(global_scale);
    q.amax = buf(amax);
    return q;
  }
  // Every output byte, in a fixed order (for whole-output equality).
  std::vector<uint8_t> concat() const {
    std::vector<uint8_t> v;
    for (const auto* b : {&data, &scales, &col_data, &col_scales, &global_scale}) v.insert(v.end(), b->begin(), b->end());
    return v;
  }
};

inline TensorView f32_matrix(std::vector<float>& x, int64_t rows, int64_t cols, int64_t row_stride = -1) {
  return TensorView::matrix(x.data(), DType::float32, rows, cols, row_stride);
}

// Quantizes a contiguous fp32 matrix on the CPU backend into freshly poisoned buffers.
inline Outputs quantize_f32(const std::string& recipe, std::vector<float> x, int64_t rows, int64_t cols,
                            uint8_t poison = 0xCD, const QuantizeOptions& opt = {}) {
  Outputs out(recipe, rows, cols);
  out.poison(poison);
  quantize(f32_matrix(x, rows, cols), out.view(), opt);
  return out;
}

// ---- an element encoder from the format definitions of FORMATS.md section 1 -------------------
// The finite non-negative values of a format are enumerated from (exponent field, mantissa) with
// std::ldexp; a value is encoded to the nearest one, ties to the even code, saturating at the
// largest finite value (satfinite). This shares nothing with formats.h.
struct RefFormat {
  int ebits, mbits, bias;
  int max_code;    // largest finite magnitude code
  int nan_code;    // what quantize writes for NaN: the library's fixed choice (recipes.h), checked
                  // to be a NaN of the format by QuantizedNanCode.IsANanOfTheFormat
  int sign_shift;  // position of the sign bit
  std::vector<double> values;  // values[c] for c in [0, max_code]

  static RefFormat make(ElemFormat f) {
    RefFormat r{};
    switch (f) {
      case ElemFormat::e4m3fn: r = {4, 3, 7, 0x7e, 0, 7, {}}; break;
      case ElemFormat::e5m2: r = {5, 2, 15, 0x7b, 0, 7, {}}; break;
      default: r = {2, 1, 1, 0x7, 0, 3, {}}; break;
    }
    r.nan_code = num::quantized_nan_code(f);
    for (int c = 0; c <= r.max_code; ++c) {
      const int field = c >> r.mbits, mant = c & ((1 << r.mbits) - 1);
      const double frac = double(mant) / double(1 << r.mbits);
      r.values.push_back(field == 0 ? std::ldexp(frac, 1 - r.bias) : std::ldexp(1.0 + frac, field - r.bias));
    }
    return r;
  }
  double max_value() const { return values.back(); }

  uint8_t encode(float x) const {
    if (std::isnan(x)) return uint8_t(nan_code);
    const double a = std::fabs(double(x));
    int code = max_code;
    if (a < max_value()) {
      int lo = 0;
      while (lo + 1 <= max_code && values[size_t(lo + 1)] <= a) ++lo;
      const double dlo = a - values[size_t(lo)], dhi = values[size_t(lo + 1)] - a;
      code = (dlo < dhi || (dlo == dhi && lo % 2 == 0)) ? lo : lo + 1;
    }
    return uint8_t(code | (std::signbit(x) ? 1 << sign_shift : 0));
  }
  // Codes above max_code are NaN, except E5M2's Inf (0x7C).
  float decode(uint8_t code) const {
    const int mag = code & ((1 << sign_shift) - 1);
    const bool neg = (code >> sign_shift) & 1;
    if (mag > max_code) {
      if (ebits == 5 && mag == 0x7c) return neg ? -INFINITY : INFINITY;
      return NAN;
    }
    const double v = values[size_t(mag)];
    return float(neg ? -v : v);
  }
};

// 2^e as a double, exact for every e used here.
inline double pow2d(int e) { return std::ldexp(1.0, e); }

// Element code of logical element `index` in a data buffer (FP4: a nibble, low one first).
inline uint8_t code_at(const std::vector<uint8_t>& data, int64_t index, bool fp4) {
  if (!fp4) return data[size_t(index)];
  const uint8_t b = data[size_t(index >> 1)];
  return (index & 1) ? uint8_t(b >> 4) : uint8_t(b & 0xf);
}

}  // namespace mxq::test
