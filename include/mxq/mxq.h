/* The mxq C ABI (libmxq.so): quantize and dequantize DLPack tensors from C or any FFI.
 *
 * Conventions, for every function below:
 * - Each returns an mxq_status. On failure mxq_last_error() gives a message naming the
 *   argument, the value and what was expected, and no output (buffer, out-parameter) has been
 *   written. No C++ exception crosses this interface.
 * - Tensors are DLTensors (DLPack). The library never takes ownership of one and never keeps a
 *   pointer to one after the call returns. `data + byte_offset` is the first element; strides
 *   are in elements; NULL strides mean contiguous (row-major). Devices: kDLCPU, and kDLCUDA with
 *   device_id. Dtypes: float32, float16 and bfloat16 for dense tensors; quantized buffers take
 *   the plan's dtype or uint8 storage of the same byte size (DLPack before 1.1 has no FP8/FP4
 *   codes; with 1.1 headers float8_e4m3fn, float8_e5m2, float8_e8m0fnu and float4_e2m1fn work).
 * - Thread safety: every function may be called from any thread. A recipe is immutable after
 *   mxq_recipe_parse and may be shared between threads; it must not be destroyed while another
 *   thread uses it. Concurrent calls that write the same buffers are the caller's race.
 * - Dtype names returned here come from mxq's one dtype table and are torch's / ml_dtypes'
 *   (float8_e4m3fn, float4_e2m1fn, float8_e8m0fnu, ...); they live as long as the library.
 */
#ifndef MXQ_MXQ_H
#define MXQ_MXQ_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors mxq::ErrorCode (include/mxq/error.hpp). */
typedef enum mxq_status {
  MXQ_OK = 0,
  MXQ_ERROR_INVALID_ARGUMENT = 1,    /* bad pointer, shape, dtype, size or option value */
  MXQ_ERROR_UNSUPPORTED = 2,         /* valid request this build, backend or device cannot serve */
  MXQ_ERROR_BACKEND_UNAVAILABLE = 3, /* a backend that was asked for cannot run here */
  MXQ_ERROR_FALLBACK_FORBIDDEN = 4,  /* strict mode refused a fallback */
  MXQ_ERROR_DEVICE = 5,              /* a CUDA call failed */
  MXQ_ERROR_INTERNAL = 6             /* a bug, or out of memory */
} mxq_status;

/* Mirrors mxq::Backend. AUTO defers to mxq_set_default_backend, then MXQ_BACKEND; unset, it picks cpu
 * for host tensors and, for CUDA tensors, a kernel built ahead of time, else a JIT-compiled one. */
typedef enum mxq_backend {
  MXQ_BACKEND_AUTO = 0,
  MXQ_BACKEND_CPU = 1,
  MXQ_BACKEND_CUDA_AOT = 2,
  MXQ_BACKEND_CUDA_JIT = 3,
  MXQ_BACKEND_CUBLASLT = 4 /* gemm only: cuBLASLt block-scaled FP8 (CUDA >= 12.9) */
} mxq_backend;

/* Mirrors mxq::Activation: the activation fused into a quantize (mxq_quantize_options). */
typedef enum mxq_activation {
  MXQ_ACT_NONE = 0,
  MXQ_ACT_GELU = 1,      /* x * Phi(x), with erf */
  MXQ_ACT_GELU_TANH = 2, /* the tanh approximation */
  MXQ_ACT_SILU = 3,
  MXQ_ACT_RELU = 4,
  MXQ_ACT_QGELU = 5,     /* x * sigmoid(1.702 x) */
  MXQ_ACT_SRELU = 6,     /* relu(x)^2 */
  MXQ_ACT_SWIGLU = 7,    /* gated: input rows [a | b] of width 2N -> silu(a) * b, width N */
  MXQ_ACT_GEGLU = 8,     /* gated: gelu(a) * b */
  MXQ_ACT_REGLU = 9      /* gated: relu(a) * b */
} mxq_activation;

/* A parsed recipe (scheme, element format, block shape, scale type and layout, ...). */
typedef struct mxq_recipe_t* mxq_recipe;

/* The message of the last failed call on this thread; "" after a successful call. The pointer
 * stays valid until the next mxq_* call on this thread. Never NULL. */
const char* mxq_last_error(void);

/* Parses a recipe: a preset ("mxfp8", "nvfp4", "fp8_block_1x128", ...) with optional options
 * after a colon ("mxfp8:dir=both,layout=swizzled_128x4").
 *   text: NUL-terminated recipe text; not kept.
 *   out:  receives a new handle, owned by the caller, released with mxq_recipe_destroy. */
