// late_writer.cu: a predecessor kernel that writes late, for the GEMM kernels' launch-order test.
#pragma once

#include <cstdint>

namespace mxq::gpu_test {

// Up to kMax copies (bytes[p] = 0 for none).
struct LateCopy {
  static constexpr int kMax = 4;
  void* dst[kMax];
  const void* src[kMax];
  int64_t bytes[kMax];
};

// Enqueues one CTA that lets the next kernel launch (griddepcontrol.launch_dependents), spins for
// `cycles` clock cycles, then makes the copies. False if the launch failed.
bool late_copy(const LateCopy& c, long long cycles, void* stream);

// Enqueues, launched as the library's kernels are (programmatic serialization) but without
// griddepcontrol.wait, an OR of src's bytes into *nonzero (bit 0). False if the launch failed.
bool early_peek(const void* src, int64_t bytes, uint32_t* nonzero, void* stream);

}  // namespace mxq::gpu_test
