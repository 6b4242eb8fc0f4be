// The fused activations' arithmetic (numerics/activations.h) on the GPU against the same lines
// run on the host, bit for bit, for every bf16 value and a sweep of 2^20 fp32 bit patterns
// spread over the whole range (NaN, Inf, subnormals and both signs included). The fused
// quantize tests see these functions only through a quantizer that rounds most differences
// away; this test sees every bit. A NaN equals any NaN here: x86 and the GPU give NaNs different
// signs and payloads, and the fused kernels canonicalise them (num::canonical_nan) on both sides.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "cuda/gemm/sm90.cuh"
#include "cuda/quantize/fast.cuh"
#include "cuda/quantize/fast_launch.hpp"
#include "gpu_test.hpp"
#include "mxq/numerics/activations.h"

namespace mxq::gpu_test {
namespace {

using num::Activation;

// Function f of the table: 0-5 act_f of gelu .. srelu, 6-11 dact_f of the same, 12-15 exp_f,
// tanh_f, erf_f and sigmoid_f.
constexpr int kFunctions = 16;

__host__ __device__ inline float evaluate(int f, float x) {
  if (f < 6) return num::act_f(Activation(f + 1), x);
  if (f < 12) return num::dact_f(Activation(f - 5), x);
  switch (f) {
    case 12: return num::exp_f(x);
    case 13: return num::tanh_f(x);
    case 14: return num::erf_f(x);
    default: return num::sigmoid_f(x);
  }
}

const char* function_name(int f) {
  static const char* names[] = {"gelu",     "gelu_tanh", "silu", "relu", "qgelu", "srelu", "dgelu", "dgelu_tanh",
                                "dsilu",    "drelu",     "dqgelu", "dsrelu", "exp_f", "tanh_f", "erf_f", "sigmoid_f"};
  return names[f];
}

__global__ void evaluate_all(const float* x, uint32_t* out, int n) {
  const int i = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (i < n) out[size_t(blockIdx.y) * size_t(n) + size_t(i)] = num::float_bits(evaluate(int(blockIdx.y), x[i]));
}

// rcp_rn_ge1 (MUFU.RCP and one Newton step, no range check) against __frcp_rn on every fp32 d in
// [1, 2^126]: mismatches counted, the first one kept.
__global__ void compare_reciprocals(unsigned long long* mismatches, uint32_t* first) {
  const uint32_t lo = 0x3f800000u, hi = 0x7e800000u;
  for (uint32_t b = lo + blockIdx.x * blockDim.x + threadIdx.x; b <= hi; b += gridDim.x * blockDim.x) {
    const float d = __uint_as_float(b);
    if (__float_as_uint(num::rcp_rn_ge1(d)) != __float_as_uint(__frcp_rn(d))) {
      atomicAdd(mismatches, 1ull);
      atomicMin(first, b);
    }
  }
}

// Runs a comparison kernel, launch(count, first), which counts the inputs that differ and keeps
// the lowest: success only if it ran and counted none (a CUDA error fails with its message).
template <class Launch>
::testing::AssertionResult no_mismatches(Launch launch, const char* what) {
  cudaError_t error = cudaSuccess;
  unsigned long long n = 0, *count = nullptr;
  uint32_t b = 0, *first = nullptr;
  auto step = [&](cudaError_t e) { return error == cudaSuccess && (error = e) == cudaSuccess; };
  if (step(cudaMalloc(&count, 8)) && step(cudaMalloc(&first, 4)) && step(cudaMemset(count, 0, 8)) &&
      step(cudaMemset(first, 0xff, 4))) {
    launch(count, first);
    if (step(cudaGetLastError()) && step(cudaMemcpy(&n, count, 8, cudaMemcpyDeviceToHost)))
      step(cudaMemcpy(&b, first, 4, cudaMemcpyDeviceToHost));
  }
  cudaFree(count);
  cudaFree(first);
  if (error != cudaSuccess) return ::testing::AssertionFailure() << cudaGetErrorString(error);
  if (n != 0)
    return ::testing::AssertionFailure() << n << " differ; the first " << what << ": bits 0x" << std::hex << b;
  return ::testing::AssertionSuccess();
}

TEST(GpuNumerics, ReciprocalWithoutRangeCheckIsCorrectlyRounded) {
  REQUIRE_GPU();
  EXPECT_TRUE(no_mismatches([](auto* n, auto* first) { compare_reciprocals<<<1024, 256>>>(n, first); }, "d"));
}

// The GEMM epilogue's bf16 pairs (sm90::bf16x2_cvt, one cvt, and bf16x2_rn, NaNs as the formula
// gives them) against num::float_to_bf16 on every fp32 bit pattern in each half, the other half
// a scrambled pattern that is never a NaN (bit 30 clear), so that cvt is checked on every
// non-NaN pattern: mismatches counted, the first kept.
__global__ void compare_bf16_pairs(unsigned long long* mismatches, uint32_t* first) {
  const uint64_t step = gridDim.x * uint64_t(blockDim.x);
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < (1ull << 32); i += step) {
    const uint32_t b = uint32_t(i), other = (b * 0x9e3779b1u + 0x7f7fu) & 0xbfffffffu;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float lo = __uint_as_float(half ? other : b), hi = __uint_as_float(half ? b : other);
      const uint32_t want = uint32_t(num::float_to_bf16(lo)) | (uint32_t(num::float_to_bf16(hi)) << 16);
      const bool nan = lo != lo || hi != hi;
      if (cuda::sm90::bf16x2_rn(lo, hi) != want || (!nan && cuda::sm90::bf16x2_cvt(lo, hi) != want)) {
        atomicAdd(mismatches, 1ull);
        atomicMin(first, b);
      }
    }
  }
}

