// The CPU reference backend: the bit-exact oracle for every device kernel.
#pragma once

#include <functional>

#include "core/validate.hpp"

namespace mxq::cpu {

void quantize(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt);
void dequantize(const DequantizeCall& call, const QuantizedTensor& q, bool columnwise);

// Runs fn(begin, end) over [0, n) split across the machine's cores.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace mxq::cpu
