// Quantize / dequantize instantiations for bf16.
#define MXQ_INPUT_DTYPE 2
#include "cuda/quantize/quantize_tile_inst.cuh"
