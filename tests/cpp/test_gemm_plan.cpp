// The GEMM's path and tile choice (mxq/gemm_plan.hpp): a pure function of the shape and the
// architecture, which gemm() dispatches by; checked on the issue's shapes and on the edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <tuple>
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
        // the default interval follows D's dtype: 128 for bf16 (its rounding dwarfs the
        // difference), 32 for fp32 (issue 6's 2e-4 bar)
        const int pk = out == DType::bfloat16 ? 128 : 32;
        EXPECT_EQ(p.promote_k, pk) << to_string(p);
        // decode up to 32 rows, and up to 64 where its 64-row tiles fit one wave (3 CTAs per SM),
        // but at promote-k 128 the wgmma kernel takes 33..64 rows at K <= 2048, 17..32 at K <= 512
        const bool cede = pk == 128 && ((m > 32 && k <= 2048) || (m > 16 && k <= 512));
        const bool decode = (m <= 32 || (m <= 64 && (n + 63) / 64 <= 3 * 132)) && !cede;
        EXPECT_EQ(p.path, decode ? "swap-ab" : "tma-wgmma") << to_string(p);
        if (!decode) {
          EXPECT_NE(to_string(p).find("promote-k " + std::to_string(pk)), std::string::npos) << to_string(p);
        }
        // the dispatch's string-free rule says the same, given the interval
        EXPECT_EQ(gemm_path(m, n, k, GemmKind::d1d2, kH200, true, pk), decode ? GemmPath::swap_ab : GemmPath::tma_wgmma);
        EXPECT_EQ(p.block_k, 128);
        EXPECT_LE(p.smem_bytes, kH200.smem_per_block) << to_string(p);
        EXPECT_LE(p.ctas_per_sm * (p.smem_bytes + 1024), 228 * 1024) << to_string(p);  // they fit an SM
        // waves count the CTAs resident at once: the tma-wgmma kernel's one per SM, the
        // decode kernels' 2 (mma.sync; wgmma with 128-row tiles) or 3 (wgmma, 64-row tiles): one
        // wave on every issue shape
        const int64_t slots = int64_t(kH200.sms) * p.ctas_per_sm;
        EXPECT_EQ(p.ctas_per_sm, !decode ? 1 : gemm_config::decode_use_mma(m, k) ? 2 : p.block_n == 64 ? 3 : 2) << to_string(p);
        EXPECT_EQ(p.waves, (p.tiles + slots - 1) / slots);
        if (decode) {
          EXPECT_EQ(p.waves, 1) << to_string(p);
        }
        EXPECT_GT(p.last_wave, 0.0);
        EXPECT_LE(p.last_wave, 1.0);
        // 1D1D runs the same kernels (the wgmma kernel's 1D1D instance brings B's 1 x 128 scales
        // with each stage: 512 more bytes per stage)
        const GemmPlan w = plan_gemm(m, n, k, GemmKind::d1d1, out, kH200);
        EXPECT_EQ(w.path, p.path) << to_string(w);
        if (!decode) {
          EXPECT_EQ(w.smem_bytes, p.smem_bytes + 512 * p.stages) << to_string(w);
          EXPECT_LE(w.smem_bytes, kH200.smem_per_block) << to_string(w);
          EXPECT_NE(w.why.find("1x128 scales applied per tile column"), std::string::npos) << w.why;
        }
      }
}

