// Which specialised kernel (fast.cuh) a recipe maps to, for an input dtype: the one function the
// dispatcher, the JIT warm-up and the tests use to name a configuration. Alignment and shape
// conditions of the call itself are checked by the CUDA launcher.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cuda/quantize/fast_key.h"
#include "mxq/dtype.hpp"
#include "mxq/recipe.hpp"

namespace mxq::cuda {

inline int fast_dtype(DType d) { return d == DType::float32 ? 0 : (d == DType::float16 ? 1 : 2); }

// The key, or nothing with the reason in `why`.
inline std::optional<FastKey> fast_key_for(const Recipe& rc, DType dtype, std::string& why) {
  const bool row = rc.has_rowwise(), col = rc.has_columnwise();
  FastKey k{fast_dtype(dtype), rc.scheme, rc.elem, FastShape::rows, 8, 1, num::ScaleLayout::row_major,
            num::ScaleLayout::row_major};
  if (!rc.is_tensor_scaled()) {
    if (row) k.row_layout = rc.layout;
    if (col) k.col_layout = rc.layout;
  }
  if (rc.is_tensor_scaled()) {
    if (col) {
      k.shape = FastShape::colblocks;
      k.h = 32;
    }
  } else if (rc.block_rows > 1) {
    if (col) {
      why = "2-D blocks with columnwise output";
      return std::nullopt;
    }
    k.shape = FastShape::two_d;
    k.g = rc.block_cols;
    k.h = rc.block_rows;
  } else {
    k.g = rc.block_cols;
    if (col) {
      k.shape = FastShape::colblocks;
      k.h = rc.block_cols;
      k.col_same = keys_column_form(rc.scheme) && rc.column_form == ColumnForm::same_shape;
    }
  }
  if (!fast_key_valid(k)) {
    why = "no specialised kernel for " + std::to_string(k.h) + " x " + std::to_string(k.g) + " blocks in this direction";
    return std::nullopt;
  }
  return k;
}

// The kernels a call keyed `k` may run: k, and for a per-tensor rows kernel its one-launch twin
// (FastKey::one_launch), which the dispatcher picks for small calls. What a warm-up compiles.
inline std::vector<FastKey> with_one_launch_twin(const FastKey& k) {
  if (one_launch_capable(k) && !k.one_launch) return {k, one_launch_twin(k)};
  return {k};
}

}  // namespace mxq::cuda
