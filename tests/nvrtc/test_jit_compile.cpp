// The JIT compiles every configuration the dispatcher can produce, for sm_90a, with NVRTC and
// the embedded kernel headers (no GPU needed). Label cpu.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mxq/error.hpp"
#include "mxq/numerics/activations.h"
#include "runtime/jit/compile.hpp"

namespace mxq::runtime::jit {
namespace {

TEST(JitCompile, KeysCoverThePresets) {
  const auto keys = all_keys();
  std::set<uint64_t> packed;
  for (const auto& k : keys) packed.insert(pack_key(k, 90, 0));
  EXPECT_EQ(packed.size(), keys.size()) << "pack_key maps two configurations to one key";
  EXPECT_GE(keys.size(), 60u);
  // Every preset's default form is among them (bf16 input).
  const auto has = [&](num::Scheme s, num::ElemFormat e, cuda::FastShape sh, int g, int h) {
    return std::any_of(keys.begin(), keys.end(), [&](const cuda::FastKey& k) {
      return k.dtype == 2 && k.scheme == s && k.elem == e && k.shape == sh && k.g == g && k.h == h;
    });
  };
  EXPECT_TRUE(has(num::Scheme::mx, num::ElemFormat::e4m3fn, cuda::FastShape::colblocks, 32, 32));
  EXPECT_TRUE(has(num::Scheme::nvfp4, num::ElemFormat::e2m1, cuda::FastShape::two_d, 16, 16));
  EXPECT_TRUE(has(num::Scheme::fp8_block, num::ElemFormat::e4m3fn, cuda::FastShape::two_d, 128, 128));
}

TEST(JitCompile, PackedKeysSeparateArchAndDevice) {
  const cuda::FastKey k = all_keys().front();
  EXPECT_NE(pack_key(k, 90, 0), pack_key(k, 100, 0));
  EXPECT_NE(pack_key(k, 90, 0), pack_key(k, 90, 1));
  EXPECT_NE(binary_key(k, 90).hex(), binary_key(k, 100).hex());
}

// Compiles keys for sm_90a in parallel (NVRTC is thread-safe per program) and checks each.
void expect_all_compile(const std::vector<cuda::FastKey>& keys, const char* what) {
  std::vector<std::string> failures(keys.size());
  std::vector<size_t> sizes(keys.size());
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < keys.size();) {
        try {
          const Compiled c = compile(keys[i], 90);
          sizes[i] = c.cubin.size();
          if (c.lowered_name.rfind("_Z", 0) != 0) failures[i] = "lowered name " + c.lowered_name;
        } catch (const Error& e) {
          failures[i] = e.what();
        }
      }
    });
  for (auto& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(failures[i], "") << key_text(keys[i]);
    EXPECT_GT(sizes[i], 1000u) << key_text(keys[i]);
  }
  std::printf("compiled %zu %s for sm_90a in %.1f s on %u threads (NVRTC %s)\n", keys.size(), what, s, workers,
              nvrtc_version().c_str());
}

// Every key compiles for sm_90a.
TEST(JitCompile, EveryDispatcherConfigurationCompilesForSm90a) {
  expect_all_compile(all_keys(), "configurations");
}

// Fused epilogues multiply the space (activation x dact x dbias on every key, ~1.2 s of NVRTC each
// on CI's cores), so CI compiles each fused variant on one key of each thread shape (input
// dtypes and element formats rotate across them); the GPU tests run many more.
TEST(JitCompile, FusedVariantsCompileForSm90a) {
  std::vector<cuda::FastKey> bases;
  for (const auto& k : all_keys()) {
    const bool fresh = std::none_of(bases.begin(), bases.end(), [&](const cuda::FastKey& b) {
      return b.shape == k.shape;
    });
    if (fresh) bases.push_back(k);
  }
  std::vector<cuda::FastKey> keys;
  for (size_t i = 0; i < bases.size(); ++i)
    for (int act = 1; act < cuda::kActivations; ++act)
      for (bool dact : {false, true}) {
        if (dact && act >= cuda::kFirstGated) continue;
        cuda::FastKey k = bases[i];
        k.fuse = cuda::fuse_bits(act, dact, (act + int(i)) % 2 == 0);
        ASSERT_TRUE(cuda::fast_key_valid(k)) << key_text(k);
        keys.push_back(k);
      }
  cuda::FastKey none = bases.front();
  none.fuse = cuda::fuse_bits(0, false, true);  // dbias alone
  keys.push_back(none);
  std::set<uint64_t> packed;
  for (const auto& k : keys) packed.insert(pack_key(k, 90, 0));
  EXPECT_EQ(packed.size(), keys.size()) << "pack_key maps two fused configurations to one key";
  cuda::FastKey bad = bases.front();
  bad.fuse = cuda::fuse_bits(int(num::Activation::swiglu), true, false);
  EXPECT_FALSE(cuda::fast_key_valid(bad)) << "dact of a gated activation";
  expect_all_compile(keys, "fused configurations");
}

// The GEMM's TMA + wgmma kernel compiles under NVRTC from the header the AOT build uses, for
// every promotion interval; its lowered name is the AOT kernel's (the same CUtensorMap_st).
TEST(JitCompile, GemmWgmmaKernelCompilesForSm90a) {
  for (int pk : {32, 64, 128}) {
    const Compiled c = compile_gemm_wgmma(pk, 90);
    EXPECT_GT(c.cubin.size(), 1000u) << pk;
    EXPECT_NE(c.lowered_name.find("gemm_wgmma_kernel"), std::string::npos) << c.lowered_name;
    EXPECT_NE(c.lowered_name.find("CUtensorMap_st"), std::string::npos) << c.lowered_name;
  }
  try {
    compile_gemm_wgmma(48, 90);
    FAIL() << "promote_k 48 compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("promote_k=48; expected 32, 64 or 128"), std::string::npos) << e.what();
  }
}

TEST(JitCompile, FailedCompileCarriesLogVersionAndConfig) {
  const cuda::FastKey k = all_keys().front();
  try {
    compile(k, 10);  // sm_10 does not exist
    FAIL() << "compiling for sm_10 succeeded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(key_text(k)), std::string::npos) << m;
    EXPECT_NE(m.find("NVRTC " + nvrtc_version()), std::string::npos) << m;
    EXPECT_NE(m.find("sm_10"), std::string::npos) << m;
  }
}

TEST(JitCompile, PayloadRoundTrip) {
  Compiled c{"_Z3fooi", {1, 2, 3, 4}}, d;
  ASSERT_TRUE(from_payload(to_payload(c), d));
  EXPECT_EQ(d.lowered_name, c.lowered_name);
  EXPECT_EQ(d.cubin, c.cubin);
  EXPECT_FALSE(from_payload({1, 0}, d));
}

}  // namespace
}  // namespace mxq::runtime::jit
