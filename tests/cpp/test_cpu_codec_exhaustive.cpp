// The CPU backend converts elements with its own vectorizable codec (src/cpu/element_codec.hpp)
// rather than num::encode(); both must agree for every input. This drives the public API and
// compares with num::encode (itself checked against ml_dtypes for every fp32 pattern by
// tests/python/test_fp32_sweep.py):
//   - FP8: fp8_tensor with a caller-given scale of 1, so q = satfinite(x * 1) = encode(x), for all
//     2^32 fp32 patterns, E4M3 and E5M2 (NaN: the fixed NaN code of recipes.h);
//   - FP4: mxfp4 blocks whose maximum is 6 (scale code 127, multiplier 1), for every fp32 pattern
//     with |x| <= 6 (larger ones cannot occur with multiplier 1: they would raise the scale);
//   - every bf16 and fp16 input pattern gives the same bytes as its fp32 value.
#include <atomic>
#include <thread>

#include "mxq/numerics/recipes.h"
#include "test_support.hpp"

namespace mxq::test {
namespace {

// fn(begin, end) over [0, n) on every core.
void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t t = std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int64_t k = 0; k < t; ++k) pool.emplace_back([&, k] { fn(n * k / t, n * (k + 1) / t); });
  for (auto& th : pool) th.join();
}

uint8_t reference_code(float x, num::ElemFormat f) {
  return num::is_nan(x) ? num::quantized_nan_code(f) : num::encode(x, f, num::Saturation::satfinite);
}

struct Mismatches {
  std::atomic<uint64_t> count{0};
  std::atomic<uint32_t> first{0};
  void add(uint64_t n, uint32_t example) {
    if (n && count.fetch_add(n) == 0) first = example;
  }
};

TEST(CpuCodecExhaustive, Fp8EveryFp32Pattern) {
  constexpr int64_t kRows = 1024, kCols = 4096, kChunk = kRows * kCols;  // 2^22 patterns per call
  std::vector<float> x(static_cast<size_t>(kChunk));
  const float one = 1.0f;
  QuantizeOptions opt;
  opt.scale_in = &one;
  struct Target {
    const char* recipe;
    num::ElemFormat elem;
    Mismatches bad;
  } targets[2] = {{"fp8_tensor", num::ElemFormat::e4m3fn, {}}, {"fp8_tensor_e5m2", num::ElemFormat::e5m2, {}}};
  Outputs out0(targets[0].recipe, kRows, kCols), out1(targets[1].recipe, kRows, kCols);
  Outputs* outs[2] = {&out0, &out1};
  uint64_t checked = 0;
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kChunk) {
    parallel_ranges(kChunk, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) x[size_t(i)] = float_of(uint32_t(base + uint64_t(i)));
    });
    for (int t = 0; t < 2; ++t) {
      quantize(f32_matrix(x, kRows, kCols), outs[t]->view(), opt);
      const auto& data = outs[t]->data;
      parallel_ranges(kChunk, [&](int64_t b, int64_t e) {
        uint64_t n = 0;
        uint32_t example = 0;
        for (int64_t i = b; i < e; ++i)
          if (data[size_t(i)] != reference_code(x[size_t(i)], targets[t].elem)) {
            if (!n) example = bits_of(x[size_t(i)]);
            ++n;
          }
        targets[t].bad.add(n, example);
      });
    }
    checked += kChunk;
  }
  std::printf("[ sweep    ] %llu fp32 patterns per FP8 format through quantize\n", (unsigned long long)checked);
  EXPECT_EQ(checked, uint64_t(1) << 32);
  for (auto& t : targets)
    EXPECT_EQ(t.bad.count.load(), 0u) << t.recipe << ": first mismatch at x=0x" << std::hex << t.bad.first.load();
}

