#include "mxq/dtype.hpp"

#include "mxq/error.hpp"

namespace mxq {
namespace {

constexpr DTypeInfo kTable[] = {
    {DType::float32, "float32", "float", 32},
    {DType::float16, "float16", "__half", 16},
    {DType::bfloat16, "bfloat16", "__nv_bfloat16", 16},
    {DType::float8_e4m3fn, "float8_e4m3fn", "uint8_t", 8},
    {DType::float8_e5m2, "float8_e5m2", "uint8_t", 8},
    {DType::float4_e2m1fn, "float4_e2m1fn", "uint8_t", 4},
    {DType::float8_e8m0fnu, "float8_e8m0fnu", "uint8_t", 8},
    {DType::uint8, "uint8", "uint8_t", 8},
    {DType::int32, "int32", "int32_t", 32},
};

}  // namespace

const DTypeInfo* dtype_table(int* count) {
  *count = int(std::size(kTable));
  return kTable;
}

const DTypeInfo& dtype_info(DType t) {
  const auto i = size_t(t);
  if (i >= std::size(kTable)) fail_arg("dtype: value " + std::to_string(i) + " is not a DType");
  return kTable[i];
}

std::optional<DType> find_dtype(std::string_view name) {
  for (const auto& e : kTable)
    if (name == e.name) return e.dtype;
  // torch's name for the packed storage type is accepted as the same dtype
  if (name == "float4_e2m1fn_x2") return DType::float4_e2m1fn;
  return std::nullopt;
}

std::string supported_dtype_names() {
  std::string s;
  for (const auto& e : kTable) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

DType parse_dtype(std::string_view name, std::string_view argument) {
  if (auto t = find_dtype(name)) return *t;
  std::string msg = std::string(argument) + ": unknown dtype '" + std::string(name) + "'";
  if (name == "float8_e4m3")
    msg += " (the IEEE-style E4M3 with Inf, max 240, is not supported; did you mean float8_e4m3fn?)";
  fail_arg(msg + "; supported: " + supported_dtype_names());
}

}  // namespace mxq
