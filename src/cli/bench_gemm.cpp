#include "cli/bench_gemm.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "cli/host_tensor.hpp"
#include "mxq/gemm_plan.hpp"
#include "mxq/mxq.hpp"
#include "mxq/numerics/formats.h"
#include "runtime/memory.hpp"

namespace mxq::cli {

std::vector<std::array<int64_t, 3>> gemm_bench_shapes() {
  std::vector<std::array<int64_t, 3>> s;
  for (int64_t m : {1, 16, 64, 128, 1024, 4096})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                        {4096, 7168}, {7168, 2048}})
      s.push_back({m, n, k});
  s.push_back({8192, 8192, 8192});
  return s;
}

std::array<int64_t, 3> parse_gemm_shape(const std::string& text) {
  std::array<int64_t, 3> v{};
  char tail = 0;
  long long m = 0, n = 0, k = 0;
  errno = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || errno == ERANGE || m < 1 || n < 1 ||
      k < 1)
    fail_arg("gemm shape '" + text + "' is not MxNxK with positive M, N and K (e.g. 4096x7168x7168)");
  v = {m, n, k};
  plan_gemm(m, n, k, GemmKind::d1d2, DType::bfloat16, ArchDesc::sm90(132));  // the size limits, by name
  return v;
}

int64_t bench_l2_bytes() {
  runtime::CudaDeviceInfo info;
  return runtime::cuda_device_info(0, &info) && info.l2_bytes > 0 ? info.l2_bytes : int64_t(50) << 20;
}

int weight_copies(const Recipe& rb, int64_t n, int64_t k) {
  const int64_t l2 = bench_l2_bytes();
  const QuantizedLayout b = plan(rb, n, k);
  const int64_t bytes = b.data.bytes + b.scales.bytes;
  return int(std::clamp<int64_t>(num::ceil_div(2 * l2, bytes), 1, kMaxWeightCopies));
}

std::vector<GemmBenchRow> bench_gemm(const std::vector<std::array<int64_t, 3>>& shapes,
                                     const std::vector<GemmBenchRun>& runs, GemmKind kind) {
  const Device gpu{DeviceKind::cuda, 0};
  const Recipe ra = Recipe::parse("fp8_block_1x128:layout=mn_major_tma"),
               rb = Recipe::parse(kind == GemmKind::d1d2 ? "fp8_block_128x128" : "fp8_block_1x128:layout=mn_major_tma");
  std::vector<GemmBenchRow> rows;
  for (auto [m, n, k] : shapes) {
    DeviceBuffer xa(gpu, m * k * 2), xb(gpu, n * k * 2), d(gpu, m * n * 2);
    std::vector<uint16_t> ha(size_t(m * k)), hb(size_t(n * k));
    for (size_t i = 0; i < ha.size(); ++i) ha[i] = num::float_to_bf16(float(int(i * 2654435761u % 17) - 8) / 8.0f);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = num::float_to_bf16(float(int(i * 40503u % 13) - 6) / 6.0f);
    xa.upload(ha.data());
    xb.upload(hb.data());
    QuantizedBuffers qa(ra, m, k, gpu);
    QuantizedTensor va = qa.view();
    va.amax = Buffer{};
    quantize(TensorView::matrix(xa.data(), DType::bfloat16, m, k, -1, gpu), va);
    // B (the weights) in weight_copies() copies, used in turn, so that each call reads its weights
    // from DRAM as a model's layers do, not from the L2 the call before left them in
    std::vector<std::unique_ptr<QuantizedBuffers>> qb;
    std::vector<QuantizedTensor> vb;
    const int copies = weight_copies(rb, n, k);
    for (int c = 0; c < copies; ++c) {
      qb.push_back(std::make_unique<QuantizedBuffers>(rb, n, k, gpu));
      vb.push_back(qb.back()->view());
      vb.back().amax = Buffer{};
      quantize(TensorView::matrix(xb.data(), DType::bfloat16, n, k, -1, gpu), vb.back());
    }
    const TensorView dv = TensorView::matrix(d.data(), DType::bfloat16, m, n, -1, gpu);
    const size_t first = rows.size();
    for (const GemmBenchRun& run : runs) {
      GemmBenchRow r{m, n, k, backend_name(run.backend), "", "", run.block_m, copies, 0, 0, 0, 0, 0, 0};
      try {
        GemmOptions o;
        o.backend = run.backend;
        o.promote_k = run.promote_k;
        o.block_m = run.block_m;
        int next = 0;  // the copy of B the next call reads; each copy equally often in the graph
        const double ms = runtime::graph_ms_per_call(
            gpu,
            [&](void* stream) {
              o.stream = stream;
              gemm(va, vb[size_t(next)], dv, o);
              next = (next + 1) % copies;
            },
            copies * int(num::ceil_div(10, copies)));
        r.kernel = last_dispatch().backend + " " + last_dispatch().kernel;
        r.us = ms * 1e3;
        r.tflops = 2.0 * double(m) * double(n) * double(k) / (ms * 1e-3) / 1e12;
        r.peak_pct = 100.0 * r.tflops / 1979.0;  // the H200's dense FP8 peak
        r.weight_gbps = double(n) * double(k) / (ms * 1e-3) / 1e9;
        if (m <= kChainMaxM) {
          // a decode step: the activation's quantize, then the GEMM, the way a model runs them
          QuantizeOptions qo;
          next = 0;
          r.chain_us = 1e3 * runtime::graph_ms_per_call(
                                 gpu,
                                 [&](void* stream) {
                                   qo.stream = o.stream = stream;
                                   quantize(TensorView::matrix(xa.data(), DType::bfloat16, m, k, -1, gpu), va, qo);
                                   gemm(va, vb[size_t(next)], dv, o);
                                   next = (next + 1) % copies;
                                 },
                                 copies * int(num::ceil_div(10, copies)));
        }
      } catch (const Error& e) {
        r.error = e.what();
      }
      rows.push_back(r);
    }
    const GemmBenchRow* peer = nullptr;
    for (size_t i = first; i < rows.size(); ++i)
      if (rows[i].error.empty() && rows[i].kernel.rfind("cublaslt", 0) == 0) peer = &rows[i];
    if (peer)
      for (size_t i = first; i < rows.size(); ++i)
        if (rows[i].error.empty()) rows[i].vs_cublaslt = peer->us / rows[i].us;
  }
  return rows;
}