TEST(CpuCodecExhaustive, Fp4EveryFp32PatternUpToSix) {
  // Rows of 32: element 0 is 6 (block maximum, scale code 127), elements 1..31 the patterns.
  constexpr int64_t kCols = 32, kPerRow = 31, kRows = 1 << 17;
  constexpr uint32_t kSixBits = 0x40c00000u;  // 6.0f; patterns [0, kSixBits] and their negatives
  constexpr uint64_t kTotal = 2 * (uint64_t(kSixBits) + 1);
  std::vector<float> x(size_t(kRows * kCols));
  Outputs out("mxfp4", kRows, kCols);
  Mismatches bad;
  uint64_t checked = 0;
  for (uint64_t base = 0; base < kTotal; base += kRows * kPerRow) {
    const uint64_t n = std::min<uint64_t>(kRows * kPerRow, kTotal - base);
    // pattern p (0 .. kTotal-1): magnitude bits p / 2, sign p % 2
    auto pattern = [&](uint64_t p) { return float_of(uint32_t(p >> 1) | (uint32_t(p & 1) << 31)); };
    parallel_ranges(kRows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        x[size_t(r * kCols)] = 6.0f;
        for (int64_t k = 0; k < kPerRow; ++k) {
          const uint64_t p = base + uint64_t(r * kPerRow + k);
          x[size_t(r * kCols + 1 + k)] = p < base + n ? pattern(p) : 0.0f;
        }
      }
    });
    quantize(f32_matrix(x, kRows, kCols), out.view());
    parallel_ranges(kRows, [&](int64_t b, int64_t e) {
      uint64_t m = 0;
      uint32_t example = 0;
      for (int64_t r = b; r < e; ++r) {
        if (out.scales[size_t(r)] != 127) {
          ++m;
          example = bits_of(x[size_t(r * kCols + 1)]);
        }
        for (int64_t k = 1; k < kCols; ++k) {
          const float v = x[size_t(r * kCols + k)];
          if (code_at(out.data, r * kCols + k, true) != reference_code(v, num::ElemFormat::e2m1)) {
            if (!m) example = bits_of(v);
            ++m;
          }
        }
      }
      bad.add(m, example);
    });
    checked += n;
  }
  std::printf("[ sweep    ] %llu fp32 patterns with |x| <= 6 through mxfp4\n", (unsigned long long)checked);
  EXPECT_EQ(checked, kTotal);
  EXPECT_EQ(bad.count.load(), 0u) << "first mismatch at x=0x" << std::hex << bad.first.load();
}

TEST(CpuCodecExhaustive, SixteenBitInputsEqualTheirFp32Values) {
  std::vector<uint16_t> h(65536);
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(i);
  std::vector<float> from_bf16(h.size()), from_fp16(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    from_bf16[i] = num::bf16_to_float(h[i]);
    from_fp16[i] = num::fp16_to_float(h[i]);
  }
  const float one = 1.0f;
  QuantizeOptions opt;
  opt.scale_in = &one;
  for (const char* recipe : {"fp8_tensor", "fp8_tensor_e5m2"})
    for (auto [dtype, ref] : {std::pair<DType, std::vector<float>*>{DType::bfloat16, &from_bf16},
                              std::pair<DType, std::vector<float>*>{DType::float16, &from_fp16}}) {
      SCOPED_TRACE(std::string(recipe) + " " + dtype_name(dtype));
      Outputs a(recipe, 256, 256), b(recipe, 256, 256);
      quantize(TensorView::matrix(h.data(), dtype, 256, 256), a.view(), opt);
      quantize(f32_matrix(*ref, 256, 256), b.view(), opt);
      EXPECT_EQ(a.data, b.data);
    }
}

TEST(CpuCodecExhaustive, SixteenBitDequantizeOutputsAreRoundedOnce) {
  // fp8_tensor outputs decode(q) * scale_inv over all 256 codes and 4096 random scales: the bf16 /
  // fp16 outputs are the fp32 outputs rounded to nearest even (num::float_to_bf16 / _fp16, checked
  // against ml_dtypes / numpy by tests/python).
  Rng rng(31);
  std::vector<uint8_t> codes(256 * 64);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t(i);
  for (int t = 0; t < 4096; ++t) {
    Outputs o("fp8_tensor", 64, 256);
    o.data = codes;
    const float scale_inv = float_of(uint32_t(rng.range(0x20000000, 0x5f000000)));
    std::memcpy(o.global_scale.data(), &scale_inv, 4);
    std::vector<float> y(codes.size());
    std::vector<uint16_t> yb(codes.size()), yh(codes.size());
    dequantize(o.view(), f32_matrix(y, 64, 256));
    dequantize(o.view(), TensorView::matrix(yb.data(), DType::bfloat16, 64, 256));
    dequantize(o.view(), TensorView::matrix(yh.data(), DType::float16, 64, 256));
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(yb[i], num::float_to_bf16(y[i])) << "y=" << y[i];
      ASSERT_EQ(yh[i], num::float_to_fp16(y[i])) << "y=" << y[i];
    }
  }
}

}  // namespace
}  // namespace mxq::test
