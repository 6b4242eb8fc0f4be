// Scale layouts of FORMATS.md section 3. A scale matrix is indexed by (mn, kb): mn is the row
// of the quantized operand (M or N; for columnwise output, the input column) and kb the block
// index along the reduction dimension. Kernels, the CPU reference and tests all call these.
#pragma once

#include "mxq/numerics/config.h"

namespace mxq::num {

enum class ScaleLayout : uint8_t {
  row_major = 0,       // compact, in the data tensor's orientation
  mn_major_tma = 1,    // fp32 [kb][align(mn, 4)]  (DeepGEMM sm90 activation scales)
  packed_ue8m0 = 2,    // int32 [ceil(kb/4)][align(mn, 4)], byte j of word w = block 4w+j
  swizzled_128x4 = 3,  // cuBLASLt / tcgen05 block-scaled layout, 1-byte scales
};

constexpr MXQ_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr MXQ_HD int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Geometry of one scale matrix. `kb_outer` marks the compact columnwise "same shape" form, in
// which the scale tensor has the input's orientation: [kb][mn].
struct ScaleGeometry {
  ScaleLayout layout;
  int64_t mn, kb;
  bool kb_outer;
};

// Number of storage units (bytes for 1-byte scales and packed_ue8m0, fp32 words otherwise) that
// the layout occupies, padding included.
MXQ_HD int64_t scale_storage_units(const ScaleGeometry& g) {
  switch (g.layout) {
    case ScaleLayout::row_major: return g.mn * g.kb;
    case ScaleLayout::mn_major_tma: return g.kb * round_up(g.mn, 4);
    case ScaleLayout::packed_ue8m0: return ceil_div(g.kb, 4) * round_up(g.mn, 4) * 4;
    default: return round_up(g.mn, 128) * round_up(g.kb, 4);
  }
}

// Storage unit holding scale (i, j), i < mn, j < kb; the layout as a template argument.
template <ScaleLayout L>
MXQ_HD int64_t scale_offset_for(const ScaleGeometry& g, int64_t i, int64_t j) {
  if constexpr (L == ScaleLayout::row_major) {
    return g.kb_outer ? j * g.mn + i : i * g.kb + j;
  } else if constexpr (L == ScaleLayout::mn_major_tma) {
    return j * round_up(g.mn, 4) + i;
  } else if constexpr (L == ScaleLayout::packed_ue8m0) {
    return ((j / 4) * round_up(g.mn, 4) + i) * 4 + (j % 4);
  } else {
    const int64_t kb4 = round_up(g.kb, 4) / 4;
    return ((i / 128) * kb4 + j / 4) * 512 + (i % 32) * 16 + ((i % 128) / 32) * 4 + j % 4;
  }
}

MXQ_HD int64_t scale_offset(const ScaleGeometry& g, int64_t i, int64_t j) {
  switch (g.layout) {
    case ScaleLayout::row_major: return scale_offset_for<ScaleLayout::row_major>(g, i, j);
    case ScaleLayout::mn_major_tma: return scale_offset_for<ScaleLayout::mn_major_tma>(g, i, j);
    case ScaleLayout::packed_ue8m0: return scale_offset_for<ScaleLayout::packed_ue8m0>(g, i, j);
    default: return scale_offset_for<ScaleLayout::swizzled_128x4>(g, i, j);
  }
}

// Every layout but swizzled_128x4 is separable and linear in the row: scale (i, j) is at
// i * row_stride + (j >> shift) * block_step + (j & mask) (packed_ue8m0 keeps four blocks per
// word: shift 2, mask 3). A kernel walking K computes each block's offset once for all its rows.
// test_layouts.cpp checks the walk against scale_offset.
MXQ_HD constexpr bool scale_offset_separable(ScaleLayout l) { return l != ScaleLayout::swizzled_128x4; }

// swizzled_128x4 splits too, though not linearly in the row: scale (i, j) is at
// swizzled_row_part(i, swizzled_band(kb)) + swizzled_block_part(j), the band being the bytes of
// 128 rows. A rows kernel adds the block part to its pointer once and the row part per store,
// from its 32-bit row index (fast.cuh RowsWalk). test_layouts.cpp holds the sum to scale_offset.
MXQ_HD constexpr int64_t swizzled_band(int64_t kb) { return 512 * ((kb + 3) / 4); }
MXQ_HD constexpr int swizzled_block_part(int j) { return (j >> 2) * 512 + (j & 3); }
MXQ_HD constexpr int64_t swizzled_row_part(int i, int64_t band) {
  return (i >> 7) * band + (((i & 31) << 4) | (((i >> 5) & 3) << 2));
}

struct SeparableWalk {
  int64_t row_stride, block_step;
  int shift, mask;
  MXQ_HD int64_t row(int64_t i) const { return i * row_stride; }
  MXQ_HD int64_t block(int64_t j) const { return (j >> shift) * block_step + (j & mask); }
};

MXQ_HD SeparableWalk separable_walk(const ScaleGeometry& g) {
  const bool packed = g.layout == ScaleLayout::packed_ue8m0;
  return {scale_offset(g, 1, 0), scale_offset(g, 0, packed ? 4 : 1), packed ? 2 : 0, packed ? 3 : 0};
}

// The stored scale of block (i, j) in layout g: an fp32 word's bits, or one byte (UE8M0 and
// UE4M3 scales; packed_ue8m0's int32 words hold four and are addressed by byte).
MXQ_HD uint32_t stored_scale_at(const void* scales, const ScaleGeometry& g, bool fp32_words, int64_t i, int64_t j) {
  const int64_t off = scale_offset(g, i, j);
  return fp32_words ? static_cast<const uint32_t*>(scales)[off] : static_cast<const uint8_t*>(scales)[off];
}

}  // namespace mxq::num