mxq_status mxq_recipe_parse(const char* text, mxq_recipe* out);

/* Releases a recipe from mxq_recipe_parse. NULL is a no-op. Not concurrent with its use. */
void mxq_recipe_destroy(mxq_recipe recipe);

/* The canonical text of a recipe, which mxq_recipe_parse reads back to an equal recipe.
 *   recipe: a handle from mxq_recipe_parse.
 *   buf, n: caller's buffer of n bytes for the NUL-terminated text; buf may be NULL when n is 0
 *           (a size query). If n is too small, nothing is written and INVALID_ARGUMENT returned.
 *   needed: if not NULL, receives the bytes required including the NUL, also on that error. */
mxq_status mxq_recipe_name(mxq_recipe recipe, char* buf, size_t n, size_t* needed);

/* One buffer of a quantized tensor. `present` is 0 (and the rest zero, dtype "") when the
 * recipe has no such buffer (an empty input's buffers are present, of 0 bytes). dtype points
 * into the library's dtype table. rows, cols: the logical shape (FP4 data counts elements;
 * its bytes are half). */
typedef struct mxq_buffer_spec {
  const char* dtype;
  int64_t rows;
  int64_t cols;
  int64_t bytes;
  int present;
} mxq_buffer_spec;

/* Every output buffer of quantizing a rows x cols matrix with a recipe. */
typedef struct mxq_layout {
  int64_t rows, cols;
  mxq_buffer_spec data, scales;         /* rowwise */
  mxq_buffer_spec col_data, col_scales; /* columnwise */
  mxq_buffer_spec global_scale;         /* fp8_tensor: scale_inv; nvfp4: 1 / S_enc (one fp32) */
  mxq_buffer_spec amax;                 /* fp8_tensor, nvfp4: the tensor amax (one fp32) */
} mxq_layout;

/* Exact dtypes, shapes and byte sizes of the buffers mxq_quantize writes.
 *   recipe:     a handle from mxq_recipe_parse.
 *   rows, cols: the input's matrix shape (leading dimensions collapse into rows); >= 0, and
 *               cols even for FP4 recipes.
 *   out:        caller's struct, filled on success. */
mxq_status mxq_plan(mxq_recipe recipe, int64_t rows, int64_t cols, mxq_layout* out);

/* The buffers of a quantized tensor, as described by mxq_plan. A member is NULL when the
 * recipe has no such buffer (amax may also be NULL for recipes that only optionally write it).
 * Each must be contiguous and at least as large as the plan says. The descriptors are read,
 * never modified; mxq_quantize writes the memory they point to. */
typedef struct mxq_quantized {
  const DLTensor* data;
  const DLTensor* scales;
  const DLTensor* col_data;
  const DLTensor* col_scales;
  const DLTensor* global_scale;
  const DLTensor* amax;
} mxq_quantized;

/* Options of mxq_quantize; pass NULL for the defaults. Option structs only ever grow by
 * appending fields: `size` tells the library which fields the caller knows, so initialise with
 * MXQ_QUANTIZE_OPTIONS_INIT (size = sizeof, everything else zero). */
typedef struct mxq_quantize_options {
  size_t size; /* sizeof(mxq_quantize_options) as the caller compiled it */
  mxq_backend backend;
  /* fp8_tensor and nvfp4: use this amax (one float32 on the input's device) instead of
   * computing it, e.g. a static checkpoint scale. NULL: compute it. */
  const DLTensor* amax_in;
  /* fp8_tensor: use this encode scale directly (one float32 on the input's device). */
  const DLTensor* scale_in;
  /* A cudaStream_t for CUDA tensors (NULL: the default stream); ignored on the CPU. The one
   * untyped pointer here, so that this header needs no CUDA headers. */
  void* stream;
  /* ---- fused epilogues: every backend gives the same bits (on CUDA, kernels compiled on first
   * use by the JIT; the cases CUDA refuses with MXQ_ERROR_UNSUPPORTED are listed at
   * mxq::QuantizeOptions in mxq/api.hpp). What is quantized is y = f(input):
   *   activation: y = act(input); a gated one reads input rows [a | b] (width 2N), gives
   *               act(a) * b, and `quantized` is for width N.
   *   act_input:  NULL, or the backward pass: input is the gradient and
   *               y = input * act'(act_input) (same shape; activation must be elementwise).
   *   dbias:      NULL, or float32 [N] that receives the column sums of y.
   *   noop:       NULL, or one float32 on the input's device; non-zero: write nothing at all. */
  mxq_activation activation;
  const DLTensor* act_input;
  DLTensor* dbias;
  const DLTensor* noop;
} mxq_quantize_options;
#define MXQ_QUANTIZE_OPTIONS_INIT {sizeof(mxq_quantize_options), MXQ_BACKEND_AUTO, NULL, NULL, NULL, MXQ_ACT_NONE, NULL, NULL, NULL}

