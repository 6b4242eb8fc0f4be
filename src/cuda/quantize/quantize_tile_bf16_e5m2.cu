// Quantize tile kernels for bf16 input, e5m2 elements.
#define MXQ_INPUT_DTYPE 2
#define MXQ_ELEM num::ElemFormat::e5m2
#include "cuda/quantize/quantize_tile_inst.cuh"
