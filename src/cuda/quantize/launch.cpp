// Host side of the precompiled (cuda-aot) quantize / dequantize kernels: device checks, the
// tile-height choice, and dispatch to the instantiations.
#include <cuda_runtime.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda/check.hpp"
#include "cuda/quantize/fast_launch.hpp"
#include "cuda/quantize/fast_select.hpp"
#include "cuda/quantize/quantize_tile_launch.cuh"
#include "mxq/error.hpp"
#include "runtime/backends.hpp"
#include "runtime/jit/kernels.hpp"
#include "runtime/settings.hpp"

namespace mxq::runtime {
namespace {

using cuda::check_cuda;

template <class F>
void with_elem(ElemFormat e, F&& f) {
  switch (e) {
    case ElemFormat::e4m3fn: return f(std::integral_constant<ElemFormat, ElemFormat::e4m3fn>{});
    case ElemFormat::e5m2: return f(std::integral_constant<ElemFormat, ElemFormat::e5m2>{});
    default: return f(std::integral_constant<ElemFormat, ElemFormat::e2m1>{});
  }
}

template <class F>
void with_dtype(DType d, F&& f) {
  switch (d) {
    case DType::float32: return f(std::integral_constant<int, 0>{});
    case DType::float16: return f(std::integral_constant<int, 1>{});
    default: return f(std::integral_constant<int, 2>{});
  }
}

bool aligned(const void* p, int n) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(n) == 0; }

// Tile height and block width of the kernel instantiation: a columnwise block runs down the
// whole tile (height = block length), 2-D blocks are one tile high, rowwise 1 x G blocks use 32
// rows (two per thread keep two loads in flight); per-tensor scaling uses width 8 (no blocks).
struct TileShape {
  int rows, block_cols;
};
TileShape tile_shape(const Recipe& r) {
  if (r.is_tensor_scaled()) return {32, 8};
  if (r.has_columnwise()) return {r.block_cols, r.block_cols};
  if (r.block_rows > 1) return {r.block_rows, r.block_cols};
  return {32, r.block_cols};
}

// The specialisation of fast.cuh for this call, or why there is none: the kernels take
// 16-byte aligned rows of whole 8-element chunks and store 8 codes at a time.
std::optional<cuda::FastKey> fast_key(const Recipe& rc, DType dtype, const QuantizedTensor& out, bool vec_ok,
                                      int64_t rows, int64_t cols, std::string& why) {
  const bool row = rc.has_rowwise(), col = rc.has_columnwise();
  const int code_align = rc.elem == ElemFormat::e2m1 ? 4 : 8;
  if (!vec_ok) {
    why = "input not 16-byte aligned, or a width or row stride not a multiple of 8";
    return std::nullopt;
  }
  if (cols >= cuda::kFastMaxCols) {
    why = "a width of 2^31 - 2^16 columns or more";
    return std::nullopt;
  }
  if (rows >= cuda::kFastMaxRows) {
    why = "a height of 2^31 - 2^16 rows or more";
    return std::nullopt;
  }
  if ((row && !aligned(out.data.data, code_align)) || (col && !aligned(out.col_data.data, code_align)) ||
      !aligned(out.scales.data, 4) || !aligned(out.col_scales.data, 4)) {
    why = "an output buffer is not aligned for whole-word stores";
    return std::nullopt;
  }
  return cuda::fast_key_for(rc, dtype, why);
}

using cuda::check_device_pointer;

// The dispatch record's kernel text ("jit bf16 mx e4m3fn rows g=32 ..."), formatted again only
// when the kernel differs from this thread's last one: a warm call builds no string.
const std::string& kernel_text(const char* prefix, const cuda::FastKey& k) {
  thread_local const char* last_prefix = nullptr;
  thread_local cuda::FastKey last{};
  thread_local std::string text;
  if (prefix != last_prefix || !(k == last)) {
    text = prefix + jit::key_text(k);
    last_prefix = prefix;
    last = k;
  }
  return text;
}

}  // namespace

