// Launchers of the amax and dequantize kernels for every input / output dtype, the
// cluster-residency probe of the one-launch amax (cluster_fits) and the cooperative-launch probe
// of the grid exchange (cooperative_launch).
#include <algorithm>
#include <atomic>

#include "cuda/check.hpp"
#include "cuda/pdl.cuh"
#include "cuda/quantize/fast_launch.hpp"

#include "cuda/quantize/quantize_tile.cuh"
#include "cuda/quantize/quantize_tile_launch.cuh"

namespace mxq::cuda {

template <int kDType>
cudaError_t launch_amax(dim3 grid, cudaStream_t stream, const void* x, int64_t rows, int64_t cols, int64_t row_stride,
                 bool vec_ok, unsigned* out) {
  // grid (0, 0): one CTA that writes *out directly (small inputs); else *out was zeroed
  return grid.x == 0 ? pdl_launch(amax_small_kernel<kDType>, dim3(1), dim3(1024), stream, x, rows, cols,
                                                 row_stride, vec_ok, out)
                                    : pdl_launch(amax_kernel<kDType>, grid, dim3(128), stream, x, rows, cols,
                                                 row_stride, vec_ok, out);
}

// The output dtype of dequantize shares the 0/1/2 numbering of the inputs.
template <int kOutDType>
void launch_dequantize(num::ElemFormat elem, dim3 grid, cudaStream_t stream, const DequantParams& p) {
  using E = num::ElemFormat;
  switch (elem) {
    case E::e4m3fn: dequantize_kernel<E::e4m3fn, kOutDType><<<grid, 256, 0, stream>>>(p); break;
    case E::e5m2: dequantize_kernel<E::e5m2, kOutDType><<<grid, 256, 0, stream>>>(p); break;
    default: dequantize_kernel<E::e2m1, kOutDType><<<grid, 256, 0, stream>>>(p); break;
  }
}

// Zeroes `bytes` bytes at p unless the device flag *noop (where given) is non-zero: every reset
// before a quantize kernel (the per-tensor amax of the two-kernel path, dbias, scale padding).
// A memset node's edge to the next kernel is a full completion; this kernel is launched with PDL
// and lets the next one be scheduled at once (its griddepcontrol.wait still sees these zeros,
// since it waits for this grid to complete). A thread stores a 16-byte aligned chunk, byte by
// byte where the chunk straddles either end.
__global__ void zero_kernel(uint8_t* p, int64_t bytes, const float* noop) {
  pdl_trigger();
  pdl_wait();  // the kernel before may still read or write these bytes (or the flag)
  if (noop && *noop != 0.0f) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + uintptr_t(bytes);
  const uintptr_t first = begin & ~uintptr_t(15);
  const int64_t chunks = int64_t((end - first + 15) / 16);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += int64_t(gridDim.x) * blockDim.x) {
    const uintptr_t c = first + uintptr_t(i) * 16;
    if (c >= begin && c + 16 <= end) {
      *reinterpret_cast<uint4*>(c) = make_uint4(0, 0, 0, 0);
    } else {
      for (uintptr_t b = c < begin ? begin : c; b < c + 16 && b < end; ++b) *reinterpret_cast<uint8_t*>(b) = 0;
    }
  }
}

// Launched never: cluster_fits asks the occupancy calculator about clusters of it, with more
// than half an SM's shared memory so that its CTAs take an SM each.
__global__ void cluster_probe_kernel() {}

// device_act_table's entries, computed on the device as fast.cuh ActTable::eval computes them (the
// host's floating-point state, flush-to-zero say, must not reach them).
__global__ void act_table_kernel(float* out, num::Activation f, bool dact) {
  using T = num::Bf16Table;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < T::kSize; i += gridDim.x * blockDim.x) {
    out[i] = num::table_function(f, dact, T::value(i));
  }
}

cudaError_t launch_act_table(float* out, num::Activation f, bool dact, cudaStream_t stream) {
  // the launch's own status (cudaGetLastError would also take up an earlier call's error)
  void* args[] = {&out, &f, &dact};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&act_table_kernel), dim3(num::Bf16Table::kSize / 256),
                          dim3(256), args, 0, stream);
}

