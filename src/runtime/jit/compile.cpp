#include "runtime/jit/compile.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "cuda/gemm/config.h"
#include "cuda/quantize/fast_select.hpp"
#include "mxq/api.hpp"
#include "mxq/error.hpp"
#include "runtime/jit/sources.hpp"

namespace mxq::runtime::jit {
namespace {

constexpr int kSchemaVersion = 2;  // bump when the payload or the source template changes

const char* dtype_text(int d) { return d == 0 ? "f32" : (d == 1 ? "f16" : "bf16"); }
const char* elem_text(num::ElemFormat e) {
  return e == num::ElemFormat::e4m3fn ? "e4m3fn" : (e == num::ElemFormat::e5m2 ? "e5m2" : "e2m1");
}
const char* shape_text(cuda::FastShape s) {
  return s == cuda::FastShape::rows ? "rows" : (s == cuda::FastShape::colblocks ? "colblocks" : "two_d");
}
std::string nvrtc_log(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n <= 1) return "";
  std::string log(n, '\0');
  nvrtcGetProgramLog(p, log.data());
  log.resize(n - 1);
  return log;
}

// Field widths of pack_key: each enum's largest value must fit.
constexpr int kLog2Max = 7;  // g and h are powers of two up to 128
static_assert(int(num::Scheme::nvfp4) < 4 && int(num::ElemFormat::e2m1) < 4 && int(cuda::FastShape::two_d) < 4 &&
                  int(num::ScaleLayout::swizzled_128x4) < 4,
              "pack_key gives the enums 2 bits each");

int log2i(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

}  // namespace

std::string key_text(const cuda::FastKey& k) {
  std::string fused;
  if (k.fuse) {
    const auto act = num::Activation(k.fuse & cuda::kFuseActMask);
    fused = std::string(" ") + ((k.fuse & cuda::kFuseDact) ? "d" : "") + activation_name(act) +
            ((k.fuse & cuda::kFuseDbias) ? "+dbias" : "");
  }
  return std::string(dtype_text(k.dtype)) + " " + scheme_name(k.scheme) + " " + elem_text(k.elem) + " " +
         shape_text(k.shape) + " g=" + std::to_string(k.g) + " h=" + std::to_string(k.h) + " " +
         layout_name(k.row_layout) + "/" + layout_name(k.col_layout) + fused + (k.col_same ? " colform=same" : "") +
         (k.one_launch ? " one-launch" : "");
}

std::string kernel_name(const cuda::FastKey& k) {
  return "mxq::cuda::fast_quantize_kernel<mxq::cuda::FastConfig<" + std::to_string(k.dtype) +
         ", mxq::num::ElemFormat(" + std::to_string(int(k.elem)) + "), mxq::num::Scheme(" +
         std::to_string(int(k.scheme)) + "), mxq::cuda::FastShape(" + std::to_string(int(k.shape)) + "), " +
         std::to_string(k.g) + ", " + std::to_string(k.h) + ", mxq::num::ScaleLayout(" +
         std::to_string(int(k.row_layout)) + "), mxq::num::ScaleLayout(" + std::to_string(int(k.col_layout)) + "), " +
         std::to_string(k.fuse) +
         // col_same and one_launch named where set (col_same then too)
         (k.col_same || k.one_launch ? std::string(", ") + (k.col_same ? "true" : "false") : "") +
         (k.one_launch ? ", true" : "") + ">>";
}

std::string kernel_source(const cuda::FastKey& k) {
  return "// mxq JIT: " + key_text(k) + "\n#include \"cuda/quantize/fast.cuh\"\ntemplate __global__ void " +
         kernel_name(k) + "(mxq::cuda::TileParams);\n";
}

std::vector<std::string> compile_options(int arch) {
  // sm_90a and sm_100a: the architecture-specific targets (griddepcontrol, and later wgmma).
  const std::string target = "--gpu-architecture=sm_" + std::to_string(arch) + (arch >= 90 ? "a" : "");
  // -v: ptxas reports registers and spills in the log (Compiled::log; tests hold kernels to 0 spills)
  return {target, "-std=c++20", "-default-device", "--ptxas-options=-v"};
}

std::vector<int> jit_archs() {
  int n = 0;
  std::vector<int> all, ours;
  if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    all.resize(size_t(n));
    if (nvrtcGetSupportedArchs(all.data()) != NVRTC_SUCCESS) all.clear();
  }
  for (int a : all)
    if (a >= 90) ours.push_back(a);
  return ours;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

// Compiles `src` (with the embedded headers) for sm_`arch` and returns the cubin and the
// lowered name of the name expression `name`; `what` starts every error message.
Compiled compile_source(const std::string& src, const std::string& name, int arch, const std::string& what) {
  std::vector<const char*> hnames, htexts;
  for (int i = 0; i < kEmbeddedHeaderCount; ++i) {
    hnames.push_back(kEmbeddedHeaders[i].name);
    htexts.push_back(kEmbeddedHeaders[i].text);
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, src.c_str(), "mxq_jit.cu", int(hnames.size()), htexts.data(), hnames.data());
  if (r != NVRTC_SUCCESS) fail(ErrorCode::unsupported, what + " failed: " + nvrtcGetErrorString(r));
  struct Guard {
    nvrtcProgram& p;
    ~Guard() { nvrtcDestroyProgram(&p); }
  } guard{prog};
  nvrtcAddNameExpression(prog, name.c_str());
  const std::vector<std::string> opts = compile_options(arch);
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());
  r = nvrtcCompileProgram(prog, int(copts.size()), copts.data());
  if (r != NVRTC_SUCCESS)
    fail(ErrorCode::unsupported, what + " failed: " + nvrtcGetErrorString(r) + "\n" + nvrtc_log(prog));
  const char* lowered = nullptr;
  if (nvrtcGetLoweredName(prog, name.c_str(), &lowered) != NVRTC_SUCCESS || !lowered)
    fail(ErrorCode::internal, what + ": no lowered name for " + name);
  Compiled c;
  c.lowered_name = lowered;
  c.log = nvrtc_log(prog);
  size_t n = 0;
  if (nvrtcGetCUBINSize(prog, &n) != NVRTC_SUCCESS || n == 0) fail(ErrorCode::internal, what + ": no cubin");
  c.cubin.resize(n);
  nvrtcGetCUBIN(prog, reinterpret_cast<char*>(c.cubin.data()));
  return c;
}

}  // namespace

