// mxq._core: the nanobind extension under the Python package. It only translates: Python
// ints (addresses, shapes, strides) and strings (recipes, dtype and backend names) into the C++
// API's TensorView / QuantizedTensor / options, and mxq::Error into Python exceptions. Arrays
// are allocated and inspected in python/mxq (NumPy now, torch later): every check of shapes,
// sizes, dtypes and recipes stays in the C++ API, which validates before it writes anything.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/validate.hpp"
#include "mxq/gemm_plan.hpp"
#include "mxq/mxq.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using std::to_string;

// (kind, index): 0 = cpu, 1 = cuda (mxq::DeviceKind), as python/mxq describes a tensor's device.
using DeviceArg = std::tuple<int, int>;
// (address, bytes) of one quantized buffer; address 0 means absent.
using BufferArg = std::tuple<uintptr_t, int64_t>;
// (dtype name, rows, cols, bytes, view), or None for a buffer the recipe does not produce. view
// is (rows, cols, row stride, col stride) in storage elements: how a framework tensor should
// present the buffer (see scale_view).
using ViewTuple = std::tuple<int64_t, int64_t, int64_t, int64_t>;
using SpecTuple = std::optional<std::tuple<std::string, int64_t, int64_t, int64_t, ViewTuple>>;

PyObject* g_unsupported_error = nullptr;

mxq::Buffer buffer_of(const BufferArg& b) {
  return {reinterpret_cast<void*>(std::get<0>(b)), std::get<0>(b) ? std::get<1>(b) : 0};
}

mxq::Device device_of(const DeviceArg& d) {
  const auto [kind, index] = d;
  if (kind != int(mxq::DeviceKind::cpu) && kind != int(mxq::DeviceKind::cuda))
    mxq::fail_arg("device kind " + to_string(kind) + " is not cpu (0) or cuda (1)");
  return {mxq::DeviceKind(kind), index};
}

mxq::TensorView view_of(uintptr_t address, const std::string& dtype, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& strides, const char* arg, const DeviceArg& device) {
  if (shape.size() != strides.size())
    mxq::fail_arg(std::string(arg) + ": " + to_string(shape.size()) + " dimensions but " + to_string(strides.size()) +
                  " strides");
  if (shape.empty() || shape.size() > size_t(mxq::kMaxDims))
    mxq::fail_arg(std::string(arg) + ".ndim=" + to_string(shape.size()) + " must be in [1, " +
                  to_string(mxq::kMaxDims) + "]");
  mxq::TensorView v;
  v.data = reinterpret_cast<void*>(address);
  v.dtype = mxq::parse_dtype(dtype, std::string(arg) + ".dtype");
  v.ndim = int(shape.size());
  v.device = device_of(device);
  for (size_t i = 0; i < shape.size(); ++i) {
    v.shape[i] = shape[i];
    v.strides[i] = strides[i];
  }
  return v;
}

mxq::QuantizedTensor quantized_of(const mxq::Recipe& r, int64_t rows, int64_t cols, const BufferArg& data,
                                  const BufferArg& scales, const BufferArg& col_data, const BufferArg& col_scales,
                                  const BufferArg& global_scale, const BufferArg& amax, const DeviceArg& device) {
  mxq::QuantizedTensor q;
  q.device = device_of(device);
  q.recipe = r;
  q.rows = rows;
  q.cols = cols;
  q.data = buffer_of(data);
  q.scales = buffer_of(scales);
  q.col_data = buffer_of(col_data);
  q.col_scales = buffer_of(col_scales);
  q.global_scale = buffer_of(global_scale);
  q.amax = buffer_of(amax);
  return q;
}