TEST(GemmPlan, WgmmaTilesAreTheKernels) {
  const GemmPlan p = plan_gemm(4096, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(p.path, "tma-wgmma");
  EXPECT_EQ(p.block_m, 256);
  EXPECT_EQ(p.block_n, 128);
  EXPECT_EQ(p.stages, gemm_config::WgmmaTile<256>::kStages);
  EXPECT_EQ(p.smem_bytes, gemm_config::WgmmaTile<256>::kSmemBytes);
  EXPECT_EQ(p.tiles, 16 * 56);
  EXPECT_EQ(p.waves, 7);  // 896 tiles on 132 SMs
  EXPECT_EQ(p.cluster, 1);
  const GemmPlan q = plan_gemm(128, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200);
  EXPECT_EQ(q.block_m, 128);
  EXPECT_EQ(q.stages, gemm_config::WgmmaTile<128>::kStages);
  EXPECT_EQ(q.smem_bytes, gemm_config::WgmmaTile<128>::kSmemBytes);
  EXPECT_EQ(q.tiles, 2 * 56);  // 56 tiles, K split over clusters of 2 (WgmmaSplitKFillsTheSMs)
  EXPECT_EQ(q.split_k, 2);
  EXPECT_EQ(q.cluster, 2);
  EXPECT_EQ(q.waves, 1);
  // K % 128 != 0 keeps a small M off the decode kernel and on the wgmma one
  EXPECT_EQ(plan_gemm(1, 200, 1120, GemmKind::d1d2, DType::float32, kH200).path, "tma-wgmma");
}

// Split-K where 128-row tiles are few: the most CTAs per cluster (2 or 4) that keep every cluster
// resident in one wave (the H200's table: 66 clusters of 2, 31 of 4 at one CTA per SM) with >= 4 K
// blocks each; never at 256 rows or over more than one wave (measured slower, session 19).
TEST(GemmPlan, WgmmaSplitKFillsTheSMs) {
  struct Case {
    int64_t m, n, k;
    int split;
  };
  for (const Case c : {Case{128, 7168, 7168, 2},    // 56 tiles: 112 CTAs
                       Case{128, 2112, 7168, 4},    // 17 tiles: 68
                       Case{128, 4096, 7168, 2},    // 32 tiles: 32 clusters of 4 would not all be resident
                       Case{128, 7168, 2048, 2},    // 16 K blocks: 8 per CTA
                       Case{128, 2112, 1024, 2},    // 8 K blocks: 4 each at 2, 2 at 4 (too few)
                       Case{128, 2112, 512, 1},     // 4 K blocks
                       Case{128, 24576, 1536, 1},   // 192 tiles: no split
                       Case{65, 8448, 7168, 2},     // 66 tiles fit 66 clusters of 2 ...
                       Case{65, 8449, 7168, 1},     // ... 67 do not (ceil(8449 / 128) = 67)
                       Case{1024, 2112, 7168, 1},   // 256-row tiles
                       Case{129, 300, 7168, 4},     // 6 tiles (tails in M and N)
                       Case{1, 200, 1120, 2}}) {    // 2 tiles, 9 K blocks (a partial one): 4 and 5
    const GemmPlan p = plan_gemm(c.m, c.n, c.k, GemmKind::d1d2, DType::bfloat16, kH200);
    ASSERT_EQ(p.path, "tma-wgmma") << to_string(p);
    EXPECT_EQ(p.split_k, c.split) << to_string(p);
    EXPECT_EQ(p.cluster, c.split) << to_string(p);
    EXPECT_EQ(p.tiles, gemm_config::wgmma_tiles(c.m, c.n, p.block_m) * c.split) << to_string(p);
    if (c.split > 1) {
      EXPECT_EQ(p.waves, 1) << to_string(p);
    }
    EXPECT_EQ(p.why.find("splits each tile's K") != std::string::npos, c.split > 1) << p.why;
  }
  const gemm_config::ResidentClusters h200 = gemm_config::wgmma_resident(kH200);
  EXPECT_EQ(h200.at[1], 66);
  EXPECT_EQ(h200.at[2], 31);
  EXPECT_EQ(gemm_config::wgmma_split_k(128, 7168, 7168, 256, h200), 1);  // 256-row tiles never split
  // an sm_90 part without a residency table: the model's (a tenth of the slots lost from 4 up)
  const ArchDesc small = ArchDesc::sm90(100);
  EXPECT_EQ(plan_gemm(128, 2112, 7168, GemmKind::d1d2, DType::bfloat16, small).split_k, 4);  // 17 <= 22 clusters of 4
  EXPECT_EQ(plan_gemm(128, 3200, 7168, GemmKind::d1d2, DType::bfloat16, small).split_k, 2);  // 25 tiles
  // a modelled part of one SM holds no cluster of 2: no split (and no division by zero)
  EXPECT_EQ(plan_gemm(128, 128, 7168, GemmKind::d1d2, DType::bfloat16, ArchDesc::sm90(1)).split_k, 1);
}

// At promote-k 128 the decode kernel cedes short K to the wgmma kernel (measured faster there,
// session 19): M = 33..64 at K <= 2048, M = 17..32 at K <= 512, so for a bf16 D by default (promote-k 0
// resolves to 128); at promote-k 32 and 64, and at long K, the decode kernel keeps them; mma.sync's M <= 8 is never moved.
TEST(GemmPlan, ShortKAtPromoteK128TakesTheWgmmaKernel) {
  struct Case {
    int64_t m, n, k;
    bool wgmma;
  };
  for (const Case c : {Case{64, 24576, 1536, true}, Case{64, 7168, 2048, true}, Case{48, 24576, 1536, true},
                       Case{33, 7168, 2048, true}, Case{32, 32768, 512, true}, Case{17, 32768, 512, true},
                       Case{64, 7168, 2176, false}, Case{64, 2112, 7168, false}, Case{32, 24576, 1536, false},
                       Case{16, 32768, 512, false}, Case{8, 32768, 512, false}, Case{1, 2112, 512, false}}) {
    // 0: D's dtype's interval, 128 for bf16 and 32 for fp32
    for (const auto& [pk, out] : {std::pair{32, DType::bfloat16}, {64, DType::bfloat16}, {128, DType::bfloat16},
                                 {128, DType::float32}, {0, DType::bfloat16}, {0, DType::float32}}) {
      const int interval = pk ? pk : out == DType::bfloat16 ? 128 : 32;
      const bool wgmma = c.wgmma && interval == 128;
      const GemmPlan p = plan_gemm(c.m, c.n, c.k, GemmKind::d1d2, out, kH200, pk);
      EXPECT_EQ(p.path, wgmma ? "tma-wgmma" : "swap-ab")
          << c.m << "x" << c.n << "x" << c.k << " pk " << pk << " " << dtype_name(out) << ": " << p.why;
      EXPECT_EQ(p.promote_k, interval);
      EXPECT_EQ(gemm_path(c.m, c.n, c.k, GemmKind::d1d2, kH200, true, interval),
                wgmma ? GemmPath::tma_wgmma : GemmPath::swap_ab);
      if (wgmma) {
        EXPECT_NE(p.why.find("at promote-k 128"), std::string::npos) << p.why;
      }
    }
    try {  // a promote_k no call can have: an error naming it
      plan_gemm(c.m, c.n, c.k, GemmKind::d1d2, DType::bfloat16, kH200, 48);
      ADD_FAILURE() << "a plan at promote_k 48";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("promote_k=48; expected 0 (by D's dtype), 32, 64 or 128"), std::string::npos)
          << e.what();
    }
    // operands the wgmma kernel cannot take (other scale layouts) stay on the decode kernel; 1D1D
    // cedes as 1D2D does
    EXPECT_EQ(gemm_path(c.m, c.n, c.k, GemmKind::d1d2, kH200, false, 128), GemmPath::swap_ab);
    EXPECT_EQ(plan_gemm(c.m, c.n, c.k, GemmKind::d1d1, DType::bfloat16, kH200, 128).path,
              c.wgmma ? "tma-wgmma" : "swap-ab");
  }
}

