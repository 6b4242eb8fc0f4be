// Kernel parameter blocks of the quantize / dequantize kernels: plain data, passed by value.
#pragma once

#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq::cuda {

struct TileParams {
  const void* x;
  int64_t rows, cols, row_stride;  // elements
  bool vec_ok;                     // 16-byte loads: aligned base, row stride and width multiples of 8
  num::ScaleRule rule;             // tensor_factor is filled in on the device for fp8_tensor / nvfp4
  bool two_d;                      // 2-D blocks (128 x 128, nvfp4_2d's 16 x 16 amax tiles); the
                                   // block width is the kernel's kBC, the height its kTR
  bool per_row_scale;              // nvfp4_2d: one stored scale per row
  bool fp32_scales;
  const float* amax;               // fp8_tensor / nvfp4: the tensor amax on the device
  const float* scale_in;           // fp8_tensor: caller-given encode scale, or null
  float* global_scale_out;         // fp8_tensor: scale_inv; nvfp4: 1 / S_enc
  float* amax_canonical;           // when set, block (0, 0) writes the amax there (the output's), a
                                   // NaN as the canonical NaN: the computed one, the amax kernel's
                                   // (rewritten in place) or a caller-given amax_in (copied)
  bool row;
  uint8_t* row_data;
  void* row_scales;
  num::ScaleGeometry row_geom;
  bool col, col_transposed;
  uint8_t* col_data;
  void* col_scales;
  num::ScaleGeometry col_geom;
  bool out_vec_ok;   // cols % 8 == 0: 8-code stores of row-oriented outputs are aligned
  bool colT_vec_ok;  // transposed stores of 4 (FP8) or 8 (FP4) rows are aligned
  // Fused epilogues (fast kernels with FastKey::fuse only). cols is the output width N; a gated
  // activation reads its gate N columns (gate_offset) to the right in the same input row.
  int64_t gate_offset;
  const void* act_x;   // the backward pass's activation input, same dtype as x
  int64_t act_stride;  // its row stride, elements
  float* dbias;        // column sums of y, accumulated with atomics into zeros
  const float* noop;   // non-zero: the kernel writes nothing
  unsigned* amax_out;  // block recipes given an amax buffer: max |y| bits, by atomicMax into 0
  // 0: every CTA walks the row tiles blockIdx.y, + gridDim.y, ... Else the first long_ctas rows of
  // CTAs walk the leading row tiles (strided by long_ctas) and each of the other gridDim.y -
  // long_ctas takes one of the last row tiles: a short tail (FastLaunch, fast_launch.cpp).
  int long_ctas;
  // Fused column-block kernels (fast.cuh kFlatWalk), whose grids are always flat (FastLaunch):
  // the column tiles and the row tiles of a band (fast_key.h FlatGrid).
  int flat_col_tiles, flat_band;
  // The fused function's bf16 table in global memory (device_act_table), or null: each CTA of a
  // kernel that looks the function up (fast_key.h act_table_capable) computes it (fast.cuh ActTable::fill). Last:
  // inserted before the fields above, the shifted offsets made ptxas spill 16 bytes in the bf16 MXFP8 row+col geglu
  // kernel (session 39's review).
  const float* act_table_src;
  // fp8_tensor / NVFP4 rows kernels (fast.cuh kClusterAmax) launched right after their own amax
  // kernel (the two-kernel path, launch.cpp): that kernel released this one only after each of its
  // CTAs had waited for everything before it in the stream (so the grids that wrote the input had
  // completed and flushed their writes before this grid could be scheduled), and writes nothing
  // this one reads but the amax. So the CTA's first tile is loaded before this kernel's
  // programmatic wait, while the amax kernel drains. (No fence in the amax kernel: it would order
  // nothing the dependent relies on, and cost its 2000 CTAs ~0.8 us on an H100, session 44.) The PTX
  // ISA promises the earlier grids' writes only after the wait: loads before it rest on the
  // hardware's behaviour (a grid's L1 holds no line older than its launch), which
  // GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore checks with a one-CTA amax kernel
  // too, whose cast runs on SMs that never ran an amax CTA.
  // Last, as act_table_src above.
  bool early_loads;
  // The one-launch amax of a per-tensor call too large for one cluster (grid_amax_grid,
  // fast_launch.hpp): in a kernel keyed FastKey::one_launch, a non-null grid_amax is the call's
  // exchange in global memory (kGridAmaxSlots words, one per CTA, all of one parity between
  // calls: each launch leaves them so), whose CTAs, all resident at once (a cooperative launch),
  // meet there instead of in a cluster's shared memory (fast.cuh grid_amax_bits). Last, as
  // act_table_src above.
  unsigned* grid_amax;
};

struct DequantParams {
  const uint8_t* data;
  const void* scales;
  num::ScaleGeometry geom;
  int64_t rows, cols;  // the stored data matrix (and the output)
  bool swap_ik;        // columnwise same-shape: scale coordinates are (col, row)
  int br, bc;
  bool per_row_scale, tensor_scaled, ue8m0, fp32_scales;
  num::Scheme scheme;
  const float* global_scale;  // or null (1.0)
  void* y;
  int64_t y_stride;
};

}  // namespace mxq::cuda