TEST(GpuNumerics, Bf16PairEqualsTheFormulaOnEveryFloat) {
  REQUIRE_GPU();
  EXPECT_TRUE(no_mismatches([](auto* n, auto* first) { compare_bf16_pairs<<<4096, 256>>>(n, first); }, "pattern"));
}

TEST(GpuNumerics, ActivationsEqualTheHostBitForBit) {
  REQUIRE_GPU();
  std::vector<float> x;
  for (uint32_t b = 0; b < 65536; ++b) x.push_back(num::bits_float(b << 16));      // every bf16 value
  for (uint32_t i = 0; i < (1u << 20); ++i) x.push_back(num::bits_float(i * 4099u));  // fp32 across the range
  const int n = int(x.size());
  float* xd = nullptr;
  uint32_t* od = nullptr;
  ASSERT_EQ(cudaMalloc(&xd, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&od, x.size() * 4 * kFunctions), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(xd, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  evaluate_all<<<dim3(unsigned((n + 255) / 256), kFunctions), 256>>>(xd, od, n);
  std::vector<uint32_t> got(x.size() * kFunctions);
  ASSERT_EQ(cudaMemcpy(got.data(), od, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(xd);
  cudaFree(od);
  for (int f = 0; f < kFunctions; ++f) {
    int64_t mismatches = 0;
    for (int i = 0; i < n; ++i) {
      const uint32_t want = num::float_bits(evaluate(f, x[size_t(i)]));
      const uint32_t g = got[size_t(f) * size_t(n) + size_t(i)];
      const bool both_nan = num::is_nan(num::bits_float(g)) && num::is_nan(num::bits_float(want));
      if (g != want && !both_nan && mismatches++ < 3)
        ADD_FAILURE() << function_name(f) << "(bits 0x" << std::hex << num::float_bits(x[size_t(i)]) << "): GPU 0x" << g
                      << ", host 0x" << want;
    }
    EXPECT_EQ(mismatches, 0) << function_name(f) << ": " << mismatches << " of " << n << " inputs differ";
  }
}

// The fused kernels' bf16 lookup table (fast.cuh ActTable, as a row+col kernel with fused
// epilogue kFuse uses it): each of 32 CTAs fills its table and looks up 2048 bf16 values, 8 per thread as
// the kernels do (in the table or evaluated), so every bf16 value is looked up once; the table
// computed by the CTAs, then copied from the host-made one (cuda::device_act_table).
template <int kFuse>
struct TableConfig {
  static constexpr cuda::FastKey kKey{2, num::Scheme::mx, num::ElemFormat::e4m3fn, cuda::FastShape::colblocks, 32, 32,
                                      num::ScaleLayout::row_major, num::ScaleLayout::row_major, kFuse};
  static constexpr bool kDact = (kFuse & cuda::kFuseDact) != 0;
  static constexpr int kThreads = 256;
};

template <int kFuse>
__global__ void look_up_every_bf16(uint32_t* out, const float* src) {
  using Table = cuda::ActTable<TableConfig<kFuse>>;
  static_assert(Table::kOn);
  Table::fill(src);
  const uint32_t b0 = (blockIdx.x * 256 + threadIdx.x) * 8;
  uint32_t k[4];
  for (int q = 0; q < 4; ++q) k[q] = (b0 + 2 * q) | ((b0 + 2 * q + 1) << 16);
  const cuda::Row8 f = Table::lookup(k, true);
  for (int j = 0; j < 8; ++j) out[b0 + j] = __float_as_uint(f.v[j]);
}

template <int kFuse>
void expect_table_equals_evaluation() {
  using Table = cuda::ActTable<TableConfig<kFuse>>;
  const float* copied = cuda::device_act_table(TableConfig<kFuse>::kKey, nullptr);
  ASSERT_NE(copied, nullptr) << "fuse " << kFuse;
  ASSERT_EQ(cuda::device_act_table(TableConfig<kFuse>::kKey, nullptr), copied);  // made once
  for (const float* src : {static_cast<const float*>(nullptr), copied}) {
    uint32_t* od = nullptr;
    ASSERT_EQ(cudaMalloc(&od, 65536 * 4), cudaSuccess);
    look_up_every_bf16<kFuse><<<32, 256>>>(od, src);
    std::vector<uint32_t> got(65536);
    ASSERT_EQ(cudaMemcpy(got.data(), od, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(od);
    int64_t mismatches = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      const float x = num::bits_float(b << 16);
      const uint32_t want =
          num::float_bits(TableConfig<kFuse>::kDact ? num::dact_f(Table::kFn, x) : num::act_f(Table::kFn, x));
      const bool both_nan = num::is_nan(num::bits_float(got[b])) && num::is_nan(num::bits_float(want));
      if (got[b] != want && !both_nan && mismatches++ < 3)
        ADD_FAILURE() << "fuse " << kFuse << (src ? " (copied)" : " (computed)") << ", bf16 bits 0x" << std::hex << b
                      << ": table 0x" << got[b] << ", host 0x" << want;
    }
    EXPECT_EQ(mismatches, 0) << "fuse " << kFuse << (src ? " (copied)" : " (computed)");
  }
  // the copy reads the source: a table of sentinels (entry i holds i + 0.5) comes back for every
  // value inside the table
  using T = num::Bf16Table;
  std::vector<float> sentinels(T::kSize);
  for (uint32_t i = 0; i < T::kSize; ++i) sentinels[i] = float(i) + 0.5f;
  float* sd = nullptr;
  uint32_t* od = nullptr;
  ASSERT_EQ(cudaMalloc(&sd, T::kSize * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&od, 65536 * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(sd, sentinels.data(), T::kSize * 4, cudaMemcpyHostToDevice), cudaSuccess);
  look_up_every_bf16<kFuse><<<32, 256>>>(od, sd);
  std::vector<uint32_t> got(65536);
  ASSERT_EQ(cudaMemcpy(got.data(), od, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(od);
  cudaFree(sd);
  int64_t inside = 0, wrong = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    if (T::offset(b) >= T::kHalf) continue;  // evaluated, not looked up
    ++inside;
    if (got[b] != num::float_bits(sentinels[T::entry(b)]) && wrong++ < 3)
      ADD_FAILURE() << "fuse " << kFuse << ", bf16 bits 0x" << std::hex << b << ": 0x" << got[b]
                    << ", not the sentinel";
  }
  EXPECT_EQ(inside, int64_t(T::kSize));
  EXPECT_EQ(wrong, 0) << "fuse " << kFuse;
}

TEST(GpuNumerics, Bf16TableEqualsTheHostForEveryValue) {
  REQUIRE_GPU();
  using A = Activation;
  constexpr int kD = cuda::kFuseDact;
  expect_table_equals_evaluation<int(A::gelu)>();
  expect_table_equals_evaluation<int(A::gelu_tanh)>();
  expect_table_equals_evaluation<int(A::silu)>();
  expect_table_equals_evaluation<int(A::qgelu)>();
  expect_table_equals_evaluation<int(A::gelu) | kD>();
  expect_table_equals_evaluation<int(A::gelu_tanh) | kD>();
  expect_table_equals_evaluation<int(A::silu) | kD>();
  expect_table_equals_evaluation<int(A::qgelu) | kD>();
  expect_table_equals_evaluation<int(A::swiglu)>();  // silu, its gate
  expect_table_equals_evaluation<int(A::geglu)>();   // gelu
}

}  // namespace
}  // namespace mxq::gpu_test
