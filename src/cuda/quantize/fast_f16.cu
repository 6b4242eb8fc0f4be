// Specialised quantize kernels for f16 input.
#define MXQ_INPUT_DTYPE 1
#include "cuda/quantize/fast_inst.cuh"