void cuda_quantize(Backend b, const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt) {
  const Matrix& x = call.x;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = out.recipe;
  cuda::require_supported_device(x.device, "quantize");
  check_device_pointer(x.data, x.device, "input.data");
  check_device_pointer(out.data.data, x.device, "quantized.data.data");
  check_device_pointer(out.scales.data, x.device, "quantized.scales.data");
  check_device_pointer(out.col_data.data, x.device, "quantized.col_data.data");
  check_device_pointer(out.col_scales.data, x.device, "quantized.col_scales.data");
  check_device_pointer(out.global_scale.data, x.device, "quantized.global_scale.data");
  check_device_pointer(out.amax.data, x.device, "quantized.amax.data");
  check_device_pointer(opt.amax_in, x.device, "options.amax_in");
  check_device_pointer(opt.scale_in, x.device, "options.scale_in");
  // Fused epilogues: y = f(x) is computed as the specialised kernel loads (JIT only); the output
  // width n is half the input's for a gated activation.
  const bool fused = call.fused(opt);
  const Matrix& ax = call.act_input;
  if (fused) {
    check_device_pointer(ax.data, x.device, "options.act_input.data");
    check_device_pointer(opt.dbias, x.device, "options.dbias");
    check_device_pointer(opt.noop, x.device, "options.noop");
    auto no = [&](const std::string& what) {
      fail(ErrorCode::unsupported, "quantize: fused epilogues on CUDA (activation " +
                                       std::string(activation_name(opt.activation)) + "): " + what +
                                       "; the cpu backend runs every combination");
    };
    if (rc.has_global_scale() && opt.noop)
      no("noop with a per-tensor recipe (" + rc.name() + ") is not supported (its amax pass cannot be skipped)");
    if (rc.has_global_scale() && !opt.amax_in && !opt.scale_in && opt.activation != num::Activation::none)
      no("recipe " + rc.name() + " needs options.amax_in (or scale_in): the amax of act(x) is not computed on the device");
    if (ax.data && (ax.dtype != x.dtype || !aligned(ax.data, 16) || ax.row_stride % 8 != 0))
      no("options.act_input must have the input's dtype, 16-byte alignment and a row stride that is a multiple of 8");
  }
  cuda::DeviceGuard guard(x.device.index);
  auto stream = static_cast<cudaStream_t>(opt.stream);

  const int64_t n = L.cols;  // output columns (x.cols, or half of it for a gated activation)
  const bool vec_ok = aligned(x.data, 16) && n % 8 == 0 && x.row_stride % 8 == 0;

  // ---- the kernel, chosen (and a JIT kernel compiled and loaded) before anything is enqueued,
  // so that strict mode or a failed compile leaves the outputs untouched
  enum class Path { aot_fast, jit, generic } path = Path::generic;
  std::string why;
  std::optional<cuda::FastKey> key = x.empty() ? std::nullopt : fast_key(rc, x.dtype, out, vec_ok, x.rows, n, why);
  if (fused && !x.empty()) {
    if (!key)
      fail(ErrorCode::unsupported, "quantize: fused epilogues run in the specialised CUDA kernels only, and this call "
                                   "cannot take one: " + why);
    key->fuse = cuda::fuse_bits(int(opt.activation), ax.data != nullptr, opt.dbias != nullptr);
    const std::string jit_why = jit::unavailable_reason();
    if (!jit_why.empty())
      fail(ErrorCode::unsupported, "quantize: fused epilogues are compiled on first use by the cuda-jit backend, which is " +
                                       jit_why);
    if (b == Backend::cuda_aot)
      runtime::fallback("quantize", "cuda-aot", "cuda-jit", "no fused kernel is built ahead of time");
    path = Path::jit;
  } else if (key) {
    const std::string jit_why = jit::unavailable_reason();
    if (b == Backend::cuda_jit) path = Path::jit;
    else if (cuda::aot_fast_has(*key)) path = Path::aot_fast;
    else if (b == Backend::automatic && jit_why.empty()) path = Path::jit;
    else why = "not among the kernels built ahead of time" + (b == Backend::automatic ? ", and the JIT is " + jit_why : "");
  }
  if (path == Path::generic && !x.empty())
    runtime::fallback("quantize", std::string(b == Backend::cuda_jit ? "cuda-jit" : "cuda-aot") + " specialised kernel",
                      "cuda-aot generic tile kernel", why);

  // ---- amax (fp8_tensor, nvfp4 always; others when an amax buffer is given, and then a fused
  // kernel takes the amax of y itself)
  const bool fused_amax = fused && !rc.has_global_scale() && out.amax.data != nullptr && !x.empty();
  const bool need_amax = out.amax.data != nullptr && !fused_amax;
  // A small per-tensor call whose kernel takes the amax itself: one launch (cluster_amax_grid), one
  // cluster, where the device can co-schedule it (cluster_fits)
  const bool amax_in_kernel_capable = need_amax && !opt.amax_in && key && path != Path::generic;
  const std::optional<dim3> one_grid = amax_in_kernel_capable ? cuda::cluster_amax_grid(*key, x.rows, n) : std::nullopt;
  const bool cluster_launch = one_grid && cuda::cluster_fits(x.device.index, int(one_grid->x * one_grid->y));
  // Larger ones up to cuda::kGridAmaxMaxElements: one launch whose CTAs meet in global memory
  // (grid_amax_grid, at most as many CTAs as SMs), where the device takes a cooperative launch
  // (cooperative_launch) and the stream has its exchange words.
  unsigned* const grid_slot = amax_in_kernel_capable && !cluster_launch &&
                                      cuda::grid_amax_grid(*key, x.rows, n, cuda::sm_count(x.device.index)) &&
                                      cuda::cooperative_launch(x.device.index) != cuda::CooperativeLaunch::none
                                  ? cuda::grid_amax_slot(x.device.index, stream)
                                  : nullptr;
  const bool one_launch = cluster_launch || grid_slot != nullptr;
  // Only such a call runs the kernel with the exchange compiled in (FastKey::one_launch; the AOT
  // table has both, fast_inst.cuh)
  if (one_launch) *key = cuda::one_launch_twin(*key);
  if (path == Path::jit) jit::prepare(*key, x.device.index);

  // Buffers zeroed before the kernel (dbias, amax, scale padding): by a kernel launched with PDL
  // (cuda::launch_zero; a memset node would hold the next kernel until it completes) that
  // leaves them untouched under a noop flag.
  // (amax_last: the last kernel launched is the amax kernel; TileParams::early_loads)
  bool amax_last = false;
  auto zero = [&](void* ptr, int64_t bytes, const char* what) {
    check_cuda(cuda::launch_zero(ptr, bytes, opt.noop, stream), what);
    amax_last = false;
  };
  if (opt.dbias) zero(opt.dbias, n * 4, "dbias reset");
  if (fused_amax) zero(out.amax.data, 4, "amax reset");
  // A caller-given amax is copied to the output's amax by the quantize kernel itself
  // (TileParams::amax_canonical), not by a copy node of its own.
  if (need_amax && !one_launch && !opt.amax_in) {
    // up to 4096 chunks of 8 (a 4 x 7168 activation): one CTA and no reset (measured: 16 x
    // 7168 is already faster on many CTAs); beyond, a reset and CTAs of 128 threads x 8
    // columns, rows split so that ~16 CTAs run per SM
    const int64_t chunks = x.rows * ((x.cols + 7) / 8);
    dim3 grid(0, 0);
    if (x.empty() || chunks > 4096) {
      zero(out.amax.data, 4, "amax reset");
      const int64_t gx = (x.cols + 1023) / 1024;
      const int64_t want = int64_t(cuda::sm_count(x.device.index)) * 16;
      grid = dim3(unsigned(gx), unsigned(std::clamp<int64_t>(want / gx, 1, std::min<int64_t>(x.rows, 65535))));
    }
    if (!x.empty()) {
      cudaError_t e = cudaSuccess;
      with_dtype(x.dtype, [&](auto D) {
        e = cuda::launch_amax<decltype(D)::value>(grid, stream, x.data, x.rows, x.cols, x.row_stride, vec_ok,
                                                  static_cast<unsigned*>(out.amax.data));
      });
      check_cuda(e, "amax kernel launch");
      amax_last = true;
    }
  }

  cuda::TileParams p{};
  p.x = x.data;
  p.rows = x.rows;
  p.cols = n;
  p.row_stride = x.row_stride;
  p.vec_ok = vec_ok;
  p.rule = rc.scale_rule(0.0f);
  p.two_d = !rc.is_tensor_scaled() && rc.block_rows > 1;
  const TileShape shape = tile_shape(rc);
  p.per_row_scale = rc.scale_per_row();
  p.fp32_scales = rc.scale_type == ScaleType::float32;
  p.amax = opt.amax_in ? opt.amax_in : static_cast<const float*>(out.amax.data);
  p.scale_in = opt.scale_in;
  // only a recipe with a global scale publishes one (a buffer given with another is ignored)
  p.global_scale_out = L.global_scale.present() ? static_cast<float*>(out.global_scale.data) : nullptr;
  p.amax_canonical = need_amax ? static_cast<float*>(out.amax.data) : nullptr;
  p.row = rc.has_rowwise();
  p.row_data = static_cast<uint8_t*>(out.data.data);
  p.row_scales = out.scales.data;
  p.row_geom = L.scales.geometry;
  p.col = rc.has_columnwise();
  p.col_transposed = rc.column_form == ColumnForm::transposed;
  p.col_data = static_cast<uint8_t*>(out.col_data.data);
  p.col_scales = out.col_scales.data;
  p.col_geom = L.col_scales.geometry;
  const bool fp4 = rc.elem == ElemFormat::e2m1;
  p.out_vec_ok = n % 8 == 0;
  p.colT_vec_ok = fp4 ? x.rows % 8 == 0 : x.rows % 4 == 0;

  p.gate_offset = n;
  p.act_x = ax.data;
  p.act_stride = ax.row_stride;
  p.dbias = opt.dbias;
  p.noop = opt.noop;
  p.amax_out = fused_amax ? static_cast<unsigned*>(out.amax.data) : nullptr;
  p.grid_amax = grid_slot;

  // Scale padding must read as zero: the memset only where this shape leaves padding in its layout
  // (the kernels write every scale of the matrix, as the CPU backend's rule assumes too). A
  // swizzled_128x4 tensor of 8192 x 7168 has none; its 3.7 MB memset was a graph node of its own.
  auto zero_padding = [&](const Buffer& buf, const BufferSpec& s) {
    if (s.present() && num::scale_storage_units(s.geometry) != s.geometry.mn * s.geometry.kb)
      zero(buf.data, s.bytes, "scale padding reset");
  };
  zero_padding(out.scales, L.scales);
  zero_padding(out.col_scales, L.col_scales);
  p.early_loads = amax_last;  // (a kernel without early loads ignores it)

  if (x.empty()) {
    // Still publish the global scale of an empty tensor (amax 0), and a caller-given amax.
    if (L.global_scale.present() || (need_amax && opt.amax_in)) {
      p.row = p.col = false;
      p.rows = 0;
      with_dtype(x.dtype, [&](auto D) {
        with_elem(rc.elem, [&](auto E) {
          cuda::launch_quantize_tile<decltype(D)::value, decltype(E)::value>(shape.rows, shape.block_cols, 1,
                                                                             x.device.index, 1, stream, p);
        });
      });
      check_cuda(cudaGetLastError(), "quantize kernel launch");
    }
    return;
  }
  const int sms = cuda::sm_count(x.device.index);
  // the record's prefix: the path, and where the kernel took the amax itself, how its CTAs met
  // (string literals: kernel_text compares them by address)
  const int amax_kind = grid_slot ? 2 : one_launch ? 1 : 0;
  static constexpr const char* kAotText[] = {"fast ", "fast+amax ", "fast+amax-grid "};
  static constexpr const char* kJitText[] = {"jit ", "jit+amax ", "jit+amax-grid "};
  if (path == Path::aot_fast) {
    check_cuda(*cuda::launch_fast_quantize(*key, x.rows, n, sms, stream, p), "quantize kernel launch");
    runtime::record_dispatch("quantize", Backend::cuda_aot, kernel_text(kAotText[amax_kind], *key));
    return;
  }
  if (path == Path::jit) {
    jit::launch(*key, x.device.index, x.rows, n, sms, stream, p);
    runtime::record_dispatch("quantize", Backend::cuda_jit, kernel_text(kJitText[amax_kind], *key));
    return;
  }
  const int64_t tiles = ((n + 127) / 128) * ((x.rows + shape.rows - 1) / shape.rows);
  if (tiles >= (int64_t(1) << 32))
    fail(ErrorCode::unsupported, "quantize: input of " + std::to_string(x.rows) + " x " + std::to_string(x.cols) +
                                     " needs " + std::to_string(tiles) + " tiles; at most 2^32 - 1 are supported");
  with_dtype(x.dtype, [&](auto D) {
    with_elem(rc.elem, [&](auto E) {
      cuda::launch_quantize_tile<decltype(D)::value, decltype(E)::value>(shape.rows, shape.block_cols, tiles,
                                                                         x.device.index, sms, stream, p);
    });
  });
  check_cuda(cudaGetLastError(), "quantize kernel launch");
  runtime::record_dispatch("quantize", Backend::cuda_aot, "generic tile");
}

