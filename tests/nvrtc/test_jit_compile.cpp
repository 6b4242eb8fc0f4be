// The JIT compiles every configuration the dispatcher can produce, for sm_90a, with NVRTC and
// the embedded kernel headers (no GPU needed). Label cpu.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/quantize/fast_select.hpp"
#include "mxq/api.hpp"
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
  // ... and so is every preset's own key, for every input dtype that has one
  const std::string presets = Recipe::preset_names();
  int found = 0;
  for (size_t at = 0; at < presets.size();) {
    size_t end = presets.find(',', at);
    std::string name = presets.substr(at, end == std::string::npos ? std::string::npos : end - at);
    name.erase(0, name.find_first_not_of(' '));
    at = end == std::string::npos ? presets.size() : end + 1;
    for (DType d : {DType::float32, DType::float16, DType::bfloat16}) {
      std::string why;
      const auto k = cuda::fast_key_for(Recipe::parse(name), d, why);
      if (!k) continue;
      EXPECT_NE(std::find(keys.begin(), keys.end(), *k), keys.end()) << name << " " << dtype_name(d);
      ++found;
    }
  }
  EXPECT_GE(found, 30);
}

// The column form is part of NVFP4's column-block key only (FastKey::col_same): its same-shape
// kernel is compiled without the transposed kernel's scale staging; every other recipe keeps one
// kernel for both forms (MXFP8's AOT entry among them).
TEST(JitCompile, ColumnFormKeysNvfp4Only) {
  std::string why;
  const auto key = [&](const char* r) { return *cuda::fast_key_for(Recipe::parse(r), DType::bfloat16, why); };
  EXPECT_TRUE(key("nvfp4:dir=both,colform=same").col_same);
  EXPECT_FALSE(key("nvfp4:dir=both").col_same);
  EXPECT_FALSE(key("nvfp4:dir=both,colform=same") == key("nvfp4:dir=both"));
  EXPECT_NE(key_text(key("nvfp4:dir=both,colform=same")), key_text(key("nvfp4:dir=both")));
  EXPECT_NE(kernel_source(key("nvfp4:dir=both,colform=same")), kernel_source(key("nvfp4:dir=both")));
  for (const char* r : {"mxfp8:dir=both", "mxfp4:dir=both", "fp4_block_1x32:dir=both"}) {
    const std::string same = std::string(r) + ",colform=same";
    EXPECT_TRUE(key(same.c_str()) == key(r)) << r;
  }
  cuda::FastKey bad = key("mxfp8:dir=both");
  bad.col_same = true;
  EXPECT_FALSE(cuda::fast_key_valid(bad));
  const auto keys = all_keys();
  EXPECT_TRUE(std::any_of(keys.begin(), keys.end(), [](const cuda::FastKey& k) { return k.col_same; }));
}

// The per-tensor rows kernels come in two (FastKey::one_launch): with the one-launch amax compiled
// in and without. Both are among the dispatcher's keys, distinct in text, name and packing; no
// other kernel has the bit.
TEST(JitCompile, OneLaunchTwinsKeyedApart) {
  const auto keys = all_keys();
  int twins = 0;
  for (const auto& k : keys) {
    if (k.one_launch) {
      EXPECT_TRUE(cuda::one_launch_capable(k)) << key_text(k);
      continue;
    }
    if (!cuda::one_launch_capable(k)) continue;
    const cuda::FastKey t = cuda::one_launch_twin(k);
    EXPECT_TRUE(std::find(keys.begin(), keys.end(), t) != keys.end()) << key_text(k);
    EXPECT_NE(key_text(t), key_text(k));
    EXPECT_NE(kernel_source(t), kernel_source(k));
    EXPECT_NE(kernel_source(t).find(", 0, false, true>>"), std::string::npos) << kernel_source(t);
    EXPECT_NE(pack_key(t, 90, 0), pack_key(k, 90, 0));
    ++twins;
  }
  EXPECT_GE(twins, 6);  // fp8_tensor (2 elements) and NVFP4, 3 input dtypes
  std::printf("%zu keys, %d of them per-tensor rows kernels with a one-launch twin\n", keys.size(), twins);
}

