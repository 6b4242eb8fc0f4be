// The GEMM benchmark's rotation of B (src/cli/bench_gemm.cpp weight_copies): enough copies of the
// weights that the timed calls read them from DRAM, not from the L2 the call before filled.
#include <gtest/gtest.h>

#include "cli/bench_gemm.hpp"
#include "mxq/mxq.hpp"

namespace {

int64_t weight_bytes(const mxq::Recipe& rb, int64_t n, int64_t k) {
  const mxq::QuantizedLayout b = mxq::plan(rb, n, k);
  return b.data.bytes + b.scales.bytes;
}

// The fewest copies that hold twice the L2, at most kMaxWeightCopies; one for weights past it.
TEST(BenchGemm, WeightCopiesHoldTwiceTheL2WithTheFewestCopies) {
  const mxq::Recipe rb = mxq::Recipe::parse("fp8_block_128x128");
  const int64_t l2 = mxq::cli::bench_l2_bytes();
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                      {4096, 7168}, {7168, 2048}, {128, 128}, {16384, 16384}}) {
    const int c = mxq::cli::weight_copies(rb, n, k);
    const int64_t bytes = weight_bytes(rb, n, k);
    SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(k));
    ASSERT_GE(c, 1);
    ASSERT_LE(c, mxq::cli::kMaxWeightCopies);
    if (c < mxq::cli::kMaxWeightCopies) {
      EXPECT_GE(c * bytes, 2 * l2);
    }
    if (c > 1) {
      EXPECT_LT((c - 1) * bytes, 2 * l2);
    }
  }
  EXPECT_EQ(mxq::cli::weight_copies(rb, 16384, 16384), 1);                        // 268 MB
  EXPECT_EQ(mxq::cli::weight_copies(rb, 128, 128), mxq::cli::kMaxWeightCopies);  // 16 KB: capped
}

// The table's q+gemm column: a row's decode-step time where it was measured (M <= kChainMaxM),
// "-" where not.
TEST(BenchGemm, TableShowsTheDecodeStepWhereMeasured) {
  using mxq::cli::GemmBenchRow;
  GemmBenchRow decode{1, 2112, 7168, "cuda-aot", "swap-AB decode", "", 0, 9, 9.4, 3.2, 0.2, 1603, 0, 11.4};
  GemmBenchRow large{4096, 2112, 7168, "cuda-aot", "wgmma 128x128", "", 0, 9, 124.3, 997.6, 50.4, 122, 0, 0};
  const std::string t = mxq::cli::gemm_bench_table({decode, large}, mxq::GemmKind::d1d2);
  EXPECT_NE(t.find("q+gemm us"), std::string::npos) << t;
  const auto line = [&](const std::string& shape) {
    const size_t at = t.find(shape);
    return at == std::string::npos ? std::string() : t.substr(at, t.find('\n', at) - at);
  };
  const std::string d = line("1x2112x7168"), l = line("4096x2112x7168");
  EXPECT_EQ(d.substr(d.size() - 4), "11.4") << d;
  EXPECT_EQ(l.back(), '-') << l;
  EXPECT_LE(mxq::cli::kChainMaxM, 128);
}

}  // namespace