// 256-row tiles where their waves (times 2 x 0.9 of a 128-row tile's work) are shorter than the
// 128-row tiles' waves; 128 where a 256-row tile would leave SMs idle.
TEST(GemmPlan, WgmmaTileRowsByWaves) {
  struct Case {
    int64_t m, n;
    int bm;
  };
  for (const Case c :
       {Case{65, 7168, 128}, Case{128, 7168, 128}, Case{256, 7168, 128},  // 1 wave of 128 rows
        Case{257, 7168, 256},  // 168 tiles of 128 rows: 2 waves (20) against 1 of 256 (18)
        Case{512, 7168, 256}, Case{1024, 7168, 256}, Case{4096, 7168, 256}, Case{8192, 8192, 256},
        Case{4096, 24576, 256}, Case{1024, 2112, 256},  // 136 tiles of 128 rows: 2 waves (20) against 1 of 256 (18)
        Case{2048, 2112, 128},                          // 272 tiles: 3 waves (30) against 2 of 256 (36)
        Case{4096, 2112, 128},                          // 544 tiles: 5 waves (50) against 3 of 256 (54)
        Case{128 * 132 + 1, 128, 256}}) {
    EXPECT_EQ(plan_gemm(c.m, c.n, 7168, GemmKind::d1d2, DType::bfloat16, kH200).block_m, c.bm) << c.m << "x" << c.n;
  }
  try {  // no SMs: an error naming them, not a division by zero
    plan_gemm(4096, 7168, 7168, GemmKind::d1d2, DType::bfloat16, ArchDesc::sm90(0));
    ADD_FAILURE() << "a plan for 0 SMs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arch.sms=0; expected at least 1 SM"), std::string::npos) << e.what();
  }
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