TEST(JitCompile, PackedKeysSeparateArchAndDevice) {
  const cuda::FastKey k = all_keys().front();
  EXPECT_NE(pack_key(k, 90, 0), pack_key(k, 100, 0));
  EXPECT_NE(pack_key(k, 90, 0), pack_key(k, 90, 1));
  EXPECT_NE(binary_key(k, 90).hex(), binary_key(k, 100).hex());
}

// Compiles keys for sm_`arch`a in parallel (NVRTC is thread-safe per program) and checks each.
// With `logs`, each key's NVRTC log (ptxas's registers and spills).
void expect_all_compile(const std::vector<cuda::FastKey>& keys, const char* what,
                        std::vector<std::string>* logs = nullptr, int arch = 90) {
  std::vector<std::string> failures(keys.size());
  if (logs) logs->assign(keys.size(), "");
  std::vector<size_t> sizes(keys.size());
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < keys.size();) {
        try {
          const Compiled c = compile(keys[i], arch);
          sizes[i] = c.cubin.size();
          if (logs) (*logs)[i] = c.log;
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
  std::printf("compiled %zu %s for sm_%da in %.1f s on %u threads (NVRTC %s)\n", keys.size(), what, arch, s, workers,
              nvrtc_version().c_str());
}

// Every key compiles for sm_90a.
TEST(JitCompile, EveryDispatcherConfigurationCompilesForSm90a) {
  expect_all_compile(all_keys(), "configurations");
}

// The quantize kernels are plain CUDA C++ (cp.async, griddepcontrol, the FP8 and FP4 cvt
// instructions, the bf16x2 and f16x2 arithmetic; no wgmma): NVRTC compiles them for Blackwell
// (sm_100a) as well. One key of each (input dtype, recipe kind, element format, thread shape), and
// a fused one. (The runtime still refuses devices other than sm_90, on which nothing of this has
// run: require_supported_device.)
TEST(JitCompile, QuantizeKernelsCompileForSm100a) {
  int major = 0, minor = 0;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  if (major * 10 + minor < 128) GTEST_SKIP() << "NVRTC " << nvrtc_version() << " has no sm_100a (12.8 or later)";
  std::vector<cuda::FastKey> keys;
  for (const auto& k : all_keys()) {
    const bool fresh = std::none_of(keys.begin(), keys.end(), [&](const cuda::FastKey& b) {
      return b.dtype == k.dtype && b.scheme == k.scheme && b.elem == k.elem && b.shape == k.shape;
    });
    if (fresh) keys.push_back(k);
  }
  cuda::FastKey fused = keys.back();
  fused.fuse = cuda::fuse_bits(int(num::Activation::swiglu), false, true);
  ASSERT_TRUE(cuda::fast_key_valid(fused)) << key_text(fused);
  keys.push_back(fused);
  expect_all_compile(keys, "configurations", nullptr, 100);
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

// The FP4 column-block kernels (rows and columns of 1 x 16 or 1 x 32 blocks in one pass; 128
// registers from bf16, 4 CTAs per SM, and 168 from f16) spill nothing either: NVFP4's holds the
// 128-entry scale table as the rows kernel does (FastTile::kScaleTable), for its row and its
// column blocks. bf16 and f16 input, each FP4 recipe, NVFP4's same-shape kernel too.
TEST(JitCompile, Fp4ColumnBlockKernelsDoNotSpill) {
  std::vector<cuda::FastKey> keys;
  for (const auto& k : all_keys()) {
    const bool fresh = std::none_of(keys.begin(), keys.end(), [&](const cuda::FastKey& b) {
      return b.scheme == k.scheme && b.g == k.g && b.row_layout == k.row_layout && b.dtype == k.dtype &&
             b.col_same == k.col_same;
    });
    if (k.shape == cuda::FastShape::colblocks && k.dtype != 0 && k.fuse == 0 && k.elem == num::ElemFormat::e2m1 && fresh)
      keys.push_back(k);
  }
  // MXFP4, NVFP4 (both column forms: its same-shape kernel is its own) and fp4_block_1x32, from bf16 and f16
  for (const int dtype : {1, 2}) {
    for (const num::Scheme scheme : {num::Scheme::mx, num::Scheme::nvfp4, num::Scheme::fp8_block})
      ASSERT_TRUE(std::any_of(keys.begin(), keys.end(), [&](const cuda::FastKey& k) {
        return k.scheme == scheme && k.dtype == dtype && !k.col_same;
      })) << "scheme " << int(scheme) << ", dtype " << dtype;
    ASSERT_TRUE(std::any_of(keys.begin(), keys.end(), [&](const cuda::FastKey& k) {
      return k.scheme == num::Scheme::nvfp4 && k.dtype == dtype && k.col_same;
    })) << "NVFP4's same-shape kernel, dtype " << dtype;
  }
  std::vector<std::string> logs;
  expect_all_compile(keys, "FP4 column-block configurations", &logs);
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t used = logs[i].find("Used ");
    EXPECT_NE(used, std::string::npos) << "no ptxas report for " << key_text(keys[i]);
    EXPECT_EQ(spill_store_bytes(logs[i]), 0) << key_text(keys[i]) << "\n" << logs[i];
    if (used != std::string::npos)
      std::printf("%s: %s\n", key_text(keys[i]).c_str(), logs[i].substr(used, logs[i].find('\n', used) - used).c_str());
  }
}

// Every key is valid, compiles, and ptxas reports no spill stores for it.
void expect_no_spills(const std::vector<cuda::FastKey>& keys, const char* what) {
  for (const auto& k : keys) ASSERT_TRUE(cuda::fast_key_valid(k)) << key_text(k);
  std::vector<std::string> logs;
  expect_all_compile(keys, what, &logs);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_NE(logs[i].find("Used "), std::string::npos) << "no ptxas report for " << key_text(keys[i]);
    EXPECT_EQ(spill_store_bytes(logs[i]), 0) << key_text(keys[i]) << "\n" << logs[i];
  }
}

