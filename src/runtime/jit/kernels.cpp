#include "runtime/jit/kernels.hpp"

#include <cuda.h>
#include <nvrtc.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

#include "cuda/check.hpp"
#include "cuda/gemm/config.h"
#include "cuda/pdl.cuh"
#include "cuda/quantize/fast_launch.hpp"
#include "mxq/error.hpp"
#include "runtime/jit/memory_cache.hpp"
#include "runtime/settings.hpp"

namespace mxq::runtime::jit {
namespace {

MemoryCache<Compiled>& cubins() {
  static MemoryCache<Compiled> c;
  return c;
}

struct Loaded {
  CUmodule module;
  CUfunction fn;
  int blocks_per_sm;  // the occupancy the compiled kernel reaches (fast_grid)
};
MemoryCache<Loaded>& functions() {
  static MemoryCache<Loaded> c;
  return c;
}

// The driver API through the runtime's entry points: the library does not link libcuda, so
// that it loads on machines without a driver (CI).
template <class F>
F* driver(const char* name, bool required = true) {  // not required: nullptr when missing
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12080, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !fn) {
    if (!required) return nullptr;
    fail(ErrorCode::device_error, std::string("jit: the CUDA driver has no ") + name);
  }
  return reinterpret_cast<F*>(fn);
}
struct Driver {
  decltype(cuModuleLoadData)* module_load = driver<decltype(cuModuleLoadData)>("cuModuleLoadData");
  decltype(cuModuleGetFunction)* get_function = driver<decltype(cuModuleGetFunction)>("cuModuleGetFunction");
  decltype(cuModuleUnload)* module_unload = driver<decltype(cuModuleUnload)>("cuModuleUnload", false);
  decltype(cuLaunchKernelEx)* launch = driver<decltype(cuLaunchKernelEx)>("cuLaunchKernelEx");
  decltype(cuFuncSetAttribute)* set_attribute = driver<decltype(cuFuncSetAttribute)>("cuFuncSetAttribute");
  decltype(cuOccupancyMaxActiveBlocksPerMultiprocessor)* occupancy =
      driver<decltype(cuOccupancyMaxActiveBlocksPerMultiprocessor)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  decltype(cuGetErrorName)* error_name = driver<decltype(cuGetErrorName)>("cuGetErrorName");
  decltype(cuGetErrorString)* error_string = driver<decltype(cuGetErrorString)>("cuGetErrorString");
};
const Driver& drv() {
  static const Driver d;
  return d;
}

std::string cu_failure(CUresult r, const std::string& what) {
  const char* name = nullptr;
  const char* text = nullptr;
  drv().error_name(r, &name);
  drv().error_string(r, &text);
  return what + " failed: " + (name ? name : "?") + ": " + (text ? text : "?");
}
void check_cu(CUresult r, const std::string& what) {
  if (r != CUDA_SUCCESS) fail(ErrorCode::device_error, cu_failure(r, what));
}
// As check_cu, inside a memory-cache make(): running out of device memory is Retryable (not kept
// as the configuration's entry: the next call loads it again), any other failure is kept.
void check_cu_cached(CUresult r, const std::string& what) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw Retryable{std::make_exception_ptr(Error(ErrorCode::device_error, cu_failure(r, what)))};
  check_cu(r, what);
}

// MXQ_CACHE_MAX_MB: a positive integer; anything else keeps the default 1024 with one warning.
uint64_t cache_max_bytes() {
  constexpr uint64_t kDefault = uint64_t(1024) << 20;
  const char* v = std::getenv("MXQ_CACHE_MAX_MB");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  const long long mb = std::strtoll(v, &end, 10);
  if (*end == '\0' && mb > 0) return uint64_t(mb) << 20;
  log(LogLevel::warn, std::string("environment MXQ_CACHE_MAX_MB='") + v +
                          "' is not a positive number of megabytes; the JIT disk cache keeps its default cap of 1024");
  return kDefault;
}

}  // namespace

DiskCache& disk_cache() {
  static DiskCache c(default_cache_dir(), cache_max_bytes(),
                     [](const std::string& m) { log(LogLevel::warn, m); });  // messages name the cache directory
  return c;
}

std::string unavailable_reason() {
  static const std::string why = [] {
    if (!jit_enabled_by_env()) return std::string("turned off by MXQ_JIT=0");
    if (nvrtc_version().empty()) return std::string("NVRTC does not answer");
    return std::string();
  }();
  return why;
}

