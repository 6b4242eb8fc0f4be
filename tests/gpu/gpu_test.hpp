// What the GPU test files share: the devices and the skip that reports SKIPPED (never passed)
// without a usable GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "cli/host_tensor.hpp"
#include "mxq/mxq.hpp"

namespace mxq::gpu_test {

using cli::DeviceBuffer;
using cli::QuantizedBuffers;

inline const Device kGpu{DeviceKind::cuda, 0};
inline const Device kCpu{};

inline bool have_gpu() { return runtime::cuda_device_count() > 0; }
// MXQ_GPU_TEST_SMALL=1 (used under compute-sanitizer) drops the large shapes.
inline bool small_only() {
  const char* v = std::getenv("MXQ_GPU_TEST_SMALL");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";  // "0" or empty: the full set
}

}  // namespace mxq::gpu_test

#define REQUIRE_GPU()                   \
  if (!::mxq::gpu_test::have_gpu()) \
  GTEST_SKIP() << "no usable CUDA device: " << ::mxq::backend_status()[1].detail
