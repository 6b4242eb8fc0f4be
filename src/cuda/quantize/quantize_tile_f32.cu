// Quantize / dequantize instantiations for f32.
#define MXQ_INPUT_DTYPE 0
#include "cuda/quantize/quantize_tile_inst.cuh"