std::string summary() {
  const std::string why = unavailable_reason();
  if (!why.empty()) return why;
  DiskCache& d = disk_cache();
  return "NVRTC " + nvrtc_version() + ", disk cache " +
         (d.usable() ? d.dir() : "off (memory only: " + (d.why().empty() ? std::string("no directory") : d.why()) + ")");
}

namespace {
// The memory cache's entry for `packed`: the disk cache's payload under `bk`, else `make`'s
// compile, then stored on disk as `text`.
template <class Make>
const Compiled& cached(MemoryCache<Compiled>& cache, uint64_t packed, const Key128& bk, const std::string& text,
                       Make&& make) {
  return cache.get(packed, [&] {
    DiskCache& d = disk_cache();
    Compiled c;
    if (auto payload = d.load(bk); payload && from_payload(*payload, c)) return c;
    c = make();
    d.store(bk, to_payload(c), text);
    return c;
  });
}

// Loads `c` into `device`'s primary context with `smem` bytes of dynamic shared memory allowed,
// and clusters of 16 CTAs where `large_clusters` (inside a memory-cache make(): out of device
// memory is Retryable).
Loaded load(const Compiled& c, int device, int smem, const std::string& text, bool large_clusters = false) {
  cuda::RelaxedCapture relaxed;  // a first call may come inside CUDA-graph capture
  cuda::check_cuda(cudaSetDevice(device), "cudaSetDevice");  // the primary context, current for the driver API
  Loaded l{};
  check_cu_cached(drv().module_load(&l.module, c.cubin.data()), "jit: loading " + text);
  try {  // a failure past the load unloads the module: a Retryable one loads it again
    check_cu_cached(drv().get_function(&l.fn, l.module, c.lowered_name.c_str()), "jit: finding " + c.lowered_name);
    if (smem > 0)
      check_cu_cached(drv().set_attribute(l.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                      "jit: allowing " + std::to_string(smem) + " bytes of shared memory to " + text);
    if (large_clusters)  // the quantize kernels' one-launch amax (cuda::kOneLaunchCtas)
      check_cu_cached(drv().set_attribute(l.fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                      "jit: allowing clusters of 16 CTAs to " + text);
  } catch (...) {
    if (drv().module_unload) drv().module_unload(l.module);
    throw;
  }
  return l;
}
}  // namespace

const Compiled& compiled(const cuda::FastKey& key, int arch) {
  return cached(cubins(), pack_key(key, arch, 0), binary_key(key, arch), key_text(key) + " sm_" + std::to_string(arch),
                [&] { return compile(key, arch); });
}

namespace {
const Loaded& loaded(const cuda::FastKey& key, int device) {
  const int arch = cuda::arch_of(device);
  return functions().get(pack_key(key, arch, device), [&] {
    const cuda::FastGeometry g = cuda::fast_geometry(key);
    Loaded l = load(compiled(key, arch), device, g.slot_bytes, key_text(key), key.one_launch);
    l.blocks_per_sm = 0;
    if (drv().occupancy(&l.blocks_per_sm, l.fn, g.threads, size_t(g.slot_bytes)) != CUDA_SUCCESS ||
        l.blocks_per_sm <= 0)
      l.blocks_per_sm = g.min_blocks;
    return l;
  });
}
}  // namespace

int prepare(const cuda::FastKey& key, int device) { return loaded(key, device).blocks_per_sm; }

bool is_loaded(const cuda::FastKey& key, int device) {
  return functions().peek(pack_key(key, cuda::arch_of(device), device)) != nullptr;
}

void launch(const cuda::FastKey& key, int device, int64_t rows, int64_t cols, int sms, cudaStream_t stream,
            const cuda::TileParams& p) {
  const Loaded& k = loaded(key, device);
  const cuda::FastGeometry g = cuda::fast_geometry(key);
  const cuda::FastLaunch shape =
      cuda::fast_launch_shape(key, rows, cols, sms, k.blocks_per_sm, p.col && p.col_transposed, p.grid_amax != nullptr,
                              cuda::dram_gbps(device));
  const dim3 grid = shape.grid;
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid.x;
  cfg.gridDimY = grid.y;
  cfg.gridDimZ = 1;
  cfg.blockDimX = unsigned(g.threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = unsigned(g.slot_bytes);
  cfg.hStream = stream;
  CUlaunchAttribute attr[3] = {};
  attr[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr[0].value.programmaticStreamSerializationAllowed = cuda::launch_pdl(shape, device);
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (shape.cooperative) {  // the grid exchange: every CTA resident at once
    CUlaunchAttribute& a = attr[cfg.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
  }
  if (shape.cluster.x > 0) {  // the one-launch amax: the grid is one cluster (loaded() allowed 16 CTAs)
    CUlaunchAttribute& a = attr[cfg.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = shape.cluster.x;
    a.value.clusterDim.y = shape.cluster.y;
    a.value.clusterDim.z = shape.cluster.z;
  }
  cuda::TileParams params = p;
  cuda::set_act_table(params, key, stream);
  params.long_ctas = shape.long_ctas;
  params.flat_col_tiles = shape.flat_col_tiles;
  params.flat_band = shape.flat_band;
  void* args[] = {&params};
  if (const CUresult r = drv().launch(&cfg, k.fn, args, nullptr); r != CUDA_SUCCESS)
    check_cu(r, "jit: launching " + key_text(key));
}

namespace {
MemoryCache<Compiled>& gemm_cubins() {
  static MemoryCache<Compiled> c;
  return c;
}
MemoryCache<Loaded>& gemm_functions() {
  static MemoryCache<Loaded> c;
  return c;
}
const Loaded& gemm_loaded(const GemmKey& key, int device) {
  const int arch = cuda::arch_of(device);
  return gemm_functions().get(pack_gemm_key(key, arch, device), [&] {
    return load(compiled_gemm(key, arch), device, int(gemm_config::wgmma_smem_bytes(key.block_m, key.b1d)),
                gemm_key_text(key));
  });
}
}  // namespace

const Compiled& compiled_gemm(const GemmKey& key, int arch) {
  return cached(gemm_cubins(), pack_gemm_key(key, arch, 0), gemm_binary_key(key, arch),
                gemm_key_text(key) + " sm_" + std::to_string(arch), [&] { return compile_gemm(key, arch); });
}

void launch_gemm(const GemmKey& key, int device, unsigned grid, const CUtensorMap (&maps)[gemm_config::kWgmmaMaps],
                 const cuda::GemmParams& p, cudaStream_t stream) {
  if ((key.n && key.n != p.n) || (key.k && key.k != p.k))
    fail(ErrorCode::internal, "jit: launching " + gemm_key_text(key) + " for a call of N=" + std::to_string(p.n) +
                                  " K=" + std::to_string(p.k));
  if (key.b1d != (p.b.block_rows == 1))
    fail(ErrorCode::internal, "jit: launching " + gemm_key_text(key) + " for a call whose B has " +
                                  std::to_string(p.b.block_rows) + "-row scale blocks");
  const Loaded& k = gemm_loaded(key, device);
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = unsigned(gemm_config::kWgmmaThreads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = unsigned(gemm_config::wgmma_smem_bytes(key.block_m, key.b1d));
  cfg.hStream = stream;
  CUlaunchAttribute attr[2] = {};
  attr[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;  // as the AOT launch (pdl.cuh)
  attr[0].value.programmaticStreamSerializationAllowed = 1;
  attr[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;  // split-K: clusters of key.split CTAs along x
  attr[1].value.clusterDim.x = unsigned(key.split);
  attr[1].value.clusterDim.y = attr[1].value.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = key.split > 1 ? 2 : 1;
  CUtensorMap ma = maps[0], mb = maps[1], msa = maps[2], md = maps[3], msb = maps[4];
  cuda::GemmParams params = p;
  void* args[] = {&ma, &mb, &msa, &md, &msb, &params};
  if (const CUresult r = drv().launch(&cfg, k.fn, args, nullptr); r != CUDA_SUCCESS)
    check_cu(r, "jit: launching " + gemm_key_text(key));
}

std::vector<std::string> warmup(const std::vector<cuda::FastKey>& keys, const std::vector<GemmKey>& gemm_keys, int arch,
                                int threads) {
  std::vector<std::string> failures;
  std::mutex mu;
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const size_t total = keys.size() + gemm_keys.size();
  const auto work = [&] {
    for (size_t i; (i = next++) < total;) {
      const bool gemm = i >= keys.size();
      try {
        if (gemm)
          compiled_gemm(gemm_keys[i - keys.size()], arch);
        else
          compiled(keys[i], arch);
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back((gemm ? gemm_key_text(gemm_keys[i - keys.size()]) : key_text(keys[i])) + ": " + e.what());
      }
    }
  };
  // A worker the system refuses to start leaves the others to finish the list (and the calling
  // thread, when none starts): a joinable std::thread destroyed by an exception would terminate.
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();
  return failures;
}

}  // namespace mxq::runtime::jit
