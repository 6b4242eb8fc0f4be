// Specialised quantize kernels for bf16 input.
#define MXQ_INPUT_DTYPE 2
#include "cuda/quantize/fast_inst.cuh"