std::string gemm_bench_table(const std::vector<GemmBenchRow>& rows, GemmKind kind) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-12s %-45s %9s %9s %7s %9s %8s %8s %9s\n", "M x N x K", "asked", "ran", "us",
                "TFLOP/s", "%peak", "w GB/s", "xcuBLAS", "B copies", "q+gemm us");
  out += line;
  for (const auto& r : rows) {
    const std::string shape = std::to_string(r.m) + "x" + std::to_string(r.n) + "x" + std::to_string(r.k);
    std::string asked = r.backend;  // and the block_m asked, if any
    if (r.block_m) asked.append(":").append(std::to_string(r.block_m));
    if (!r.error.empty())
      std::snprintf(line, sizeof line, "%-20s %-12s %s\n", shape.c_str(), asked.c_str(), r.error.c_str());
    else {
      char chain[32] = "-";
      if (r.chain_us > 0) std::snprintf(chain, sizeof chain, "%.1f", r.chain_us);
      std::snprintf(line, sizeof line, "%-20s %-12s %-45s %9.1f %9.1f %7.1f %9.0f %8s %8d %9s\n", shape.c_str(),
                    asked.c_str(), r.kernel.c_str(), r.us, r.tflops, r.peak_pct, r.weight_gbps,
                    r.vs_cublaslt > 0 ? (std::to_string(r.vs_cublaslt).substr(0, 4) + "x").c_str() : "-", r.b_copies,
                    chain);
    }
    out += line;
  }
  out += std::string("A 1x128 (mn_major_tma) x B ") + (kind == GemmKind::d1d2 ? "128x128" : "1x128 (mn_major_tma)") +
         " FP8, bf16 D, CUDA-graph replay; %peak of 1979 TFLOP/s; w GB/s = N*K / time; xcuBLAS = cuBLASLt's time / "
         "this row's; q+gemm us (M <= " + std::to_string(kChainMaxM) +
         "): the activation's quantize from bf16, then the GEMM, per call (a decode step); B copies: the calls read "
         "that many copies of B in turn (at least twice the L2 in all, up to " +
         std::to_string(kMaxWeightCopies) + "), so that the weights come from DRAM\n";
  return out;
}

}  // namespace mxq::cli
