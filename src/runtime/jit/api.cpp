// The public JIT cache API (mxq/api.hpp) over runtime/jit/kernels.
#include <cuda_runtime.h>

#include <algorithm>
#include <thread>

#include "cuda/quantize/fast_select.hpp"
#include "mxq/api.hpp"
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

uint64_t jit_cache_clear() { return runtime::jit::disk_cache().clear(); }

JitWarmupResult jit_warmup(const std::vector<std::string>& recipes, int arch, int threads) {
  const std::string why = runtime::jit::unavailable_reason();
  if (!why.empty()) fail(ErrorCode::backend_unavailable, "jit_warmup: the JIT is unavailable: " + why);
  if (arch == 0) {
    int dev = 0, major = 0, minor = 0;
    arch = 90;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
      arch = major * 10 + minor;
    cudaGetLastError();  // no device: not an error here
  }
  std::vector<cuda::FastKey> keys;
  if (recipes.empty()) {
    keys = runtime::jit::all_keys();
  } else {
    for (const std::string& text : recipes) {
      const Recipe r = Recipe::parse(text);
      for (DType d : {DType::float32, DType::float16, DType::bfloat16}) {
        std::string no;
        const auto k = cuda::fast_key_for(r, d, no);
        if (k && std::find(keys.begin(), keys.end(), *k) == keys.end()) keys.push_back(*k);
      }
    }
  }
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  JitWarmupResult res;
  res.failures = runtime::jit::warmup(keys, arch, threads);
  res.configs = int(keys.size() - res.failures.size());
  return res;
}

}  // namespace mxq
