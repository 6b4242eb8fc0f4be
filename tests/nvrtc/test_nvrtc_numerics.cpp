// The numerics headers compile unchanged under NVRTC for sm_90a (no GPU needed): the JIT will
// compile the same formulas as the CPU reference and the precompiled kernels.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <vector>

namespace {

// Every numerics entry point a kernel uses, instantiated in one device function.
const char* kProbe = R"(
#include "mxq/numerics/recipes.h"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/activations.h"
using namespace mxq::num;
extern "C" __global__ void probe(const float* x, unsigned char* out, unsigned* scales, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ScaleRule rule = with_tensor_factor({Scheme::nvfp4, ElemFormat::e2m1, MxRounding::rceil, false, false, 0.0f,
                                       0.0f, 0.0f}, nvfp4_encode_scale(448.0f));
  const BlockScale b = block_scale(rule, amax_combine(0.0f, x[i]));
  const ScaleGeometry g{ScaleLayout::swizzled_128x4, 256, 8, false};
  scales[scale_offset(g, i % 256, i % 8) % 2048] = b.stored + mx_scale_code(x[i], ElemFormat::e4m3fn, MxRounding::floor);
  const float act = act_f(Activation(i % 10), x[i]) + dact_f(Activation(i % 7), x[i]);
  out[i] = uint8_t(act > 1.0f) ^ pack_fp4(quantize_element(x[i], b.multiplier, ElemFormat::e2m1),
                    quantize_element(x[i], fp8_block_scale(x[i], 448.0f, 1e-4f, true), ElemFormat::e5m2)) ^
           encode(x[i], ElemFormat::e4m3fn, Saturation::non_saturating) ^ encode_e8m0(x[i]) ^
           uint8_t(float_to_bf16(dequantize_value(out[i], ElemFormat::e4m3fn, decode_e8m0(3), 1.0f)));
}
)";

TEST(Nvrtc, NumericsHeadersCompileForSm90a) {
  nvrtcProgram prog;
  ASSERT_EQ(nvrtcCreateProgram(&prog, kProbe, "probe.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const std::string include = std::string("-I") + MXQ_INCLUDE_DIR;
  const char* opts[] = {"--gpu-architecture=sm_90a", include.c_str(), "-std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  ASSERT_EQ(r, NVRTC_SUCCESS) << nvrtcGetErrorString(r) << "\n" << log;
  size_t cubin = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &cubin), NVRTC_SUCCESS);
  EXPECT_GT(cubin, 1000u);
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %d.%d: %zu-byte sm_90a cubin\n", major, minor, cubin);
  nvrtcDestroyProgram(&prog);
}

}  // namespace