// The column-block kernels that stage their 1-byte scales in shared memory (fast.cuh
// kByteScaleScheme) spill nothing from bf16 input: fp8_block's FP8 and FP4 1 x 32, plain and
// fused (staged, FP8's dgelu+dbias spilled 125 instructions' worth, so fused fp8_block kernels do
// not stage; FP4's dgelu+dbias spilled before any staging: the known gap of the fused 8-row
// shapes), and NVFP4's row_major one.
TEST(JitCompile, StagedColumnBlockKernelsDoNotSpill) {
  using A = num::Activation;
  using L = num::ScaleLayout;
  using E = num::ElemFormat;
  const int dgelu_dbias = cuda::fuse_bits(int(A::gelu), true, true), swiglu = cuda::fuse_bits(int(A::swiglu), false, false),
            gelu = cuda::fuse_bits(int(A::gelu), false, false);
  std::vector<cuda::FastKey> keys;
  for (auto [e, f] : {std::pair{E::e4m3fn, 0}, {E::e4m3fn, dgelu_dbias}, {E::e4m3fn, swiglu}, {E::e2m1, 0},
                      {E::e2m1, swiglu}, {E::e2m1, gelu}})
    keys.push_back({2, num::Scheme::fp8_block, e, cuda::FastShape::colblocks, 32, 32, L::row_major, L::row_major, f});
  keys.push_back({2, num::Scheme::nvfp4, num::ElemFormat::e2m1, cuda::FastShape::colblocks, 16, 16, L::row_major,
                  L::row_major});
  expect_no_spills(keys, "staged column-block configurations");
}

// The fused MXFP8 row+col kernels from bf16 walk flat, band by band (fast.cuh kFlatWalk) with no
// spills: main's 2-D walk spilled 96 bytes of bf16 dgelu+dbias (27 stores per tile), the walk that
// kept its flat index live 8.
TEST(JitCompile, FusedRowColKernelsDoNotSpill) {
  using A = num::Activation;
  std::vector<cuda::FastKey> keys;
  for (const int f : {cuda::fuse_bits(int(A::gelu), true, true), cuda::fuse_bits(int(A::swiglu), false, true),
                      cuda::fuse_bits(int(A::silu), true, true), cuda::fuse_bits(int(A::geglu), false, false)})
    keys.push_back({2, num::Scheme::mx, num::ElemFormat::e4m3fn, cuda::FastShape::colblocks, 32, 32,
                    num::ScaleLayout::row_major, num::ScaleLayout::row_major, f});
  expect_no_spills(keys, "fused MXFP8 row+col configurations");
}

