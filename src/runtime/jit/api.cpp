// The public JIT cache API (mxq/api.hpp) over runtime/jit/kernels.
#include <cuda_runtime.h>

#include <algorithm>
#include <thread>

#include "core/validate.hpp"
#include "cuda/check.hpp"
#include "cuda/gemm/config.h"
#include "cuda/quantize/fast_select.hpp"
#include "mxq/api.hpp"
#include "mxq/gemm_plan.hpp"
#include "runtime/jit/kernels.hpp"

namespace mxq {

JitCacheInfo jit_cache_info() {
  JitCacheInfo info;
  const std::string why = runtime::jit::unavailable_reason();
  info.jit_available = why.empty();
  info.detail = why.empty() ? runtime::jit::summary() : why;
  runtime::jit::DiskCache& d = runtime::jit::disk_cache();
  if (!d.usable()) return info;
  info.dir = d.dir();
  for (const auto& e : d.list()) info.entries.push_back({e.file, e.label, e.bytes, e.mtime_ns});
  return info;
}

uint64_t jit_cache_clear() {
  runtime::jit::DiskCache& d = runtime::jit::disk_cache();
  // A directory the cache refused is not this process's to empty: say so, never "removed 0"
  if (!d.usable())
    fail(ErrorCode::backend_unavailable, "jit_cache_clear: the disk cache" + (d.dir().empty() ? "" : " at " + d.dir()) +
                                             " is not in use (" + (d.why().empty() ? "no directory" : d.why()) +
                                             "); nothing was removed");
  return d.clear();
}

namespace {
// "RECIPE[+ACT][+dACT][+dbias]", e.g. "mxfp8+swiglu", "mxfp8:dir=both+dgelu+dbias": the recipe
// and the fused epilogue (FastKey::fuse) of a warm-up entry.
std::pair<Recipe, int> parse_warmup(const std::string& text) {
  size_t at = text.find('+');
  const Recipe r = Recipe::parse(text.substr(0, at));
  int act = 0;
  bool dact = false, dbias = false;
  std::vector<std::string> seen;
  while (at != std::string::npos) {
    const size_t next = text.find('+', at + 1);
    const std::string part = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const std::string arg = "jit_warmup: '" + text + "'";
    const std::string kind = part == "dbias" ? "dbias" : "activation";
    if (std::find(seen.begin(), seen.end(), kind) != seen.end())
      fail_arg(arg + ": a second " + kind + " ('" + part + "'); expected at most one activation (or dACT) and one dbias");
    seen.push_back(kind);
    if (part == "dbias") {
      dbias = true;
    } else if (part.size() > 1 && part[0] == 'd' && part != "dbias") {
      act = int(parse_activation(part.substr(1), arg + " (dACT)"));
      dact = true;
    } else {
      act = int(parse_activation(part, arg + " (fused part '" + part + "'; valid: an activation, dACT, dbias)"));
    }
    at = next;
  }
  const int fuse = cuda::fuse_bits(act, dact, dbias);
  if (dact && (act == 0 || act >= cuda::kFirstGated))
    fail_arg("jit_warmup: '" + text + "': dACT takes an elementwise activation (gelu, gelu_tanh, silu, relu, qgelu, srelu)");
  return {r, fuse};
}
// "gemm:N=7168,K=7168[,promote_k=128][,block_m=256][,kind=1d1d]": the TMA + wgmma GEMM kernel
// specialised on N and K (promote_k: when absent or 0, both D dtypes' defaults, 32 and 128, as
// resolve_promote_k gives them; block_m: both tile heights when absent, since the call's M
// chooses between them; kind: the recipe, 1d2d when absent).
std::vector<runtime::jit::GemmKey> parse_gemm_warmup(const std::string& text) {
  const std::string arg = "jit_warmup: '" + text + "'";
  int64_t n = -1, k = -1, pk = 0, bm = 0;
  bool b1d = false;
  std::string rest = text.substr(5);
  std::vector<std::string> seen;
  for (;;) {  // every comma-separated item, empty ones included (refused)
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma), name = item.substr(0, item.find('='));
    const size_t eq = item.find('=');
    const std::string digits = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (name == "kind" && (digits == "1d1d" || digits == "1d2d") &&
        std::find(seen.begin(), seen.end(), name) == seen.end()) {  // the one field that is not a number
      b1d = digits == "1d1d";
      seen.push_back(name);
      if (comma == std::string::npos) break;
      rest = rest.substr(comma + 1);
      continue;
    }
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      fail_arg(arg + ": '" + item +
               "' is not NAME=DIGITS (N, K, promote_k, block_m; up to 9 digits) or kind=1d2d|1d1d");
    const int64_t v = std::stoll(digits);
    int64_t* field = name == "N"           ? &n
                     : name == "K"         ? &k
                     : name == "promote_k" ? &pk
                     : name == "block_m"   ? &bm
                                           : nullptr;
    if (!field) fail_arg(arg + ": unknown field '" + name + "' (valid: N, K, promote_k, block_m, kind)");
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) fail_arg(arg + ": field '" + name + "' given twice");
    seen.push_back(name);
    *field = v;
    if (comma == std::string::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (n < 1 || k < 1) fail_arg(arg + ": needs N >= 1 and K >= 1, e.g. gemm:N=7168,K=7168");
  check_promote_k(pk, arg + ": promote_k");
  check_block_m(bm, arg + ": block_m");
  // the intervals of the calls these kernels serve: promote_k's, or each D dtype's default
  std::vector<int> intervals;
  for (const DType out : {DType::float32, DType::bfloat16}) {
    const int i = resolve_promote_k(int(pk), out);
    if (std::find(intervals.begin(), intervals.end(), i) == intervals.end()) intervals.push_back(i);
  }
  std::vector<runtime::jit::GemmKey> keys;
  for (const int interval : intervals) {
    for (const int rows : {128, 256}) {
      if (bm != 0 && bm != rows) continue;
      keys.push_back(runtime::jit::gemm_key_for(interval, rows, n, k, 1, b1d));
      if (const std::string why = runtime::jit::gemm_key_problem(keys.back()); !why.empty()) fail_arg(arg + ": " + why);
      // and the split-K kernels the plan gives some M (the fewest tiles, M = 1, split most) on an H200
      const int most = gemm_config::wgmma_split_k(1, n, k, rows, gemm_config::wgmma_resident(ArchDesc::h200()));
      for (int split = 2; split <= most; split *= 2)
        keys.push_back(runtime::jit::gemm_key_for(interval, rows, n, k, split, b1d));
    }
  }
  return keys;
}
}  // namespace

JitWarmupResult jit_warmup(const std::vector<std::string>& recipes, int arch, int threads) {
  if (threads < 0) fail_arg("jit_warmup: threads=" + std::to_string(threads) + "; expected 0 (one per core) or more");
  const std::string why = runtime::jit::unavailable_reason();
  if (!why.empty()) fail(ErrorCode::backend_unavailable, "jit_warmup: the JIT is unavailable: " + why);
  if (arch == 0) {
    int dev = 0;
    arch = cudaGetDevice(&dev) == cudaSuccess ? cuda::arch_of(dev) : 0;
    if (arch == 0) arch = 90;
    cudaGetLastError();  // no device: not an error here
  }
  std::vector<cuda::FastKey> keys;
  std::vector<runtime::jit::GemmKey> gemm_keys;
  if (recipes.empty()) {
    keys = runtime::jit::all_keys();
  } else {
    for (const std::string& text : recipes) {
      if (text.rfind("gemm:", 0) == 0) {
        for (const auto& key : parse_gemm_warmup(text)) gemm_keys.push_back(key);
        continue;
      }
      const auto [r, fuse] = parse_warmup(text);
      std::string no;  // why a dtype has no JIT kernel (the last one's, if none has)
      int found = 0;
      for (DType d : {DType::float32, DType::float16, DType::bfloat16}) {
        auto k = cuda::fast_key_for(r, d, no);
        if (!k) continue;
        ++found;
        k->fuse = fuse;
        for (const cuda::FastKey& v : cuda::with_one_launch_twin(*k))
          if (std::find(keys.begin(), keys.end(), v) == keys.end()) keys.push_back(v);
      }
      // asked for by name: compiling nothing for it would leave its calls to a fallback unseen
      if (found == 0)
        fail_arg("jit_warmup: '" + text + "' has no JIT kernel to compile (" + no +
                 "); its calls run cuda-aot's generic kernel");
    }
  }
  if (const std::vector<int> ok = runtime::jit::jit_archs(); std::find(ok.begin(), ok.end(), arch) == ok.end()) {
    std::string list;
    for (int a : ok) list += (list.empty() ? "" : ", ") + std::to_string(a);
    fail_arg("jit_warmup: arch=" + std::to_string(arch) + " is not supported; expected 0 (this GPU's) or one of " + list +
             " (NVRTC " + runtime::jit::nvrtc_version() + ", from sm_90: the kernels need its clusters and mbarriers)");
  }
  if (!gemm_keys.empty() && arch != 90)
    fail_arg("jit_warmup: arch=" + std::to_string(arch) +
             " with gemm entries; the GEMM's TMA + wgmma kernel is built for sm_90a only (expected arch 90)");
  if (threads == 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  // no more workers than kernels: the rest would start only to find nothing left
  threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(1, keys.size() + gemm_keys.size())));
  JitWarmupResult res;
  res.failures = runtime::jit::warmup(keys, gemm_keys, arch, threads);
  res.configs = int(keys.size() + gemm_keys.size() - res.failures.size());
  return res;
}

}  // namespace mxq