/* Quantizes input into the buffers of `quantized`. Validates every argument before the
 * first write. The CPU backend returns when done; a CUDA backend enqueues on options.stream.
 *   recipe:    a handle from mxq_recipe_parse.
 *   input:     float32, float16 or bfloat16; 1 to 6 dimensions, the leading ones collapsing to
 *              rows of one stride; the last dimension contiguous.
 *   quantized: the output buffers, on the input's device, sized by mxq_plan(rows, cols).
 *   options:   NULL or options (see mxq_quantize_options). */
mxq_status mxq_quantize(mxq_recipe recipe, const DLTensor* input, const mxq_quantized* quantized,
                        const mxq_quantize_options* options);

/* Options of mxq_dequantize; pass NULL for the defaults. Initialise with
 * MXQ_DEQUANTIZE_OPTIONS_INIT (see mxq_quantize_options for `size`). */
typedef struct mxq_dequantize_options {
  size_t size; /* sizeof(mxq_dequantize_options) as the caller compiled it */
  mxq_backend backend;
  void* stream; /* cudaStream_t, as in mxq_quantize_options */
} mxq_dequantize_options;
#define MXQ_DEQUANTIZE_OPTIONS_INIT {sizeof(mxq_dequantize_options), MXQ_BACKEND_AUTO, NULL}

/* Decodes a quantized tensor into output.
 *   recipe:     the recipe it was quantized with.
 *   quantized:  its buffers (read only); only those of the chosen direction are needed.
 *   rows, cols: the shape of the input it was quantized from.
 *   output:     float32, float16 or bfloat16 on the buffers' device, of shape (rows, cols), or
 *               (cols, rows) for columnwise output stored transposed.
 *   columnwise: 0 decodes the rowwise buffers, 1 the columnwise ones.
 *   options:    NULL or options. */
mxq_status mxq_dequantize(mxq_recipe recipe, const mxq_quantized* quantized, int64_t rows, int64_t cols,
                          DLTensor* output, int columnwise, const mxq_dequantize_options* options);

/* Options of mxq_gemm; NULL for the defaults. Initialise with MXQ_GEMM_OPTIONS_INIT. */
typedef struct mxq_gemm_options {
  size_t size; /* sizeof(mxq_gemm_options) */
  mxq_backend backend;
  float alpha;           /* D = alpha * A . B^T (+ C) (+ bias); 1 by default */
  const DLTensor* c;     /* NULL, or float32 (M, N) on D's device; may be D itself (accumulate) */
  const DLTensor* bias;  /* NULL, or float32 (N) on D's device */
  void* stream;          /* cudaStream_t, as in mxq_quantize_options */
  int promote_k;         /* 0 (by D's dtype: 128 for bfloat16, 32 for float32), 32, 64 or 128: see
                            GemmOptions::promote_k in mxq/api.hpp; 0 by default */
  int64_t block_m;       /* 0 (the plan's choice), 128 or 256: GemmOptions::block_m; 0 by default. Appended:
                            a caller built before it passes the old size and gets 0 */
} mxq_gemm_options;
#define MXQ_GEMM_OPTIONS_INIT {sizeof(mxq_gemm_options), MXQ_BACKEND_AUTO, 1.0f, NULL, NULL, NULL, 0, 0}

/* Block-scaled GEMM: D (M, N) = alpha * A (M, K) . B (N, K)^T (+ C) (+ bias), both operands
 * K-major (rowwise) as mxq_quantize writes them, in one scale family: 1D2D (A fp8_block_1x128,
 * B fp8_block_128x128) or 1D1D (both fp8_block_1x128; fp32 or pow2/UE8M0 scales, any layout); MX
 * (each of A and B mxfp8, mxfp8_e5m2 or mxfp4); NVFP4 (nvfp4 or nvfp4_2d, with global_scale); or
 * fp8_tensor (with global_scale). The cpu backend is the fp64 reference and takes them all. CUDA
 * fp8_block operands run our TMA + wgmma kernel, cuBLASLt's block-scaled GEMM
 * (MXQ_BACKEND_CUBLASLT), our decode kernel or a generic kernel; fp8_tensor ones cuBLASLt's FP8
 * GEMM or the generic kernel; MX and NVFP4 ones the generic kernel (a fallback under auto); as
 * mxq/api.hpp describes (GemmOptions). mxq_last_dispatch says which ran.
 *   a_recipe, a, m, k: A's recipe, buffers and shape;  b_recipe, b, n: B's (its K is k).
 *   d: float32 or bfloat16 (M, N).  options: NULL or options. */