// Whether `ctas` CTAs of the probe, one per SM, can be resident as one cluster on the current
// device; false where a query fails (its error cleared: an answer, not the next call's error).
static bool probe_cluster(int device, int ctas) {
  int per_sm = 0, per_block = 0;
  if (cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  const int smem = per_sm / 2 + 1024;
  if (smem > per_block) return false;  // no way to hold the probe to an SM per CTA: say no
  LaunchConfig l(dim3(unsigned(ctas)), dim3(128), size_t(smem), dim3(unsigned(ctas)), nullptr, false);
  int n = 0;
  if (allow_dynamic_smem<cluster_probe_kernel>(device, smem) != cudaSuccess ||
      (ctas > 8 && allow_large_clusters<cluster_probe_kernel>(device) != cudaSuccess) ||
      cudaOccupancyMaxActiveClusters(&n, cluster_probe_kernel, &l.cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n >= 1;
}

bool cluster_fits(int device, int ctas) {
  if (ctas <= 1) return true;
  if (device < 0 || device >= 64 || ctas > kOneLaunchCtas) return false;
  static std::atomic<uint8_t> known[64][kOneLaunchCtas + 1] = {};  // 0: not asked, 1: fits, 2: does not
  uint8_t v = known[device][ctas].load(std::memory_order_relaxed);
  if (v == 0) {
    DeviceGuard guard(device);  // the queries are of the current device
    RelaxedCapture relaxed;     // a first call may come inside CUDA-graph capture
    v = probe_cluster(device, ctas) ? 1 : 2;
    known[device][ctas].store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

// Launched once per device by cooperative_launch: does nothing.
__global__ void cooperative_probe_kernel() {}

// One cooperative launch of the probe, one CTA per SM, on a stream of its own (with PDL where
// `pdl`, after an ordinary launch of it, so that the launch has a kernel before it to overlap),
// waited for; its error cleared. Unknown where the question could not be asked (a query or the
// stream failed): not an answer to keep.
enum class Probe { yes, no, unknown };
static Probe probe_cooperative(int device, bool pdl) {
  int supported = 0;
  if (cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return Probe::unknown;
  }
  if (!supported) return Probe::no;
  const int sms = sm_count(device);  // (the grid exchange's grids: at most one CTA per SM)
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    (void)cudaGetLastError();
    return Probe::unknown;
  }
  LaunchConfig before(dim3(1), dim3(32), 0, 0, s, false);
  LaunchConfig l(dim3(unsigned(sms)), dim3(32), 0, 0, s, pdl, true);
  const bool ok = cudaLaunchKernelEx(&before.cfg, cooperative_probe_kernel) == cudaSuccess &&
                  cudaLaunchKernelEx(&l.cfg, cooperative_probe_kernel) == cudaSuccess &&
                  cudaStreamSynchronize(s) == cudaSuccess;
  cudaStreamDestroy(s);
  if (!ok) (void)cudaGetLastError();
  return ok ? Probe::yes : Probe::no;
}

CooperativeLaunch cooperative_launch(int device) {
  if (device < 0 || device >= 64) return CooperativeLaunch::none;
  static std::atomic<uint8_t> known[64] = {};  // 0: not asked, else 1 + the answer
  uint8_t v = known[device].load(std::memory_order_acquire);
  if (v == 0) {
    if (cudaPeekAtLastError() != cudaSuccess) return CooperativeLaunch::none;  // the caller's error, left to it
    DeviceGuard guard(device);
    RelaxedCapture relaxed;  // a first call may come inside CUDA-graph capture: never into it
    const Probe with_pdl = probe_cooperative(device, true);
    const Probe plain = with_pdl == Probe::no ? probe_cooperative(device, false) : Probe::unknown;
    if (with_pdl == Probe::unknown || (with_pdl == Probe::no && plain == Probe::unknown))
      return CooperativeLaunch::none;  // asked again next time
    const CooperativeLaunch c = with_pdl == Probe::yes ? CooperativeLaunch::with_pdl
                                : plain == Probe::yes  ? CooperativeLaunch::plain
                                                       : CooperativeLaunch::none;
    v = uint8_t(1 + int(c));
    known[device].store(v, std::memory_order_release);
  }
  return CooperativeLaunch(v - 1);
}

cudaError_t launch_zero(void* p, int64_t bytes, const float* noop, cudaStream_t stream) {
  if (bytes <= 0) return cudaSuccess;
  const int64_t chunks = bytes / 16 + 2;  // at most: a partial chunk at either end
  const unsigned blocks = unsigned(std::min<int64_t>((chunks + 255) / 256, 1024));
  return pdl_launch(zero_kernel, dim3(blocks), dim3(256), stream, static_cast<uint8_t*>(p), bytes, noop);
}

#define MXQ_INSTANTIATE(D)                                                                              \
  template cudaError_t launch_amax<D>(dim3, cudaStream_t, const void*, int64_t, int64_t, int64_t, bool, unsigned*); \
  template void launch_dequantize<D>(num::ElemFormat, dim3, cudaStream_t, const DequantParams&);
MXQ_INSTANTIATE(0)
MXQ_INSTANTIATE(1)
MXQ_INSTANTIATE(2)
#undef MXQ_INSTANTIATE

}  // namespace mxq::cuda
