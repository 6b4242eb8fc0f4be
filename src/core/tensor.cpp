#include "mxq/tensor.hpp"

#include <charconv>

#include "core/validate.hpp"
#include "mxq/error.hpp"

namespace mxq {

std::string Device::str() const {
  // an index is shown wherever it tells devices apart (operator== compares it for the CPU too)
  if (kind == DeviceKind::cpu) return index == 0 ? "cpu" : "cpu:" + std::to_string(index);
  return (kind == DeviceKind::cuda ? "cuda:" : "device kind " + std::to_string(int(kind)) + ":") +
         std::to_string(index);
}

TensorView TensorView::matrix(void* data, DType dtype, int64_t rows, int64_t cols, int64_t row_stride,
                              Device device) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.strides[0] = row_stride == -1 ? cols : row_stride;  // any other negative stride: as_matrix refuses it
  v.strides[1] = 1;
  v.device = device;
  return v;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

int64_t QuantizedLayout::total_bytes() const {
  return data.bytes + scales.bytes + col_data.bytes + col_scales.bytes + global_scale.bytes + amax.bytes;
}

namespace {

int64_t scale_unit_bytes(const Recipe& r) {
  if (r.layout == ScaleLayout::packed_ue8m0) return 1;  // storage units are bytes already
  return r.scale_type == ScaleType::float32 ? 4 : 1;
}

BufferSpec scale_spec(const Recipe& r, const num::ScaleGeometry& g) {
  BufferSpec s;
  s.dtype = r.scale_dtype();
  s.geometry = g;
  s.bytes = num::scale_storage_units(g) * scale_unit_bytes(r);
  s.planned = true;
  switch (g.layout) {
    case ScaleLayout::row_major:
      s.rows = g.kb_outer ? g.kb : g.mn;
      s.cols = g.kb_outer ? g.mn : g.kb;
      break;
    case ScaleLayout::mn_major_tma:
      s.rows = g.kb;
      s.cols = num::round_up(g.mn, 4);
      break;
    case ScaleLayout::packed_ue8m0:
      s.rows = num::ceil_div(g.kb, 4);
      s.cols = num::round_up(g.mn, 4);
      break;
    default:
      s.rows = num::round_up(g.mn, 128);
      s.cols = num::round_up(g.kb, 4);
      break;
  }
  return s;
}

}  // namespace

num::ScaleGeometry direction_scale_geometry(const Recipe& r, int64_t rows, int64_t cols, bool columnwise) {
  // Columnwise quantization is rowwise quantization of the transpose.
  const int64_t m = columnwise ? cols : rows;
  const int64_t k = columnwise ? rows : cols;
  num::ScaleGeometry g{};
  g.layout = r.layout;
  g.mn = r.scale_per_row() ? m : num::ceil_div(m, r.block_rows);
  g.kb = num::ceil_div(k, r.block_cols);
  g.kb_outer = columnwise && r.column_form == ColumnForm::same_shape && r.layout == ScaleLayout::row_major;
  return g;
}

QuantizedLayout plan(const Recipe& recipe, int64_t rows, int64_t cols) { return plan_for("plan", recipe, rows, cols); }

QuantizedLayout plan_for(const char* op, const Recipe& recipe, int64_t rows, int64_t cols) {
  recipe.validate();
  if (rows < 0 || cols < 0)
    fail_arg(std::string(op) + ": shape (" + std::to_string(rows) + ", " + std::to_string(cols) + ") must be non-negative");
  if (!fits_elements(rows, cols))
    fail_arg(std::string(op) + ": shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
             ") is too large; expected at most 2^48 elements (mxq::kMaxElements)");
  const bool fp4 = recipe.elem == ElemFormat::e2m1;
  if (fp4 && cols % 2 != 0)
    fail_arg(std::string(op) + ": input.shape[-1]=" + std::to_string(cols) +
             " (the columns) must be even for float4_e2m1fn (two values per byte), recipe " + recipe.name());
  if (fp4 && recipe.has_columnwise() && recipe.column_form == ColumnForm::transposed && rows % 2 != 0)
    fail_arg(std::string(op) + ": the input's rows=" + std::to_string(rows) +
             " (shape[:-1]'s product) must be even for transposed columnwise float4_e2m1fn output (two values per "
             "byte), recipe " +
             recipe.name());
  QuantizedLayout L;
  L.rows = rows;
  L.cols = cols;
  const DType dt = recipe.data_dtype();
  if (recipe.has_rowwise()) {
    L.data = {dt, rows, cols, dtype_bytes(dt, rows * cols), {}, true};
    if (!recipe.is_tensor_scaled()) L.scales = scale_spec(recipe, direction_scale_geometry(recipe, rows, cols, false));
  }
  if (recipe.has_columnwise()) {
    const bool tr = recipe.column_form == ColumnForm::transposed;
    L.col_data = {dt, tr ? cols : rows, tr ? rows : cols, dtype_bytes(dt, rows * cols), {}, true};
    if (!recipe.is_tensor_scaled())
      L.col_scales = scale_spec(recipe, direction_scale_geometry(recipe, rows, cols, true));
  }
  if (recipe.has_global_scale()) {
    L.global_scale = {DType::float32, 1, 1, 4, {}, true};
    L.amax = {DType::float32, 1, 1, 4, {}, true};
  }
  return L;
}

Matrix as_matrix(const TensorView& v, std::string_view arg) {
  const std::string a(arg);
  if (v.ndim < 1 || v.ndim > kMaxDims)
    fail_arg(a + ".ndim=" + std::to_string(v.ndim) + " must be in [1, " + std::to_string(kMaxDims) + "]");
  for (int i = 0; i < v.ndim; ++i)
    if (v.shape[i] < 0) fail_arg(a + ".shape[" + std::to_string(i) + "]=" + std::to_string(v.shape[i]) + " is negative");
  int64_t elements = 1;  // checked at each step: the product of the shape must not overflow
  for (int i = 0; i < v.ndim; ++i) {
    if (v.shape[i] == 0) {
      elements = 0;
      break;
    }
    if (!fits_elements(elements, v.shape[i])) {
      std::string shape;
      for (int j = 0; j < v.ndim; ++j) shape += (j ? ", " : "") + std::to_string(v.shape[j]);
      fail_arg(a + ".shape=(" + shape + ") is too large; expected at most 2^48 elements (mxq::kMaxElements)");
    }
    elements *= v.shape[i];
  }
  Matrix m;
  m.data = v.data;
  m.dtype = v.dtype;
  m.device = v.device;
  m.cols = v.shape[v.ndim - 1];
  m.rows = 1;
  for (int i = 0; i + 1 < v.ndim; ++i) m.rows *= v.shape[i];
  if (m.rows * m.cols == 0) {
    m.row_stride = m.cols;
    return m;
  }
  // Rows at increasing addresses only: a negative stride (a reversed view) is refused by name
  // before any product of strides is formed (one near -2^63 would overflow it).
  for (int i = 0; i < v.ndim; ++i)
    if (v.shape[i] > 1 && v.strides[i] < 0)
      fail_arg(a + ".strides[" + std::to_string(i) + "]=" + std::to_string(v.strides[i]) +
               " is negative; expected rows and elements at increasing addresses (pass a contiguous copy)");
  if (m.cols > 1 && v.strides[v.ndim - 1] != 1)
    fail_arg(a + ".strides[" + std::to_string(v.ndim - 1) + "]=" + std::to_string(v.strides[v.ndim - 1]) +
             " must be 1 (rows may be strided, elements within a row must be contiguous)");
  // Leading dimensions must collapse onto one row stride; dimensions of size 1 have no stride
  // that matters (torch gives them arbitrary ones).
  int prev = -1;  // the last leading dimension of size > 1 seen, walking outwards
  m.row_stride = m.cols;
  for (int i = v.ndim - 2; i >= 0; --i) {
    if (v.shape[i] == 1) continue;
    if (prev < 0) {
      prev = i;
      m.row_stride = v.strides[i];
      continue;
    }
    if (v.strides[prev] > kMaxElements || v.strides[i] > kMaxElements)
      fail_arg(a + ".strides[" + std::to_string(v.strides[i] > kMaxElements ? i : prev) + "]=" +
               std::to_string(std::max(v.strides[i], v.strides[prev])) +
               " is too large; expected at most 2^48 elements (mxq::kMaxElements)");
    const int64_t expect = v.strides[prev] * v.shape[prev];
    prev = i;
    if (v.strides[i] != expect)
      fail_arg(a + ".strides[" + std::to_string(i) + "]=" + std::to_string(v.strides[i]) + " must be " +
               std::to_string(expect) + " so that the leading dimensions collapse into rows");
  }
  if (m.rows == 1) m.row_stride = m.cols;  // one row: its stride is never used
  if (m.rows > 1 && m.row_stride < m.cols)
    fail_arg(a + ".strides[" + std::to_string(v.ndim - 2) + "]=" + std::to_string(m.row_stride) +
             " must be >= shape[-1]=" + std::to_string(m.cols) + " (rows would overlap)");
  if (m.rows > 1 && m.row_stride > (kMaxElements - m.cols) / (m.rows - 1))
    fail_arg(a + ": row stride " + std::to_string(m.row_stride) + " over " + std::to_string(m.rows) +
             " rows spans more than 2^48 elements (mxq::kMaxElements); expected a smaller stride");
  if (m.dtype == DType::float4_e2m1fn && (m.row_stride % 2 != 0))
    fail_arg(a + ": float4_e2m1fn row stride " + std::to_string(m.row_stride) + " must be even");
  if (!m.data) fail_arg(a + ".data is null for a tensor of " + std::to_string(m.rows * m.cols) + " elements");
  const int64_t align = std::max(1, dtype_bits(m.dtype) / 8);
  if (reinterpret_cast<uintptr_t>(m.data) % align != 0)
    fail_arg(a + ".data=" + ptr_str(m.data) + " is not aligned to its element size " + std::to_string(align));
  return m;
}

std::string fmt_float(float v) {
  // the shortest text that reads back to v: what the caller wrote (1e-10, 0.0001), where %.9g
  // would print 1.00000001e-10
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string ptr_str(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace mxq