std::string jit_unavailable_reason() { return jit::unavailable_reason(); }

bool jit_quantize_loaded(const Recipe& r, DType dtype, int fuse, int device) {
  std::string why;
  auto k = cuda::fast_key_for(r, dtype, why);
  if (!k) return false;
  k->fuse = fuse;
  return jit::is_loaded(*k, device);
}
std::string jit_summary() { return jit::summary(); }

void cuda_dequantize(Backend b, const DequantizeCall& call, const QuantizedTensor& q, const DequantizeOptions& opt) {
  const Matrix& y = call.y;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = q.recipe;
  cuda::require_supported_device(y.device, "dequantize");
  const bool col = opt.columnwise;
  const Buffer& data = col ? q.col_data : q.data;
  const Buffer& scales = col ? q.col_scales : q.scales;
  check_device_pointer(y.data, y.device, "output.data");
  check_device_pointer(data.data, y.device, col ? "quantized.col_data.data" : "quantized.data.data");
  check_device_pointer(scales.data, y.device, col ? "quantized.col_scales.data" : "quantized.scales.data");
  if (L.global_scale.present()) check_device_pointer(q.global_scale.data, y.device, "quantized.global_scale.data");
  cuda::DeviceGuard guard(y.device.index);
  if (b == Backend::cuda_jit)
    runtime::fallback("dequantize", "cuda-jit", "cuda-aot", "the JIT has no dequantize kernels; the AOT one is generic");
  runtime::record_dispatch("dequantize", Backend::cuda_aot, "dequantize");
  if (y.empty()) return;
  cuda::DequantParams p{};
  p.data = static_cast<const uint8_t*>(data.data);
  p.scales = scales.data;
  p.geom = col ? L.col_scales.geometry : L.scales.geometry;
  p.rows = y.rows;
  p.cols = y.cols;
  p.swap_ik = col && rc.column_form == ColumnForm::same_shape;
  p.br = rc.is_tensor_scaled() ? 1 : rc.block_rows;
  p.bc = rc.is_tensor_scaled() ? 1 : rc.block_cols;
  p.per_row_scale = rc.scale_per_row();
  p.tensor_scaled = rc.is_tensor_scaled();
  p.ue8m0 = rc.scale_type == ScaleType::ue8m0;
  p.fp32_scales = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  p.scheme = rc.scheme;
  // Only fp8_tensor and nvfp4 have a global scale; a buffer given with another recipe is ignored.
  p.global_scale = L.global_scale.present() ? static_cast<const float*>(q.global_scale.data) : nullptr;
  p.y = y.data;
  p.y_stride = y.row_stride;
  const int64_t total = y.rows * y.cols;
  const int grid = int(std::min<int64_t>((total + 255) / 256, int64_t(cuda::sm_count(y.device.index)) * 16));
  auto stream = static_cast<cudaStream_t>(opt.stream);
  with_dtype(y.dtype, [&](auto D) { cuda::launch_dequantize<decltype(D)::value>(rc.elem, dim3(unsigned(grid)), stream, p); });
  check_cuda(cudaGetLastError(), "dequantize kernel launch");
}

}  // namespace mxq::runtime
