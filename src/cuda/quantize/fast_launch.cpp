// Host side of the specialised kernels: grid geometry and the ahead-of-time tables.
#include "cuda/quantize/fast_launch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "cuda/check.hpp"
#include "mxq/error.hpp"

namespace mxq::cuda {

// Row tiles per CTA, by what bounds the kernel (H200 measurements, bench/RESULTS.md, session 6):
//  - memory-bound (the FP8 and row+col kernels): one row tile per CTA, the hardware scheduling
//    CTAs as others finish. Persistent one-wave grids gave each CTA ~14 tiles of ~3 us, and the
//    CTAs' uneven finish cost 0.90 of copy bandwidth where one tile each reaches 0.98-1.01;
//  - FP4 rows and column-block kernels (more instructions per byte): a few row tiles per CTA,
//    two for MXFP4's rows kernel and three for the others (session 22, bf16 8192x7168 /
//    32768x7168, of copy, against the two persistent waves they had before: mxfp4 0.927-0.934 /
//    0.946 -> 0.988-0.989 / 1.026 at two tiles, 0.965 / 1.014 at three; fp4_block_1x32
//    0.895-0.910 / 0.911-0.936 -> 0.919-0.934 / 0.981-0.990 at three tiles in two runs of three,
//    0.919 / 0.887 in the third; nvfp4 given amax 0.870-0.879 / 0.875-0.907 -> 0.862-0.870 /
//    0.899-0.947; mxfp4 row+col 0.689-0.694 / 0.563-0.599 -> 0.726-0.733 / 0.677-0.685). NVFP4's
//    16 x 16 blocks (nvfp4_2d) keep the two waves (0.796-0.797 / 0.809-0.819 against 0.740 /
//    0.812 at three tiles); but where a CTA per row tile leaves at most one CTA per SM (decode
//    sizes), a CTA per tile: the CTAs' tiles would only run one after another (session 24,
//    CUDA-graph replay, us per call at 64 / 128 x 7168: fp4_block_1x32 3.41 / 3.46 -> 1.67 /
//    1.79, mxfp4 2.04 / 2.08 -> 1.51 / 1.63, nvfp4 with its amax kernel 7.39 / 8.32 -> 6.01 /
//    6.79; 256 x 7168 and up unchanged);
//  - fused rows kernels: one wave (each CTA publishes its dbias and amax with atomics once; one
//    row tile per CTA made mxfp8 + dbias 0.74 -> 0.50-0.54 of copy, session 15), except the bf16
//    ones with FP8 codes, which session 39 measured faster on two tiles per CTA or four waves
//    (fused_rows_grid);
//  - fused 8-row shapes (row+col): one row tile per CTA, as the plain ones (session 15: mxfp8
//    row+col dgelu + dbias 0.26 -> 0.30-0.31 of copy against one wave), except where the CTAs of
//    one wave each have enough elements to fill the bf16 table (fast.cuh ActTable) once for many
//    (session 17, when it was evaluated: mxfp8 row+col dgelu + dbias 0.40-0.41 -> 0.56-0.58).
namespace {

// Row tiles of a rows-row input (at least one: an empty launch still publishes a global scale).
int64_t row_tiles(const FastGeometry& g, int64_t rows) {
  return std::max<int64_t>(1, num::ceil_div(rows, g.tile_rows));
}

// gx CTAs across and enough down that none walks more than `per_cta` row tiles (strided by
// grid.y, fast_quantize_kernel's loop); grid.y capped at 65535, the CTAs loop beyond.
dim3 tiles_per_cta(int64_t gx, int64_t tiles_y, int64_t per_cta) {
  return dim3(unsigned(gx), unsigned(std::clamp<int64_t>(num::ceil_div(tiles_y, per_cta), 1, 65535)));
}

// FP4 column blocks from bf16 with transposed codes and row-major scales, from kTwoTileRows rows:
// two row tiles per CTA rather than three. Measured at 4 CTAs per SM (H100, bench/RESULTS.md
// session 37, calls 2 and 3, same process, of copy, three tiles -> two): mxfp4 row+col 0.769 ->
// 0.841 at 16384 x 7168, 0.788 -> 0.810 at 24576, 0.760 -> 0.796 at 32768, 0.794 -> 0.901 at 16384
// x 16384, 0.835 -> 0.855 at 32768 x 4096, flat at 32768 / 65536 x 2048; NVFP4 row+col 0.736-0.749
// -> 0.777, 0.719-0.738 -> 0.775, 0.733 -> 0.779, 0.776-0.781 -> 0.869-0.871, 0.80 -> 0.844,
// 0.797-0.820 -> 0.842-0.862 and 0.828 -> 0.848; fp4_block_1x32 as mxfp4. At 8192 x 7168 two
// tiles were flat for MX and fp4_block_1x32 and 2% slower for NVFP4 (0.758 -> 0.742), and the
// same-shape and swizzled forms lost 1-3% at every size: they keep three. f16 (3 CTAs per SM) and
// fp32 input are not measured and keep three. The rule itself, against three tiles (call 4): mxfp4
// row+col 0.774 -> 0.828, 0.767 -> 0.804, 0.801 -> 0.915 at 16384 / 32768 x 7168 and 16384 x 16384,
// the rest as before.
constexpr int64_t kTwoTileRows = 16384;
bool two_tile_columns(const FastKey& key, int64_t rows, bool col_transposed) {
  return key.shape == FastShape::colblocks && key.dtype == 2 && col_transposed &&
         key.col_layout == num::ScaleLayout::row_major && rows >= kTwoTileRows;
}

// gx CTAs across and as few down as leave no CTA more row tiles than `slots` CTAs would (nor more
// than `most`).
dim3 spread(int64_t gx, int64_t tiles_y, int64_t slots, int64_t most = INT64_MAX) {
  const int64_t per_wave = std::max<int64_t>(1, slots / gx);                      // CTAs down the rows
  const int64_t tiles_each = std::min(most, num::ceil_div(tiles_y, per_wave));  // row tiles of the busiest CTA
  return tiles_per_cta(gx, tiles_y, tiles_each);                                  // fewest CTAs with that many
}

// Fused rows kernels (H100, bench/RESULTS.md session 39, call 2: one process per grid, bf16 8192 /
// 32768 x 7168, of copy; session 15's one wave is what they had):
//  - FP8 codes from two inputs or with dbias alone (the kernels that prefetch a second register
//    set): two row tiles per CTA, like the plain kernels' few, where the tiles outnumber the wave's
//    slots (fewer, at decode sizes: a tile per CTA, as the one wave gave them). mxfp8 swiglu 0.889 / 0.958 -> 0.961 /
//    1.007, mxfp8 + dbias 0.940 / 0.944 -> 0.965 / 0.990 (one wave, 2 or 4 waves, 8 tiles per CTA:
//    0.85-0.89 / 0.95-0.98; the bf16 table on or off at one wave: the same). Session 15's loss from
//    dbias publishes per CTA (0.74 -> 0.50 at one tile each) did not come back at two;
//  - FP8 codes from one input (the cp.async ring kernels, which fill the bf16 table per CTA): four
//    waves (session 39, the table computed per CTA: CTAs of ~7 tiles at 8192 rows). 1x128
//    silu 0.806 / 0.818 -> 0.869 / 0.917, gelu 0.810 / 0.822 -> 0.827 / 0.922; two waves 0.86-0.87 /
//    0.85-0.86, 8 tiles per CTA 0.83-0.86 / 0.90-0.95, two tiles (the table computed) 0.56-0.66.
//    Since the CTAs copy the table (session 40, calls 3 and 4, 1x128 gelu / silu, of copy at 8192 /
//    12288 / 16384 / 32768 rows): four waves 0.90 / 0.90 / 0.92 / 0.91, no CTA more than four tiles
//    0.91-0.92 / 0.94 / 0.96 / 0.97 (4096 rows: 0.73 / 0.79 either way). So four waves, at most
//    four tiles per CTA (up to 65535 CTA rows: tiles_per_cta's clamp; without dbias, whose per-CTA
//    publishes were not measured at the cap). Call 3 had also tried three (0.94 / 0.96 at 16384 /
//    32768), eight (0.93 / 0.96) and two (0.87 / 0.88); its 8192-row figures were each process's
//    first shape, whose CTAs computed the table (bench_quantize_gpu's first call was captured);
//  - FP4 codes: one wave (nvfp4 swiglu 0.861 / 0.939; 0.76-0.81 / 0.81-0.94 on every other grid).
// f16 and fp32 input were not measured and keep the one wave.
constexpr int64_t kRingMostTiles = 4;
// The two tiles per CTA of the FP8 non-ring kernels above were measured on an H100 (3.35 TB/s). On
// an H200 (4.8 TB/s, the same 132 SMs and clocks) one wave is faster (session 43, one process per
// grid, of copy at 8192 / 32768 x 7168, two tiles per CTA -> one wave): mxfp8 + dbias 0.782 / 0.796
// -> 0.931 / 0.952, dgelu+dbias 0.793 / 0.806 -> 0.887 / 0.905, swiglu 0.843 / 0.876 -> 0.860 /
// 0.924, geglu 0.838 / 0.852 -> 0.862 / 0.918 (8 tiles per CTA: 0.86-0.89 / 0.87-0.95). Two tiles
// per CTA publish their dbias sums (red.global.add.v4.f32 into the 4 bytes x cols vector) from
// 7168 CTAs at 8192 x 7168, one wave from 396: the L2's reduction rate does not grow with the
// DRAM's, so the faster the memory, the more those publishes hold the kernel. So from this peak
// DRAM bandwidth up (cuda::dram_gbps), one wave: between the H200's ~4900 and an H100 NVL's ~4000
// (not measured; it keeps the H100's grid).
constexpr int64_t kWideDramGbps = 4400;
dim3 fused_rows_grid(const FastKey& key, int64_t gx, int64_t tiles_y, int64_t wave, int64_t dram_gbps) {
  if (key.dtype == 2 && key.elem != num::ElemFormat::e2m1) {
    // (with dbias, whose CTAs each publish their sums, the 4-tile cap is not measured: four waves)
    if (fast_geometry(key).ring != 0)
      return spread(gx, tiles_y, 4 * wave, key.fuse & kFuseDbias ? INT64_MAX : kRingMostTiles);
    // (at decode sizes, no more tiles than the wave's slots, the one wave below: a tile per CTA)
    if (gx * tiles_y > wave && dram_gbps < kWideDramGbps) return tiles_per_cta(gx, tiles_y, 2);
  }
  return spread(gx, tiles_y, wave);
}

}  // namespace

bool act_table_fill_pays(int64_t rows, int64_t cols, dim3 grid) {
  return rows * cols >= 2 * int64_t(num::Bf16Table::kSize) * grid.x * grid.y;
}

dim3 fast_grid(const FastKey& key, int64_t rows, int64_t cols, int sms, int blocks_per_sm, bool col_transposed,
               int64_t dram_gbps) {
  const FastGeometry g = fast_geometry(key);
  const int64_t gx = num::ceil_div(cols, g.tile_cols);
  const int64_t tiles_y = row_tiles(g, rows);
  const int64_t wave = int64_t(sms) * std::max(1, blocks_per_sm);
  if (!key.fuse) {
    if (key.elem != num::ElemFormat::e2m1) return tiles_per_cta(gx, tiles_y, 1);  // memory-bound
    if (key.shape == FastShape::two_d) return spread(gx, tiles_y, 2 * wave);      // NVFP4's 2-D blocks
    if (gx * tiles_y <= sms) return tiles_per_cta(gx, tiles_y, 1);  // few tiles: a CTA each, one per SM
    if (two_tile_columns(key, rows, col_transposed)) return tiles_per_cta(gx, tiles_y, 2);
    return tiles_per_cta(gx, tiles_y, key.shape == FastShape::rows && key.scheme == num::Scheme::mx ? 2 : 3);
  }
  if (key.shape == FastShape::rows) return fused_rows_grid(key, gx, tiles_y, wave, dram_gbps);
  if (act_table_capable(key)) {  // a fused 8-row shape: one wave where its CTAs then fill the bf16 table
    const dim3 one = spread(gx, tiles_y, wave);
    if (act_table_fill_pays(rows, cols, one)) return one;
  }
  return tiles_per_cta(gx, tiles_y, 1);
}

namespace {
// The grid of a one-launch amax (the cluster's and the grid exchange's alike): a column tile per
// CTA across, at most max_col_tiles of them, as many CTAs down the rows as max_ctas allows, each
// walking at most kOneLaunchMaxTilesPerCta row tiles; nothing over max_elements.
std::optional<dim3> one_launch_grid(const FastKey& key, int64_t rows, int64_t cols, int64_t max_elements,
                                    int64_t max_col_tiles, int64_t max_ctas) {
  // (whole 8-element chunks: the amax pass reads 16-byte pieces, as the fast kernels do)
  if (!one_launch_capable(key) || rows < 1 || cols < 1 || cols % 8 != 0) return std::nullopt;
  if (rows * cols > max_elements) return std::nullopt;
  const FastGeometry g = fast_geometry(key);
  const int64_t gx = num::ceil_div(cols, g.tile_cols);
  if (gx > max_col_tiles || gx > max_ctas) return std::nullopt;
  const int64_t tiles_y = row_tiles(g, rows);
  const int64_t gy = std::min<int64_t>(tiles_y, max_ctas / gx);
  if (num::ceil_div(tiles_y, gy) > kOneLaunchMaxTilesPerCta) return std::nullopt;  // the kernel takes two
  return dim3(unsigned(gx), unsigned(gy));
}
}  // namespace

std::optional<dim3> cluster_amax_grid(const FastKey& key, int64_t rows, int64_t cols, int64_t max_elements) {
  return one_launch_grid(key, rows, cols, max_elements, kOneLaunchMaxColTiles, kOneLaunchCtas);
}

namespace {
// Device memory of the library's own (the act tables, the grid exchange's words): `bytes`
// allocated and filled by fill(ptr, stream) on a stream of its own, which waits on no other,
// synchronised before the pointer is handed out; this thread's calls relaxed meanwhile (a first
// call may come inside a graph capture, and another thread may be capturing in global mode). On
// failure nothing is kept and the error is taken up (a sticky one stays for the caller's launch
// to report): `oom` where the allocation itself failed (out of memory for now: a caching
// allocator may hold it), else `failed`.
enum class Made { ok, oom, failed };
template <class Fill>
Made make_on_private_stream(void** out, size_t bytes, Fill fill) {
  const RelaxedCapture relaxed;
  *out = nullptr;
  void* d = nullptr;
  if (cudaMalloc(&d, bytes) != cudaSuccess) {
    cudaGetLastError();
    return Made::oom;
  }
  cudaStream_t s = nullptr;
  const bool ok = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess && fill(d, s) == cudaSuccess &&
                  cudaStreamSynchronize(s) == cudaSuccess;
  if (s) cudaStreamDestroy(s);
  if (!ok) {
    cudaGetLastError();
    cudaFree(d);
    return Made::failed;
  }
  *out = d;
  return Made::ok;
}
}  // namespace

std::optional<dim3> grid_amax_grid(const FastKey& key, int64_t rows, int64_t cols, int sms) {
  const int64_t ctas = std::min(sms, kGridAmaxSlots);  // up to as many CTAs as SMs, one word each
  return one_launch_grid(key, rows, cols, kGridAmaxMaxElements, ctas, ctas);
}

namespace {
struct GridAmaxSlots {
  std::map<unsigned long long, unsigned*> by_stream;  // cudaStreamGetId
  unsigned* block = nullptr;                          // the block being handed out ...
  int used = 0;                                       // ... and its sets handed out
};
std::mutex g_slots_mu;
std::atomic<bool> g_refuse_slots{false};
std::map<int, GridAmaxSlots> g_slots;
constexpr int kSlotsPerBlock = 64, kSlotWords = kGridAmaxSlots;
}  // namespace

unsigned* grid_amax_slot(int device, cudaStream_t stream) {
  if (g_refuse_slots.load(std::memory_order_relaxed)) return nullptr;
  if (cudaPeekAtLastError() != cudaSuccess) return nullptr;  // the caller's error, left to it
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  const bool in_capture = capturing != cudaStreamCaptureStatusNone;
  // (cudaStreamGetId is refused inside a capture, and invalidates it: only outside one)
  unsigned long long id = 0;
  if (!in_capture && cudaStreamGetId(stream, &id) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  const std::lock_guard<std::mutex> lock(g_slots_mu);
  GridAmaxSlots& d = g_slots[device];
  if (!in_capture) {
    if (const auto it = d.by_stream.find(id); it != d.by_stream.end()) return it->second;
  }
  if (!d.block || d.used == kSlotsPerBlock) {  // a new block, zeroed (any failure: tried again next call)
    const size_t bytes = size_t(kSlotsPerBlock) * kSlotWords * sizeof(unsigned);
    void* b = nullptr;
    if (make_on_private_stream(&b, bytes, [&](void* t, cudaStream_t s) { return cudaMemsetAsync(t, 0, bytes, s); }) !=
        Made::ok)
      return nullptr;
    d.block = static_cast<unsigned*>(b);
    d.used = 0;
  }
  unsigned* slot = d.block + size_t(d.used++) * kSlotWords;
  if (!in_capture) d.by_stream.emplace(id, slot);
  return slot;
}

void refuse_grid_amax_slots(bool refuse) { g_refuse_slots.store(refuse, std::memory_order_relaxed); }

bool launch_pdl(const FastLaunch& l, int device) {
  return !l.cooperative || cooperative_launch(device) == CooperativeLaunch::with_pdl;
}

FastLaunch fast_launch_shape(const FastKey& key, int64_t rows, int64_t cols, int sms, int blocks_per_sm,
                             bool col_transposed, bool grid_exchange, int64_t dram_gbps) {
  const bool one_launch = key.one_launch;
  if (one_launch && grid_exchange) {
    const std::optional<dim3> g = grid_amax_grid(key, rows, cols, sms);
    if (!g) fail(ErrorCode::internal, "fast_launch_shape: a grid exchange for a call that grid_amax_grid refuses");
    FastLaunch l{*g, 0};
    l.cooperative = true;
    return l;
  }
  if (one_launch) {
    const std::optional<dim3> g = cluster_amax_grid(key, rows, cols);
    if (!g) fail(ErrorCode::internal, "fast_launch_shape: a one-launch amax for a call that cluster_amax_grid refuses");
    return {*g, 0, *g};
  }
  const dim3 grid = fast_grid(key, rows, cols, sms, blocks_per_sm, col_transposed, dram_gbps);
  const int64_t tiles_y = row_tiles(fast_geometry(key), rows);
  const int64_t per_cta = num::ceil_div(tiles_y, grid.y);  // row tiles of the busiest CTA
  // Fused rows kernels publish their statistics once per CTA: their grids stay as they are (the
  // fused column-block ones launch flat, just below, and publish per column tile walked). So does
  // NVFP4's 2-D one (session 23, same process: 0.790 / 0.853 of copy with the tail against 0.799
  // / 0.862 without, at 8192 / 32768 rows).
  if (key.fuse && key.shape == FastShape::colblocks) {  // fast.cuh kFlatWalk: always flat
    const int64_t tiles = std::max<int64_t>(1, int64_t(grid.x) * tiles_y);  // (no columns: one empty tile)
    if (tiles >= (int64_t(1) << 31)) fail(ErrorCode::internal, "fast_launch_shape: over 2^31 tiles for a flat grid");
    int64_t ctas = tiles;  // a tile each, one band
    int64_t band = std::max<int64_t>(1, tiles_y);
    if (per_cta > 1) {  // fast_grid's one wave: all of the wave's slots where the table still pays
      const int64_t wave = int64_t(sms) * std::max(1, blocks_per_sm);
      ctas = std::min(wave, tiles);
      if (!act_table_fill_pays(rows, cols, dim3(unsigned(ctas)))) ctas = int64_t(grid.x) * grid.y;
      // bands of about kFlatBandRows rows, as even as they go (FlatGrid's last takes the rest), each
      // of at least kFlatBandMinShare tiles per CTA (narrow tensors: fewer bands)
      const int64_t want = std::max(kFlatBandRows / fast_geometry(key).tile_rows,
                                    num::ceil_div(kFlatBandMinShare * ctas, std::max<int64_t>(1, grid.x)));
      band = tiles_y / std::max<int64_t>(1, tiles_y / want);
    }
    return {dim3(unsigned(ctas)), 0, dim3(0u), std::max(1, int(grid.x)), int(band)};
  }
  if (key.fuse || key.shape == FastShape::two_d || per_cta < 2) return {grid, 0};
  // CTA rows of one tile each, a wave of them (two waves measured no better)
  const int64_t short_rows = std::max<int64_t>(1, int64_t(sms) * std::max(1, blocks_per_sm) / grid.x);
  if (tiles_y < short_rows + 2 * per_cta) return {grid, 0};
  const int64_t long_rows = num::ceil_div(tiles_y - short_rows, per_cta);
  if (long_rows + short_rows > 65535) return {grid, 0};
  return {dim3(grid.x, unsigned(long_rows + short_rows)), int(long_rows)};
}

namespace {
std::atomic<bool> g_last_act_table{false}, g_last_act_table_copied{false}, g_refuse_tables{false};
// one table per device, function and direction, kept for the process (32 KB each)
std::mutex g_tables_mu;
std::map<std::tuple<int, int, bool>, const float*> g_tables;
}  // namespace

void refuse_device_act_tables(bool refuse) { g_refuse_tables.store(refuse, std::memory_order_relaxed); }

void forget_device_act_tables() {
  const std::lock_guard<std::mutex> lock(g_tables_mu);
  cudaDeviceSynchronize();
  for (const auto& [k, t] : g_tables)
    if (t) cudaFree(const_cast<float*>(t));
  g_tables.clear();
}

const float* device_act_table(const FastKey& key, cudaStream_t stream) {
  if (!act_table_capable(key) || g_refuse_tables.load(std::memory_order_relaxed)) return nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  const num::Activation f = fused_function(key);
  const bool dact = (key.fuse & kFuseDact) != 0;
  const std::lock_guard<std::mutex> lock(g_tables_mu);
  const auto k = std::make_tuple(device, int(f), dact);
  if (const auto it = g_tables.find(k); it != g_tables.end()) return it->second;  // null: could not be made
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  // Inside a capture too (a graph captured on a configuration's first call copies it like any
  // later call): the table is made on a stream of its own, outside the graph, before the capture
  // goes on. A failure there is not remembered (the capture may be what refused it): that
  // launch's CTAs compute the entries, and the next call tries again.
  const bool in_capture = capturing != cudaStreamCaptureStatusNone;
  // An error already pending is the caller's: left for the quantize launch to report, and no
  // attempt that would take it up (not remembered either).
  if (cudaPeekAtLastError() != cudaSuccess) return nullptr;
  void* d = nullptr;
  const Made made = make_on_private_stream(&d, num::Bf16Table::kSize * sizeof(float), [&](void* t, cudaStream_t s) {
    return launch_act_table(static_cast<float*>(t), f, dact, s);
  });
  // out of memory for now, or a failure inside a capture: tried again next call
  if (made == Made::oom || (made == Made::failed && in_capture)) return nullptr;
  g_tables.emplace(k, static_cast<const float*>(d));  // (null when it failed: remembered)
  return static_cast<const float*>(d);
}

void set_act_table(TileParams& p, const FastKey& key, cudaStream_t stream) {
  const bool on = act_table_capable(key);
  p.act_table_src = on ? device_act_table(key, stream) : nullptr;
  g_last_act_table.store(on, std::memory_order_relaxed);
  g_last_act_table_copied.store(p.act_table_src != nullptr, std::memory_order_relaxed);
}

bool last_act_table() { return g_last_act_table.load(std::memory_order_relaxed); }

bool last_act_table_copied() { return g_last_act_table_copied.load(std::memory_order_relaxed); }

std::optional<cudaError_t> launch_fast_quantize(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                cudaStream_t stream, const TileParams& p) {
  switch (key.dtype) {
    case 0: return launch_aot_fast<0>(key, rows, cols, sms, stream, p);
    case 1: return launch_aot_fast<1>(key, rows, cols, sms, stream, p);
    default: return launch_aot_fast<2>(key, rows, cols, sms, stream, p);
  }
}

bool aot_fast_has(const FastKey& key) {
  switch (key.dtype) {
    case 0: return aot_fast_has<0>(key);
    case 1: return aot_fast_has<1>(key);
    default: return aot_fast_has<2>(key);
  }
}

}  // namespace mxq::cuda
