// Block-scaled FP8 GEMM on the GPU through mxq::gemm: the shapes of issue 6 (DeepSeek V3's
// projections), A 1x128 (mn_major_tma) x B 128x128, bf16 D, CUDA-graph replay. Each backend
// that takes the shape is timed: cublaslt (cuBLASLt, the peer our own kernel must beat) and,
// for small M, the generic kernel. TFLOP/s, % of the H200's 1979 TFLOP/s dense FP8 peak, and
// for M <= 16 the weight bytes' bandwidth.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <functional>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/host_tensor.hpp"
#include "mxq/mxq.hpp"
#include "mxq/numerics/formats.h"

namespace {

using namespace mxq;

double graph_ms(const std::function<void(cudaStream_t)>& f, cudaStream_t s) {
  constexpr int kRep = 10;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  f(s);  // warm: descriptors and algorithms are chosen outside the capture
  cudaStreamSynchronize(s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < kRep; ++i) f(s);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < 7; ++i) {
    cudaEventRecord(a, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / kRep);
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (runtime::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_gemm_gpu: no usable CUDA device\n");
    return 77;
  }
  const Device gpu{DeviceKind::cuda, 0};
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<std::array<int64_t, 3>> shapes;
  for (int64_t m : {1, 16, 64, 128, 1024, 4096})
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                                                                 {4096, 7168}, {7168, 2048}})
      shapes.push_back({m, n, k});
  shapes.push_back({8192, 8192, 8192});
  if (quick) shapes = {{128, 7168, 7168}, {4096, 7168, 7168}};
  const Recipe ra = Recipe::parse("fp8_block_1x128:layout=mn_major_tma"), rb = Recipe::parse("fp8_block_128x128");
  std::printf("%-22s %-9s %-30s %9s %9s %7s %9s\n", "M x N x K", "backend", "kernel", "us", "TFLOP/s", "%peak",
              "w GB/s");
  for (auto [m, n, k] : shapes) {
    cli::DeviceBuffer xa(gpu, m * k * 2), xb(gpu, n * k * 2), d(gpu, m * n * 2);
    std::vector<uint16_t> ha(size_t(m * k)), hb(size_t(n * k));
    for (size_t i = 0; i < ha.size(); ++i) ha[i] = num::float_to_bf16(float(int(i * 2654435761u % 17) - 8) / 8.0f);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = num::float_to_bf16(float(int(i * 40503u % 13) - 6) / 6.0f);
    xa.upload(ha.data());
    xb.upload(hb.data());
    cli::QuantizedBuffers qa(ra, m, k, gpu), qb(rb, n, k, gpu);
    QuantizedTensor va = qa.view(), vb = qb.view();
    va.amax = vb.amax = Buffer{};
    quantize(TensorView::matrix(xa.data(), DType::bfloat16, m, k, -1, gpu), va);
    quantize(TensorView::matrix(xb.data(), DType::bfloat16, n, k, -1, gpu), vb);
    const TensorView dv = TensorView::matrix(d.data(), DType::bfloat16, m, n, -1, gpu);
    for (Backend be : {Backend::cublaslt, Backend::cuda_aot}) {
      if (be == Backend::cuda_aot && m > 64) continue;  // our decode kernel (M <= 64); the generic one beyond
      GemmOptions o;
      o.backend = be;
      std::string kernel;
      try {
        const double ms = graph_ms([&](cudaStream_t st) {
          o.stream = st;
          gemm(va, vb, dv, o);
        }, s);
        kernel = last_dispatch().kernel;
        const double tflops = 2.0 * double(m) * double(n) * double(k) / (ms * 1e-3) / 1e12;
        const double wgbps = double(n) * double(k) / (ms * 1e-3) / 1e9;
        std::printf("%-22s %-9s %-30s %9.1f %9.1f %7.1f %9.0f\n",
                    (std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)).c_str(), backend_name(be),
                    kernel.c_str(), ms * 1e3, tflops, 100.0 * tflops / 1979.0, wgbps);
      } catch (const Error& e) {
        std::printf("%-22s %-9s %s\n", (std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)).c_str(),
                    backend_name(be), e.what());
      }
    }
  }
  return 0;
}