// The kernel walks in uint32_t: the same order as in int64_t, here up to the 2^31 - 1 tiles that
// gemm_wgmma_takes allows (the last tiles of a 2^16 x (2^15 - 1) grid).
TEST(GemmPlan, WgmmaTileOrderIsTheSameIn32Bits) {
  for (auto [mblocks, nblocks] : {std::pair<int64_t, int64_t>{7, 17}, {32, 56}, {1, 9}, {65536, 32767}}) {
    auto same = [&, mblocks = mblocks, nblocks = nblocks](int64_t t) {
      int64_t mb = -1, nb = -1;
      uint32_t mb32 = 0, nb32 = 0;
      gemm_config::wgmma_tile_at(t, mblocks, nblocks, mb, nb);
      gemm_config::wgmma_tile_at(uint32_t(t), uint32_t(mblocks), uint32_t(nblocks), mb32, nb32);
      return int64_t(mb32) == mb && int64_t(nb32) == nb;
    };
    const int64_t tiles = mblocks * nblocks;
    for (int64_t t : {tiles / 3, tiles - 2, tiles - 1}) EXPECT_TRUE(same(t)) << t << " of " << tiles;
    for (int64_t t = 0; t < std::min<int64_t>(tiles, 4096); ++t) ASSERT_TRUE(same(t)) << t << " of " << tiles;
  }
}

// The decode kernels take programmatic dependent launch where their grid fills two thirds of the
// slots (gemm_config::decode_pdl): not the sparse grids that ran slower with it on the H200.
TEST(GemmPlan, DecodeKernelsLaunchEarlyOnlyFromTwoThirdsOfTheirSlots) {
  EXPECT_TRUE(gemm_config::decode_pdl(200, 300));
  EXPECT_FALSE(gemm_config::decode_pdl(199, 300));
  struct Shape {
    int64_t m, n, k;
    bool pdl;
  };
  for (const Shape& s : {Shape{64, 7168, 16384, false}, Shape{16, 7168, 16384, false}, Shape{1, 2112, 7168, false},
                         Shape{16, 7168, 2048, false}, Shape{16, 2112, 7168, true}, Shape{16, 4096, 7168, true},
                         Shape{1, 7168, 2048, true}, Shape{1, 4096, 7168, true}, Shape{16, 32768, 512, true}}) {
    const GemmPlan p = plan_gemm(s.m, s.n, s.k, GemmKind::d1d2, DType::bfloat16, kH200, 128);
    ASSERT_EQ(p.path, "swap-ab") << s.m << "x" << s.n << "x" << s.k;
    const int64_t slots = gemm_config::cluster_slots(int64_t(p.ctas_per_sm) * kH200.sms, p.cluster,
                                                     gemm_config::decode_resident(kH200, p.ctas_per_sm));
    EXPECT_EQ(gemm_config::decode_pdl(p.tiles, slots), s.pdl) << s.m << "x" << s.n << "x" << s.k;
    EXPECT_EQ(p.early_launch, s.pdl) << s.m << "x" << s.n << "x" << s.k;
    EXPECT_NE(to_string(p).find(s.pdl ? ", programmatic launch;" : ", no programmatic launch"), std::string::npos)
        << to_string(p);
    EXPECT_EQ(s.pdl, p.last_wave >= 2.0 / 3) << s.m << "x" << s.n << "x" << s.k;  // the plan's one-wave fill
  }
  // the other kernels always
  using Mnk = std::tuple<int64_t, int64_t, int64_t>;
  for (const auto& [m, n, k] : {Mnk{4096, 7168, 7168}, Mnk{128, 2112, 7168}, Mnk{129, 300, 1000}}) {
    const GemmPlan p = plan_gemm(m, n, k, GemmKind::d1d2, DType::bfloat16, kH200, 128);
    EXPECT_NE(p.path, "swap-ab");
    EXPECT_TRUE(p.early_launch) << to_string(p);
  }
}

