// Quantize tile kernels for f16 input, e2m1 elements.
#define MXQ_INPUT_DTYPE 1
#define MXQ_ELEM num::ElemFormat::e2m1
#include "cuda/quantize/quantize_tile_inst.cuh"
