// Quantize tile kernels for bf16 input, e4m3fn elements.
#define MXQ_INPUT_DTYPE 2
#define MXQ_ELEM num::ElemFormat::e4m3fn
#include "cuda/quantize/quantize_tile_inst.cuh"
