// The GEMM's reference, for every operand family (fp8_block, MX, NVFP4, per-tensor FP8): both
// operands decoded exactly (code * block scale in fp64), dot products accumulated in fp64, times
// the two global scales (NVFP4, per-tensor FP8), alpha, C and bias applied in fp64, then rounded
// to fp32 once (bf16 D: through that fp32, as a GPU epilogue converts its fp32 accumulators).
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

// Operand rows decoded to fp64 without the global scale: value (r, k) = decode(code) * scale of
// its block, exact (a code has at most 4 significant bits; a scale is a power of two, UE4M3's 4
// bits or fp8_block's fp32 24), so products of two are exact in fp64 but for fp8_block's fp32
// scales (up to 56 bits: one fp64 rounding). FP4 codes are packed two per byte, element 2i in the
// low nibble.
std::vector<double> decode_operand(const QuantizedTensor& q, const num::ScaleGeometry& g) {
  const Recipe& rc = q.recipe;
  const auto* codes = static_cast<const uint8_t*>(q.data.data);
  const bool fp32 = rc.scale_type == ScaleType::float32 && rc.layout != ScaleLayout::packed_ue8m0;
  const bool ue8m0 = rc.scale_type == ScaleType::ue8m0;
  const bool fp4 = rc.elem == ElemFormat::e2m1;
  std::vector<double> v(size_t(q.rows * q.cols));
  for (int64_t r = 0; r < q.rows; ++r) {
    const int64_t block_row = rc.scale_per_row() || rc.is_tensor_scaled() ? r : r / rc.block_rows;
    for (int64_t k = 0; k < q.cols; ++k) {
      double s = 1.0;
      if (!rc.is_tensor_scaled())
        s = double(num::block_decode_scale(rc.scheme, ue8m0,
                                            num::stored_scale_at(q.scales.data, g, fp32, block_row, k / rc.block_cols)));
      const uint8_t code = fp4 ? num::unpack_fp4(codes[(r * q.cols + k) / 2], int(k % 2)) : codes[r * q.cols + k];
      v[size_t(r * q.cols + k)] = double(num::decode(code, rc.elem)) * s;
    }
  }
  return v;
}

// The operand's global scale (NVFP4's and per-tensor FP8's decode multiplier), else 1.
double global_scale(const QuantizedTensor& q) {
  return q.recipe.has_global_scale() ? double(*static_cast<const float*>(q.global_scale.data)) : 1.0;
}

}  // namespace

void gemm(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt) {
  const std::vector<double> av = decode_operand(a, call.a_scales), bv = decode_operand(b, call.b_scales);
  const int64_t m = a.rows, n = b.rows, k = a.cols;
  const double globals = global_scale(a) * global_scale(b);  // exact: 24 + 24 significant bits
  const Matrix& d = call.d;
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        const double* x = &av[size_t(i * k)];
        const double* y = &bv[size_t(j * k)];
        for (int64_t t = 0; t < k; ++t) acc += x[t] * y[t];
        double out = double(opt.alpha) * (acc * globals);
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