mxq_status mxq_gemm(mxq_recipe a_recipe, const mxq_quantized* a, int64_t m, int64_t k, mxq_recipe b_recipe,
                    const mxq_quantized* b, int64_t n, DLTensor* d, const mxq_gemm_options* options);

/* The library version (semantic versioning): each pointer receives one part. */
mxq_status mxq_version(int* major, int* minor, int* patch);

/* The version as "major.minor.patch"; a static string. */
const char* mxq_version_string(void);

/* Build type, compiler and CUDA version/target; a static string. */
const char* mxq_build_info(void);

/* Whether a backend can run here.
 *   backend:   MXQ_BACKEND_CPU, MXQ_BACKEND_CUDA_AOT, MXQ_BACKEND_CUDA_JIT or MXQ_BACKEND_CUBLASLT.
 *   available: receives 1 or 0.
 *   detail, n: NULL / 0, or a buffer of n bytes for a NUL-terminated explanation (what it runs
 *              on, or why not), truncated to fit. */
mxq_status mxq_backend_available(mxq_backend backend, int* available, char* detail, size_t n);

/* The process-wide default backend, used when a call's options say MXQ_BACKEND_AUTO; it wins
 * over the environment variable MXQ_BACKEND. MXQ_BACKEND_AUTO clears it.
 *   backend: any mxq_backend. */
mxq_status mxq_set_default_backend(mxq_backend backend);

/* Strict mode (also MXQ_STRICT=1): every fallback, e.g. from a specialised CUDA kernel to the
 * generic one, fails with MXQ_ERROR_FALLBACK_FORBIDDEN before anything is written.
 *   on: 1 or 0. */
mxq_status mxq_set_strict(int on);

/* What this thread's last mxq_quantize / mxq_dequantize / mxq_gemm ran: each buffer (NULL /
 * 0 to skip it) receives a NUL-terminated string, truncated to fit.
 *   backend:  "cpu", "cuda-aot", "cuda-jit" or "cublaslt".
 *   kernel:   e.g. "fast bf16 mx e4m3fn rows g=32 ...", "generic tile", "reference".
 *   fallback: the fallback taken and why, or "" when none. */
mxq_status mxq_last_dispatch(char* backend, size_t nb, char* kernel, size_t nk, char* fallback, size_t nf);

/* Compiles the cuda-jit kernels of some recipes into the memory and disk caches, in parallel,
 * off the hot path (e.g. at start-up). Needs no GPU.
 *   recipes, n: n recipe strings ("mxfp8:dir=both", ...); n = 0 compiles every preset and option.
 *   arch:       compute capability, e.g. 90; 0 for the current device's (90 without one).
 *   threads:    compiler threads; 0 for one per core, at most one per kernel; negative: an error.
 *   configs:    NULL, or receives the number of kernel configurations now cached.
 * MXQ_ERROR_BACKEND_UNAVAILABLE when the JIT is off (MXQ_JIT=0, no NVRTC, a CPU-only build);
 * MXQ_ERROR_UNSUPPORTED when a configuration failed to compile (the message says which);
 * MXQ_ERROR_INVALID_ARGUMENT for a recipe string that does not parse or has no JIT kernel to
 * compile (its calls run cuda-aot's generic kernel). */
mxq_status mxq_jit_warmup(const char* const* recipes, size_t n, int arch, int threads, int* configs);

/* The number of usable CUDA devices; 0 without CUDA (no error).
 *   count: receives it. */
mxq_status mxq_cuda_device_count(int* count);

/* One CUDA device, whether mxq supports it or not (device and arch queries without CUDA headers).
 *   device:    0 <= device < the number of CUDA devices the CUDA runtime sees.
 *   arch:      NULL, or receives the compute capability as 10 * major + minor (90 on H100 / H200).
 *   sms:       NULL, or receives the number of streaming multiprocessors.
 *   supported: NULL, or receives 1 when mxq's CUDA backends run on it (sm_90), else 0.
 *   name, n:   NULL / 0, or a buffer of n bytes for the NUL-terminated device name, truncated.
 * MXQ_ERROR_INVALID_ARGUMENT when there is no such device (also in a build without CUDA). */
mxq_status mxq_cuda_device_info(int device, int* arch, int* sms, int* supported, char* name, size_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MXQ_MXQ_H */
