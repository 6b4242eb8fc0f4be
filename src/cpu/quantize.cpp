// CPU reference quantize / dequantize. Rows are processed in strips as tall as the tallest
// block of the requested directions; each strip is converted to fp32 once and both directions
// are produced from it. Columnwise output is rowwise quantization of the transpose.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "mxq/error.hpp"

namespace mxq::cpu {

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t chunks = std::min<int64_t>(hw, std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::exception_ptr err;
  std::mutex mu;
  for (int64_t t = 0; t < chunks; ++t) {
    const int64_t b = n * t / chunks, e = n * (t + 1) / chunks;
    pool.emplace_back([&, b, e] {
      try {
        fn(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        err = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

namespace {

void load_row(const Matrix& x, int64_t r, float* dst) {
  const auto* base = static_cast<const char*>(x.data) + r * x.row_stride * (dtype_bits(x.dtype) / 8);
  switch (x.dtype) {
    case DType::float32: std::memcpy(dst, base, size_t(x.cols) * 4); break;
    case DType::bfloat16: {
      const auto* p = reinterpret_cast<const uint16_t*>(base);
      for (int64_t c = 0; c < x.cols; ++c) dst[c] = num::bf16_to_float(p[c]);
      break;
    }
    default: {
      const auto* p = reinterpret_cast<const uint16_t*>(base);
      for (int64_t c = 0; c < x.cols; ++c) dst[c] = num::fp16_to_float(p[c]);
      break;
    }
  }
}

void store_row(const Matrix& y, int64_t r, const float* src) {
  auto* base = static_cast<char*>(y.data) + r * y.row_stride * (dtype_bits(y.dtype) / 8);
  switch (y.dtype) {
    case DType::float32: std::memcpy(base, src, size_t(y.cols) * 4); break;
    case DType::bfloat16: {
      auto* p = reinterpret_cast<uint16_t*>(base);
      for (int64_t c = 0; c < y.cols; ++c) p[c] = num::float_to_bf16(src[c]);
      break;
    }
    default: {
      auto* p = reinterpret_cast<uint16_t*>(base);
      for (int64_t c = 0; c < y.cols; ++c) p[c] = num::float_to_fp16(src[c]);
      break;
    }
  }
}

float tensor_amax(const Matrix& x) {
  const int64_t hw = std::max<unsigned>(1, std::thread::hardware_concurrency());
  std::vector<float> part(size_t(hw), 0.0f);
  std::mutex mu;
  parallel_for(x.rows, 64, [&](int64_t b, int64_t e) {
    std::vector<float> row(size_t(x.cols));
    float a = 0.0f;
    for (int64_t r = b; r < e; ++r) {
      load_row(x, r, row.data());
      for (float v : row) a = num::amax_combine(a, v);
    }
    std::lock_guard<std::mutex> lock(mu);
    part[0] = num::amax_combine(part[0], a);
  });
  return part[0];
}

// Writes one element code into a data buffer (FP4: one nibble of a byte the caller owns).
inline void put_code(uint8_t* data, int64_t index, uint8_t code, bool fp4) {
  if (!fp4) {
    data[index] = code;
    return;
  }
  uint8_t& b = data[index >> 1];
  b = (index & 1) ? uint8_t((b & 0x0f) | (code << 4)) : uint8_t((b & 0xf0) | (code & 0x0f));
}

void put_scale(void* scales, const num::ScaleGeometry& g, bool fp32, int64_t i, int64_t j, uint32_t stored) {
  const int64_t off = num::scale_offset(g, i, j);
  if (fp32 && g.layout != ScaleLayout::packed_ue8m0) {
    static_cast<uint32_t*>(scales)[off] = stored;
  } else {
    static_cast<uint8_t*>(scales)[off] = uint8_t(stored);
  }
}

// One output direction: blocks of (bh x bw) over the input, and where the results go.
struct DirectionPlan {
  bool columnwise;
  bool transposed;  // columnwise data stored as the transpose (C, R)
  int bh, bw;
  uint8_t* data;
  void* scales;
  num::ScaleGeometry geom;
  bool per_row_scale;
  int br;  // the recipe's block_rows (mn granularity of the scale matrix)
};

void quantize_strip(const DirectionPlan& d, const num::ScaleRule& rule, bool fp32_scales, const float* buf,
                    int64_t r0, int64_t h, int64_t rows, int64_t cols, bool tensor_scaled,
                    std::vector<float>& amax, std::vector<num::BlockScale>& bs) {
  const bool fp4 = rule.elem == ElemFormat::e2m1;
  const int64_t nb = num::ceil_div(cols, d.bw);
  amax.assign(size_t(nb), 0.0f);
  bs.resize(size_t(nb));
  for (int64_t s0 = 0; s0 < h; s0 += d.bh) {
    const int64_t sh = std::min<int64_t>(d.bh, h - s0);
    if (tensor_scaled) {
      std::fill(bs.begin(), bs.end(), num::block_scale(rule, 0.0f));
    } else {
      std::fill(amax.begin(), amax.end(), 0.0f);
      for (int64_t r = s0; r < s0 + sh; ++r) {
        const float* row = buf + r * cols;
        for (int64_t c = 0; c < cols; ++c) amax[c / d.bw] = num::amax_combine(amax[c / d.bw], row[c]);
      }
      for (int64_t b = 0; b < nb; ++b) bs[b] = num::block_scale(rule, amax[b]);
      // Scales: (mn, kb) of the direction's own matrix (the transpose for columnwise).
      const int64_t xr = r0 + s0;  // first input row of this block row
      for (int64_t b = 0; b < nb; ++b) {
        if (!d.columnwise) {
          const int64_t kb = b;
          if (d.per_row_scale) {
            for (int64_t r = xr; r < xr + sh; ++r) put_scale(d.scales, d.geom, fp32_scales, r, kb, bs[b].stored);
          } else {
            put_scale(d.scales, d.geom, fp32_scales, xr / d.br, kb, bs[b].stored);
          }
        } else {
          const int64_t kb = xr / d.bh;
          const int64_t c0 = b * d.bw, c1 = std::min<int64_t>(cols, c0 + d.bw);
          if (d.per_row_scale) {
            for (int64_t c = c0; c < c1; ++c) put_scale(d.scales, d.geom, fp32_scales, c, kb, bs[b].stored);
          } else {
            put_scale(d.scales, d.geom, fp32_scales, c0 / d.br, kb, bs[b].stored);
          }
        }
      }
    }
    for (int64_t r = s0; r < s0 + sh; ++r) {
      const float* row = buf + r * cols;
      const int64_t xr = r0 + r;
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t code = num::quantize_element(row[c], bs[c / d.bw].multiplier, rule.elem);
        const int64_t idx = (d.columnwise && d.transposed) ? c * rows + xr : xr * cols + c;
        put_code(d.data, idx, code, fp4);
      }
    }
  }
}

}  // namespace

void quantize(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt) {
  const Matrix& x = call.x;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = out.recipe;
  float tensor_factor = 0.0f;
  const bool needs_global = rc.scheme == Scheme::fp8_tensor || rc.scheme == Scheme::nvfp4;
  if (needs_global || out.amax.data) {
    float amax = 0.0f;
    if (opt.amax_in) amax = *opt.amax_in;
    else if (!(opt.scale_in)) amax = tensor_amax(x);
    else if (out.amax.data) amax = tensor_amax(x);
    if (out.amax.data) *static_cast<float*>(out.amax.data) = amax;
    if (rc.scheme == Scheme::fp8_tensor) {
      tensor_factor = opt.scale_in ? *opt.scale_in
                                   : num::fp8_tensor_scale(amax, num::max_finite(rc.elem), rc.eps, rc.pow2);
      *static_cast<float*>(out.global_scale.data) = num::div_rn(1.0f, tensor_factor);
    } else if (rc.scheme == Scheme::nvfp4) {
      tensor_factor = num::nvfp4_encode_scale(amax);
      *static_cast<float*>(out.global_scale.data) = num::nvfp4_decode_scale(tensor_factor);
    }
  }
  if (x.empty()) return;
  const num::ScaleRule rule = rc.scale_rule(tensor_factor);
  const bool fp32_scales = rc.scale_type == ScaleType::float32;

  std::vector<DirectionPlan> dirs;
  const int br = rc.is_tensor_scaled() ? 1 : rc.block_rows;
  const int bc = rc.is_tensor_scaled() ? 1 : rc.block_cols;
  if (rc.has_rowwise()) {
    dirs.push_back({false, false, br, bc, static_cast<uint8_t*>(out.data.data), out.scales.data,
                    L.scales.geometry, rc.scale_per_row(), br});
  }
  if (rc.has_columnwise()) {
    dirs.push_back({true, rc.column_form == ColumnForm::transposed, bc, br, static_cast<uint8_t*>(out.col_data.data),
                    out.col_scales.data, L.col_scales.geometry, rc.scale_per_row(), br});
  }
  // Zero every scale byte first: padding must read as zero (FORMATS.md section 3).
  if (L.scales.present()) std::memset(out.scales.data, 0, size_t(L.scales.bytes));
  if (L.col_scales.present()) std::memset(out.col_scales.data, 0, size_t(L.col_scales.bytes));

  int h = 1;
  for (const auto& d : dirs) h = std::max(h, d.bh);
  // FP4 transposed output packs rows in pairs: strips must start on even rows.
  if (rc.elem == ElemFormat::e2m1) h = std::max(h, 2);
  const int64_t nstrips = num::ceil_div(x.rows, h);
  const bool tensor_scaled = rc.is_tensor_scaled();
  parallel_for(nstrips, 1, [&](int64_t sb, int64_t se) {
    std::vector<float> buf(size_t(h) * size_t(x.cols));
    std::vector<float> amax;
    std::vector<num::BlockScale> bs;
    for (int64_t s = sb; s < se; ++s) {
      const int64_t r0 = s * h, sh = std::min<int64_t>(h, x.rows - r0);
      for (int64_t r = 0; r < sh; ++r) load_row(x, r0 + r, buf.data() + r * x.cols);
      for (const auto& d : dirs)
        quantize_strip(d, rule, fp32_scales, buf.data(), r0, sh, x.rows, x.cols, tensor_scaled, amax, bs);
    }
  });
}

void dequantize(const DequantizeCall& call, const QuantizedTensor& q, bool columnwise) {
  const Matrix& y = call.y;
  const QuantizedLayout& L = call.layout;
  const Recipe& rc = q.recipe;
  if (y.empty()) return;
  const bool fp4 = rc.elem == ElemFormat::e2m1;
  const auto* data = static_cast<const uint8_t*>(columnwise ? q.col_data.data : q.data.data);
  const void* scales = columnwise ? q.col_scales.data : q.scales.data;
  const num::ScaleGeometry g = columnwise ? L.col_scales.geometry : L.scales.geometry;
  const bool transposed = columnwise && rc.column_form == ColumnForm::transposed;
  const bool fp32 = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  const float global = q.global_scale.data ? *static_cast<const float*>(q.global_scale.data) : 1.0f;
  const bool tensor_scaled = rc.is_tensor_scaled();
  parallel_for(y.rows, 16, [&](int64_t b, int64_t e) {
    std::vector<float> row(size_t(y.cols));
    for (int64_t r = b; r < e; ++r) {
      for (int64_t c = 0; c < y.cols; ++c) {
        const int64_t idx = r * y.cols + c;
        const uint8_t code = fp4 ? num::unpack_fp4(data[idx >> 1], int(idx & 1)) : data[idx];
        // (i, k): coordinates in the direction's own matrix (the transpose for columnwise).
        const int64_t i = columnwise && !transposed ? c : r;
        const int64_t k = columnwise && !transposed ? r : c;
        float block = 1.0f;
        if (!tensor_scaled) {
          const int64_t mn = rc.scale_per_row() ? i : i / rc.block_rows;
          const int64_t off = num::scale_offset(g, mn, k / rc.block_cols);
          const uint32_t stored = fp32 ? static_cast<const uint32_t*>(scales)[off] : static_cast<const uint8_t*>(scales)[off];
          block = num::block_decode_scale(rc.scheme, rc.scale_type == ScaleType::ue8m0, stored);
        }
        row[size_t(c)] = num::mul_rn(num::mul_rn(num::decode(code, rc.elem), block), global);
      }
      store_row(y, r, row.data());
    }
  });
}

}  // namespace mxq::cpu
