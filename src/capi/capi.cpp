// The C ABI of include/mxq/mxq.h over the C++ API. This file only translates: DLTensors into
// TensorViews and Buffers, C structs into C++ options, mxq::Error into a status plus a
// thread-local message. Every check of shapes, sizes and recipes stays in the C++ API.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "core/validate.hpp"
#include "mxq/mxq.h"
#include "mxq/mxq.hpp"
#include "runtime/backends.hpp"
#include "runtime/memory.hpp"
#include "runtime/settings.hpp"

struct mxq_recipe_t {
  mxq::Recipe recipe;
};

namespace {

using namespace mxq;
using std::to_string;

static_assert(MXQ_ERROR_INVALID_ARGUMENT == int(ErrorCode::invalid_argument) &&
                  MXQ_ERROR_UNSUPPORTED == int(ErrorCode::unsupported) &&
                  MXQ_ERROR_BACKEND_UNAVAILABLE == int(ErrorCode::backend_unavailable) &&
                  MXQ_ERROR_FALLBACK_FORBIDDEN == int(ErrorCode::fallback_forbidden) &&
                  MXQ_ERROR_DEVICE == int(ErrorCode::device_error) && MXQ_ERROR_INTERNAL == int(ErrorCode::internal),
              "mxq_status must mirror mxq::ErrorCode");
static_assert(MXQ_ACT_REGLU == int(Activation::reglu) && MXQ_ACT_SWIGLU == int(Activation::swiglu) &&
                  MXQ_ACT_GELU == int(Activation::gelu),
              "mxq_activation must mirror mxq::Activation");
static_assert(MXQ_BACKEND_AUTO == int(Backend::automatic) && MXQ_BACKEND_CPU == int(Backend::cpu) &&
                  MXQ_BACKEND_CUDA_AOT == int(Backend::cuda_aot) && MXQ_BACKEND_CUDA_JIT == int(Backend::cuda_jit) &&
                      MXQ_BACKEND_CUBLASLT == int(Backend::cublaslt),
              "mxq_backend must mirror mxq::Backend");

// A fixed array, so that recording an error cannot itself throw (e.g. after std::bad_alloc).
thread_local char g_last_error[2048];

mxq_status record(mxq_status s, const char* message) noexcept {
  std::snprintf(g_last_error, sizeof g_last_error, "%s", message);
  return s;
}

// Runs fn; every exception becomes a status and the thread's message. `fn_name` prefixes
// messages that do not say where they come from (out of memory, foreign exceptions).
template <class Fn>
mxq_status guarded(const char* fn_name, Fn&& fn) noexcept {
  try {
    fn();
    g_last_error[0] = '\0';
    return MXQ_OK;
  } catch (const Error& e) {
    return record(static_cast<mxq_status>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    std::snprintf(g_last_error, sizeof g_last_error, "%s: out of memory", fn_name);
    return MXQ_ERROR_INTERNAL;
  } catch (const std::exception& e) {
    std::snprintf(g_last_error, sizeof g_last_error, "%s: internal error: %s", fn_name, e.what());
    return MXQ_ERROR_INTERNAL;
  } catch (...) {
    std::snprintf(g_last_error, sizeof g_last_error, "%s: internal error: unknown exception", fn_name);
    return MXQ_ERROR_INTERNAL;
  }
}

template <class T>
T& not_null(T* p, const char* fn_name, const char* arg) {
  if (!p) fail_arg(std::string(fn_name) + ": " + arg + " is NULL");
  return *p;
}

const Recipe& recipe_of(mxq_recipe r, const char* fn_name) { return not_null(r, fn_name, "recipe").recipe; }

Backend backend_of(mxq_backend b, const char* arg) {
  const int v = b;
  if (v < MXQ_BACKEND_AUTO || v > MXQ_BACKEND_CUBLASLT)
    fail_arg(std::string(arg) + "=" + to_string(v) + " is not an mxq_backend; expected 0 (auto) to 4 (cublaslt)");
  return static_cast<Backend>(b);
}

// ---- DLPack -> mxq ------------------------------------------------------------------------

struct DLDTypeName {
  uint8_t code, bits;
  DType dtype;
};
constexpr DLDTypeName kDLDTypes[] = {
    {kDLFloat, 32, DType::float32},
    {kDLFloat, 16, DType::float16},
    {kDLBfloat, 16, DType::bfloat16},
    {kDLUInt, 8, DType::uint8},
    {kDLInt, 32, DType::int32},
    // DLPack 1.1's codes, by number: callers compiled against DLPack >= 1.1 send them whatever
    // header this library was built with (Debian's is 0.6, which has no FP8 / FP4 codes).
    {10, 8, DType::float8_e4m3fn},   // kDLFloat8_e4m3fn
    {12, 8, DType::float8_e5m2},     // kDLFloat8_e5m2
    {14, 8, DType::float8_e8m0fnu},  // kDLFloat8_e8m0fnu
    {17, 4, DType::float4_e2m1fn},   // kDLFloat4_e2m1fn
};
#if defined(DLPACK_MAJOR_VERSION) && (DLPACK_MAJOR_VERSION > 1 || DLPACK_MINOR_VERSION >= 1)
static_assert(kDLFloat8_e4m3fn == 10 && kDLFloat8_e5m2 == 12 && kDLFloat8_e8m0fnu == 14 && kDLFloat4_e2m1fn == 17,
              "DLPack's FP8 / FP4 type codes");
#endif

DType dtype_of(DLDataType t, const std::string& arg) {
  if (t.lanes != 1) fail_arg(arg + ".lanes=" + to_string(t.lanes) + " must be 1");
  std::string known;
  for (const DLDTypeName& d : kDLDTypes) {
    if (d.code == t.code && d.bits == t.bits) return d.dtype;
    known += std::string(known.empty() ? "" : ", ") + dtype_name(d.dtype) + " (code " + to_string(d.code) + ", bits " +
             to_string(d.bits) + ")";
  }
  fail_arg(arg + "=(code " + to_string(t.code) + ", bits " + to_string(t.bits) + ") is not supported; expected " +
           known);
}

Device device_of(DLDevice d, const std::string& arg) {
  if (d.device_type == kDLCPU) return {DeviceKind::cpu, 0};
  if (d.device_type == kDLCUDA) return {DeviceKind::cuda, d.device_id};
  fail_arg(arg + ".device_type=" + to_string(int(d.device_type)) + " is not supported; expected kDLCPU (" +
           to_string(int(kDLCPU)) + ") or kDLCUDA (" + to_string(int(kDLCUDA)) + ")");
}

// A view of t; ndim 0 (a scalar) is allowed here, the matrix checks of the C++ API reject it
// where a matrix is needed.
TensorView view_of(const DLTensor* t, const std::string& arg) {
  if (!t) fail_arg(arg + " is NULL; expected a DLTensor");
  if (t->ndim < 0 || t->ndim > kMaxDims)
    fail_arg(arg + ".ndim=" + to_string(t->ndim) + " must be in [0, " + to_string(kMaxDims) + "]");
  if (t->ndim > 0 && !t->shape) fail_arg(arg + ".shape is NULL for ndim=" + to_string(t->ndim));
  TensorView v;
  v.dtype = dtype_of(t->dtype, arg + ".dtype");
  v.device = device_of(t->device, arg + ".device");
  if (t->data && t->byte_offset > UINTPTR_MAX - reinterpret_cast<uintptr_t>(t->data))
    fail_arg(arg + ".byte_offset=" + to_string(t->byte_offset) + " wraps the address space past data=" +
             ptr_str(t->data) + "; expected an offset into the buffer");
  v.data = t->data ? static_cast<char*>(t->data) + t->byte_offset : nullptr;
  v.ndim = t->ndim;
  int64_t contiguous = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    v.shape[i] = t->shape[i];
    v.strides[i] = t->strides ? t->strides[i] : contiguous;
    if (t->shape[i] < 0) fail_arg(arg + ".shape[" + to_string(i) + "]=" + to_string(t->shape[i]) + " is negative");
    if (!fits_elements(t->shape[i], contiguous))
      fail_arg(arg + ".shape[" + to_string(i) + "]=" + to_string(t->shape[i]) +
               " makes the tensor too large; expected at most 2^48 elements (mxq::kMaxElements)");
    contiguous *= t->shape[i];
  }
  return v;
}

// A matrix input (quantize's input, dequantize's output): at least one dimension.
TensorView matrix_view_of(const DLTensor* t, const std::string& arg) {
  const TensorView v = view_of(t, arg);
  if (v.ndim < 1) fail_arg(arg + ".ndim=0 must be in [1, " + to_string(kMaxDims) + "]");
  return v;
}

// A quantized buffer: contiguous, of the planned dtype (or uint8 storage), on `device`. Its
// capacity is its own byte size; the C++ API compares that with the plan.
Buffer buffer_of(const DLTensor* t, const std::string& arg, DType planned, const Device& device,
                 const char* device_arg) {
  if (!t) return {};
  const TensorView v = view_of(t, arg);
  if (v.dtype != planned && v.dtype != DType::uint8)
    fail_arg(arg + ".dtype=" + dtype_name(v.dtype) + " must be " + dtype_name(planned) + " or uint8 (its storage)");
  if (!(v.device == device))
    fail_arg(arg + ".device=" + v.device.str() + " differs from " + device_arg + ".device=" + device.str());
  int64_t contiguous = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    if (v.shape[i] < 0) fail_arg(arg + ".shape[" + to_string(i) + "]=" + to_string(v.shape[i]) + " is negative");
    if (!fits_elements(v.shape[i], contiguous))
      fail_arg(arg + ".shape[" + to_string(i) + "]=" + to_string(v.shape[i]) +
               " makes the buffer too large; expected at most 2^48 elements (mxq::kMaxElements)");
    if (v.shape[i] != 1 && v.strides[i] != contiguous)
      fail_arg(arg + ".strides[" + to_string(i) + "]=" + to_string(v.strides[i]) + " must be " + to_string(contiguous) +
               " (quantized buffers are contiguous)");
    contiguous *= v.shape[i];
  }
  return {v.data, dtype_bytes(v.dtype, v.numel())};
}

