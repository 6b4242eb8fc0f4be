// The one table that maps dtype names to types. Every layer (C++, C ABI, Python, CLI, JIT
// source generation) resolves names through it. Names are exactly torch's / ml_dtypes'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mxq {

enum class DType : uint8_t {
  float32 = 0,
  float16 = 1,
  bfloat16 = 2,
  float8_e4m3fn = 3,
  float8_e5m2 = 4,
  float4_e2m1fn = 5,  // packed two per byte (torch float4_e2m1fn_x2); shapes are logical
  float8_e8m0fnu = 6,
  uint8 = 7,
  int32 = 8,
};

struct DTypeInfo {
  DType dtype;
  const char* name;      // torch / ml_dtypes name
  const char* cpp_name;  // spelling in generated CUDA source
  int bits;              // bits per logical element
};

// All supported dtypes, in enum order.
const DTypeInfo* dtype_table(int* count);
const DTypeInfo& dtype_info(DType t);
inline const char* dtype_name(DType t) { return dtype_info(t).name; }
inline int dtype_bits(DType t) { return dtype_info(t).bits; }

// Bytes occupied by `n` logical elements of type t (FP4: n must be even).
inline int64_t dtype_bytes(DType t, int64_t n) { return n * dtype_bits(t) / 8; }

// Resolves a name; an unknown name (including "float8_e4m3", which is not float8_e4m3fn) throws
// an Error that lists the supported names, attributed to `argument`.
DType parse_dtype(std::string_view name, std::string_view argument = "dtype");
std::optional<DType> find_dtype(std::string_view name);
std::string supported_dtype_names();

}  // namespace mxq
