// Host interface of the specialised quantize kernels (fast.cuh): a key names the
// specialisation, and each input dtype's translation unit holds a table of the ones built
// ahead of time.
#pragma once

#include <cuda_runtime.h>

#include <optional>

#include "cuda/quantize/fast_key.h"
#include "cuda/quantize/params.h"

namespace mxq::cuda {

// Grid of a specialised kernel over a rows x cols input, by what bounds the kernel (the policy
// and its measurements are in fast_launch.cpp): one CTA per row tile for the memory-bound
// kernels and the fused 8-row shapes (grid.y capped at 65535, the CTAs loop beyond), two or three
// row tiles per CTA for the FP4 rows and column-block kernels (one where a CTA per tile leaves
// at most one CTA per SM; two for tall bf16 inputs whose columnwise output is transposed with
// row-major scales, `col_transposed` being TileParams' col && col_transposed), else CTAs that
// walk the row tiles over two persistent waves (NVFP4's 2-D blocks) or one (fused rows kernels;
// from bf16 with FP8 codes two tiles per CTA or four waves: fused_rows_grid), `blocks_per_sm`
// being the kernel's measured occupancy on `sms` SMs, with the tiles spread as evenly as the
// waves allow.
// `dram_gbps`: the device's peak DRAM bandwidth (cuda::dram_gbps; 0 unknown), which picks between
// two of the fused rows kernels' grids.
dim3 fast_grid(const FastKey& key, int64_t rows, int64_t cols, int sms, int blocks_per_sm, bool col_transposed = false,
               int64_t dram_gbps = 0);

// The launch of a specialised kernel: fast_grid's, except that where the plain FP4 rows and
// column-block kernels' CTAs walk several row tiles, the last row tiles go one per CTA to a wave
// of short CTAs (TileParams::long_ctas). CTAs start in block order, so the ones still running
// when the others are done are short. Session 23, same process, of copy at 4096 / 8192 rows x
// 7168: mxfp4 0.92 / 0.96 -> 0.94 / 0.98, fp4_block_1x32 0.81 / 0.91 -> 0.84 / 0.92, nvfp4
// (given amax) 0.76 / 0.86 -> 0.78 / 0.86; unchanged at 32768 rows.
struct FastLaunch {
  dim3 grid;
  int long_ctas;               // 0: fast_grid's strided walk alone
  dim3 cluster = dim3(0u);     // cluster_x 0: no clusters; else the whole grid (FastKey::one_launch)
  int flat_col_tiles = 0;      // TileParams::flat_*: 0, or a flat grid's column tiles ...
  int flat_band = 0;           // ... and row tiles per band (fast_key.h FlatGrid)
  bool cooperative = false;    // every CTA resident at once (the grid exchange, TileParams::grid_amax)
};
// Fused column-block kernels launch flat (fast.cuh kFlatWalk): a CTA per tile where fast_grid
// gives one, else (fast_grid's one wave, whose CTAs fill the bf16 table) a CTA per slot of the
// wave, each walking a contiguous share of each band's tiles in column-major order, band after
// band (fast_key.h FlatGrid). fast_grid's wave gives each CTA one column tile, and where the
// column tiles do not divide the slots some stay empty (56 column tiles of 128 in 7168 fill 224 of
// 264). Bands of at most kFlatBandRows rows keep the CTAs' tiles within a band's rows, as the wave's
// CTAs stay within a few row tiles of each other. Measured (H100, bench/RESULTS.md session 38, call
// 1, same process): one band, shares over all the rows, MXFP8 row+col dgelu+dbias 0.730 -> 0.824 of
// copy at 8192 x 7168 but 0.706 -> 0.681 at 32768 x 7168. A band holds at least kFlatBandMinShare
// tiles per CTA (narrow tensors: fewer, taller bands).
inline constexpr int64_t kFlatBandRows = 8192, kFlatBandMinShare = 4;
// A kernel keyed FastKey::one_launch takes the call's amax itself: the grid is cluster_amax_grid's,
// one cluster, or with `grid_exchange` grid_amax_grid's on `sms` SMs, launched cooperatively
// (TileParams::grid_amax). `col_transposed` as for fast_grid: the launchers pass both from their
// TileParams (no defaults, so that none can forget the column form).
FastLaunch fast_launch_shape(const FastKey& key, int64_t rows, int64_t cols, int sms, int blocks_per_sm,
                             bool col_transposed, bool grid_exchange, int64_t dram_gbps);

// The per-tensor recipes' two passes (amax, then cast) in one launch, for small inputs: the
// kernels one_launch_capable takes (fast_key.h), at most kOneLaunchMaxElements elements,
// kOneLaunchMaxColTiles column tiles and kOneLaunchMaxTilesPerCta row tiles per CTA (the two its
// amax pass loads at once; a narrow, tall input would also have 16 CTAs walk what two kernels
// spread over thousands), and whole 8-element chunks per row. The grid is then one cluster of at most kOneLaunchCtas CTAs (a
// non-portable size above 8), with as many CTAs down the rows as fit. Otherwise nothing:
// the call takes the amax kernel, then the cast kernel. The caps are where one launch measured
// faster under CUDA-graph replay on the H200 (bench/RESULTS.md session 24, bf16, us per call,
// two kernels -> one launch: fp8_tensor 2.77 -> 2.64 at 1 x 7168, 4.95 -> 4.48 at 16 x 7168,
// 4.95 -> 4.74 at 32 x 7168, but 5.14 -> 6.11 at 64 x 7168 and 3.24 -> 3.83 at 1 x 16384, whose
// 16 column tiles make a 16-CTA cluster of one row; nvfp4 3.49 -> 3.44, 6.48 -> 5.37, 6.66 ->
// 6.07, 7.40 -> 8.25, 4.07 -> 4.70). Session 25's amax pass from the CTA's own tiles: fp8_tensor
// 2.04 / 2.57 / 3.40 us at 1 / 16 / 32 x 7168, nvfp4 2.87 / 3.39 / 4.67 (the caps not measured
// again; fp32 input, in 4-row tiles, takes two kernels from 17 rows of 7168: not measured).
// (kOneLaunchCtas and kOneLaunchMaxTilesPerCta are in fast_key.h: the kernel sizes its amax pass by them.)
inline constexpr int kOneLaunchMaxColTiles = 8;
inline constexpr int64_t kOneLaunchMaxElements = int64_t(32) * 7168;
std::optional<dim3> cluster_amax_grid(const FastKey& key, int64_t rows, int64_t cols,
                                      int64_t max_elements = kOneLaunchMaxElements);
// The same one launch for per-tensor calls too large for one cluster, up to kGridAmaxMaxElements
// elements: at most as many CTAs as SMs (`sms`) and kGridAmaxSlots, so the cooperative launch always
// fits by capacity (other kernels holding the SMs can still delay the last CTAs, whom the others
// wait for: fast.cuh grid_amax_bits traps after 10 s), each walking at most kOneLaunchMaxTilesPerCta row tiles,
// as many CTAs down the rows as that allows; its CTAs meet in global memory (fast.cuh grid_amax_bits, grid_amax_slot).
// Otherwise nothing. Against the amax kernel then the cast kernel it saves the reset, the amax kernel and one
// programmatic wait on a whole grid.
inline constexpr int64_t kGridAmaxMaxElements = int64_t(512) * 7168;
std::optional<dim3> grid_amax_grid(const FastKey& key, int64_t rows, int64_t cols, int sms);
// The exchange's kGridAmaxSlots words for a launch on `stream` (TileParams::grid_amax), all of one
// parity, or null where they cannot be had (the call then takes the two kernels). Outside a capture,
// one set per stream (cudaStreamGetId, never reused): two launches on one stream never use the words
// at once, since the exchange comes after the kernel's programmatic wait and every library kernel
// between two of them waits before it ends (a foreign kernel launched in between with PDL that
// never waits would break that). Inside a capture, a set of the graph's own, never handed out
// again (a graph may be replayed beside any stream's calls); so a captured graph must not run
// concurrently with itself (two instantiations or clones replayed at once, or the graph as child
// nodes of parallel branches, share its words, and their amax is then silently wrong).
// Allocated in blocks of 64 sets (64 KB) per device, kept for the process.
unsigned* grid_amax_slot(int device, cudaStream_t stream);
// Tests: while on, grid_amax_slot hands out nothing, so those calls take the amax kernel then the
// cast (the path a device that cannot hold the words takes), which stays tested.
void refuse_grid_amax_slots(bool refuse);

// Whether `device` can co-schedule a cluster of `ctas` CTAs (1 .. kOneLaunchCtas; a cluster's
// CTAs share a GPC): a partition of a GPU (a MIG instance, an MPS share) may not, and there a
// one-launch call would fail to launch, so the call takes the two kernels instead. Asked once per
// device and size (cudaOccupancyMaxActiveClusters of an empty probe kernel held to one CTA per SM
// by its shared memory: a cluster of it needs as many SMs of a GPC as it has CTAs, the most any
// kernel can need, so a yes holds for the one-launch kernels); a refused query counts as no.
bool cluster_fits(int device, int ctas);

// How `device` takes the grid exchange's cooperative launch: with programmatic dependent launch,
// without it, or not at all (no cooperative launch in this context: an MPS share, a green
// context; the call then takes the two kernels). Asked once per device by launching an empty
// kernel cooperatively on a stream of its own in relaxed capture mode, so never into a caller's
// capture (a launch refused inside one would already have invalidated it); the launchers follow
// the answer and never retry. Where an error is already pending (the caller's, left to it) or the
// stream cannot be made, the answer is none for this call and the probe runs again next time.
enum class CooperativeLaunch : uint8_t { none, plain, with_pdl };
CooperativeLaunch cooperative_launch(int device);
// Whether launch `l` on `device` takes programmatic dependent launch: always, but a cooperative one
// only where the device's probe took it so (cooperative_launch). Both launchers (AOT and JIT) ask.
bool launch_pdl(const FastLaunch& l, int device);

// Whether a grid gives each CTA at least twice the bf16 table's 8192 entries of a rows x cols
// input to quantize: fast_grid gives the fused 8-row shapes that look their function up
// (act_table_capable) one wave where it does, whose CTAs then fill the table once each (a CTA per
// tile otherwise). Measured when the CTAs computed the entries (sessions 15-17).
bool act_table_fill_pays(int64_t rows, int64_t cols, dim3 grid);

// The fused function's bf16 table (num::Bf16Table, the entries fast.cuh ActTable::fill computes:
// num::table_function) in global memory: computed once per device and function
// by a kernel of its own (launch_act_table, on a private stream, synchronised before the pointer is
// handed out), for the CTAs to copy (32 KB from L2) rather than evaluate 8192 values each; made
// inside a graph capture too (outside the graph: a private stream, this thread's capture mode
// relaxed meanwhile). Null (the CTAs then compute the entries) where an error is already pending
// (the caller's, left to it), where its 32 KB could not be allocated or it could not be made inside
// a capture (both tried again next call), where it could not be made otherwise (remembered), or
// while refuse_device_act_tables is on.
const float* device_act_table(const FastKey& key, cudaStream_t stream);
// Tests: while on, device_act_table hands out no table (and remembers nothing), so that the CTAs'
// own computation of the entries stays tested.
void refuse_device_act_tables(bool refuse);
// Its kernel: the 8192 entries of f (or its derivative) into out (aux_kernels.cu).
cudaError_t launch_act_table(float* out, num::Activation f, bool dact, cudaStream_t stream);
// A launch's TileParams::act_table_src (device_act_table, for the kernels that look their function
// up: act_table_capable); both launchers (fast_inst.cuh, the JIT's) take it from here.
// last_act_table(): whether the process's last launch of a specialised kernel looked its function
// up; last_act_table_copied(): whether it copied the entries (act_table_src set).
void set_act_table(TileParams& p, const FastKey& key, cudaStream_t stream);
bool last_act_table();
bool last_act_table_copied();
// Tests: frees every device_act_table after synchronising the current device, so that the next
// one is made again (graphs captured with one must not be replayed after).
void forget_device_act_tables();

// Launches the ahead-of-time specialisation `key` over a rows x cols input; the launch status,
// or nothing when `key` was not built ahead of time.
std::optional<cudaError_t> launch_fast_quantize(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                                cudaStream_t stream, const TileParams& p);

// Whether `key` was built ahead of time.
bool aot_fast_has(const FastKey& key);

// The table of one input dtype (fast_inst.cuh, one translation unit each).
template <int kDType>
std::optional<cudaError_t> launch_aot_fast(const FastKey& key, int64_t rows, int64_t cols, int sms,
                                           cudaStream_t stream, const TileParams& p);

template <int kDType>
bool aot_fast_has(const FastKey& key);

}  // namespace mxq::cuda
