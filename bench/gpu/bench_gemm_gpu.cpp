// Block-scaled FP8 GEMM on the GPU through mxq::gemm, issue 6's shapes (src/cli/bench_gemm.cpp,
// also `mxq bench gemm`): cublaslt (cuBLASLt, the peer our kernels must beat) and cuda-aot (our
// wgmma kernel at promote_k 32 and 128, the decode kernel for M <= 32) on every shape.
#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cli/bench_gemm.hpp"
#include "mxq/mxq.hpp"
#include "runtime/memory.hpp"

int main(int argc, char** argv) {
  using namespace mxq;
  // --quick: three shapes; --decode: the default shapes with M <= 128; --shape MxNxK (repeatable): these
  bool quick = false, decode = false;
  std::vector<std::array<int64_t, 3>> asked;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--decode")) decode = true;
    else if (!std::strcmp(argv[i], "--shape") && i + 1 < argc) {
      try {
        asked.push_back(cli::parse_gemm_shape(argv[++i]));
      } catch (const Error& e) {
        std::fprintf(stderr, "bench_gemm_gpu: %s\n", e.what());
        return 2;
      }
    } else {
      std::fprintf(stderr, "bench_gemm_gpu: unknown argument '%s' (expected --quick, --decode or --shape MxNxK)\n",
                   argv[i]);
      return 2;
    }
  }
  if (runtime::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_gemm_gpu: no usable CUDA device\n");
    return 77;
  }
  auto shapes = cli::gemm_bench_shapes();
  if (quick) shapes = {{1, 7168, 7168}, {128, 7168, 7168}, {4096, 7168, 7168}};
  if (decode) std::erase_if(shapes, [](const auto& s) { return s[0] > 128; });
  if (!asked.empty()) shapes = asked;
  const auto rows = cli::bench_gemm(shapes, {{Backend::cublaslt}, {Backend::cuda_aot, 32}, {Backend::cuda_aot, 128}});
  std::fputs(cli::gemm_bench_table(rows).c_str(), stdout);
  return 0;
}
