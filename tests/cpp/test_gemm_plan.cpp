// The GEMM's path and tile choice (mxq/gemm_plan.hpp): a pure function of the shape and the
// architecture, which gemm() dispatches by; checked on the issue's shapes and on the edges.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "cuda/gemm/config.h"
#include "mxq/error.hpp"
#include "mxq/gemm_plan.hpp"

namespace mxq {
namespace {

const ArchDesc kH200 = ArchDesc::h200();

TEST(GemmPlan, EveryIssueShapeHasAPlanThatFits) {
  for (int64_t m : {1, 16, 64, 128, 1024, 4096})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                        {4096, 7168}, {7168, 2048}})
      for (DType out : {DType::bfloat16, DType::float32}) {
        const GemmPlan p = plan_gemm(m, n, k, GemmKind::d1d2, out, kH200);
        EXPECT_EQ(p.path, m <= 32 ? "swap-ab" : "tma-wgmma") << to_string(p);
        // the dispatch's string-free rule says the same
        EXPECT_EQ(gemm_path(m, k, GemmKind::d1d2, kH200), m <= 32 ? GemmPath::swap_ab : GemmPath::tma_wgmma);
        EXPECT_EQ(p.block_k, 128);
        EXPECT_LE(p.smem_bytes, kH200.smem_per_block) << to_string(p);
        EXPECT_EQ(p.waves, (p.tiles + kH200.sms - 1) / kH200.sms);
        EXPECT_GT(p.last_wave, 0.0);
        EXPECT_LE(p.last_wave, 1.0);
        // 1D1D has no wgmma kernel: decode where it takes the shape, generic otherwise
        EXPECT_EQ(plan_gemm(m, n, k, GemmKind::d1d1, out, kH200).path, m <= 64 ? "swap-ab" : "generic");
      }
}

