// Quantize tile kernels for f16 input, e4m3fn elements.
#define MXQ_INPUT_DTYPE 1
#define MXQ_ELEM num::ElemFormat::e4m3fn
#include "cuda/quantize/quantize_tile_inst.cuh"
