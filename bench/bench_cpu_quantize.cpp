// CPU reference backend throughput: quantize (and dequantize) an activation-sized bf16 matrix
// with every recipe family and print one table row per operation.
//
//   bench_cpu_quantize            8192 x 7168 bf16, median of 5 runs after a warm-up
//   bench_cpu_quantize --quick    256 x 1024, for smoke runs
//   options: --rows N --cols N --runs N --filter SUBSTRING (=NAME: exactly NAME)
//            --dtype IN (input: bfloat16, float16, float32) --out OUT (dequantized type)
//            --no-dequantize
//
// ms is wall time; cpu_ms the CPU time of all threads together (it stays meaningful when other
// jobs share the cores). Melem/s and GB/s are per wall second; GB/s counts the bytes the
// operation must move: the input plus every output buffer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "cli/host_tensor.hpp"
#include "mxq/mxq.hpp"
#include "mxq/numerics/formats.h"

namespace {

using mxq::DType;

// Deterministic N(0, 1) activations with 0.1 % outliers (x 100), stored as `dtype`
// (bfloat16, float16 or float32; rounded to nearest even).
std::vector<uint32_t> make_input(int64_t rows, int64_t cols, DType dtype) {
  const int64_t n = rows * cols;
  std::vector<uint32_t> words(size_t(dtype == DType::float32 ? n : (n + 1) / 2));
  auto* f32 = reinterpret_cast<float*>(words.data());
  auto* u16 = reinterpret_cast<uint16_t*>(words.data());
  uint64_t s = 0x243f6a8885a308d3ull;
  auto next = [&s] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto uniform = [&] { return (double(next() >> 11) + 0.5) * 0x1.0p-53; };  // (0, 1)
  for (int64_t i = 0; i < n; ++i) {
    double g = std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    if (next() % 1000 == 0) g *= 100.0;
    const float f = float(g);
    if (dtype == DType::float32)
      f32[i] = f;
    else
      u16[i] = dtype == DType::bfloat16 ? mxq::num::float_to_bf16(f) : mxq::num::float_to_fp16(f);
  }
  return words;
}

// An owning, 64-byte aligned host buffer.
using mxq::cli::DeviceBuffer;
using Quantized = mxq::cli::QuantizedBuffers;  // host buffers sized by plan()

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Timing {
  double wall_ms, cpu_ms;  // medians; cpu_ms sums all threads (robust when other jobs share the cores)
};

template <class F>
Timing median_ms(int runs, F&& fn) {
  fn();  // warm-up: first touch of the output pages, thread start-up
  std::vector<double> wall, cpu;
  for (int i = 0; i < runs; ++i) {
    const double c0 = process_cpu_ms();
    const auto a = std::chrono::steady_clock::now();
    fn();
    const auto b = std::chrono::steady_clock::now();
    cpu.push_back(process_cpu_ms() - c0);
    wall.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

void row(const std::string& op, const std::string& recipe, int64_t rows, int64_t cols, Timing t, int64_t bytes) {
  const double n = double(rows) * double(cols);
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  std::printf("%-11s %-38s %11s %9.2f %9.2f %9.1f %7.2f\n", op.c_str(), recipe.c_str(), shape.c_str(), t.wall_ms,
              t.cpu_ms, n / t.wall_ms * 1e-3, double(bytes) / t.wall_ms * 1e-6);
  std::fflush(stdout);
}

}  // namespace

bool selected(const std::string& filter, std::string_view name) {
  if (filter.empty()) return true;
  if (filter[0] == '=') return name == std::string_view(filter).substr(1);
  return name.find(filter) != std::string_view::npos;
}

int main(int argc, char** argv) {
  int64_t rows = 8192, cols = 7168;
  int runs = 5;
  std::string filter;
  DType in_dtype = DType::bfloat16, out_dtype = DType::bfloat16;
  bool run_dequantize = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") {
      rows = 256;
      cols = 1024;
      runs = 3;
    } else if (a == "--rows") {
      rows = std::atoll(value());
    } else if (a == "--cols") {
      cols = std::atoll(value());
    } else if (a == "--runs") {
      runs = std::max(1, std::atoi(value()));
    } else if (a == "--filter") {
      filter = value();
    } else if (a == "--no-dequantize") {
      run_dequantize = false;
    } else if (a == "--dtype") {
      in_dtype = mxq::parse_dtype(value(), "--dtype");
    } else if (a == "--out") {
      out_dtype = mxq::parse_dtype(value(), "--out");
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--rows N] [--cols N] [--runs N] [--filter SUBSTRING|=NAME] [--dtype IN] "
                   "[--out OUT] [--no-dequantize]\n",
                   argv[0]);
      return 2;
    }
  }

  const std::vector<uint32_t> input = make_input(rows, cols, in_dtype);
  const mxq::TensorView x = mxq::TensorView::matrix(const_cast<uint32_t*>(input.data()), in_dtype, rows, cols);
  const int64_t in_bytes = mxq::dtype_bytes(in_dtype, rows * cols);
  const int64_t out_elem_bytes = mxq::dtype_bytes(out_dtype, 1);

  const char* quantize_recipes[] = {
      "fp8_tensor",
      "fp8_block_1x128",
      "fp8_block_1x128:layout=mn_major_tma",
      "fp8_block_128x128",
      "fp8_block_1x128:dir=both",
      "mxfp8",
      "mxfp8:dir=col",
      "mxfp8:dir=col,colform=same",
      "mxfp8:dir=both",
      "mxfp8:dir=both,colform=same",
      "mxfp8:layout=swizzled_128x4,dir=both",
      "mxfp8_e5m2",
      "mxfp4",
      "mxfp4:dir=both",
      "nvfp4",
      "nvfp4:layout=swizzled_128x4",
      "nvfp4:dir=both",
      "nvfp4_2d",
      "fp4_block_1x32",
      "fp4_block_1x32:layout=packed_ue8m0",
  };
  // (recipe, columnwise) pairs to decode to bf16.
  const std::pair<const char*, bool> dequantize_recipes[] = {
      {"fp8_tensor", false},   {"fp8_block_1x128", false}, {"mxfp8", false},
      {"mxfp8:dir=col", true}, {"nvfp4", false},           {"mxfp4", false},
  };

  std::printf("mxq %s CPU reference, %s input %lldx%lld, dequantize to %s, median of %d runs after a warm-up\n",
              mxq::version().c_str(), mxq::dtype_name(in_dtype), (long long)rows, (long long)cols,
              mxq::dtype_name(out_dtype), runs);
  std::printf("%-11s %-38s %11s %9s %9s %9s %7s\n", "op", "recipe", "shape", "ms", "cpu_ms", "Melem/s", "GB/s");
  mxq::QuantizeOptions qo;
  qo.backend = mxq::Backend::cpu;
  for (const char* text : quantize_recipes) {
    if (!selected(filter, text)) continue;
    const mxq::Recipe r = mxq::Recipe::parse(text);
    Quantized q(r, rows, cols, mxq::Device{});
    const Timing t = median_ms(runs, [&] { mxq::quantize(x, q.view(), qo); });
    row("quantize", text, rows, cols, t, in_bytes + q.layout().total_bytes());
  }
  for (const auto& [text, columnwise] : dequantize_recipes) {
    if (!run_dequantize || !selected(filter, text)) continue;
    const mxq::Recipe r = mxq::Recipe::parse(text);
    Quantized q(r, rows, cols, mxq::Device{});
    mxq::quantize(x, q.view(), qo);
    const bool tr = columnwise && r.column_form == mxq::ColumnForm::transposed;
    const int64_t yr = tr ? cols : rows, yc = tr ? rows : cols;
    DeviceBuffer y(mxq::Device{}, yr * yc * out_elem_bytes);
    mxq::DequantizeOptions dq;
    dq.backend = mxq::Backend::cpu;
    dq.columnwise = columnwise;
    const mxq::TensorView yv = mxq::TensorView::matrix(y.data(), out_dtype, yr, yc);
    const Timing t = median_ms(runs, [&] { mxq::dequantize(q.view(), yv, dq); });
    row(columnwise ? "dequant:col" : "dequantize", text, rows, cols, t,
        q.layout().total_bytes() + yr * yc * out_elem_bytes);
  }
  return 0;
}