TEST(GemmPlan, WgmmaTilesAreTheKernels) {
  const GemmPlan p = plan_gemm(4096, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(p.path, "tma-wgmma");
  EXPECT_EQ(p.block_m, 128);
  EXPECT_EQ(p.block_n, 128);
  EXPECT_EQ(p.stages, gemm_config::kWgmmaStages);
  EXPECT_EQ(p.smem_bytes, gemm_config::kWgmmaSmemBytes);
  EXPECT_EQ(p.tiles, 32 * 56);
  EXPECT_EQ(p.waves, 14);  // 1792 tiles on 132 SMs
  EXPECT_EQ(p.cluster, 1);
  // K % 128 != 0 keeps a small M off the decode kernel and on the wgmma one
  EXPECT_EQ(plan_gemm(1, 200, 1120, GemmKind::d1d2, DType::float32, kH200).path, "tma-wgmma");
}

// The wgmma kernel's persistent tile order visits every (M block, N block) exactly once, with
// the N blocks of one band side by side (partial last band included).
TEST(GemmPlan, WgmmaTileOrderVisitsEveryTileOnce) {
  for (int64_t mblocks : {1, 2, 7, 32})
    for (int64_t nblocks : {1, 3, 8, 9, 17, 56}) {
      std::vector<int> seen(size_t(mblocks * nblocks), 0);
      for (int64_t t = 0; t < mblocks * nblocks; ++t) {
        int64_t mb = -1, nb = -1;
        gemm_config::wgmma_tile_at(t, mblocks, nblocks, mb, nb);
        ASSERT_TRUE(mb >= 0 && mb < mblocks && nb >= 0 && nb < nblocks) << t << ": " << mb << ", " << nb;
        ++seen[size_t(mb * nblocks + nb)];
        EXPECT_EQ(nb / gemm_config::kWgmmaBandN, t / (mblocks * gemm_config::kWgmmaBandN)) << "band of tile " << t;
      }
      for (int v : seen) ASSERT_EQ(v, 1) << mblocks << " x " << nblocks;
    }
}

TEST(GemmPlan, DecodeTakesUpTo32RowsPerCta) {
  // all of M in one CTA row up to 32 rows, two CTA rows from 33
  for (auto [m, rows] : {std::pair<int64_t, int>{1, 8}, {8, 8}, {9, 16}, {16, 16}, {17, 32}, {32, 32}, {33, 32}, {64, 32}}) {
    // 1D2D from M = 33 goes to the wgmma kernel; 1D1D keeps the decode kernel up to 64
    const GemmPlan p = plan_gemm(m, 7168, 7168, m <= 32 ? GemmKind::d1d2 : GemmKind::d1d1, DType::bfloat16, kH200);
    EXPECT_EQ(p.path, "swap-ab");
    EXPECT_EQ(p.block_m, rows) << m;
    EXPECT_EQ(p.block_n, m <= 16 ? 32 : 64);  // 448 x 8 warps > one wave: 4 (2) warps per 16 rows
    EXPECT_EQ(p.tiles, 7168 / p.block_n * (m > 32 ? 2 : 1));
    EXPECT_EQ(p.split_k, 1);
    EXPECT_EQ(p.smem_bytes, gemm_config::decode_smem_bytes(m));
  }
  // the K split: >= 4 blocks per warp where K allows (short K: more rows per CTA), and no more
  // warps than one wave holds (132 SMs x 2 CTAs x 8 warps up to 16 rows, 1 CTA above)
  for (auto [m, n, k, rows] : std::vector<std::array<int64_t, 4>>{
           {16, 2112, 7168, 16}, {16, 4096, 7168, 16}, {1, 7168, 7168, 32}, {1, 7168, 16384, 32},
           {16, 7168, 2048, 32}, {16, 24576, 1536, 128}, {16, 32768, 512, 128}, {8, 1000, 896, 128},
           {16, 1000, 1024, 64}, {32, 7168, 7168, 64}, {32, 2112, 7168, 16}, {1, 1 << 20, 7168, 128}}) {
    const GemmPlan p = plan_gemm(m, n, k, GemmKind::d1d2, DType::bfloat16, kH200);
    EXPECT_EQ(p.path, "swap-ab");
    EXPECT_EQ(p.block_n, rows) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.tiles, (n + rows - 1) / rows) << m << "x" << n << "x" << k;
    const int split = gemm_config::decode_k_split(m, n, k, kH200.sms), blocks = int(k / 128);
    EXPECT_EQ(split * p.block_n / 16, gemm_config::kDecodeWarps);
    EXPECT_TRUE(split == 1 || blocks / split >= 4) << k;
    EXPECT_TRUE(split == 1 || (n + 15) / 16 * split <= 132 * gemm_config::decode_ctas_per_sm(m) * 8) << n;
  }
  EXPECT_EQ(plan_gemm(65, 7168, 7168, GemmKind::d1d1, DType::bfloat16, kH200).path, "generic");
  // operands the wgmma kernel refuses: the decode kernel up to 64 rows, generic beyond
  EXPECT_EQ(gemm_path(48, 512, GemmKind::d1d2, kH200, false), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(64, 512, GemmKind::d1d2, kH200, false), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(65, 512, GemmKind::d1d2, kH200, false), GemmPath::generic);
  EXPECT_EQ(gemm_path(48, 512, GemmKind::d1d2, kH200, true), GemmPath::tma_wgmma);
  for (int64_t m : {33, 48, 64, 65}) {
    EXPECT_EQ(plan_gemm(m, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200).path, "tma-wgmma") << m;
    // where TMA cannot take K (K % 16 != 0) there is no K % 128 == 0 either: generic
    EXPECT_EQ(plan_gemm(m, 7168, 7176, GemmKind::d1d2, DType::bfloat16, kH200).path, "generic") << m;
  }
}

TEST(GemmPlan, ShapesTheFastKernelsCannotTakeGoGenericNeverToAnError) {
  const GemmPlan odd = plan_gemm(129, 7168, 100, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(odd.path, "generic");
  EXPECT_NE(odd.why.find("K=100"), std::string::npos) << odd.why;
  EXPECT_EQ(plan_gemm(7, 7168, 100, GemmKind::d1d2, DType::bfloat16, kH200).path, "generic");
  EXPECT_EQ(plan_gemm(129, 7, 7168, GemmKind::d1d2, DType::bfloat16, kH200).path, "tma-wgmma");  // any N
  ArchDesc ampere = kH200;
  ampere.major = 8;
  const GemmPlan a = plan_gemm(4096, 4096, 4096, GemmKind::d1d2, DType::bfloat16, ampere);
  EXPECT_EQ(a.path, "generic");
  EXPECT_NE(a.why.find("sm_80"), std::string::npos) << a.why;
  EXPECT_EQ(gemm_path(4096, 4096, GemmKind::d1d2, ampere), GemmPath::generic);
  EXPECT_EQ(gemm_path(129, 100, GemmKind::d1d2, kH200), GemmPath::generic);
  EXPECT_EQ(gemm_path(129, 7168, GemmKind::d1d1, kH200), GemmPath::generic);
  EXPECT_THROW(plan_gemm(0, 16, 16, GemmKind::d1d2, DType::bfloat16, kH200), Error);
  EXPECT_THROW(plan_gemm(16, 16, 16, GemmKind::d1d2, DType::float16, kH200), Error);
}

}  // namespace
}  // namespace mxq
