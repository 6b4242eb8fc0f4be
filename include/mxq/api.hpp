// The C++ API: quantize and dequantize on the best backend that supports the call.
#pragma once

#include <string>
#include <vector>

#include "mxq/error.hpp"
#include "mxq/recipe.hpp"
#include "mxq/tensor.hpp"

namespace mxq {

enum class Backend : uint8_t { automatic = 0, cpu = 1, cuda_aot = 2, cuda_jit = 3 };
const char* backend_name(Backend b);
Backend parse_backend(std::string_view name, std::string_view argument = "backend");

struct QuantizeOptions {
  Backend backend = Backend::automatic;
  // fp8_tensor and nvfp4: use this amax (one fp32 on the input's device) instead of computing
  // it, e.g. a static checkpoint scale (vLLM scaled_fp4_quant) or a delayed-scaling amax.
  const float* amax_in = nullptr;
  // fp8_tensor: use this encode scale directly (one fp32 on the input's device).
  const float* scale_in = nullptr;
  void* stream = nullptr;  // cudaStream_t for CUDA tensors
};

struct DequantizeOptions {
  Backend backend = Backend::automatic;
  bool columnwise = false;  // decode the columnwise output (in its stored orientation)
  void* stream = nullptr;
};

// Quantizes x (fp32, fp16 or bf16; any row stride) into `out`, whose buffers plan() sized.
// Validates everything before the first write.
void quantize(const TensorView& x, const QuantizedTensor& out, const QuantizeOptions& options = {});

// Decodes q into y (fp32, fp16 or bf16) of q's shape (columnwise transposed: the transpose).
void dequantize(const QuantizedTensor& q, const TensorView& y, const DequantizeOptions& options = {});

struct BackendStatus {
  Backend backend;
  bool available;
  std::string detail;  // why not, or what it runs on
};
std::vector<BackendStatus> backend_status();

std::string version();
std::string build_info();  // build type, compiler, CUDA version and target

}  // namespace mxq
