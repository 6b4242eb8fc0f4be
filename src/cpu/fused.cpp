// The fused epilogues on the CPU reference (the definition of their bits): y = f(x) in fp32
// with numerics/activations.h, the column sums of y (dbias) accumulated in fp64, then the
// ordinary quantization of y. A non-zero noop flag returns before anything is written.
#include <thread>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "mxq/numerics/activations.h"
#include "mxq/numerics/formats.h"

namespace mxq::cpu {
namespace {

float read(const Matrix& m, int64_t r, int64_t c) {
  const int64_t i = r * m.row_stride + c;
  switch (m.dtype) {
    case DType::float32: return static_cast<const float*>(m.data)[i];
    case DType::float16: return num::fp16_to_float(static_cast<const uint16_t*>(m.data)[i]);
    default: return num::bf16_to_float(static_cast<const uint16_t*>(m.data)[i]);
  }
}

}  // namespace

void quantize_fused(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt) {
  if (opt.noop && *opt.noop != 0.0f) return;
  const Matrix& x = call.x;
  const num::Activation a = opt.activation;
  const bool gated = num::is_gated(a), backward = call.act_input.data != nullptr;
  const int64_t m = x.rows, n = gated ? x.cols / 2 : x.cols;
  std::vector<float> y(size_t(m * n));
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < n; ++c) {
        float v;
        if (gated) v = num::mul_rn(num::act_f(num::gate_of(a), read(x, r, c)), read(x, r, c + n));
        else if (backward) v = num::mul_rn(read(x, r, c), num::dact_f(a, read(call.act_input, r, c)));
        else v = num::act_f(a, read(x, r, c));
        y[size_t(r * n + c)] = num::canonical_nan(v);
      }
  };
  const int64_t workers = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), std::max<int64_t>(1, m / 64));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) pool.emplace_back(rows, m * w / workers, m * (w + 1) / workers);
  for (auto& t : pool) t.join();
  if (opt.dbias) {
    std::vector<double> sum(size_t(n), 0.0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) sum[size_t(c)] += double(y[size_t(r * n + c)]);
    for (int64_t c = 0; c < n; ++c) opt.dbias[c] = float(sum[size_t(c)]);
  }
  QuantizeCall yc = call;
  yc.x = Matrix{y.data(), DType::float32, m, n, n, x.device};
  yc.act_input = {};
  quantize(yc, out, opt);
}

}  // namespace mxq::cpu
