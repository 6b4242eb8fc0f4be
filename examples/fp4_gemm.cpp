// FP4 block-scaled GEMM, end to end, with the public C++ API: quantize an activation-like A
// (M x K) and a weight-like B (N x K) to NVFP4 and to MXFP4, multiply them, and compare with
// the fp64 product of the unquantized inputs.
//
// What differs from FP8 (docs/ARCHITECTURE.md, "GEMM operand families"):
//   - the data is packed two codes per byte (element 2i in the low nibble): a row of K codes is
//     K / 2 bytes, and K must be even;
//   - NVFP4 has one UE4M3 scale per 16 elements of K and a per-tensor fp32 global scale, which
//     the GEMM must apply too (pass global_scale with each operand); MXFP4 one UE8M0 scale per 32;
//   - both operands are K-major (rowwise), the layout block-scaled tensor cores read.
// On Hopper there is no FP4 tensor-core instruction; this runs on the CPU backend (the fp64
// reference). Build: cmake --build build --target fp4_gemm_example; run build/examples/fp4_gemm_example.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <mxq/mxq.hpp>

namespace {

// A quantized operand that owns its buffers: one vector per buffer of the recipe's plan.
struct Operand {
  std::vector<uint8_t> data, scales, global;
  mxq::QuantizedTensor q;
  Operand(const char* recipe, const std::vector<float>& x, int64_t rows, int64_t k) {
    q.recipe = mxq::Recipe::parse(recipe);
    q.rows = rows;
    q.cols = k;
    const mxq::QuantizedLayout L = mxq::plan(q.recipe, rows, k);
    data.resize(size_t(L.data.bytes));
    scales.resize(size_t(L.scales.bytes));
    global.resize(size_t(L.global_scale.bytes));
    q.data = {data.data(), L.data.bytes};
    q.scales = {scales.data(), L.scales.bytes};
    if (L.global_scale.present()) q.global_scale = {global.data(), L.global_scale.bytes};
    if (L.amax.present()) q.amax = {&amax, 4};  // NVFP4 computes its amax into this float
    mxq::quantize(mxq::TensorView::matrix(const_cast<float*>(x.data()), mxq::DType::float32, rows, k), q);
  }
  Operand(const Operand&) = delete;  // q points into this object's vectors
  Operand& operator=(const Operand&) = delete;
  float amax = 0.0f;
};

std::vector<float> random_rows(int64_t rows, int64_t k, float outlier, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(rows * k));
  for (auto& v : x) v = nd(rng) * (rng() % 101 == 0 ? outlier : 1.0f);
  return x;
}

}  // namespace

int main() {
  const int64_t m = 64, n = 96, k = 512;
  const std::vector<float> a = random_rows(m, k, 20.0f, 1), b = random_rows(n, k, 1.0f, 2);
  std::vector<double> exact(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += double(a[size_t(i * k + t)]) * double(b[size_t(j * k + t)]);
      exact[size_t(i * n + j)] = s;
    }
  std::printf("%-32s %12s %14s %10s\n", "A x B", "bytes (A+B)", "rel. error", "ran on");
  const char* pairs[][2] = {{"nvfp4", "nvfp4"}, {"nvfp4", "nvfp4_2d"}, {"mxfp4", "mxfp4"}, {"mxfp8", "mxfp4"},
                            {"mxfp8", "mxfp8"}};
  for (const auto& p : pairs) {
    Operand qa(p[0], a, m, k), qb(p[1], b, n, k);
    std::vector<float> d(size_t(m * n));
    mxq::gemm(qa.q, qb.q, mxq::TensorView::matrix(d.data(), mxq::DType::float32, m, n));
    double err = 0, ref = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      err += (d[i] - exact[i]) * (d[i] - exact[i]);
      ref += exact[i] * exact[i];
    }
    const int64_t bytes = int64_t(qa.data.size() + qa.scales.size() + qb.data.size() + qb.scales.size());
    std::printf("%-32s %12lld %14.3e %10s\n", (std::string(p[0]) + " x " + p[1]).c_str(), (long long)bytes,
                std::sqrt(err / ref), mxq::last_dispatch().backend.c_str());
    if (!(std::sqrt(err / ref) < 0.3)) {
      std::fprintf(stderr, "fp4_gemm: %s x %s: relative error %g is not that of FP4 operands\n", p[0], p[1],
                   std::sqrt(err / ref));
      return 1;
    }
  }
  return 0;
}
