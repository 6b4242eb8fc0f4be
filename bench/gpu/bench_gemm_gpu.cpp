// Block-scaled FP8 GEMM on the GPU through mxq::gemm, issue 6's shapes (src/cli/bench_gemm.cpp,
// also `mxq bench gemm`): cublaslt (cuBLASLt, the peer our kernels must beat) and cuda-aot (our
// wgmma kernel at promote_k 32 and 128, the decode kernel for M <= 32) on every shape.
#include <cstdio>
#include <cstring>

#include "cli/bench_gemm.hpp"
#include "mxq/mxq.hpp"
#include "runtime/memory.hpp"

int main(int argc, char** argv) {
  using namespace mxq;
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (runtime::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_gemm_gpu: no usable CUDA device\n");
    return 77;
  }
  auto shapes = cli::gemm_bench_shapes();
  if (quick) shapes = {{1, 7168, 7168}, {128, 7168, 7168}, {4096, 7168, 7168}};
  const auto rows = cli::bench_gemm(shapes, {{Backend::cublaslt}, {Backend::cuda_aot, 32}, {Backend::cuda_aot, 128}});
  std::fputs(cli::gemm_bench_table(rows).c_str(), stdout);
  return 0;
}
