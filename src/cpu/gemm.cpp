// The GEMM's reference, for every operand family (fp8_block, MX, NVFP4, per-tensor FP8): both
// operands decoded exactly (code * block scale * global scale in fp64),
// dot products accumulated in fp64, alpha, C and bias applied in fp64, then rounded to fp32 once
// (bf16 D: through that fp32, as a GPU epilogue converts its fp32 accumulators).
// Multithreaded over rows of D.
#include <algorithm>
#include <thread>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "mxq/numerics/formats.h"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cpu {
namespace {

// Operand rows decoded to fp64: value (r, k) = decode(code) * scale of its block * global scale,
// exact in fp64 (at most 4 + 4 + 24 significant bits). FP4 codes are packed two per byte, element
// 2i in the low nibble.
std::vector<double> decode_operand(const QuantizedTensor& q, const num::ScaleGeometry& g) {
  const Recipe& rc = q.recipe;
  const auto* codes = static_cast<const uint8_t*>(q.data.data);
  const bool fp32 = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  const bool ue8m0 = rc.scale_type == ScaleType::ue8m0;
  const bool fp4 = rc.elem == ElemFormat::e2m1;
  const double global = rc.has_global_scale() ? double(*static_cast<const float*>(q.global_scale.data)) : 1.0;
  std::vector<double> v(size_t(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    const int64_t block_row = rc.scale_per_row() || rc.is_tensor_scaled() ? r : r / rc.block_rows;
    for (int64_t k = 0; k < q.cols; ++k) {
      double s = global;
      if (!rc.is_tensor_scaled())
        s *= double(num::block_decode_scale(rc.scheme, ue8m0,
                                            num::stored_scale_at(q.scales.data, g, fp32, block_row, k / rc.block_cols)));
      const uint8_t byte = fp4 ? codes[(r * q.cols + k) / 2] : codes[r * q.cols + k];
      const uint8_t code = fp4 ? uint8_t(k % 2 ? byte >> 4 : byte & 0xf) : byte;
      v[size_t(r * q.cols + k)] = double(num::decode(code, rc.elem)) * s;
    }
  }
  return v;
}

}  // namespace

void gemm(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  const std::vector<double> av = decode_operand(a, call.a_scales), bv = decode_operand(b, call.b_scales);
  const int64_t m = a.rows, n = b.rows, k = a.cols;
  const Matrix& d = call.d;
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        const double* x = &av[size_t(i * k)];
        const double* y = &bv[size_t(j * k)];
        for (int64_t t = 0; t < k; ++t) acc += x[t] * y[t];
        double out = double(opt.alpha) * acc;
        if (call.c.data) out += double(static_cast<const float*>(call.c.data)[i * call.c.row_stride + j]);
        if (opt.bias) out += double(opt.bias[j]);
        const float f = float(out);
        if (d.dtype == DType::float32) static_cast<float*>(d.data)[i * d.row_stride + j] = f;
        else static_cast<uint16_t*>(d.data)[i * d.row_stride + j] = num::float_to_bf16(f);
      }
  };
  const int64_t workers = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), std::max<int64_t>(1, m));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) pool.emplace_back(rows, m * w / workers, m * (w + 1) / workers);
  for (auto& t : pool) t.join();
}

}  // namespace mxq::cpu