// The fused rows kernels keep their tiles in registers: ptxas spills none of them to local
// memory (in session 15, 9 of 42 did, 44-164 bytes, until the geometry gave two-input and
// dbias-only kernels half tiles; mxfp8 + dbias went from 0.74 to 0.92-0.97 of copy bandwidth).
// fp32 and bf16 input, MXFP8, 1x128 FP8 blocks and NVFP4, and the fusions with the most live
// values. The 8-row shapes' fused activations still spill (not held here: a known gap).
TEST(JitCompile, FusedRowsKernelsDoNotSpill) {
  std::vector<cuda::FastKey> bases;
  for (const auto& k : all_keys()) {
    const bool wanted = k.shape == cuda::FastShape::rows && (k.dtype == 0 || k.dtype == 2) &&
                        ((k.scheme == num::Scheme::mx && k.elem == num::ElemFormat::e4m3fn) ||
                         (k.scheme == num::Scheme::fp8_block && k.g == 128) || k.scheme == num::Scheme::nvfp4);
    const bool fresh = std::none_of(bases.begin(), bases.end(), [&](const cuda::FastKey& b) {
      return b.dtype == k.dtype && b.scheme == k.scheme;
    });
    if (wanted && fresh) bases.push_back(k);
  }
  ASSERT_EQ(bases.size(), 6u);
  using A = num::Activation;
  const int fusions[] = {cuda::fuse_bits(0, false, true),          cuda::fuse_bits(int(A::swiglu), false, false),
                         cuda::fuse_bits(int(A::swiglu), false, true), cuda::fuse_bits(int(A::silu), true, true),
                         cuda::fuse_bits(int(A::gelu), true, true),    cuda::fuse_bits(int(A::silu), false, true),
                         cuda::fuse_bits(int(A::geglu), false, true)};
  std::vector<cuda::FastKey> keys;
  for (const auto& b : bases)
    for (int f : fusions) {
      cuda::FastKey k = b;
      k.fuse = f;
      ASSERT_TRUE(cuda::fast_key_valid(k)) << key_text(k);
      keys.push_back(k);
    }
  std::vector<std::string> logs;
  expect_all_compile(keys, "fused rows configurations", &logs);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_NE(logs[i].find("Used "), std::string::npos) << "no ptxas report for " << key_text(keys[i]);
    EXPECT_EQ(spill_store_bytes(logs[i]), 0) << key_text(keys[i]) << "\n" << logs[i];
  }
  EXPECT_EQ(spill_store_bytes("ptxas . 8 bytes stack frame, 44 bytes spill stores\nptxas . 0 bytes spill stores, "
                              "x\n 12 bytes spill stores"),
            56);
}