// One float32 scalar option (amax_in, scale_in) on the input's device, or null.
const float* scalar_of(const DLTensor* t, const std::string& arg, const Device& device) {
  const Buffer b = buffer_of(t, arg, DType::float32, device, "input");
  if (t && (t->dtype.code != kDLFloat || b.bytes != 4))
    fail_arg(arg + " must hold exactly one float32, got " + to_string(b.bytes) + " bytes of " +
             dtype_name(dtype_of(t->dtype, arg + ".dtype")));
  return static_cast<const float*>(b.data);
}

// The C++ description of the mxq_quantized `q`, named `arg` in messages ("quantized", or the
// GEMM's "a" and "b"), for (recipe, rows, cols) on `device`; `shape_op` starts a shape error.
QuantizedTensor quantized_of(const Recipe& recipe, int64_t rows, int64_t cols, const mxq_quantized* q,
                             const Device& device, const char* device_arg, const char* arg = "quantized",
                             const char* shape_op = "plan") {
  if (!q) fail_arg(std::string(arg) + " is NULL; expected an mxq_quantized");
  const QuantizedLayout L = plan_for(shape_op, recipe, rows, cols);
  const auto buffer = [&](const DLTensor* t, const char* name, const BufferSpec& spec) {
    // An amax buffer the recipe does not require is still one float32.
    return buffer_of(t, std::string(arg) + "." + name, spec.planned ? spec.dtype : DType::float32, device, device_arg);
  };
  QuantizedTensor out;
  out.recipe = recipe;
  out.rows = rows;
  out.cols = cols;
  out.device = device;
  out.data = buffer(q->data, "data", L.data);
  out.scales = buffer(q->scales, "scales", L.scales);
  out.col_data = buffer(q->col_data, "col_data", L.col_data);
  out.col_scales = buffer(q->col_scales, "col_scales", L.col_scales);
  out.global_scale = buffer(q->global_scale, "global_scale", L.global_scale);
  out.amax = buffer(q->amax, "amax", L.amax);
  return out;
}

