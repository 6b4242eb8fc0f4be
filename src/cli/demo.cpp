#include "cli/demo.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "cli/host_tensor.hpp"
#include "mxq/numerics/formats.h"

namespace mxq::cli {
namespace {

// splitmix64: small, fast, and identical everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

const char* kAllRecipes[] = {"fp8_tensor",      "fp8_tensor_e5m2", "fp8_block_1x128", "fp8_block_128x128",
                             "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu", "mxfp8", "mxfp8:dir=both",
                             "mxfp8_e5m2", "mxfp4", "nvfp4", "nvfp4_2d", "fp4_block_1x32"};

}  // namespace

std::vector<float> make_activation(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> x(size_t(rows * cols));
  Rng rng{seed};
  for (auto& v : x) v = float(rng.normal());
  // A few channels carry large outliers, as in LLM activations.
  for (int64_t r = 0; r < rows; ++r)
    for (int k = 0; k < 4; ++k) {
      const int64_t c = int64_t(rng.next() % uint64_t(cols));
      x[size_t(r * cols + c)] = float((rng.uniform() < 0.5 ? -1 : 1) * (20.0 + 80.0 * rng.uniform()));
    }
  return x;
}

std::vector<float> make_weight(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> x(size_t(rows * cols));
  Rng rng{seed ^ 0x5eed};
  for (auto& v : x) v = float(0.02 * rng.normal());
  return x;
}

std::vector<DemoRow> run_demo(const DemoOptions& opt) {
  std::vector<std::string> recipes = opt.recipes;
  if (recipes.empty()) recipes.assign(std::begin(kAllRecipes), std::end(kAllRecipes));
  std::vector<DemoRow> rows;
  struct Input {
    const char* name;
    int64_t r;
    std::vector<float> host;
  };
  Input inputs[] = {{"activation", opt.act_rows, make_activation(opt.act_rows, opt.cols, opt.seed)},
                    {"weight", opt.weight_rows, make_weight(opt.weight_rows, opt.cols, opt.seed)}};
  const Device dev = pick_device(opt.backend);
  for (auto& in : inputs) {
    // bf16 input, as a model would hand it over
    std::vector<uint16_t> bf(in.host.size());
    std::vector<float> xf(in.host.size());
    for (size_t i = 0; i < bf.size(); ++i) {
      bf[i] = num::float_to_bf16(in.host[i]);
      xf[i] = num::bf16_to_float(bf[i]);
    }
    DeviceBuffer xin(dev, int64_t(bf.size() * 2));
    xin.upload(bf.data());
    const TensorView xv = TensorView::matrix(xin.data(), DType::bfloat16, in.r, opt.cols, -1, dev);
    double ss = 0.0;
    for (float v : xf) ss += double(v) * v;
    const double rms = std::sqrt(ss / double(xf.size()));
    for (const auto& name : recipes) {
      const Recipe recipe = Recipe::parse(name);
      QuantizedBuffers qb(recipe, in.r, opt.cols, dev);
      QuantizeOptions qo;
      qo.backend = opt.backend;
      quantize(xv, qb.view(), qo);  // warm-up (and first-use compilation, if any)
      std::vector<double> times;
      for (int i = 0; i < opt.repeats; ++i) {
        synchronize(dev);
        const auto t0 = std::chrono::steady_clock::now();
        quantize(xv, qb.view(), qo);
        synchronize(dev);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const std::string ran = last_dispatch().backend;  // what really ran (not what was asked)
      std::sort(times.begin(), times.end());
      const double t = times[times.size() / 2];
      // Decode the rowwise output (or the columnwise one when only that exists) and compare.
      const bool col = !recipe.has_rowwise();
      const bool tr = col && recipe.column_form == ColumnForm::transposed;
      DeviceBuffer yb(dev, int64_t(xf.size() * 4));
      DequantizeOptions dq;
      dq.backend = opt.backend;
      dq.columnwise = col;
      dequantize(qb.view(), TensorView::matrix(yb.data(), DType::float32, tr ? opt.cols : in.r,
                                               tr ? in.r : opt.cols, -1, dev), dq);
      std::vector<float> y(xf.size());
      yb.download(y.data());
      double se = 0.0, max_rel = 0.0;
      for (int64_t r = 0; r < in.r; ++r)
        for (int64_t c = 0; c < opt.cols; ++c) {
          const double xv_ = xf[size_t(r * opt.cols + c)];
          const double yv = tr ? y[size_t(c * in.r + r)] : y[size_t(r * opt.cols + c)];
          const double e = yv - xv_;
          se += e * e;
          if (std::fabs(xv_) >= 0.01 * rms) max_rel = std::max(max_rel, std::fabs(e) / std::fabs(xv_));
        }
      const QuantizedLayout L = plan(recipe, in.r, opt.cols);
      const double numel = double(in.r) * double(opt.cols);
      DemoRow row;
      row.tensor = in.name;
      row.recipe = recipe.name();
      row.backend = ran;
      const int64_t out_bytes = L.total_bytes();
      const int64_t per_dir = (recipe.has_rowwise() && recipe.has_columnwise()) ? 2 : 1;
      row.bits_per_element = double(out_bytes) * 8.0 / numel / double(per_dir);
      row.sqnr_db = se > 0 ? 10.0 * std::log10(ss / se) : INFINITY;
      row.max_rel_err = max_rel;
      row.ms = t * 1e3;
      row.gbps = double(numel * 2 + double(out_bytes)) / t / 1e9;
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace mxq::cli