// The GEMM's TMA + wgmma kernel compiles under NVRTC from the header the AOT build uses, without
// spills, for every promotion interval and both tile heights, unspecialised (N and K at run time,
// as the AOT kernel) and specialised on issue 6's N and K; its lowered name takes the AOT kernel's
// parameters (the same CUtensorMap_st) and names the specialisation. Keys outside what the kernel
// and the packed cache key hold are refused, naming the value.
TEST(JitCompile, GemmWgmmaKernelCompilesForSm90a) {
  std::set<uint64_t> packed;
  std::set<std::string> names;
  std::vector<GemmKey> keys;
  for (int group : {1, 2, 4})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{0, 0}, {7168, 7168}, {300, 1120}, {24576, 1536}})
      keys.push_back({group, n, k, 128});
  for (int group : {1, 2, 4})  // 256-row tiles: fewer (N, K), for CI's time
    for (auto [n, k] : {std::pair<int64_t, int64_t>{0, 0}, {7168, 7168}})
      if (group != 2 || n == 0) keys.push_back({group, n, k, 256});
  // split-K clusters (128-row tiles): every group unspecialised at one split, specialised at both
  for (int group : {1, 2, 4}) keys.push_back({group, 0, 0, 128, group == 2 ? 4 : 2});
  keys.push_back({4, 7168, 7168, 128, 2});
  keys.push_back({4, 2112, 7168, 128, 4});
  // 1D1D (B's 1 x 128 scales per tile column): both tile heights, a split, the groups' extremes
  for (const GemmKey k : {GemmKey{1, 0, 0, 128, 1, true}, GemmKey{4, 7168, 7168, 128, 1, true},
                          GemmKey{1, 0, 0, 256, 1, true}, GemmKey{4, 0, 0, 128, 2, true}})
    keys.push_back(k);
  for (const GemmKey& key : keys) {
    ASSERT_TRUE(gemm_key_valid(key)) << gemm_key_text(key);
    const Compiled c = compile_gemm(key, 90);
    EXPECT_GT(c.cubin.size(), 1000u) << gemm_key_text(key);
    EXPECT_NE(c.lowered_name.find("gemm_wgmma_kernel"), std::string::npos) << c.lowered_name;
    EXPECT_NE(c.lowered_name.find("CUtensorMap_st"), std::string::npos) << c.lowered_name;
    EXPECT_NE(c.log.find("Used "), std::string::npos) << "no ptxas report for " << gemm_key_text(key);
    EXPECT_EQ(spill_store_bytes(c.log), 0) << gemm_key_text(key) << "\n" << c.log;
    names.insert(c.lowered_name);
    packed.insert(pack_gemm_key(key, 90, 0));
    packed.insert(pack_gemm_key(key, 127, 63));
  }
  EXPECT_EQ(names.size(), keys.size()) << "two GEMM specialisations share a kernel name";
  EXPECT_EQ(packed.size(), 2 * keys.size()) << "pack_gemm_key maps two keys to one";
  EXPECT_NE(gemm_binary_key({4, 7168, 7168}, 90), gemm_binary_key({4, 7168, 7168 + 16}, 90));
  EXPECT_NE(gemm_binary_key({4, 7168, 7168}, 90), gemm_binary_key({2, 7168, 7168}, 90));
  EXPECT_NE(gemm_binary_key({4, 7168, 7168, 128}, 90), gemm_binary_key({4, 7168, 7168, 256}, 90));
  EXPECT_EQ(gemm_key_text({4, 7168, 2048}), "wgmma 128x128 promote-k 128 N=7168 K=2048");
  EXPECT_EQ(gemm_key_text({1, 0, 0, 256}), "wgmma 256x128 promote-k 32 N=any K=any");
  EXPECT_EQ(gemm_key_text({4, 7168, 7168, 128, 2}), "wgmma 128x128 promote-k 128 N=7168 K=7168 split-K 2");
  EXPECT_NE(gemm_binary_key({4, 7168, 7168, 128, 2}, 90), gemm_binary_key({4, 7168, 7168, 128, 4}, 90));
  EXPECT_NE(gemm_binary_key({4, 7168, 7168}, 90), gemm_binary_key({4, 7168, 7168, 128, 1, true}, 90));
  EXPECT_EQ(gemm_key_text({4, 7168, 7168, 128, 2, true}), "wgmma 128x128 promote-k 128 N=7168 K=7168 split-K 2 1D1D");
  for (const GemmKey bad : {GemmKey{3, 128, 128}, GemmKey{4, int64_t(1) << 24, 128}, GemmKey{4, 128, 8},
                            GemmKey{4, 128, 136 + 4}, GemmKey{4, -1, 128}, GemmKey{4, 128, 128, 192},
                            GemmKey{4, 128, 128, 256, 2}, GemmKey{4, 128, 128, 128, 3}, GemmKey{4, 128, 128, 128, 8}}) {
    EXPECT_FALSE(gemm_key_valid(bad)) << gemm_key_text(bad);
    try {
      compile_gemm(bad, 90);
      ADD_FAILURE() << gemm_key_text(bad) << " compiled";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("block_m=" + std::to_string(bad.block_m) + " group=" +
                                           std::to_string(bad.group) + " N=" + std::to_string(bad.n) +
                                           " K=" + std::to_string(bad.k)),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(pack_gemm_key({4, 128, 128}, 128, 0), Error);  // arch takes 7 bits
  EXPECT_THROW(pack_gemm_key({4, 128, 128}, 90, 64), Error);
}

// `mxq cache warmup gemm:N=..,K=..` / jit_warmup compile the GEMM kernel specialised on N and K
// into the disk cache (this test's own directory), labelled with its configuration; malformed
// entries are refused, naming the entry.
TEST(JitCompile, GemmWarmupFillsTheDiskCache) {
  char tmpl[] = "/tmp/mxq_gemm_warmup_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/cache";
  ASSERT_EQ(setenv("MXQ_CACHE_DIR", dir.c_str(), 1), 0);  // before this process's first use of the cache
  // without promote_k both D dtypes' default intervals (32 for fp32 D, 128 for bf16); without
  // block_m both tile heights (the call's M chooses); with either, that one; at 128 rows also the
  // split-K kernels some M gets (N = 256, K = 1024: 8 K blocks, split 2 for few tiles)
  // (and kind=1d1d, the 1D1D recipe's kernel)
  const JitWarmupResult w = jit_warmup(
      {"gemm:N=256,K=512,block_m=256", "gemm:N=256,K=1024,promote_k=32",
       "gemm:kind=1d1d,N=256,K=512,block_m=256,promote_k=128"},
      90, 1);
  EXPECT_EQ(w.configs, 6);
  EXPECT_TRUE(w.failures.empty()) << w.failures.front();
  const JitCacheInfo info = jit_cache_info();
  EXPECT_EQ(info.dir.rfind(dir, 0), 0u) << info.dir;
  std::set<std::string> configs;
  for (const auto& e : info.entries) configs.insert(e.config);
  EXPECT_EQ(configs, (std::set<std::string>{"wgmma 256x128 promote-k 32 N=256 K=512 sm_90",
                                            "wgmma 256x128 promote-k 128 N=256 K=512 sm_90",
                                            "wgmma 256x128 promote-k 32 N=256 K=1024 sm_90",
                                            "wgmma 128x128 promote-k 32 N=256 K=1024 sm_90",
                                            "wgmma 128x128 promote-k 32 N=256 K=1024 split-K 2 sm_90",
                                            "wgmma 256x128 promote-k 128 N=256 K=512 1D1D sm_90"}));
  for (const char* bad : {"gemm:N=256", "gemm:N=256,K=520", "gemm:N=1,K=16,promote_k=48", "gemm:X=3,N=1,K=16",
                          "gemm:N=-4,K=16", "gemm:N=1,K=16,", "gemm:", "gemm:N=,K=16", "gemm:N=+16,K=16",
                          "gemm:N=16,K=16,N=32", "gemm:N=0,K=16", "gemm:N=16,K=1234567890123",
                          "gemm:N=16,K=16,block_m=192", "gemm:N=16,K=16,kind=2d2d",
                          "gemm:N=16,K=16,kind=1d1d,kind=1d1d"}) {
    try {
      jit_warmup({bad}, 90, 1);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
  // threads: no more workers than kernels (INT_MAX once aborted the process when the system
  // refused a thread), and a negative count is an error naming it
  const JitWarmupResult again = jit_warmup({"gemm:N=256,K=512,block_m=256"}, 90, std::numeric_limits<int>::max());
  EXPECT_EQ(again.configs, 2);
  try {
    jit_warmup({"gemm:N=256,K=512,block_m=256"}, 90, -1);
    ADD_FAILURE() << "threads=-1 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("threads=-1; expected 0 (one per core) or more"), std::string::npos)
        << e.what();
  }
  try {  // wgmma is sm_90a's: refused by name, not a packing failure
    jit_warmup({"gemm:N=256,K=512"}, 100, 1);
    ADD_FAILURE() << "gemm warmup for sm_100 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("arch=100 with gemm entries"), std::string::npos) << e.what();
  }
  for (int arch : {-1, 80, 89, 95, 130}) {  // not an architecture NVRTC compiles our kernels for: refused up front
    for (const char* entry : {"mxfp8", "gemm:N=256,K=512"}) {
      try {
        jit_warmup({entry}, arch, 1);
        ADD_FAILURE() << entry << " warmup for sm_" << arch << " accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find("arch=" + std::to_string(arch) + " is not supported; expected 0"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  try {
    jit_warmup({"gemm:N=16,K=16,block_m=192"}, 90, 1);
    ADD_FAILURE() << "block_m=192 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_m=192; expected 0 (the plan's choice), 128 or 256"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(tmpl);
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
