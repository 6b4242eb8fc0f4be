// Internal: argument checking shared by every backend entry point.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "mxq/api.hpp"
#include "mxq/tensor.hpp"

namespace mxq {

// A 2-D view with unit inner stride, the form every backend consumes.
struct Matrix {
  void* data = nullptr;
  DType dtype = DType::float32;
  int64_t rows = 0, cols = 0, row_stride = 0;
  Device device{};
  bool empty() const { return rows == 0 || cols == 0; }
};

Matrix as_matrix(const TensorView& v, std::string_view arg);
std::string ptr_str(const void* p);
std::string fmt_float(float v);  // the shortest text that reads back to v
// plan() with error messages attributed to `op` (quantize, dequantize, plan).
QuantizedLayout plan_for(const char* op, const Recipe& recipe, int64_t rows, int64_t cols);
num::ScaleGeometry direction_scale_geometry(const Recipe& r, int64_t rows, int64_t cols, bool columnwise);

// Validates a quantize call completely (shapes, dtypes, devices, buffer capacities) and returns
// the input matrix and the output plan.
struct QuantizeCall {
  Matrix x;
  QuantizedLayout layout;
  Matrix act_input;  // the backward pass's activation input (options.act_input), else empty
  bool fused(const QuantizeOptions& o) const {
    return o.activation != num::Activation::none || o.dbias || o.noop;
  }
};
QuantizeCall check_quantize(const TensorView& x, const QuantizedTensor& out, const QuantizeOptions& opt);

// A GEMM call, validated: D and (optionally) C as matrices.
struct GemmCall {
  Matrix d, c;
  num::ScaleGeometry a_scales, b_scales;  // the operands' scale layouts, as planned in validation
  int promote_k = 32;                     // GemmOptions::promote_k resolved by D's dtype (resolve_promote_k)
};
// GemmOptions::promote_k: 0, 32, 64 or 128, else an invalid_argument error "<what>=<value>; expected ...".
void check_promote_k(int64_t promote_k, const std::string& what);
// GemmOptions::block_m: 0, 128 or 256, else an invalid_argument error as above
// ("<what>=<value>; expected 0 (the plan's choice), 128 or 256").
void check_block_m(int64_t block_m, const std::string& what);
GemmCall check_gemm(const QuantizedTensor& a, const QuantizedTensor& b, const TensorView& d, const GemmOptions& opt);

struct DequantizeCall {
  Matrix y;
  QuantizedLayout layout;
};
DequantizeCall check_dequantize(const QuantizedTensor& q, const TensorView& y, const DequantizeOptions& opt);

}  // namespace mxq
