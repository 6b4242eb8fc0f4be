// Quantize / dequantize instantiations for f16.
#define MXQ_INPUT_DTYPE 1
#include "cuda/quantize/quantize_tile_inst.cuh"
