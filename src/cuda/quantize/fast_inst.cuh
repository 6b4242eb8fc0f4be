// The specialised quantize kernels built ahead of time for input dtype MXQ_INPUT_DTYPE: the
// recipes users reach for (every preset in its default layout, the DeepSeek layouts).
#include "cuda/quantize/fast.cuh"
#include "cuda/quantize/fast_launch.hpp"
#include "cuda/check.hpp"
#include "cuda/pdl.cuh"

namespace mxq::cuda {
namespace {

template <class C>
cudaError_t launch(int64_t rows, int64_t cols, int sms, cudaStream_t stream, const TileParams& p) {
  constexpr int kSmem = C::kGeo.slot_bytes;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if constexpr (kSmem > 0) {
    if (const cudaError_t e = allow_dynamic_smem<fast_quantize_kernel<C>>(device, kSmem); e != cudaSuccess) return e;
  }
  if constexpr (C::kKey.one_launch) {  // its one cluster may be 16 CTAs (cluster_amax_grid)
    if (const cudaError_t e = allow_large_clusters<fast_quantize_kernel<C>>(device); e != cudaSuccess) return e;
  }
  static const int blocks_per_sm = [] {  // the occupancy the compiled kernel reaches
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fast_quantize_kernel<C>, C::kThreads, kSmem) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    return n > 0 ? n : C::kMinBlocks;
  }();
  const FastLaunch l = fast_launch_shape(C::kKey, rows, cols, sms, blocks_per_sm, p.col && p.col_transposed,
                                         p.grid_amax != nullptr, dram_gbps(device));
  TileParams params = p;
  set_act_table(params, C::kKey, stream);
  params.long_ctas = l.long_ctas;
  params.flat_col_tiles = l.flat_col_tiles;
  params.flat_band = l.flat_band;
  LaunchConfig c(l.grid, dim3(C::kThreads), kSmem, l.cluster, stream, launch_pdl(l, device), l.cooperative);
  return cudaLaunchKernelEx(&c.cfg, fast_quantize_kernel<C>, params);
}

using E = num::ElemFormat;
using S = num::Scheme;
using L = num::ScaleLayout;
using Launch = cudaError_t (*)(int64_t, int64_t, int, cudaStream_t, const TileParams&);
struct Entry {
  FastKey key;
  Launch fn;
};

// An entry's key is its kernel's (FastConfig::kKey), never spelled twice.
template <class C>
constexpr Entry entry() {
  return Entry{C::kKey, &launch<C>};
}
#define MXQ_FAST(SCHEME, ELEM, SHAPE, G, H, ROWL, COLL) \
  entry<FastConfig<MXQ_INPUT_DTYPE, E::ELEM, S::SCHEME, FastShape::SHAPE, G, H, L::ROWL, L::COLL>>()
// A per-tensor rows kernel (one_launch_capable) and its twin that takes the amax itself
// (FastKey::one_launch): the dispatcher picks either for any call the first one serves.
#define MXQ_FAST_PER_TENSOR(SCHEME, ELEM, G, ROWL)                                                                  \
  MXQ_FAST(SCHEME, ELEM, rows, G, 1, ROWL, row_major),                                                              \
      entry<FastConfig<MXQ_INPUT_DTYPE, E::ELEM, S::SCHEME, FastShape::rows, G, 1, L::ROWL, L::row_major, 0, false, \
                       true>>()

constexpr Entry kTable[] = {
    MXQ_FAST_PER_TENSOR(fp8_tensor, e4m3fn, 8, row_major),
    MXQ_FAST_PER_TENSOR(fp8_tensor, e5m2, 8, row_major),
    MXQ_FAST(fp8_tensor, e4m3fn, colblocks, 8, 32, row_major, row_major),
    MXQ_FAST(fp8_block, e4m3fn, rows, 128, 1, row_major, row_major),
    MXQ_FAST(fp8_block, e4m3fn, rows, 128, 1, mn_major_tma, row_major),
    MXQ_FAST(fp8_block, e4m3fn, rows, 128, 1, packed_ue8m0, row_major),
    MXQ_FAST(fp8_block, e4m3fn, rows, 64, 1, row_major, row_major),
    MXQ_FAST(fp8_block, e4m3fn, rows, 32, 1, row_major, row_major),
    MXQ_FAST(fp8_block, e4m3fn, two_d, 128, 128, row_major, row_major),
    MXQ_FAST(fp8_block, e2m1, rows, 32, 1, row_major, row_major),
    MXQ_FAST(mx, e4m3fn, rows, 32, 1, row_major, row_major),
    MXQ_FAST(mx, e5m2, rows, 32, 1, row_major, row_major),
    MXQ_FAST(mx, e2m1, rows, 32, 1, row_major, row_major),
    MXQ_FAST(mx, e4m3fn, colblocks, 32, 32, row_major, row_major),
    // MXFP8 row+col with the scales Blackwell's and cuBLASLt's block-scaled GEMMs read, stored as
    // whole 512-byte atoms: 0.96 of copy against row_major's 0.87 (H100, session 33, as JIT)
    MXQ_FAST(mx, e4m3fn, colblocks, 32, 32, swizzled_128x4, swizzled_128x4),
    MXQ_FAST(mx, e5m2, colblocks, 32, 32, row_major, row_major),
    MXQ_FAST(mx, e2m1, colblocks, 32, 32, row_major, row_major),
    MXQ_FAST_PER_TENSOR(nvfp4, e2m1, 16, row_major),
    MXQ_FAST_PER_TENSOR(nvfp4, e2m1, 16, swizzled_128x4),
#if MXQ_INPUT_DTYPE != 0  // fp32: the generic kernel (these spill with fp32's 64 data registers)
    MXQ_FAST(nvfp4, e2m1, two_d, 16, 16, row_major, row_major),
#endif
};
#undef MXQ_FAST_PER_TENSOR
#undef MXQ_FAST

// The dispatcher asks the table for a key without FastKey::one_launch (aot_fast_has), then may
// launch its twin: every such kernel has one.
constexpr bool per_tensor_twins() {
  for (const Entry& e : kTable) {
    bool found = !one_launch_capable(e.key) || e.key.one_launch;
    for (const Entry& f : kTable) found = found || f.key == one_launch_twin(e.key);
    if (!found) return false;
  }
  return true;
}
static_assert(per_tensor_twins(), "a per-tensor rows kernel without its one-launch twin (MXQ_FAST_PER_TENSOR)");

}  // namespace

template <>
std::optional<cudaError_t> launch_aot_fast<MXQ_INPUT_DTYPE>(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                            cudaStream_t stream, const TileParams& p) {
  for (const Entry& e : kTable)
    if (e.key == key) return e.fn(rows, cols, sms, stream, p);
  return std::nullopt;
}

template <>
bool aot_fast_has<MXQ_INPUT_DTYPE>(const FastKey& key) {
  for (const Entry& e : kTable)
    if (e.key == key) return true;
  return false;
}

}  // namespace mxq::cuda
