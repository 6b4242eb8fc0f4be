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

}  // namespace
