// Which specialised kernel (fast.cuh) a recipe maps to, for an input dtype: the one function the
// dispatcher, the JIT warm-up and the tests use to name a configuration. Alignment and shape
// conditions of the call itself are checked by the CUDA launcher.
#pragma once

#include <optional>
#include <string>

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

}  // namespace mxq::cuda
