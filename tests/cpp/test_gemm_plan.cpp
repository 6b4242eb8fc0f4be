// The GEMM's tile and path choice (mxq/gemm_plan.hpp): a pure function of the shape and the
// architecture, checked for its rules on the issue's shapes and on the edge cases.
#include <gtest/gtest.h>

#include "mxq/error.hpp"
#include "mxq/gemm_plan.hpp"

namespace mxq {
namespace {

const ArchDesc kH200 = ArchDesc::h200();

int64_t waves_for(int64_t m, int64_t n, int bn) { return ((m + 127) / 128 * ((n + bn - 1) / bn) + 131) / 132; }

TEST(GemmPlan, EveryIssueShapeHasAValidPlan) {
  for (int64_t m : {1, 16, 64, 128, 1024, 4096})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                        {4096, 7168}, {7168, 2048}})
      for (GemmKind kind : {GemmKind::d1d2, GemmKind::d1d1})
        for (DType out : {DType::bfloat16, DType::float32}) {
          const GemmPlan p = plan_gemm(m, n, k, kind, out, kH200);
          EXPECT_EQ(p.path, m <= 64 ? "swap-ab" : "tma-wgmma") << to_string(p);
          EXPECT_EQ(p.block_k, 128);
          EXPECT_GE(p.stages, 2) << to_string(p);
          EXPECT_LE(p.stages, 8);
          EXPECT_LE(p.smem_bytes, kH200.smem_per_block) << to_string(p);
          EXPECT_GT(p.last_wave, 0.0);
          EXPECT_LE(p.last_wave, 1.0);
        }
  const GemmPlan cube = plan_gemm(8192, 8192, 8192, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(cube.path, "tma-wgmma");
  EXPECT_EQ(cube.cluster, 2);
}

TEST(GemmPlan, BlockNHasTheFewestWaves) {
  for (int64_t m : {128, 1024, 4096})
    for (int64_t n : {2112, 7168, 24576}) {
      const GemmPlan p = plan_gemm(m, n, 7168, GemmKind::d1d2, DType::bfloat16, kH200);
      for (int bn = 16; bn <= 256; bn += 16) EXPECT_LE(p.waves, waves_for(m, n, bn)) << m << "x" << n << " bn " << bn;
      EXPECT_GE(p.stages, 3);
      EXPECT_EQ(p.waves, waves_for(m, n, p.block_n));
    }
}

TEST(GemmPlan, DecodeSwapsAAndBAndSplitsK) {
  const GemmPlan one = plan_gemm(1, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(one.path, "swap-ab");
  EXPECT_EQ(one.block_n, 8);  // M rounded up to wgmma's N step
  EXPECT_EQ(one.split_k, 2);  // 56 tiles of N on 132 SMs
  EXPECT_EQ(plan_gemm(16, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200).block_n, 16);
  EXPECT_EQ(plan_gemm(64, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200).block_n, 64);
  EXPECT_EQ(plan_gemm(1, 24576, 1536, GemmKind::d1d2, DType::bfloat16, kH200).split_k, 1);  // 192 tiles already
}

TEST(GemmPlan, ShapesTmaCannotTakeGoGenericNeverToAnError) {
  EXPECT_EQ(plan_gemm(7, 7168, 100, GemmKind::d1d2, DType::bfloat16, kH200).path, "generic");
  EXPECT_NE(plan_gemm(7, 7168, 100, GemmKind::d1d2, DType::bfloat16, kH200).why.find("K=100"), std::string::npos);
  EXPECT_EQ(plan_gemm(129, 7, 7168, GemmKind::d1d2, DType::bfloat16, kH200).path, "generic");
  EXPECT_EQ(plan_gemm(129, 12, 7168, GemmKind::d1d2, DType::float32, kH200).path, "tma-wgmma");  // fp32 rows: 48 B
  ArchDesc ampere = kH200;
  ampere.major = 8;
  EXPECT_EQ(plan_gemm(4096, 4096, 4096, GemmKind::d1d2, DType::bfloat16, ampere).path, "generic");
  EXPECT_THROW(plan_gemm(0, 16, 16, GemmKind::d1d2, DType::bfloat16, kH200), Error);
  EXPECT_THROW(plan_gemm(16, 16, 16, GemmKind::d1d2, DType::float16, kH200), Error);
}

}  // namespace
}  // namespace mxq
