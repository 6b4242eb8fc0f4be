// A recipe is a value: the scheme, element format, block shape, scale type and layout,
// rounding and options of FORMATS.md section 2. One quantize() dispatches on it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mxq/dtype.hpp"
#include "mxq/numerics/layouts.h"
#include "mxq/numerics/recipes.h"

namespace mxq {

using num::ElemFormat;
using num::MxRounding;
using num::ScaleLayout;
using num::Scheme;

enum class Direction : uint8_t { rowwise = 1, columnwise = 2, both = 3 };
// Columnwise output in the input's orientation (TransformerEngine) or transposed, K-major
// (what Hopper FP8 tensor cores read).
enum class ColumnForm : uint8_t { same_shape = 0, transposed = 1 };
enum class ScaleType : uint8_t { float32 = 0, ue8m0 = 1, ue4m3 = 2 };

struct Recipe {
  Scheme scheme = Scheme::mx;
  ElemFormat elem = ElemFormat::e4m3fn;
  int block_rows = 1;   // rowwise block shape over the input: 1 x 32, 1 x 128, 128 x 128, ...
  int block_cols = 32;  // 0 x 0 for fp8_tensor (the whole tensor)
  ScaleType scale_type = ScaleType::ue8m0;
  ScaleLayout layout = ScaleLayout::row_major;
  MxRounding rounding = MxRounding::rceil;
  bool pow2 = false;
  float eps = 0.0f;
  Direction direction = Direction::rowwise;
  ColumnForm column_form = ColumnForm::transposed;

  // Presets: fp8_tensor, fp8_tensor_e5m2, fp8_block_1x128 (alias fp8_block), fp8_block_1x64,
  // fp8_block_1x32, fp8_block_128x128, mxfp8 (alias mxfp8_e4m3), mxfp8_e5m2, mxfp4, nvfp4,
  // nvfp4_2d, fp4_block_1x32 (DeepSeek V4 FP4 activations). Options follow a colon:
  // "mxfp8:dir=both,colform=transposed", "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu".
  static Recipe parse(std::string_view text);
  static std::string preset_names();
  // Canonical text that parse() reads back to an equal recipe (a rowwise recipe's column_form,
  // which nothing reads, is left out: it comes back as the preset's).
  std::string name() const;

  // Throws an Error naming the field if the combination is not one FORMATS.md defines.
  void validate() const;

  bool has_rowwise() const { return uint8_t(direction) & 1; }
  bool has_columnwise() const { return uint8_t(direction) & 2; }
  bool is_tensor_scaled() const { return scheme == Scheme::fp8_tensor; }
  // fp8_tensor and nvfp4: a tensor-level scale from the amax (global_scale and amax buffers).
  bool has_global_scale() const { return scheme == Scheme::fp8_tensor || scheme == Scheme::nvfp4; }
  // nvfp4_2d: 16 x 16 amax tiles, but one stored scale per row and 1 x 16 block.
  bool scale_per_row() const { return scheme == Scheme::nvfp4; }
  ElemFormat element() const { return elem; }
  DType data_dtype() const;
  DType scale_dtype() const;  // float32, float8_e8m0fnu, float8_e4m3fn (UE4M3) or uint8/int32
  num::ScaleRule scale_rule(float tensor_factor = 0.0f) const;

  bool operator==(const Recipe&) const = default;
};

const char* scheme_name(Scheme s);
const char* layout_name(ScaleLayout l);
const char* elem_dtype_name(ElemFormat f);

}  // namespace mxq
