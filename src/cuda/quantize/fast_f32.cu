// Specialised quantize kernels for f32 input.
#define MXQ_INPUT_DTYPE 0
#include "cuda/quantize/fast_inst.cuh"