mxq_buffer_spec spec_of(const BufferSpec& s) {
  if (!s.planned) return {"", 0, 0, 0, 0};  // an empty input's buffers are planned, of 0 bytes
  return {dtype_name(s.dtype), s.rows, s.cols, s.bytes, 1};
}

// Copies `text` into buf[n] with its NUL. Too small: nothing written, an error naming arg.
void copy_text(const std::string& text, char* buf, size_t n, size_t* needed, const char* arg) {
  if (needed) *needed = text.size() + 1;
  if (n == 0 && !buf) return;  // size query
  if (!buf) fail_arg(std::string(arg) + " is NULL but n=" + to_string(n));
  if (n < text.size() + 1)
    fail_arg(std::string(arg) + ": n=" + to_string(n) + " is too small; " + to_string(text.size() + 1) +
             " bytes needed");
  std::memcpy(buf, text.c_str(), text.size() + 1);
}

// A string computed once and kept for the library's lifetime, "" if that fails. One
// instantiation (and one static) per function.
template <std::string (*fn)()>
const char* static_text() noexcept {
  try {
    static const std::string text = fn();
    return text.c_str();
  } catch (...) {
    return "";
  }
}

}  // namespace

extern "C" {

const char* mxq_last_error(void) { return g_last_error; }

mxq_status mxq_recipe_parse(const char* text, mxq_recipe* out) {
  return guarded("mxq_recipe_parse", [&] {
    const char* t = &not_null(text, "mxq_recipe_parse", "text");
    mxq_recipe& o = not_null(out, "mxq_recipe_parse", "out");
    o = new mxq_recipe_t{Recipe::parse(t)};
  });
}

void mxq_recipe_destroy(mxq_recipe recipe) { delete recipe; }

mxq_status mxq_recipe_name(mxq_recipe recipe, char* buf, size_t n, size_t* needed) {
  return guarded("mxq_recipe_name",
                 [&] { copy_text(recipe_of(recipe, "mxq_recipe_name").name(), buf, n, needed, "buf"); });
}

mxq_status mxq_plan(mxq_recipe recipe, int64_t rows, int64_t cols, mxq_layout* out) {
  return guarded("mxq_plan", [&] {
    const Recipe& r = recipe_of(recipe, "mxq_plan");
    mxq_layout& o = not_null(out, "mxq_plan", "out");
    const QuantizedLayout L = plan(r, rows, cols);
    o = {L.rows,
         L.cols,
         spec_of(L.data),
         spec_of(L.scales),
         spec_of(L.col_data),
         spec_of(L.col_scales),
         spec_of(L.global_scale),
         spec_of(L.amax)};
  });
}

namespace {
// This version knows every field of its option structs; an older caller's smaller struct will
// be accepted (reading only its fields) once a field is appended.
void check_struct_size(size_t given, size_t expected, const char* arg, const char* type) {
  if (given != expected)
    mxq::fail_arg(std::string(arg) + "=" + std::to_string(given) + " must be sizeof(" + type +
                  ")=" + std::to_string(expected) + "; initialise the struct with the library's *_INIT macro");
}
}  // namespace

mxq_status mxq_quantize(mxq_recipe recipe, const DLTensor* input, const mxq_quantized* quantized,
                        const mxq_quantize_options* options) {
  return guarded("mxq_quantize", [&] {
    runtime::begin_dispatch();  // first: a call refused here leaves no record of the one before
    const Recipe& r = recipe_of(recipe, "mxq_quantize");
    const TensorView x = matrix_view_of(input, "input");
    const Matrix m = as_matrix(x, "input");
    QuantizeOptions opt;
    TensorView act_input;
    int64_t out_cols = m.cols;
    if (options) {
      // Structs grow by appending: a caller compiled before the fused fields has the old size.
      constexpr size_t kBeforeFusion = offsetof(mxq_quantize_options, activation);
      if (options->size != sizeof(mxq_quantize_options) && options->size != kBeforeFusion)
        check_struct_size(options->size, sizeof(mxq_quantize_options), "options.size", "mxq_quantize_options");
      opt.backend = backend_of(options->backend, "options.backend");
      opt.amax_in = scalar_of(options->amax_in, "options.amax_in", x.device);
      opt.scale_in = scalar_of(options->scale_in, "options.scale_in", x.device);
      opt.stream = options->stream;
      if (options->size == sizeof(mxq_quantize_options)) {
        const int a = int(options->activation);
        if (a < 0 || a > int(Activation::reglu))
          fail_arg("options.activation=" + to_string(a) + " is not an mxq_activation; expected 0 (none) to 9 (reglu)");
        opt.activation = Activation(a);
        if (num::is_gated(opt.activation)) out_cols = m.cols / 2;
        if (options->act_input) {
          act_input = view_of(options->act_input, "options.act_input");
          opt.act_input = &act_input;
        }
        if (options->dbias) {
          const Buffer b = buffer_of(options->dbias, "options.dbias", DType::float32, x.device, "input");
          if (b.bytes < out_cols * 4)
            fail_arg("options.dbias holds " + to_string(b.bytes) + " bytes; the column sums need " +
                     to_string(out_cols * 4) + " (float32 [" + to_string(out_cols) + "])");
          opt.dbias = static_cast<float*>(b.data);
        }
        opt.noop = scalar_of(options->noop, "options.noop", x.device);
      }
    }
    quantize(x, quantized_of(r, m.rows, out_cols, quantized, x.device, "input"), opt);
  });
}

mxq_status mxq_dequantize(mxq_recipe recipe, const mxq_quantized* quantized, int64_t rows, int64_t cols,
                          DLTensor* output, int columnwise, const mxq_dequantize_options* options) {
  return guarded("mxq_dequantize", [&] {
    runtime::begin_dispatch();  // first: a call refused here leaves no record of the one before
    const Recipe& r = recipe_of(recipe, "mxq_dequantize");
    const TensorView y = matrix_view_of(output, "output");
    DequantizeOptions opt;
    if (columnwise != 0 && columnwise != 1)
      fail_arg("mxq_dequantize: columnwise=" + to_string(columnwise) + "; expected 0 (rowwise) or 1 (columnwise)");
    opt.columnwise = columnwise != 0;
    if (options) {
      check_struct_size(options->size, sizeof(mxq_dequantize_options), "options.size", "mxq_dequantize_options");
      opt.backend = backend_of(options->backend, "options.backend");
      opt.stream = options->stream;
    }
    dequantize(quantized_of(r, rows, cols, quantized, y.device, "output"), y, opt);
  });
}

mxq_status mxq_version(int* major, int* minor, int* patch) {
  return guarded("mxq_version", [&] {
    int& ma = not_null(major, "mxq_version", "major");
    int& mi = not_null(minor, "mxq_version", "minor");
    int& pa = not_null(patch, "mxq_version", "patch");
    int v[3] = {0, 0, 0};
    if (std::sscanf(version().c_str(), "%d.%d.%d", &v[0], &v[1], &v[2]) != 3)
      fail(ErrorCode::internal, "mxq_version: cannot parse version '" + version() + "'");
    ma = v[0];
    mi = v[1];
    pa = v[2];
  });
}

const char* mxq_version_string(void) { return static_text<version>(); }
const char* mxq_build_info(void) { return static_text<build_info>(); }

mxq_status mxq_backend_available(mxq_backend backend, int* available, char* detail, size_t n) {
  return guarded("mxq_backend_available", [&] {
    const Backend b = backend_of(backend, "backend");
    int& a = not_null(available, "mxq_backend_available", "available");
    for (const BackendStatus& s : backend_status()) {
      if (s.backend != b) continue;
      if (detail && n > 0) std::snprintf(detail, n, "%s", s.detail.c_str());
      a = s.available ? 1 : 0;
      return;
    }
    fail_arg("mxq_backend_available: backend=" + to_string(int(backend)) + " (" + backend_name(b) +
             ") is not a concrete backend; expected MXQ_BACKEND_CPU, MXQ_BACKEND_CUDA_AOT, MXQ_BACKEND_CUDA_JIT or MXQ_BACKEND_CUBLASLT");
  });
}

mxq_status mxq_gemm(mxq_recipe a_recipe, const mxq_quantized* a, int64_t m, int64_t k, mxq_recipe b_recipe,
                    const mxq_quantized* b, int64_t n, DLTensor* d, const mxq_gemm_options* options) {
  return guarded("mxq_gemm", [&] {
    runtime::begin_dispatch();  // first: a call refused here leaves no record of the one before
    const Recipe& ra = recipe_of(a_recipe, "mxq_gemm");
    const Recipe& rb = recipe_of(b_recipe, "mxq_gemm");
    const TensorView dv = matrix_view_of(d, "d");
    const QuantizedTensor qa = quantized_of(ra, m, k, a, dv.device, "d", "a", "mxq_gemm: a (m, k)");
    const QuantizedTensor qb = quantized_of(rb, n, k, b, dv.device, "d", "b", "mxq_gemm: b (n, k)");
    GemmOptions opt;
    TensorView cv;
    if (options) {
      // Structs grow by appending: a caller compiled before block_m has the old size.
      constexpr size_t kBeforeBlockM = offsetof(mxq_gemm_options, block_m);
      if (options->size != sizeof(mxq_gemm_options) && options->size != kBeforeBlockM)
        check_struct_size(options->size, sizeof(mxq_gemm_options), "options.size", "mxq_gemm_options");
      opt.backend = backend_of(options->backend, "options.backend");
      opt.alpha = options->alpha;
      if (options->c) {
        cv = matrix_view_of(options->c, "options.c");
        opt.c = &cv;
      }
      if (options->bias) {
        const Buffer bb = buffer_of(options->bias, "options.bias", DType::float32, dv.device, "d");
        if (bb.bytes < n * 4)
          fail_arg("options.bias holds " + to_string(bb.bytes) + " bytes; expected float32 [" + to_string(n) + "]");
        opt.bias = static_cast<const float*>(bb.data);
      }
      opt.stream = options->stream;
      opt.promote_k = options->promote_k;
      if (options->size == sizeof(mxq_gemm_options)) {
        const int64_t bm = options->block_m;
        check_block_m(bm, "options.block_m");  // before narrowing: 2^32 + 128 is no 128
        opt.block_m = int(bm);
      }
    }
    gemm(qa, qb, dv, opt);
  });
}

mxq_status mxq_last_dispatch(char* backend, size_t nb, char* kernel, size_t nk, char* fallback, size_t nf) {
  const DispatchInfo d = last_dispatch();  // read before guarded() clears the thread's error state
  return guarded("mxq_last_dispatch", [&] {
    if (backend && nb) std::snprintf(backend, nb, "%s", d.backend.c_str());
    if (kernel && nk) std::snprintf(kernel, nk, "%s", d.kernel.c_str());
    if (fallback && nf) std::snprintf(fallback, nf, "%s", d.fallback.c_str());
  });
}

mxq_status mxq_set_default_backend(mxq_backend backend) {
  return guarded("mxq_set_default_backend", [&] { set_default_backend(backend_of(backend, "backend")); });
}

mxq_status mxq_set_strict(int on) {
  return guarded("mxq_set_strict", [&] {
    if (on != 0 && on != 1) fail_arg("mxq_set_strict: on=" + to_string(on) + "; expected 0 or 1");
    set_strict(on == 1);
  });
}

mxq_status mxq_jit_warmup(const char* const* recipes, size_t n, int arch, int threads, int* configs) {
  return guarded("mxq_jit_warmup", [&] {
    if (n > 0 && !recipes) fail_arg("mxq_jit_warmup: recipes=NULL with n=" + std::to_string(n) + "; expected an array");
    std::vector<std::string> list;
    for (size_t i = 0; i < n; ++i) {
      if (!recipes[i]) fail_arg("mxq_jit_warmup: recipes[" + std::to_string(i) + "]=NULL; expected a recipe string");
      list.emplace_back(recipes[i]);
    }
    if (arch < 0) fail_arg("mxq_jit_warmup: arch=" + to_string(arch) + "; expected 0 or a compute capability like 90");
    const JitWarmupResult r = jit_warmup(list, arch, threads);
    if (!r.failures.empty())  // (no out-parameter is written on failure; the message counts them)
      fail(ErrorCode::unsupported, "mxq_jit_warmup: " + std::to_string(r.failures.size()) +
                                       " configurations failed to compile (" + std::to_string(r.configs) +
                                       " cached); first: " + r.failures.front());
    if (configs) *configs = r.configs;
  });
}

mxq_status mxq_cuda_device_count(int* count) {
  return guarded("mxq_cuda_device_count",
                 [&] { not_null(count, "mxq_cuda_device_count", "count") = runtime::cuda_device_count(); });
}

mxq_status mxq_cuda_device_info(int device, int* arch, int* sms, int* supported, char* name, size_t n) {
  return guarded("mxq_cuda_device_info", [&] {
    runtime::CudaDeviceInfo info;
    if (!runtime::cuda_device_info(device, &info))
      fail_arg("mxq_cuda_device_info: device=" + to_string(device) + " is not a CUDA device of this process (" +
               (runtime::cuda_device_summary().empty() ? "none" : runtime::cuda_device_summary()) + ")");
    if (arch) *arch = info.arch;
    if (sms) *sms = info.sms;
    if (supported) *supported = info.supported ? 1 : 0;
    if (name && n > 0) std::snprintf(name, n, "%s", info.name.c_str());
  });
}

}  // extern "C"
