// The CPU reference backend: the bit-exact oracle for every device kernel.
#pragma once

#include "core/validate.hpp"

namespace mxq::cpu {

void quantize(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt);
// With the fused epilogues of `opt` (activation, act_input, dbias, noop): src/cpu/fused.cpp.
// The GEMM reference (src/cpu/gemm.cpp).
void gemm(const GemmCall& call, const QuantizedTensor& a, const QuantizedTensor& b, const GemmOptions& opt);
void quantize_fused(const QuantizeCall& call, const QuantizedTensor& out, const QuantizeOptions& opt);
void dequantize(const DequantizeCall& call, const QuantizedTensor& q, bool columnwise);

}  // namespace mxq::cpu