int spill_store_bytes(const std::string& log) {
  int total = 0;
  const std::string tag = " bytes spill stores";
  for (size_t at = log.find(tag); at != std::string::npos; at = log.find(tag, at + 1)) {
    size_t b = at;
    while (b > 0 && log[b - 1] >= '0' && log[b - 1] <= '9') --b;
    if (b < at) total += std::stoi(log.substr(b, at - b));
  }
  return total;
}

namespace {

// Disk-cache key of a generated source: a content hash over everything that changes the binary.
Key128 source_key(const std::string& source, int arch) {
  std::vector<std::string> parts = {"mxq-jit-schema-" + std::to_string(kSchemaVersion), MXQ_VERSION, source,
                                    "sm_" + std::to_string(arch), nvrtc_version()};
  for (const auto& o : compile_options(arch)) parts.push_back(o);
  for (int i = 0; i < kEmbeddedHeaderCount; ++i) {
    parts.push_back(kEmbeddedHeaders[i].name);
    parts.push_back(kEmbeddedHeaders[i].text);
  }
  std::vector<std::string_view> views(parts.begin(), parts.end());
  return content_hash(views);
}

}  // namespace

Compiled compile(const cuda::FastKey& k, int arch) {
  if (!cuda::fast_key_valid(k)) fail(ErrorCode::internal, "jit: invalid kernel key " + key_text(k));
  return compile_source(kernel_source(k), kernel_name(k), arch,
                        "jit: compiling " + key_text(k) + " for sm_" + std::to_string(arch) + " with NVRTC " +
                            nvrtc_version());
}