TEST(GemmPlan, DecodeKernelsByRows) {
  // M <= 8: the mma.sync kernel; 9..64: wgmma with n = 16, 32 or 64 (1D2D and 1D1D alike)
  for (auto [m, rows] : {std::pair<int64_t, int>{1, 8}, {8, 8}, {9, 16}, {16, 16}, {17, 32}, {32, 32}, {33, 64}, {64, 64}}) {
    for (GemmKind kind : {GemmKind::d1d2, GemmKind::d1d1}) {
      const GemmPlan p = plan_gemm(m, 7168, 7168, kind, DType::bfloat16, kH200);
      EXPECT_EQ(p.path, "swap-ab");
      EXPECT_EQ(p.block_m, rows) << m;
      if (m <= 8) {
        // 448 groups of 16 rows x 8 warps would not fit one wave (132 x 2 CTAs x 8 warps): 4 warps each
        EXPECT_EQ(p.block_n, 32);
        EXPECT_EQ(p.split_k, 1);
        EXPECT_EQ(p.tiles, 224);
        EXPECT_EQ(p.stages, 3);
        // 8 warps x 32 threads x 3 slots x 64 bytes of cp.async ring; 2 CTAs fit an SM (228 KB,
        // 1 KB reserved per CTA)
        EXPECT_EQ(p.smem_bytes, 8 * 32 * 3 * 64);
        EXPECT_LE(p.ctas_per_sm * (p.smem_bytes + 1024), 228 * 1024);
        continue;
      }
      EXPECT_EQ(p.block_n, 64);
      // 112 tiles: 112 clusters of 2 are resident (198 at 3 CTAs per SM), 4 would not be (92)
      EXPECT_EQ(p.ctas_per_sm, 3) << m;
      EXPECT_EQ(p.split_k, 2) << m;
      EXPECT_EQ(p.cluster, p.split_k);
      EXPECT_EQ(p.tiles, 224);
      const int stages = rows == 64 ? 4 : 6;
      EXPECT_EQ(p.stages, stages);
      // the stages of 64 weight rows + n activation rows, 128 bytes each, their n fp32 A scales and
      // mbarriers (a 128-byte slot for up to 32 scales), a chunk of 128 B scales and the 1024-byte
      // alignment; the CTAs per SM the plan counts on fit in 228 KB (1 KB reserved each)
      EXPECT_EQ(p.smem_bytes, stages * ((64 + rows) * 128 + 8 + (rows == 64 ? 256 : 128)) + 128 * 4 + 1024) << m;
      EXPECT_LE(p.ctas_per_sm * (p.smem_bytes + 1024), 228 * 1024) << m;
    }
  }
  // mma.sync (M <= 8): the K split per 16 weight rows: >= 4 blocks per warp where K allows (short
  // K: more rows per CTA), and no more warps than one wave holds (132 SMs x 2 CTAs x 8 warps)
  for (auto [n, k, rows] : std::vector<std::array<int64_t, 3>>{
           {2112, 7168, 16}, {4096, 7168, 16}, {7168, 7168, 32}, {7168, 8192, 32}, {7168, 2048, 32},
           {24576, 1536, 128}, {32768, 512, 128}, {1000, 896, 128}, {1000, 1024, 64}, {1 << 20, 7168, 128}}) {
    const GemmPlan p = plan_gemm(1, n, k, GemmKind::d1d2, DType::bfloat16, kH200);
    EXPECT_EQ(p.block_n, rows) << n << "x" << k;
    EXPECT_EQ(p.tiles, (n + rows - 1) / rows) << n << "x" << k;
    const int split = gemm_config::decode_mma_k_split(n, k, kH200.sms), blocks = int(k / 128);
    EXPECT_EQ(split * p.block_n / 16, gemm_config::kDecodeMmaWarps);
    EXPECT_TRUE(split == 1 || blocks / split >= 4) << k;
    EXPECT_TRUE(split == 1 || (n + 15) / 16 * split <= 132 * 2 * 8) << n;
  }
  // K >= 16384: the wgmma kernel from M = 1 (n = 16)
  for (int64_t m : {1, 8}) {
    const GemmPlan p = plan_gemm(m, 7168, 16384, GemmKind::d1d2, DType::bfloat16, kH200);
    EXPECT_EQ(p.block_m, 16) << m;
    EXPECT_EQ(p.block_n, 64) << m;
    EXPECT_EQ(p.split_k, 2) << m;
  }
  EXPECT_TRUE(gemm_config::decode_use_mma(8, 16383));
  EXPECT_FALSE(gemm_config::decode_use_mma(8, 16384));
  EXPECT_FALSE(gemm_config::decode_use_mma(9, 128));
  // wgmma (M > 8): tile rows and cluster: one wave holds every CTA where N allows, >= 4 K blocks each
  for (auto [m, n, k, rows, cluster] : std::vector<std::array<int64_t, 5>>{
           {16, 2112, 7168, 64, 8}, {16, 4096, 7168, 64, 4}, {9, 7168, 7168, 64, 2}, {16, 7168, 16384, 64, 2},
           {16, 7168, 2048, 64, 2}, {16, 24576, 1536, 64, 1}, {16, 32768, 512, 128, 1}, {16, 1000, 896, 64, 1},
           {16, 1000, 1024, 64, 2}, {32, 7168, 7168, 64, 2}, {32, 2112, 7168, 64, 8}, {12, 1 << 20, 7168, 128, 1},
           {16, 2112, 4224, 64, 8},
           // n = 64 (3 CTAs per SM, as n <= 32): 64 clusters of 4 are resident (92), 64 of 8 not (45)
           {64, 4096, 7168, 64, 4}, {48, 4096, 7168, 64, 4}, {64, 2112, 7168, 64, 8}, {64, 7168, 16384, 64, 2},
           // 128-row tiles (2 CTAs per SM) once 64-row ones exceed 396: 200 tiles, 132 clusters of 2
           {32, 25600, 7168, 128, 1}}) {
    const GemmPlan p = plan_gemm(m, n, k, GemmKind::d1d2, DType::bfloat16, kH200);
    const std::string at = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    EXPECT_EQ(p.path, "swap-ab");
    EXPECT_EQ(p.block_n, rows) << at;
    EXPECT_EQ(p.split_k, cluster) << at;
    EXPECT_EQ(p.tiles, (n + rows - 1) / rows * cluster) << at;
    // a cluster only where every cluster stays resident in one wave (the H200's measured
    // residency) with >= 4 K blocks per CTA, and a cluster twice the size would break one of these
    const int per_sm = gemm_config::decode_ctas_per_sm(int(rows));
    const int64_t tiles = (n + rows - 1) / rows;
    const gemm_config::ResidentClusters resident = gemm_config::decode_resident(kH200, per_sm);  // what the plan reads
    EXPECT_EQ(p.ctas_per_sm, per_sm) << at;
    EXPECT_EQ(p.waves, (tiles + resident.at[0] - 1) / resident.at[0]) << at;  // one unless N is huge
    EXPECT_TRUE(cluster == 1 || (tiles <= resident.at[gemm_config::cluster_log2(int(cluster))] && k / 128 / cluster >= 4)) << at;
    EXPECT_TRUE(cluster == 8 || tiles > resident.at[gemm_config::cluster_log2(int(2 * cluster))] || k / 128 / (2 * cluster) < 4)
        << at << ": a larger cluster fits";
  }
  // Without measured residency (another SM count) the plan models it: 114 SMs x 3 CTAs hold 38
  // clusters of 8 (342 x 9 / 80), so 38 tiles take clusters of 8 and 39 clusters of 4
  const ArchDesc other = ArchDesc::sm90(114);
  EXPECT_EQ(other.resident_clusters[0][0], 0);
  EXPECT_EQ(gemm_config::decode_resident(other, 3).at[3], 38);
  EXPECT_EQ(gemm_config::decode_resident(other, 2).at[2], 51);
  EXPECT_EQ(plan_gemm(64, 38 * 64, 7168, GemmKind::d1d2, DType::bfloat16, other).split_k, 8);
  EXPECT_EQ(plan_gemm(64, 39 * 64, 7168, GemmKind::d1d2, DType::bfloat16, other).split_k, 4);
  EXPECT_EQ(ArchDesc::sm90(132).resident_clusters[1][3], 45);
  // the H200's measured rows, by CTAs per SM: 2 (128-row tiles) and 3 (64-row tiles)
  EXPECT_EQ(gemm_config::decode_resident(kH200, 2).at[2], 62);
  EXPECT_EQ(gemm_config::decode_resident(kH200, 3).at[2], 92);
  EXPECT_EQ(plan_gemm(65, 7168, 7168, GemmKind::d1d1, DType::bfloat16, kH200).path, "tma-wgmma");
  // operands the wgmma kernel refuses: the decode kernel up to 64 rows, generic beyond
  EXPECT_EQ(gemm_path(48, 7168, 512, GemmKind::d1d2, kH200, false), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(64, 7168, 512, GemmKind::d1d2, kH200, false), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(65, 7168, 512, GemmKind::d1d2, kH200, false), GemmPath::generic);
  EXPECT_EQ(gemm_path(48, 7168, 512, GemmKind::d1d2, kH200, true), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(65, 7168, 512, GemmKind::d1d2, kH200, true), GemmPath::tma_wgmma);
  // from 33 rows the decode kernel only where its tiles fit one wave: 396 tiles of 64 rows
  EXPECT_EQ(gemm_path(48, 396 * 64, 512, GemmKind::d1d2, kH200, true), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(48, 396 * 64 + 1, 512, GemmKind::d1d2, kH200, true), GemmPath::tma_wgmma);
  EXPECT_EQ(gemm_path(32, 396 * 64 + 1, 512, GemmKind::d1d2, kH200, true), GemmPath::swap_ab);
  EXPECT_EQ(gemm_path(48, 396 * 64 + 1, 512, GemmKind::d1d2, kH200, false), GemmPath::swap_ab);
  for (int64_t m : {33, 48, 64, 65}) {
    EXPECT_EQ(plan_gemm(m, 7168, 7168, GemmKind::d1d2, DType::bfloat16, kH200).path, m <= 64 ? "swap-ab" : "tma-wgmma") << m;
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
  EXPECT_EQ(gemm_path(4096, 4096, 4096, GemmKind::d1d2, ampere), GemmPath::generic);
  EXPECT_EQ(gemm_path(129, 7168, 100, GemmKind::d1d2, kH200), GemmPath::generic);
  EXPECT_EQ(gemm_path(129, 7168, 7168, GemmKind::d1d1, kH200), GemmPath::tma_wgmma);
  EXPECT_EQ(gemm_path(129, 7168, 7168, GemmKind::d1d1, kH200, false), GemmPath::generic);
  EXPECT_THROW(plan_gemm(0, 16, 16, GemmKind::d1d2, DType::bfloat16, kH200), Error);
  EXPECT_THROW(plan_gemm(16, 16, 16, GemmKind::d1d2, DType::float16, kH200), Error);
}

}  // namespace
}  // namespace mxq