// A buffer of an empty input has 0 bytes but still exists (an empty array, not None):
// BufferSpec::planned, not present().
SpecTuple spec_of(const mxq::BufferSpec& s, bool scales) {
  if (!s.planned) return std::nullopt;
  // Storage is row-major (rows, cols), FP4 data (rows, cols / 2) bytes.
  const int64_t cols = s.dtype == mxq::DType::float4_e2m1fn ? s.cols / 2 : s.cols;
  ViewTuple view{s.rows, cols, cols, 1};
  // DeepGEMM's convention for MN-major scales: the logical (MN, K blocks) matrix with MN
  // contiguous and the TMA-aligned MN as the column stride. s.cols is round_up(mn, 4) already.
  if (scales && (s.geometry.layout == mxq::ScaleLayout::mn_major_tma ||
                 s.geometry.layout == mxq::ScaleLayout::packed_ue8m0))
    view = {s.geometry.mn, s.rows, 1, s.cols};
  return std::make_tuple(std::string(mxq::dtype_name(s.dtype)), s.rows, s.cols, s.bytes, view);
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const mxq::Error& e) {
    switch (e.code()) {
      case mxq::ErrorCode::invalid_argument: PyErr_SetString(PyExc_ValueError, e.what()); break;
      case mxq::ErrorCode::unsupported:
      case mxq::ErrorCode::backend_unavailable: PyErr_SetString(g_unsupported_error, e.what()); break;
      default: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
    }
  }
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "mxq C++ API bindings (private: use the mxq package)";

  g_unsupported_error = PyErr_NewExceptionWithDoc(
      "mxq.UnsupportedError",
      "A valid request that this build, backend or device cannot serve (mxq::ErrorCode unsupported or "
      "backend_unavailable).",
      PyExc_RuntimeError, nullptr);
  m.attr("UnsupportedError") = nb::handle(g_unsupported_error);
  nb::register_exception_translator(translate);

  m.def("version", &mxq::version);
  m.def("build_info", &mxq::build_info);
  m.def("backend_status", [] {
    std::vector<std::tuple<std::string, bool, std::string>> out;
    for (const auto& s : mxq::backend_status()) out.emplace_back(mxq::backend_name(s.backend), s.available, s.detail);
    return out;
  });
  m.def("set_default_backend", [](const std::string& name) { mxq::set_default_backend(mxq::parse_backend(name)); },
        "name"_a);
  m.def("default_backend", [] { return std::string(mxq::backend_name(mxq::default_backend())); });
  m.def("set_strict", &mxq::set_strict, "on"_a);
  m.def("strict", &mxq::strict);
  m.def("last_dispatch", [] {
    const mxq::DispatchInfo d = mxq::last_dispatch();
    return std::make_tuple(d.op, d.backend, d.kernel, d.fallback);
  });
  m.def(
      "jit_warmup",
      [](const std::vector<std::string>& recipes, int arch, int threads) {
        mxq::JitWarmupResult r;
        {
          nb::gil_scoped_release release;
          r = mxq::jit_warmup(recipes, arch, threads);
        }
        return std::make_tuple(r.configs, r.failures);
      },
      "recipes"_a, "arch"_a = 0, "threads"_a = 0);
  m.def(
      "gemm_plan",
      [](int64_t m_, int64_t n, int64_t k, const std::string& kind, const std::string& out, int sms, int promote_k) {
        const mxq::ArchDesc arch = mxq::ArchDesc::sm90(sms);
        if (kind != "1d2d" && kind != "1d1d") throw mxq::Error(mxq::ErrorCode::invalid_argument,
                                                               "gemm_plan: kind='" + kind + "'; expected '1d2d' or '1d1d'");
        const mxq::GemmPlan p = mxq::plan_gemm(m_, n, k, kind == "1d2d" ? mxq::GemmKind::d1d2 : mxq::GemmKind::d1d1,
                                               mxq::parse_dtype(out), arch, promote_k);
        return std::make_tuple(p.path, p.why, p.block_m, p.block_n, p.block_k, p.stages, p.cluster, p.split_k, p.tiles,
                               p.ctas_per_sm, p.waves, p.last_wave, p.smem_bytes, p.promote_k);
      },
      "m"_a, "n"_a, "k"_a, "kind"_a = "1d2d", "out"_a = "bfloat16", "sms"_a = 132, "promote_k"_a = 0);
  m.def("preset_names", &mxq::Recipe::preset_names);
  m.def("dtype_table", [] {
    int n = 0;
    const mxq::DTypeInfo* t = mxq::dtype_table(&n);
    std::vector<std::tuple<std::string, int>> out;
    for (int i = 0; i < n; ++i) out.emplace_back(t[i].name, t[i].bits);
    return out;
  });
  m.def("parse_dtype", [](const std::string& name) { return std::string(mxq::dtype_name(mxq::parse_dtype(name))); },
        "name"_a);
  m.def("recipe_name", [](const std::string& text) { return mxq::Recipe::parse(text).name(); }, "text"_a);

  m.def(
      "plan",
      [](const std::string& recipe, int64_t rows, int64_t cols, const std::string& op) {
        const mxq::Recipe r = mxq::Recipe::parse(recipe);
        const mxq::QuantizedLayout L = mxq::plan_for(op.c_str(), r, rows, cols);
        return std::make_tuple(r.name(), spec_of(L.data, false), spec_of(L.scales, true), spec_of(L.col_data, false),
                               spec_of(L.col_scales, true), spec_of(L.global_scale, false), spec_of(L.amax, false));
      },
      "recipe"_a, "rows"_a, "cols"_a, "op"_a = "plan",
      "(canonical name, data, scales, col_data, col_scales, global_scale, amax); each spec is "
      "(dtype, rows, cols, bytes, (view rows, view cols, row stride, col stride)) or None");

  // The caller keeps every array alive for the call; the GIL is released while the backend runs.
  // `device` is (kind, index) of every tensor of the call; `stream` a cudaStream_t (0: default).
  m.def(
      "quantize",
      [](uintptr_t x, const std::string& x_dtype, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
         const std::string& recipe, int64_t rows, int64_t cols, BufferArg data, BufferArg scales, BufferArg col_data,
         BufferArg col_scales, BufferArg global_scale, BufferArg amax, uintptr_t amax_in, uintptr_t scale_in,
         const std::string& backend, const std::string& activation, uintptr_t act, const std::string& act_dtype,
         const std::vector<int64_t>& act_shape, const std::vector<int64_t>& act_strides, uintptr_t dbias,
         uintptr_t noop, DeviceArg device, uintptr_t stream) {
        const mxq::TensorView v = view_of(x, x_dtype, shape, strides, "input", device);
        const mxq::QuantizedTensor q = quantized_of(mxq::Recipe::parse(recipe), rows, cols, data, scales, col_data,
                                                    col_scales, global_scale, amax, device);
        mxq::QuantizeOptions o;
        o.backend = mxq::parse_backend(backend);
        o.amax_in = reinterpret_cast<const float*>(amax_in);
        o.scale_in = reinterpret_cast<const float*>(scale_in);
        o.activation = mxq::parse_activation(activation);
        o.stream = reinterpret_cast<void*>(stream);
        mxq::TensorView av;
        if (act) {
          av = view_of(act, act_dtype, act_shape, act_strides, "act_input", device);
          o.act_input = &av;
        }
        o.dbias = reinterpret_cast<float*>(dbias);
        o.noop = reinterpret_cast<const float*>(noop);
        nb::gil_scoped_release release;
        mxq::quantize(v, q, o);
      },
      "x"_a, "x_dtype"_a, "shape"_a, "strides"_a, "recipe"_a, "rows"_a, "cols"_a, "data"_a, "scales"_a,
      "col_data"_a, "col_scales"_a, "global_scale"_a, "amax"_a, "amax_in"_a, "scale_in"_a, "backend"_a,
      "activation"_a = "none", "act"_a = 0, "act_dtype"_a = "float32", "act_shape"_a = std::vector<int64_t>{},
      "act_strides"_a = std::vector<int64_t>{}, "dbias"_a = 0, "noop"_a = 0, "device"_a = DeviceArg{0, 0},
      "stream"_a = 0);

  m.def(
      "gemm",
      [](const std::string& a_recipe, int64_t m_, int64_t k, BufferArg a_data, BufferArg a_scales,
         const std::string& b_recipe, int64_t n, int64_t kb, BufferArg b_data, BufferArg b_scales, uintptr_t d,
         const std::string& d_dtype, float alpha, uintptr_t c, uintptr_t bias, const std::string& backend,
         int promote_k, DeviceArg device, uintptr_t stream, int block_m, BufferArg a_global, BufferArg b_global) {
        const BufferArg none{0, 0};
        const mxq::QuantizedTensor qa =
            quantized_of(mxq::Recipe::parse(a_recipe), m_, k, a_data, a_scales, none, none, a_global, none, device);
        const mxq::QuantizedTensor qb =
            quantized_of(mxq::Recipe::parse(b_recipe), n, kb, b_data, b_scales, none, none, b_global, none, device);
        const mxq::TensorView dv = view_of(d, d_dtype, {m_, n}, {n, 1}, "d", device);
        mxq::TensorView cv;
        mxq::GemmOptions o;
        o.backend = mxq::parse_backend(backend);
        o.alpha = alpha;
        o.promote_k = promote_k;
        o.block_m = block_m;
        o.stream = reinterpret_cast<void*>(stream);
        if (c) {
          cv = view_of(c, "float32", {m_, n}, {n, 1}, "c", device);
          o.c = &cv;
        }
        o.bias = reinterpret_cast<const float*>(bias);
        nb::gil_scoped_release release;
        mxq::gemm(qa, qb, dv, o);
      },
      "a_recipe"_a, "m"_a, "k"_a, "a_data"_a, "a_scales"_a, "b_recipe"_a, "n"_a, "kb"_a, "b_data"_a, "b_scales"_a, "d"_a,
      "d_dtype"_a, "alpha"_a, "c"_a, "bias"_a, "backend"_a, "promote_k"_a = 0, "device"_a = DeviceArg{0, 0},
      "stream"_a = 0, "block_m"_a = 0, "a_global"_a = BufferArg{0, 0}, "b_global"_a = BufferArg{0, 0});

  m.def(
      "dequantize",
      [](const std::string& recipe, int64_t rows, int64_t cols, BufferArg data, BufferArg scales, BufferArg col_data,
         BufferArg col_scales, BufferArg global_scale, BufferArg amax, uintptr_t y, const std::string& y_dtype,
         const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, bool columnwise,
         const std::string& backend, DeviceArg device, uintptr_t stream) {
        const mxq::QuantizedTensor q = quantized_of(mxq::Recipe::parse(recipe), rows, cols, data, scales, col_data,
                                                    col_scales, global_scale, amax, device);
        const mxq::TensorView v = view_of(y, y_dtype, shape, strides, "output", device);
        mxq::DequantizeOptions o;
        o.backend = mxq::parse_backend(backend);
        o.columnwise = columnwise;
        o.stream = reinterpret_cast<void*>(stream);
        nb::gil_scoped_release release;
        mxq::dequantize(q, v, o);
      },
      "recipe"_a, "rows"_a, "cols"_a, "data"_a, "scales"_a, "col_data"_a, "col_scales"_a, "global_scale"_a,
      "amax"_a, "y"_a, "y_dtype"_a, "shape"_a, "strides"_a, "columnwise"_a, "backend"_a, "device"_a = DeviceArg{0, 0},
      "stream"_a = 0);

  // Any object with __dlpack__ (CuPy, JAX, a torch tensor, ...): imported zero-copy through DLPack,
  // described as (address, dtype name or "", shape, strides in elements, (device kind, index)).
  // The capsule's owner is kept alive by `keep`, which the caller holds for the call.
  m.def(
      "dlpack_describe",
      [](nb::ndarray<nb::ro> a) {
        const nb::dlpack::dtype t = a.dtype();
        std::string name;
        using Code = nb::dlpack::dtype_code;
        if (t.lanes == 1) {
          if (t.code == uint8_t(Code::Float) && t.bits == 32) name = "float32";
          else if (t.code == uint8_t(Code::Float) && t.bits == 16) name = "float16";
          else if (t.code == uint8_t(Code::Bfloat) && t.bits == 16) name = "bfloat16";
          else if (t.code == uint8_t(Code::UInt) && t.bits == 8) name = "uint8";
          else if (t.code == uint8_t(Code::Int) && t.bits == 32) name = "int32";
        }
        std::vector<int64_t> shape, strides;
        for (size_t i = 0; i < a.ndim(); ++i) {
          shape.push_back(int64_t(a.shape(i)));
          strides.push_back(int64_t(a.stride(i)));
        }
        int kind = -1;
        if (a.device_type() == nb::device::cpu::value) kind = int(mxq::DeviceKind::cpu);
        else if (a.device_type() == nb::device::cuda::value) kind = int(mxq::DeviceKind::cuda);
        return std::make_tuple(reinterpret_cast<uintptr_t>(a.data()), name, shape, strides,
                               std::make_tuple(kind, int(a.device_id())), a);
      },
      "a"_a);
}