std::string gemm_key_problem(const GemmKey& k) {
  if (gemm_config::wgmma_variant_exists(k.block_m, k.split) && (k.group == 1 || k.group == 2 || k.group == 4) &&
      k.n >= 0 && k.n < kGemmKeyMaxNK && (k.k == 0 || (k.k >= 16 && k.k % 16 == 0 && k.k < kGemmKeyMaxNK)))
    return "";
  return "GEMM key block_m=" + std::to_string(k.block_m) + " group=" + std::to_string(k.group) +
         " N=" + std::to_string(k.n) + " K=" + std::to_string(k.k) + " split=" + std::to_string(k.split) +
         "; the JIT specialises block_m 128 or 256, group 1, 2 or 4 (promote-k 32, 64, 128), N < 2^24 (0: the kernel "
         "for any N), "
         "16 <= K < 2^24 with K % 16 == 0 (0: the kernel for any K), and split 1 (or 2 or 4 with block_m 128)";
}

std::string gemm_key_text(const GemmKey& k) {
  auto dim = [](int64_t v) { return v ? std::to_string(v) : std::string("any"); };
  return "wgmma " + std::to_string(k.block_m) + "x128 promote-k " + std::to_string(32 * k.group) + " N=" + dim(k.n) +
         " K=" + dim(k.k) + (k.split > 1 ? " split-K " + std::to_string(k.split) : "") + (k.b1d ? " 1D1D" : "");
}

std::string gemm_kernel_name(const GemmKey& k) {
  // the defaulted parameters named where they differ (1D2D's names are those of the keys before 1D1D)
  return "mxq::cuda::gemm_wgmma_kernel<" + std::to_string(k.block_m) + ", " + std::to_string(k.group) + ", " +
         std::to_string(k.n) + ", " + std::to_string(k.k) +
         (k.split > 1 || k.b1d ? ", " + std::to_string(k.split) : "") + (k.b1d ? ", true" : "") + ">";
}

std::string gemm_kernel_source(const GemmKey& k) {
  return "// mxq JIT: " + gemm_key_text(k) + "\n#include \"cuda/gemm/wgmma.cuh\"\ntemplate __global__ void " +
         gemm_kernel_name(k) +
         "(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, "
         "const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, "
         "const __grid_constant__ CUtensorMap, const mxq::cuda::GemmParams);\n";
}

Compiled compile_gemm(const GemmKey& k, int arch) {
  if (const std::string why = gemm_key_problem(k); !why.empty()) fail_arg("jit: " + why);
  return compile_source(gemm_kernel_source(k), gemm_kernel_name(k), arch,
                        "jit: compiling " + gemm_key_text(k) + " for sm_" + std::to_string(arch) + " with NVRTC " +
                            nvrtc_version());
}

Key128 gemm_binary_key(const GemmKey& k, int arch) { return source_key(gemm_kernel_source(k), arch); }

uint64_t pack_gemm_key(const GemmKey& k, int arch, int device) {
  // the variant: group index (0, 1, 2) + 3 x the tile (0: 128 rows, 1: 256 rows, 2: 128 rows split-K 2,
  // 3: split-K 4) + 12 for 1D1D; K is a multiple of 16, so K / 16 takes 4 bits fewer than N
  constexpr int kVariantBits = 5, kDimBits = 24, kKBits = kDimBits - 4, kArchBits = 7, kDeviceBits = 6;
  static_assert(kGemmKeyMaxNK == int64_t(1) << kDimBits, "N and K / 16 take kDimBits and kKBits");
  static_assert(kVariantBits + kDimBits + kKBits + kArchBits + kDeviceBits <= 64, "the GEMM key fits 64 bits");
  if (!gemm_key_valid(k) || arch < 0 || arch >= (1 << kArchBits) || device < 0 || device >= (1 << kDeviceBits))
    fail(ErrorCode::internal, "jit: GEMM key " + gemm_key_text(k) + " on device " + std::to_string(device) +
                                  " (sm_" + std::to_string(arch) + ") does not pack into 64 bits");
  const int tile = k.block_m == 256 ? 1 : k.split == 2 ? 2 : k.split == 4 ? 3 : 0;
  const uint64_t variant = (k.group == 1 ? 0 : (k.group == 2 ? 1 : 2)) + 3 * tile + (k.b1d ? 12 : 0);
  static_assert(2 * 12 <= 1 << kVariantBits, "the variants fit their bits");
  return variant | (uint64_t(k.n) << kVariantBits) | (uint64_t(k.k / 16) << (kVariantBits + kDimBits)) |
         (uint64_t(arch) << (kVariantBits + kDimBits + kKBits)) | (uint64_t(device) << (64 - kDeviceBits));
}

