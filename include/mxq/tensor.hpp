// Non-owning descriptions of tensors: a strided view of an input or output, and a quantized
// tensor (data, scales in their layout, global scale, amax, recipe). Nothing here allocates.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "mxq/dtype.hpp"
#include "mxq/recipe.hpp"

namespace mxq {

enum class DeviceKind : uint8_t { cpu = 0, cuda = 1 };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const;
};

inline constexpr int kMaxDims = 6;
// The most elements a tensor may have, and the largest extent of any of its dimensions: 2^48
// (far beyond any device's memory), so that element and byte counts never overflow int64. A
// larger shape is an invalid_argument error naming it.
inline constexpr int64_t kMaxElements = int64_t(1) << 48;
// Whether a x b elements (a, b >= 0, each a dimension or a product of them) stay within the limit,
// without computing an overflowing product: every size check of the library is this one.
constexpr bool fits_elements(int64_t a, int64_t b) {
  return a >= 0 && b >= 0 && a <= kMaxElements && b <= kMaxElements && (a == 0 || b <= kMaxElements / a);
}

// A strided view. Strides are in elements (FP4: logical elements, and the innermost stride
// must be 1). Leading dimensions that collapse to one row stride are treated as rows.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::float32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};
  Device device{};

  // A (rows, cols) matrix; row_stride in elements, -1 for contiguous rows (cols).
  static TensorView matrix(void* data, DType dtype, int64_t rows, int64_t cols, int64_t row_stride = -1,
                           Device device = {});
  int64_t numel() const;
};

// A raw output buffer with its capacity, so that every write can be checked before it happens.
struct Buffer {
  void* data = nullptr;
  int64_t bytes = 0;
};

// Shape and size of one buffer of a quantized tensor, as plan() computes them.
struct BufferSpec {
  DType dtype = DType::uint8;
  int64_t rows = 0, cols = 0;  // logical shape (FP4 data: elements; bytes are half)
  int64_t bytes = 0;
  num::ScaleGeometry geometry{};  // scales only
  bool planned = false;           // the recipe has this buffer (of 0 bytes for an empty input)
  bool present() const { return bytes > 0; }
};

struct QuantizedLayout {
  int64_t rows = 0, cols = 0;  // the input's matrix shape
  BufferSpec data, scales;          // rowwise
  BufferSpec col_data, col_scales;  // columnwise
  BufferSpec global_scale;          // fp8_tensor: scale_inv; nvfp4: 1 / S_enc (one fp32)
  // fp8_tensor, nvfp4: the tensor amax (one fp32). Required for them: the GPU computes it on
  // the device before the cast reads it (no host synchronisation). Optional for other recipes.
  BufferSpec amax;
  int64_t total_bytes() const;
};

// Exact shapes and byte sizes of every output buffer for (recipe, rows, cols). Validates both.
QuantizedLayout plan(const Recipe& recipe, int64_t rows, int64_t cols);

struct QuantizedTensor {
  Recipe recipe;
  int64_t rows = 0, cols = 0;
  Device device{};
  Buffer data, scales;          // rowwise
  Buffer col_data, col_scales;  // columnwise
  Buffer global_scale;          // one fp32 (see QuantizedLayout)
  Buffer amax;                  // one fp32, the input's amax (see QuantizedLayout::amax)
};

}  // namespace mxq
