#include "core/validate.hpp"

#include <iterator>

#include "mxq/error.hpp"
#include "mxq/gemm_plan.hpp"

namespace mxq {
namespace {

bool is_float_io(DType t) { return t == DType::float32 || t == DType::float16 || t == DType::bfloat16; }

// `recipe` names the recipe in messages; it is called on failure only (this runs on every call).
// `arg` names the call and the tensor in messages: "quantize: quantized." for quantize's outputs,
// "dequantize: quantized." for dequantize's input, "gemm: a." and "gemm: b." for the GEMM's operands.
template <class Name>
void check_buffer(const std::string& arg, const char* what, const Buffer& b, const BufferSpec& spec, const Name& recipe) {
  if (!spec.present()) return;
  if (!b.data)
    fail_arg(arg + what + ".data is null; recipe " + recipe() + " needs " + std::to_string(spec.bytes) + " bytes there");
  if (b.bytes < spec.bytes)
    fail_arg(arg + what + ".bytes=" + std::to_string(b.bytes) + " is too small; recipe " + recipe() + " needs " +
             std::to_string(spec.bytes) + " bytes (" + dtype_name(spec.dtype) + " [" + std::to_string(spec.rows) +
             ", " + std::to_string(spec.cols) + "])");
  const int64_t align = spec.dtype == DType::float32 || spec.dtype == DType::int32 ? 4 : 1;
  if (reinterpret_cast<uintptr_t>(b.data) % align != 0)
    fail_arg(arg + what + ".data=" + ptr_str(b.data) + " must be " + std::to_string(align) + "-byte aligned for " +
             dtype_name(spec.dtype));
}

void check_optional_scalar(const std::string& arg, const char* what, const Buffer& b) {
  if (!b.data) return;
  if (b.bytes < 4) fail_arg(arg + what + ".bytes=" + std::to_string(b.bytes) + " must be >= 4");
  if (reinterpret_cast<uintptr_t>(b.data) % 4 != 0)
    fail_arg(arg + what + ".data=" + ptr_str(b.data) + " must be 4-byte aligned");
}

template <class Name>
void check_buffers(const QuantizedTensor& q, const QuantizedLayout& L, const Name& name, const std::string& arg) {
  check_buffer(arg, "data", q.data, L.data, name);
  check_buffer(arg, "scales", q.scales, L.scales, name);
  check_buffer(arg, "col_data", q.col_data, L.col_data, name);
  check_buffer(arg, "col_scales", q.col_scales, L.col_scales, name);
  check_buffer(arg, "global_scale", q.global_scale, L.global_scale, name);
  if (L.amax.present()) check_buffer(arg, "amax", q.amax, L.amax, name);
  else check_optional_scalar(arg, "amax", q.amax);
}

// The bytes a call reads or writes of one buffer, for the overlap check: [lo, hi).
struct Extent {
  const char* name;
  uintptr_t lo, hi;
  bool written;
};
struct Extents {
  Extent e[16];
  int n = 0;
  void add(const char* name, const void* p, int64_t bytes, bool written) {
    if (!p || bytes <= 0) return;
    if (n == int(std::size(e))) fail(ErrorCode::internal, "overlap check: more than 16 buffers");
    e[n++] = {name, uintptr_t(p), uintptr_t(p) + uintptr_t(bytes), written};
  }
  void add(const char* name, const Matrix& m, bool written) {
    if (!m.empty()) add(name, m.data, dtype_bytes(m.dtype, (m.rows - 1) * m.row_stride + m.cols), written);
  }
  void add(const char* name, const Buffer& b, const BufferSpec& spec, bool written) {
    if (spec.present()) add(name, b.data, spec.bytes, written);
  }
  // No written extent may overlap another extent: the results would depend on the order of the
  // writes (and differ between backends). Inputs may overlap each other.
  void check(const char* op) const {
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        if ((e[i].written || e[j].written) && e[i].lo < e[j].hi && e[j].lo < e[i].hi)
          fail_arg(std::string(op) + ": " + e[i].name + " (" + ptr_str(reinterpret_cast<void*>(e[i].lo)) + ", " +
                   std::to_string(e[i].hi - e[i].lo) + " bytes) overlaps " + e[j].name + " (" +
                   ptr_str(reinterpret_cast<void*>(e[j].lo)) + ", " + std::to_string(e[j].hi - e[j].lo) +
                   " bytes); expected outputs that overlap neither each other nor the inputs");
  }
};

// An optional fp32 argument (a scalar or a vector) the kernels read or write as floats.
void check_float_pointer(const char* op, const char* what, const float* p) {
  if (p && reinterpret_cast<uintptr_t>(p) % alignof(float) != 0)
    fail_arg(std::string(op) + ": " + what + "=" + ptr_str(p) + " must be 4-byte aligned (float32)");
}

}  // namespace

QuantizeCall check_quantize(const TensorView& xv, const QuantizedTensor& out, const QuantizeOptions& opt) {
  QuantizeCall c;
  c.x = as_matrix(xv, "quantize: input");
  if (!is_float_io(c.x.dtype))
    fail_arg(std::string("quantize: input.dtype=") + dtype_name(c.x.dtype) +
             " is not supported; expected float32, float16 or bfloat16");
  const bool gated = num::is_gated(opt.activation);
  if (int(opt.activation) > int(num::Activation::reglu))
    fail_arg("quantize: options.activation=" + std::to_string(int(opt.activation)) + " is not an activation");
  if (gated && c.x.cols % 2 != 0)
    fail_arg(std::string("quantize: options.activation=") + activation_name(opt.activation) +
             " reads rows [a | b]; input.cols=" + std::to_string(c.x.cols) + " must be even");
  const int64_t out_cols = gated ? c.x.cols / 2 : c.x.cols;
  if (out.rows != c.x.rows || out.cols != out_cols)
    fail_arg("quantize: quantized shape (" + std::to_string(out.rows) + ", " + std::to_string(out.cols) +
             ") does not match " + (gated ? "the gated output shape (" : "input shape (") + std::to_string(c.x.rows) +
             ", " + std::to_string(out_cols) + ")");
  if (opt.act_input) {
    if (opt.activation == num::Activation::none || gated)
      fail_arg(std::string("quantize: options.act_input (the backward pass) needs an elementwise options.activation, "
                           "got ") + activation_name(opt.activation));
    c.act_input = as_matrix(*opt.act_input, "quantize: options.act_input");
    if (c.act_input.rows != c.x.rows || c.act_input.cols != c.x.cols || !(c.act_input.device == c.x.device) ||
        !is_float_io(c.act_input.dtype))
      fail_arg("quantize: options.act_input (" + std::to_string(c.act_input.rows) + ", " +
               std::to_string(c.act_input.cols) + ") " + dtype_name(c.act_input.dtype) + " on " +
               c.act_input.device.str() + " must match the gradient input: (" + std::to_string(c.x.rows) + ", " +
               std::to_string(c.x.cols) + ") float32/float16/bfloat16 on " + c.x.device.str());
  }
  if (!(out.device == c.x.device))
    fail_arg("quantize: quantized.device=" + out.device.str() + " differs from input.device=" + c.x.device.str());
  c.layout = plan_for("quantize", out.recipe, c.x.rows, out_cols);
  auto name = [&] { return out.recipe.name(); };
  check_buffers(out, c.layout, name, "quantize: quantized.");
  const bool global = out.recipe.has_global_scale();
  if (opt.amax_in && !global)
    fail_arg("quantize: options.amax_in is only used by fp8_tensor and nvfp4, not by recipe " + name());
  if (opt.scale_in && out.recipe.scheme != Scheme::fp8_tensor)
    fail_arg("quantize: options.scale_in is only used by fp8_tensor, not by recipe " + name());
  if (opt.scale_in && opt.amax_in) fail_arg("quantize: give options.scale_in or options.amax_in, not both");
  check_float_pointer("quantize", "options.dbias", opt.dbias);
  check_float_pointer("quantize", "options.noop", opt.noop);
  check_float_pointer("quantize", "options.amax_in", opt.amax_in);
  check_float_pointer("quantize", "options.scale_in", opt.scale_in);
  Extents ex;
  ex.add("input", c.x, false);
  ex.add("options.act_input", c.act_input, false);
  ex.add("quantized.data", out.data, c.layout.data, true);
  ex.add("quantized.scales", out.scales, c.layout.scales, true);
  ex.add("quantized.col_data", out.col_data, c.layout.col_data, true);
  ex.add("quantized.col_scales", out.col_scales, c.layout.col_scales, true);
  ex.add("quantized.global_scale", out.global_scale, c.layout.global_scale, true);
  ex.add("quantized.amax", out.amax.data, out.amax.data ? 4 : 0, true);
  ex.add("options.dbias", opt.dbias, opt.dbias ? out_cols * 4 : 0, true);
  ex.add("options.noop", opt.noop, 4, false);
  ex.add("options.amax_in", opt.amax_in, 4, false);
  ex.add("options.scale_in", opt.scale_in, 4, false);
  ex.check("quantize");
  if (c.x.device.kind == DeviceKind::cpu) {
    // Host scalars can be checked here; device scalars are the caller's responsibility.
    // 1 / scale_in is stored (scale_inv): it must be finite too, or every code decodes to NaN
    if (opt.scale_in && !(num::is_finite(*opt.scale_in) && *opt.scale_in > 0.0f && num::is_finite(1.0f / *opt.scale_in)))
      fail_arg("quantize: options.scale_in=" + fmt_float(*opt.scale_in) +
               " must be finite and > 0 with a finite reciprocal (> 2^-128)");
    if (opt.amax_in && !(*opt.amax_in >= 0.0f))
      fail_arg("quantize: options.amax_in=" + fmt_float(*opt.amax_in) + " must be >= 0");
  }
  return c;
}

namespace {
// A GEMM operand, rowwise (K-major), of one of the scale families (mxq/api.hpp, gemm):
// fp8_block (E4M3; 1 x 128, or for B 128 x 128), MX (mxfp8, mxfp8_e5m2, mxfp4: 1 x 32 UE8M0),
// NVFP4 (nvfp4, nvfp4_2d) or per-tensor FP8. Returns its layout (rowwise buffers and the global
// scale).
QuantizedLayout check_gemm_operand(const QuantizedTensor& q, const char* name, bool allow_2d) {
  const Recipe& r = q.recipe;
  bool ok = r.has_rowwise();
  std::string expected;
  switch (r.scheme) {
    case Scheme::fp8_block:
      ok = ok && r.elem == ElemFormat::e4m3fn && r.block_cols == 128 && (r.block_rows == 1 || (allow_2d && r.block_rows == 128));
      expected = std::string("fp8_block_1x128") + (allow_2d ? " or fp8_block_128x128" : "") +
                 " (float8_e4m3fn, rowwise; fp32 or pow2/UE8M0 scales)";
      break;
    case Scheme::fp8_tensor: expected = "fp8_tensor quantized rowwise"; break;
    case Scheme::mx: expected = "an MX recipe (mxfp8, mxfp8_e5m2, mxfp4) quantized rowwise"; break;
    case Scheme::nvfp4: expected = "nvfp4 or nvfp4_2d quantized rowwise"; break;
  }
  if (!ok) fail_arg(std::string("gemm: ") + name + ".recipe=" + r.name() + " is not supported; expected " + expected);
  if (r.elem == ElemFormat::e2m1 && q.cols % 2 != 0)
    fail_arg(std::string("gemm: ") + name + ".cols=" + std::to_string(q.cols) + " (K) must be even for " + r.name() +
             " (float4_e2m1fn, two codes per byte)");
  QuantizedLayout need = plan_for("gemm", r, q.rows, q.cols);
  need.col_data = need.col_scales = need.amax = {};
  check_buffers(
      q, need, [&] { return r.name(); }, std::string("gemm: ") + name + ".");
  return need;
}

const char* gemm_family(Scheme s) {
  switch (s) {
    case Scheme::fp8_block: return "fp8_block (1D2D or 1D1D)";
    case Scheme::fp8_tensor: return "per-tensor FP8";
    case Scheme::mx: return "MX";
    default: return "NVFP4";
  }
}
}  // namespace

GemmCall check_gemm(const QuantizedTensor& a, const QuantizedTensor& b, const TensorView& dv, const GemmOptions& opt) {
  const QuantizedLayout la = check_gemm_operand(a, "a", false), lb = check_gemm_operand(b, "b", true);
  if (a.recipe.scheme != b.recipe.scheme)
    fail_arg("gemm: a.recipe=" + a.recipe.name() + " (" + gemm_family(a.recipe.scheme) + ") and b.recipe=" +
             b.recipe.name() + " (" + gemm_family(b.recipe.scheme) +
             ") differ in scaling; both operands must be fp8_block, both MX (any of mxfp8, mxfp8_e5m2, mxfp4), "
             "both NVFP4 (nvfp4, nvfp4_2d) or both fp8_tensor");
  const num::ScaleGeometry a_scales = la.scales.geometry, b_scales = lb.scales.geometry;
  if (a.cols != b.cols)
    fail_arg("gemm: a is (" + std::to_string(a.rows) + ", " + std::to_string(a.cols) + ") and b is (" +
             std::to_string(b.rows) + ", " + std::to_string(b.cols) + "); both must be K-major with the same K");
  if (!(a.device == b.device))
    fail_arg("gemm: a.device=" + a.device.str() + " differs from b.device=" + b.device.str());
  GemmCall c;
  c.a_scales = a_scales;
  c.b_scales = b_scales;
  c.d = as_matrix(dv, "gemm: d");
  if (c.d.dtype != DType::float32 && c.d.dtype != DType::bfloat16)
    fail_arg(std::string("gemm: d.dtype=") + dtype_name(c.d.dtype) + " is not supported; expected float32 or bfloat16");
  if (c.d.rows != a.rows || c.d.cols != b.rows)
    fail_arg("gemm: d is (" + std::to_string(c.d.rows) + ", " + std::to_string(c.d.cols) + "); expected (M, N) = (" +
             std::to_string(a.rows) + ", " + std::to_string(b.rows) + ")");
  if (!(c.d.device == a.device))
    fail_arg("gemm: d.device=" + c.d.device.str() + " differs from a.device=" + a.device.str());
  if (opt.c) {
    c.c = as_matrix(*opt.c, "gemm: options.c");
    if (c.c.dtype != DType::float32 || c.c.rows != c.d.rows || c.c.cols != c.d.cols || !(c.c.device == c.d.device))
      fail_arg("gemm: options.c must be float32 (" + std::to_string(c.d.rows) + ", " + std::to_string(c.d.cols) +
               ") on " + c.d.device.str() + ", got " + dtype_name(c.c.dtype) + " (" + std::to_string(c.c.rows) + ", " +
               std::to_string(c.c.cols) + ") on " + c.c.device.str());
  }
  if (!num::is_finite(opt.alpha)) fail_arg("gemm: options.alpha=" + fmt_float(opt.alpha) + " must be finite");
  check_promote_k(opt.promote_k, "gemm: options.promote_k");
  c.promote_k = resolve_promote_k(opt.promote_k, c.d.dtype);
  check_block_m(opt.block_m, "gemm: options.block_m");
  // D may be C itself (accumulating in place: each element is read, then written, by one thread),
  // but may overlap nothing else.
  Extents ex;
  ex.add("d", c.d, true);
  const bool c_is_d = c.c.data == c.d.data && c.c.row_stride == c.d.row_stride && c.c.dtype == c.d.dtype;
  if (!c_is_d) ex.add("options.c", c.c, false);
  ex.add("a.data", a.data, la.data, false);
  ex.add("a.scales", a.scales, la.scales, false);
  ex.add("b.data", b.data, lb.data, false);
  ex.add("b.scales", b.scales, lb.scales, false);
  ex.add("a.global_scale", a.global_scale, la.global_scale, false);
  ex.add("b.global_scale", b.global_scale, lb.global_scale, false);
  check_float_pointer("gemm", "options.bias", opt.bias);
  ex.add("options.bias", opt.bias, opt.bias ? c.d.cols * 4 : 0, false);
  ex.check("gemm");
  return c;
}

void check_promote_k(int64_t promote_k, const std::string& what) {
  if (promote_k != 0 && promote_k != 32 && promote_k != 64 && promote_k != 128)
    fail_arg(what + "=" + std::to_string(promote_k) + "; expected 0 (by D's dtype), 32, 64 or 128");
}

void check_block_m(int64_t block_m, const std::string& what) {
  if (block_m != 0 && block_m != 128 && block_m != 256)
    fail_arg(what + "=" + std::to_string(block_m) + "; expected 0 (the plan's choice), 128 or 256");
}

DequantizeCall check_dequantize(const QuantizedTensor& q, const TensorView& yv, const DequantizeOptions& opt) {
  DequantizeCall c;
  c.y = as_matrix(yv, "dequantize: output");
  if (!is_float_io(c.y.dtype))
    fail_arg(std::string("dequantize: output.dtype=") + dtype_name(c.y.dtype) +
             " is not supported; expected float32, float16 or bfloat16");
  if (!(q.device == c.y.device))
    fail_arg("dequantize: quantized.device=" + q.device.str() + " differs from output.device=" + c.y.device.str());
  c.layout = plan_for("dequantize", q.recipe, q.rows, q.cols);
  auto name = [&] { return q.recipe.name(); };
  if (opt.columnwise && !q.recipe.has_columnwise())
    fail_arg("dequantize: options.columnwise is set but recipe " + name() + " has no columnwise output");
  if (!opt.columnwise && !q.recipe.has_rowwise())
    fail_arg("dequantize: recipe " + name() + " has only columnwise output; set options.columnwise");
  const bool tr = opt.columnwise && q.recipe.column_form == ColumnForm::transposed;
  const int64_t er = tr ? q.cols : q.rows, ec = tr ? q.rows : q.cols;
  if (c.y.rows != er || c.y.cols != ec)
    fail_arg("dequantize: output shape (" + std::to_string(c.y.rows) + ", " + std::to_string(c.y.cols) +
             ") must be (" + std::to_string(er) + ", " + std::to_string(ec) + ")");
  QuantizedLayout need = c.layout;
  need.amax = {};  // dequantize does not read it
  if (opt.columnwise) need.data = need.scales = {};
  else need.col_data = need.col_scales = {};
  check_buffers(q, need, name, "dequantize: quantized.");
  Extents ex;
  ex.add("output", c.y, true);
  ex.add("quantized.data", q.data, need.data, false);
  ex.add("quantized.scales", q.scales, need.scales, false);
  ex.add("quantized.col_data", q.col_data, need.col_data, false);
  ex.add("quantized.col_scales", q.col_scales, need.col_scales, false);
  ex.add("quantized.global_scale", q.global_scale, need.global_scale, false);
  ex.check("dequantize");
  return c;
}

}  // namespace mxq