Key128 binary_key(const cuda::FastKey& k, int arch) { return source_key(kernel_source(k), arch); }

std::vector<uint8_t> to_payload(const Compiled& c) {
  const uint32_t n = uint32_t(c.lowered_name.size());
  std::vector<uint8_t> p(4 + n + c.cubin.size());
  std::memcpy(p.data(), &n, 4);
  std::memcpy(p.data() + 4, c.lowered_name.data(), n);
  std::memcpy(p.data() + 4 + n, c.cubin.data(), c.cubin.size());
  return p;
}

bool from_payload(const std::vector<uint8_t>& p, Compiled& c) {
  uint32_t n = 0;
  if (p.size() < 4) return false;
  std::memcpy(&n, p.data(), 4);
  if (p.size() < 4 + size_t(n) + 1) return false;
  c.lowered_name.assign(reinterpret_cast<const char*>(p.data()) + 4, n);
  c.cubin.assign(p.begin() + 4 + n, p.end());
  return true;
}

uint64_t pack_key(const cuda::FastKey& k, int arch, int device) {
  uint64_t v = 0;
  int at = 0;
  auto put = [&](uint64_t field, int bits) {
    v |= (field & ((uint64_t(1) << bits) - 1)) << at;
    at += bits;
  };
  put(uint64_t(k.dtype), 2);
  put(uint64_t(k.scheme), 2);
  put(uint64_t(k.elem), 2);
  put(uint64_t(k.shape), 2);
  put(uint64_t(log2i(k.g)), 3);
  put(uint64_t(log2i(k.h)), 3);
  put(uint64_t(k.row_layout), 2);
  put(uint64_t(k.col_layout), 2);
  put(uint64_t(k.fuse), 6);
  static_assert((cuda::kFuseActMask | cuda::kFuseDact | cuda::kFuseDbias) < 64, "fuse takes 6 bits");
  put(uint64_t(k.col_same), 1);
  put(uint64_t(k.one_launch), 1);
  put(uint64_t(arch), 12);
  put(uint64_t(device), 16);
  static_assert(kLog2Max < 8, "g and h take 3 bits");
  return v;
}

std::vector<cuda::FastKey> all_keys() {
  // Every preset with every direction, scale layout, element format and scale type: the keys of
  // those the recipe validation accepts, as the dispatcher derives them.
  std::vector<cuda::FastKey> keys;
  const std::string presets = Recipe::preset_names();
  std::vector<std::string> names;
  for (size_t at = 0; at < presets.size();) {
    const size_t end = presets.find(',', at);
    std::string n = presets.substr(at, end == std::string::npos ? std::string::npos : end - at);
    while (!n.empty() && n.front() == ' ') n.erase(0, 1);
    if (!n.empty()) names.push_back(n);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  for (const std::string& preset : names)
    for (const char* dir : {"row", "col", "both"})
      for (const char* layout : {"row_major", "mn_major_tma", "packed_ue8m0", "swizzled_128x4"})
        for (const char* extra : {"", ",pow2=1,scale=float8_e8m0fnu", ",elem=float8_e5m2", ",colform=same"}) {
          Recipe r;
          try {
            // row_major is every preset's default, and fp8_tensor refuses the option even so
            const std::string lay = std::string(layout) == "row_major" ? "" : std::string(",layout=") + layout;
            r = Recipe::parse(preset + ":dir=" + dir + lay + extra);
            r.validate();
          } catch (const Error&) {
            continue;
          }
          for (DType d : {DType::float32, DType::float16, DType::bfloat16}) {
            std::string why;
            const auto k = cuda::fast_key_for(r, d, why);
            if (!k) continue;
            for (const cuda::FastKey& v : cuda::with_one_launch_twin(*k))  // the dispatcher's variants
              if (std::find(keys.begin(), keys.end(), v) == keys.end()) keys.push_back(v);
          }
        }
  return keys;
}

}  // namespace mxq::runtime::jit
