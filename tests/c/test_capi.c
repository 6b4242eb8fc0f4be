/* The C ABI end to end on the CPU, from C11: parse, plan, allocate, quantize (float32 mxfp8
 * both directions, bf16 nvfp4), dequantize, hand-checked codes, round-trip bounds, and errors
 * that leave poisoned outputs untouched. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxq/mxq.h"

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define CHECK_OK(call) CHECK((call) == MXQ_OK, "%s", mxq_last_error())

/* An error with a status and a message that contains `needle`. */
static void check_error(mxq_status s, mxq_status expected, const char* needle, const char* what) {
  const char* msg = mxq_last_error();
  CHECK(s == expected, "%s: status %d, expected %d (%s)", what, (int)s, (int)expected, msg);
  CHECK(strstr(msg, needle) != NULL, "%s: message '%s' does not contain '%s'", what, msg, needle);
  printf("  %s -> %d: %s\n", what, (int)s, msg);
}

static float absf(float x) { return x < 0 ? -x : x; }

enum { POISON = 0xA5 };

/* A DLTensor with its own shape storage. */
typedef struct {
  DLTensor t;
  int64_t shape[2];
} Tensor;

static void tensor_init(Tensor* x, void* data, uint8_t code, uint8_t bits, int64_t rows, int64_t cols) {
  memset(x, 0, sizeof *x);
  x->shape[0] = rows;
  x->shape[1] = cols;
  x->t.data = data;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = 2;
  x->t.dtype.code = code;
  x->t.dtype.bits = bits;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
}

/* The buffers of a quantized tensor, allocated from a plan as uint8 storage and poisoned. */
typedef struct {
  Tensor t[6];
  uint8_t* mem[6];
  int64_t bytes[6];
  mxq_quantized q;
} Quantized;

static void quantized_alloc(Quantized* b, const mxq_layout* L) {
  const mxq_buffer_spec* specs[6] = {&L->data, &L->scales, &L->col_data, &L->col_scales, &L->global_scale, &L->amax};
  const DLTensor** slots[6] = {&b->q.data,       &b->q.scales,       &b->q.col_data,
                               &b->q.col_scales, &b->q.global_scale, &b->q.amax};
  memset(b, 0, sizeof *b);
  for (int i = 0; i < 6; ++i) {
    if (!specs[i]->present) continue;
    b->bytes[i] = specs[i]->bytes;
    b->mem[i] = malloc((size_t)specs[i]->bytes);
    memset(b->mem[i], POISON, (size_t)specs[i]->bytes);
    tensor_init(&b->t[i], b->mem[i], kDLUInt, 8, 1, specs[i]->bytes);
    b->t[i].t.ndim = 1;
    b->t[i].t.shape = &b->t[i].shape[1];
    *slots[i] = &b->t[i].t;
  }
}

static void quantized_free(Quantized* b) {
  for (int i = 0; i < 6; ++i) free(b->mem[i]);
}

static int all_poison(const Quantized* b) {
  for (int i = 0; i < 6; ++i)
    for (int64_t j = 0; j < b->bytes[i]; ++j)
      if (b->mem[i][j] != POISON) return 0;
  return 1;
}

/* Deterministic values in [-1, 1). */
static float next_value(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static uint16_t bf16_from_float(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest even (no NaNs here) */
  return (uint16_t)(u >> 16);
}

static float float_from_bf16(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static mxq_recipe parse(const char* text) {
  mxq_recipe r = NULL;
  CHECK_OK(mxq_recipe_parse(text, &r));
  return r;
}

/* Max |x| over x[r0..r1) x [c0..c1) of a row-major rows x cols matrix. */
static float block_amax(const float* x, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  float m = 0;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      if (absf(x[r * cols + c]) > m) m = absf(x[r * cols + c]);
  return m;
}

/* mxfp8 (E4M3 elements, 1 x 32 blocks, E8M0 scales), rowwise and columnwise, from float32. */
static void test_mxfp8_float32(void) {
  enum { R = 64, C = 96 };
  printf("mxfp8:dir=both, float32 %dx%d\n", R, C);
  mxq_recipe r = parse("mxfp8:dir=both");
  mxq_layout L;
  CHECK_OK(mxq_plan(r, R, C, &L));
  CHECK(L.data.present && L.col_data.present && !L.global_scale.present, "buffers of mxfp8:dir=both");
  CHECK(strcmp(L.data.dtype, "float8_e4m3fn") == 0, "data dtype %s", L.data.dtype);
  CHECK(strcmp(L.scales.dtype, "float8_e8m0fnu") == 0, "scales dtype %s", L.scales.dtype);
  CHECK(L.data.bytes == R * C && L.scales.rows == R && L.scales.cols == C / 32, "data %lld bytes, scales %lldx%lld",
        (long long)L.data.bytes, (long long)L.scales.rows, (long long)L.scales.cols);
  CHECK(L.col_data.rows == C && L.col_data.cols == R, "col_data is stored transposed");

  static float x[R * C];
  uint32_t seed = 1;
  for (int i = 0; i < R * C; ++i) x[i] = next_value(&seed);
  x[0] = 448.0f; /* row 0, block 0 (and column 0, block 0): amax 448 -> scale 2^0 */
  x[1] = 1.0f;
  Tensor in;
  tensor_init(&in, x, kDLFloat, 32, R, C);
  Quantized q;
  quantized_alloc(&q, &L);
  CHECK_OK(mxq_quantize(r, &in.t, &q.q, NULL));
  CHECK(strcmp(mxq_last_error(), "") == 0, "last error after success: '%s'", mxq_last_error());

  /* 448 = 1.75 * 2^8 is E4M3 0x7E, 1.0 is 0x38; the block scale 2^0 is E8M0 code 127. */
  CHECK(q.mem[0][0] == 0x7E && q.mem[0][1] == 0x38, "data[0..1] = 0x%02X 0x%02X", q.mem[0][0], q.mem[0][1]);
  CHECK(q.mem[1][0] == 127, "scales[0] = %d", q.mem[1][0]);
  CHECK(q.mem[2][0] == 0x7E && q.mem[3][0] == 127, "col_data[0] = 0x%02X, col_scales[0] = %d", q.mem[2][0],
        q.mem[3][0]);

  /* Round trip: E4M3 keeps 3 mantissa bits (relative error <= 2^-4); below its normal range
   * the absolute error is <= half its subnormal step, scale * 2^-10 < amax / 448 * 2^-9. */
  for (int col = 0; col <= 1; ++col) {
    static float y[R * C];
    Tensor out;
    tensor_init(&out, y, kDLFloat, 32, col ? C : R, col ? R : C);
    CHECK_OK(mxq_dequantize(r, &q.q, R, C, &out.t, col, NULL));
    int bad = 0;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const float v = col ? y[j * R + i] : y[i * C + j];
        const float amax = col ? block_amax(x, C, i / 32 * 32, i / 32 * 32 + 32, j, j + 1)
                               : block_amax(x, C, i, i + 1, j / 32 * 32, j / 32 * 32 + 32);
        const float err = absf(v - x[i * C + j]), rel = absf(x[i * C + j]) / 16, sub = amax / 448 / 512;
        if (err > (rel > sub ? rel : sub) && bad++ < 5)
          CHECK(0, "%s (%lld, %lld): %.9g decodes to %.9g", col ? "columnwise" : "rowwise", (long long)i, (long long)j,
                x[i * C + j], v);
      }
    CHECK(bad == 0, "%d elements outside the bound", bad);
    CHECK(y[0] == 448.0f && (col ? y[R] : y[1]) == 1.0f, "hand-checked elements decode exactly");
  }
  {
    static float y[R * C];
    memset(y, 0xCD, sizeof y);
    Tensor out;
    tensor_init(&out, y, kDLFloat, 32, C, R);
    check_error(mxq_dequantize(r, &q.q, R, C, &out.t, 2, NULL), MXQ_ERROR_INVALID_ARGUMENT, "columnwise=2",
                "columnwise is 0 or 1");
    CHECK(((uint8_t*)y)[0] == 0xCD, "nothing written on error");
  }
  quantized_free(&q);
  mxq_recipe_destroy(r);
}

/* nvfp4 (E2M1 elements, 1 x 16 blocks, E4M3 scales, a global scale) from bf16. */
static void test_nvfp4_bf16(void) {
  enum { R = 32, C = 64 };
  printf("nvfp4, bfloat16 %dx%d\n", R, C);
  mxq_recipe r = parse("nvfp4");
  mxq_layout L;
  CHECK_OK(mxq_plan(r, R, C, &L));
  CHECK(strcmp(L.data.dtype, "float4_e2m1fn") == 0 && L.data.bytes == R * C / 2, "data %s, %lld bytes", L.data.dtype,
        (long long)L.data.bytes);
  CHECK(strcmp(L.scales.dtype, "float8_e4m3fn") == 0, "scales dtype %s", L.scales.dtype);
  CHECK(L.global_scale.present && L.amax.present && !L.col_data.present, "buffers of nvfp4");

  /* Block 0 of row 0 holds the E2M1 grid times 1.75, with amax 10.5 = the tensor amax: the
   * global scale is 6 * 448 / 10.5 = 256 (decoded exactly as 1/256), the block scale
   * 10.5 / 6 * 256 = 448 (exact in E4M3), so every value comes back exactly. */
  static const float grid[16] = {0,       0.875f, 1.75f,   2.625f, 3.5f,   5.25f, 7,      10.5f,
                                 -0.875f, -1.75f, -2.625f, -3.5f,  -5.25f, -7,    -10.5f, 0};
  static uint16_t xb[R * C];
  static float x[R * C];
  uint32_t seed = 7;
  for (int i = 0; i < R * C; ++i) {
    xb[i] = bf16_from_float(i < 16 ? grid[i] : 5.5f * next_value(&seed));
    x[i] = float_from_bf16(xb[i]);
  }
  Tensor in;
  tensor_init(&in, xb, kDLBfloat, 16, R, C);
  Quantized q;
  quantized_alloc(&q, &L);
  CHECK_OK(mxq_quantize(r, &in.t, &q.q, NULL));
  float amax;
  memcpy(&amax, q.mem[5], 4);
  CHECK(amax == 10.5f, "amax buffer = %.9g", amax);

  static float y[R * C];
  Tensor out;
  tensor_init(&out, y, kDLFloat, 32, R, C);
  CHECK_OK(mxq_dequantize(r, &q.q, R, C, &out.t, 0, NULL));
  for (int i = 0; i < 16; ++i) CHECK(y[i] == grid[i], "grid element %d: %.9g decodes to %.9g", i, grid[i], y[i]);
  /* Elsewhere: half the widest E2M1 step (4 -> 6) of a scale near amax / 6, which the E4M3
   * block scale rounds by at most 2^-4: |error| < 0.18 * block amax. */
  int bad = 0;
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      const float bound = 0.18f * block_amax(x, C, i, i + 1, j / 16 * 16, j / 16 * 16 + 16);
      if (absf(y[i * C + j] - x[i * C + j]) > bound && bad++ < 5)
        CHECK(0, "(%lld, %lld): %.9g decodes to %.9g", (long long)i, (long long)j, x[i * C + j], y[i * C + j]);
    }
  CHECK(bad == 0, "%d elements outside the bound", bad);
  quantized_free(&q);
  mxq_recipe_destroy(r);
}

static void test_errors(void) {
  printf("errors\n");
  mxq_recipe r = parse("mxfp8");
  enum { R = 4, C = 64 };
  static float x[R * C];
  Tensor in;
  tensor_init(&in, x, kDLFloat, 32, R, C);
  mxq_layout L;
  CHECK_OK(mxq_plan(r, R, C, &L));
  Quantized q;
  quantized_alloc(&q, &L);

  check_error(mxq_quantize(r, NULL, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "input", "NULL input");
  check_error(mxq_quantize(r, &in.t, NULL, NULL), MXQ_ERROR_INVALID_ARGUMENT, "quantized", "NULL quantized");
  check_error(mxq_quantize(NULL, &in.t, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "recipe", "NULL recipe");

  mxq_recipe bad_recipe = NULL;
  check_error(mxq_recipe_parse("float8_e4m3", &bad_recipe), MXQ_ERROR_INVALID_ARGUMENT, "float8_e4m3",
              "unknown recipe");
  CHECK(bad_recipe == NULL, "a failed parse wrote its out parameter");

  mxq_recipe fp4 = parse("nvfp4");
  mxq_layout untouched;
  memset(&untouched, POISON, sizeof untouched);
  mxq_layout before = untouched;
  check_error(mxq_plan(fp4, 4, 33, &untouched), MXQ_ERROR_INVALID_ARGUMENT, "33", "odd FP4 width");
  CHECK(memcmp(&before, &untouched, sizeof before) == 0, "a failed plan wrote its output");
  mxq_recipe_destroy(fp4);

  Tensor lanes = in;
  lanes.t.shape = lanes.shape;
  lanes.t.dtype.lanes = 4;
  check_error(mxq_quantize(r, &lanes.t, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "input.dtype.lanes=4", "lanes 4");
  Tensor opencl = in;
  opencl.t.shape = opencl.shape;
  opencl.t.device.device_type = kDLOpenCL;
  check_error(mxq_quantize(r, &opencl.t, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "input.device.device_type=4",
              "OpenCL input");
  mxq_quantize_options bad_backend = MXQ_QUANTIZE_OPTIONS_INIT;
  bad_backend.backend = (mxq_backend)9;
  check_error(mxq_quantize(r, &in.t, &q.q, &bad_backend), MXQ_ERROR_INVALID_ARGUMENT, "options.backend=9", "backend 9");
  mxq_quantize_options unsized = MXQ_QUANTIZE_OPTIONS_INIT;
  unsized.size = 0; /* a caller that did not initialise the struct */
  check_error(mxq_quantize(r, &in.t, &q.q, &unsized), MXQ_ERROR_INVALID_ARGUMENT, "options.size=0",
              "options struct without its size");
  CHECK(all_poison(&q), "a rejected options struct let quantize write");

  /* One byte short: the call fails and no buffer is written. */
  q.t[0].shape[1] -= 1;
  check_error(mxq_quantize(r, &in.t, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "quantized.data.bytes",
              "too small data buffer");
  CHECK(all_poison(&q), "a failed quantize wrote an output buffer");
  q.t[0].shape[1] += 1;

  /* Strided (non-contiguous) output buffer. */
  int64_t strides[1] = {2};
  q.t[1].t.strides = strides;
  check_error(mxq_quantize(r, &in.t, &q.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "quantized.scales.strides[0]=2",
              "strided scales");
  q.t[1].t.strides = NULL;

  /* CUDA descriptors (of host memory) on a machine without CUDA, or with it: an error status,
   * never a crash, and nothing written. */
  Tensor cuda_in = in;
  cuda_in.t.shape = cuda_in.shape;
  cuda_in.t.device.device_type = kDLCUDA;
  Quantized cuda_q = q;
  for (int i = 0; i < 6; ++i)
    if (cuda_q.mem[i]) {
      cuda_q.t[i].t.shape = &cuda_q.t[i].shape[1];
      cuda_q.t[i].t.device.device_type = kDLCUDA;
    }
  cuda_q.q.data = &cuda_q.t[0].t;
  cuda_q.q.scales = &cuda_q.t[1].t;
  const mxq_status s = mxq_quantize(r, &cuda_in.t, &cuda_q.q, NULL);
  CHECK(s != MXQ_OK && mxq_last_error()[0] != '\0', "CUDA tensors: status %d", (int)s);
  printf("  CUDA tensors -> %d: %s\n", (int)s, mxq_last_error());
  CHECK(all_poison(&q), "a failed CUDA quantize wrote an output buffer");

  quantized_free(&q);
  mxq_recipe_destroy(r);
}

static void test_info(void) {
  printf("recipe names, version, backends\n");
  mxq_recipe r = parse("mxfp8:dir=both");
  size_t needed = 0;
  CHECK_OK(mxq_recipe_name(r, NULL, 0, &needed));
  char small[4];
  memset(small, POISON, sizeof small);
  check_error(mxq_recipe_name(r, small, sizeof small, &needed), MXQ_ERROR_INVALID_ARGUMENT, "n=4", "short name buffer");
  CHECK((unsigned char)small[0] == POISON, "a failed mxq_recipe_name wrote its buffer");
  char name[128];
  CHECK(needed <= sizeof name, "needed %zu", needed);
  CHECK_OK(mxq_recipe_name(r, name, sizeof name, NULL));
  CHECK(strlen(name) + 1 == needed, "name '%s', needed %zu", name, needed);
  mxq_recipe again = parse(name);
  char name2[128];
  CHECK_OK(mxq_recipe_name(again, name2, sizeof name2, NULL));
  CHECK(strcmp(name, name2) == 0, "'%s' reads back as '%s'", name, name2);
  mxq_recipe_destroy(again);
  mxq_recipe_destroy(r);
  mxq_recipe_destroy(NULL);

  int major = -1, minor = -1, patch = -1;
  CHECK_OK(mxq_version(&major, &minor, &patch));
  char v[64];
  snprintf(v, sizeof v, "%d.%d.%d", major, minor, patch);
  CHECK(strcmp(v, mxq_version_string()) == 0, "%s vs %s", v, mxq_version_string());
  check_error(mxq_version(&major, NULL, &patch), MXQ_ERROR_INVALID_ARGUMENT, "minor", "NULL minor");
  CHECK(mxq_build_info()[0] != '\0' && strcmp(mxq_build_info(), mxq_version_string()) != 0, "build info '%s'",
        mxq_build_info());
  printf("  mxq %s (%s)\n", mxq_version_string(), mxq_build_info());

  int available = -1;
  char detail[256];
  CHECK_OK(mxq_backend_available(MXQ_BACKEND_CPU, &available, detail, sizeof detail));
  CHECK(available == 1, "cpu backend unavailable: %s", detail);
  CHECK_OK(mxq_backend_available(MXQ_BACKEND_CUDA_AOT, &available, detail, sizeof detail));
  printf("  cuda-aot available=%d: %s\n", available, detail);
  CHECK_OK(mxq_backend_available(MXQ_BACKEND_CUDA_JIT, &available, NULL, 0));
  CHECK_OK(mxq_backend_available(MXQ_BACKEND_CUBLASLT, &available, detail, sizeof detail));
  printf("  cublaslt available=%d: %s\n", available, detail);
  check_error(mxq_backend_available(MXQ_BACKEND_AUTO, &available, NULL, 0), MXQ_ERROR_INVALID_ARGUMENT, "backend=0",
              "auto is not a backend");
  /* the process-wide setters (their effect is tested through the C++ API in test_dispatch.cpp) */
  CHECK_OK(mxq_set_default_backend(MXQ_BACKEND_CPU));
  CHECK_OK(mxq_set_default_backend(MXQ_BACKEND_AUTO));
  check_error(mxq_set_default_backend((mxq_backend)7), MXQ_ERROR_INVALID_ARGUMENT, "backend=7", "backend 7");
  check_error(mxq_set_default_backend((mxq_backend)5), MXQ_ERROR_INVALID_ARGUMENT, "4 (cublaslt)", "backend 5");
  CHECK_OK(mxq_set_strict(1));
  CHECK_OK(mxq_set_strict(0));
  check_error(mxq_set_strict(2), MXQ_ERROR_INVALID_ARGUMENT, "on=2", "strict 2");
  /* JIT warm-up: compiles where the JIT exists (no GPU needed), says why where it does not */
  const char* warm[] = {"mxfp8"};
  int configs = -1;
  mxq_status ws = mxq_jit_warmup(warm, 1, 90, 1, &configs);
  CHECK(ws == MXQ_OK ? configs == 3 : ws == MXQ_ERROR_BACKEND_UNAVAILABLE, "warm-up: status %d, %d configs (%s)",
        (int)ws, configs, mxq_last_error());
  check_error(mxq_jit_warmup(NULL, 2, 90, 1, NULL), MXQ_ERROR_INVALID_ARGUMENT, "recipes=NULL", "NULL recipes");
  int count = -1;
  CHECK_OK(mxq_cuda_device_count(&count));
  CHECK(count >= 0, "device count %d", count);
  /* device 0 where there is one (its arch and SMs are real), an error naming the device otherwise */
  int arch = -1, sms = -1, supported = -1;
  char dev_name[64] = "";
  mxq_status ds = mxq_cuda_device_info(0, &arch, &sms, &supported, dev_name, sizeof dev_name);
  if (count > 0)
    CHECK(ds == MXQ_OK && arch >= 90 && sms > 0 && supported == 1 && dev_name[0], "device 0: %d arch %d sms %d %s",
          (int)ds, arch, sms, dev_name);
  else if (ds == MXQ_OK)
    CHECK(supported == 0 && arch > 0, "an unsupported device: arch %d supported %d", arch, supported);
  check_error(mxq_cuda_device_info(-1, &arch, NULL, NULL, NULL, 0), MXQ_ERROR_INVALID_ARGUMENT, "device=-1",
              "device -1");
}

/* Fused reglu (rows [a | b] -> relu(a) * b), with dbias and noop: equal to quantizing the
 * product computed here (relu and one fp32 multiply are exact to compute in C). */
static void test_fused_reglu(void) {
  enum { R = 8, N = 64 };
  printf("mxfp8 fused reglu, float32 %dx%d -> %dx%d, dbias, noop\n", R, 2 * N, R, N);
  mxq_recipe r = parse("mxfp8");
  mxq_layout L;
  CHECK_OK(mxq_plan(r, R, N, &L));
  static float x[R * 2 * N], y[R * N];
  float dbias[N], want_dbias[N];
  uint32_t seed = 7;
  for (int i = 0; i < R * 2 * N; ++i) x[i] = next_value(&seed);
  for (int c = 0; c < N; ++c) {
    double s = 0;
    for (int row = 0; row < R; ++row) {
      const float a = x[row * 2 * N + c], b = x[row * 2 * N + N + c];
      y[row * N + c] = (a > 0 ? a : 0.0f) * b;
      s += y[row * N + c];
    }
    want_dbias[c] = (float)s;
  }
  Tensor in, yt, db, flag;
  tensor_init(&in, x, kDLFloat, 32, R, 2 * N);
  tensor_init(&yt, y, kDLFloat, 32, R, N);
  tensor_init(&db, dbias, kDLFloat, 32, 1, N);
  db.t.ndim = 1;
  db.t.shape = &db.shape[1];
  float one = 1.0f;
  tensor_init(&flag, &one, kDLFloat, 32, 1, 1);
  flag.t.ndim = 1;
  flag.t.shape = &flag.shape[1];

  mxq_quantize_options o = MXQ_QUANTIZE_OPTIONS_INIT;
  o.activation = MXQ_ACT_REGLU;
  o.dbias = &db.t;
  o.noop = &flag.t;
  Quantized fused, plain;
  quantized_alloc(&fused, &L);
  quantized_alloc(&plain, &L);
  for (int c = 0; c < N; ++c) dbias[c] = -7.0f;
  CHECK_OK(mxq_quantize(r, &in.t, &fused.q, &o)); /* noop = 1: nothing written */
  CHECK(all_poison(&fused) && dbias[0] == -7.0f, "noop wrote an output");
  o.noop = NULL;
  CHECK_OK(mxq_quantize(r, &in.t, &fused.q, &o));
  CHECK_OK(mxq_quantize(r, &yt.t, &plain.q, NULL));
  for (int i = 0; i < 6; ++i)
    CHECK(fused.bytes[i] == plain.bytes[i] && (fused.bytes[i] == 0 || memcmp(fused.mem[i], plain.mem[i],
                                                                              (size_t)fused.bytes[i]) == 0),
          "fused reglu buffer %d differs from quantizing relu(a) * b", i);
  CHECK(memcmp(dbias, want_dbias, sizeof dbias) == 0, "dbias[0] %g, expected %g", dbias[0], want_dbias[0]);
  char ran[32], kernel[128], fb[128];
  CHECK_OK(mxq_quantize(r, &in.t, &fused.q, &o));
  CHECK_OK(mxq_last_dispatch(ran, sizeof ran, kernel, sizeof kernel, fb, sizeof fb));
  CHECK(strcmp(ran, "cpu") == 0 && strcmp(kernel, "reference fused") == 0 && fb[0] == '\0',
        "last dispatch: %s / %s / %s", ran, kernel, fb);
  o.activation = (mxq_activation)12;
  check_error(mxq_quantize(r, &in.t, &fused.q, &o), MXQ_ERROR_INVALID_ARGUMENT, "options.activation=12", "bad act");
  quantized_free(&fused);
  quantized_free(&plain);
  mxq_recipe_destroy(r);
}

/* 1D2D GEMM on the cpu backend: integer operands with pow2 scales quantize exactly, so D equals
 * the integer product. */
static void test_gemm_exact(void) {
  enum { M = 5, N = 130, K = 256 };
  printf("gemm 1D2D %dx%dx%d, integer operands\n", M, N, K);
  mxq_recipe ra = parse("fp8_block_1x128:pow2=1"), rb = parse("fp8_block_128x128:pow2=1");
  mxq_layout la, lb;
  CHECK_OK(mxq_plan(ra, M, K, &la));
  CHECK_OK(mxq_plan(rb, N, K, &lb));
  static float a[M * K], b[N * K], d[M * N];
  uint32_t seed = 11;
  for (int i = 0; i < M * K; ++i) a[i] = (float)((int)(next_value(&seed) * 9.0f)); /* integers in [-8, 8] */
  for (int i = 0; i < N * K; ++i) b[i] = (float)((int)(next_value(&seed) * 9.0f));
  Tensor ta, tb, td;
  tensor_init(&ta, a, kDLFloat, 32, M, K);
  tensor_init(&tb, b, kDLFloat, 32, N, K);
  tensor_init(&td, d, kDLFloat, 32, M, N);
  Quantized qa, qb;
  quantized_alloc(&qa, &la);
  quantized_alloc(&qb, &lb);
  CHECK_OK(mxq_quantize(ra, &ta.t, &qa.q, NULL));
  CHECK_OK(mxq_quantize(rb, &tb.t, &qb.q, NULL));
  mxq_gemm_options o = MXQ_GEMM_OPTIONS_INIT;
  CHECK(o.promote_k == 0, "MXQ_GEMM_OPTIONS_INIT: promote_k %d; expected 0 (by D's dtype)", o.promote_k);
  CHECK_OK(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      long long s = 0;
      for (int t = 0; t < K; ++t) s += (long long)a[i * K + t] * (long long)b[j * K + t];
      CHECK(d[i * N + j] == (float)s, "d[%d][%d] = %g, exact %lld", i, j, d[i * N + j], s);
    }
  check_error(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N - 1, &td.t, NULL), MXQ_ERROR_INVALID_ARGUMENT, "expected (M, N)",
              "d of the wrong shape");
  o.promote_k = 48;
  check_error(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o), MXQ_ERROR_INVALID_ARGUMENT,
              "options.promote_k=48; expected 0 (by D's dtype), 32, 64 or 128", "promote_k not 0, 32, 64 or 128");
  o.promote_k = 32;
  o.block_m = 192;
  check_error(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o), MXQ_ERROR_INVALID_ARGUMENT,
              "options.block_m=192; expected 0 (the plan's choice), 128 or 256", "block_m not 0, 128 or 256");
  o.block_m = ((int64_t)1 << 32) + 128; /* checked before narrowing to int */
  check_error(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o), MXQ_ERROR_INVALID_ARGUMENT,
              "options.block_m=4294967424", "block_m past int");
  /* a caller built before block_m passes the old size: accepted, block_m not read */
  o.size = offsetof(mxq_gemm_options, block_m);
  CHECK_OK(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o));
  o.size = offsetof(mxq_gemm_options, block_m) - 8;
  check_error(mxq_gemm(ra, &qa.q, M, K, rb, &qb.q, N, &td.t, &o), MXQ_ERROR_INVALID_ARGUMENT,
              "options.size=", "a size neither the current nor the one before block_m");
  quantized_free(&qa);
  quantized_free(&qb);
  mxq_recipe_destroy(ra);
  mxq_recipe_destroy(rb);
}

/* NVFP4 operands through the C ABI: their global scales (global_scale of mxq_quantized) enter
 * the product. A scaled by 2^10 keeps its codes and block scales and changes its global scale,
 * so D scales by exactly 2^10; an operand without its global scale is refused, named. */
static void test_gemm_nvfp4(void) {
  enum { M = 4, N = 6, K = 64 };
  printf("gemm nvfp4 %dx%dx%d, global scales\n", M, N, K);
  mxq_recipe r = parse("nvfp4");
  mxq_layout la, lb;
  CHECK_OK(mxq_plan(r, M, K, &la));
  CHECK_OK(mxq_plan(r, N, K, &lb));
  static float a[M * K], a2[M * K], b[N * K], d[M * N], d2[M * N];
  uint32_t seed = 13;
  for (int i = 0; i < M * K; ++i) {
    a[i] = next_value(&seed);
    a2[i] = a[i] * 1024.0f;
  }
  for (int i = 0; i < N * K; ++i) b[i] = next_value(&seed);
  Tensor ta, ta2, tb, td, td2;
  tensor_init(&ta, a, kDLFloat, 32, M, K);
  tensor_init(&ta2, a2, kDLFloat, 32, M, K);
  tensor_init(&tb, b, kDLFloat, 32, N, K);
  tensor_init(&td, d, kDLFloat, 32, M, N);
  tensor_init(&td2, d2, kDLFloat, 32, M, N);
  Quantized qa, qa2, qb;
  quantized_alloc(&qa, &la);
  quantized_alloc(&qa2, &la);
  quantized_alloc(&qb, &lb);
  CHECK_OK(mxq_quantize(r, &ta.t, &qa.q, NULL));
  CHECK_OK(mxq_quantize(r, &ta2.t, &qa2.q, NULL));
  CHECK_OK(mxq_quantize(r, &tb.t, &qb.q, NULL));
  CHECK_OK(mxq_gemm(r, &qa.q, M, K, r, &qb.q, N, &td.t, NULL));
  CHECK_OK(mxq_gemm(r, &qa2.q, M, K, r, &qb.q, N, &td2.t, NULL));
  int nonzero = 0;
  for (int i = 0; i < M * N; ++i) {
    CHECK(d2[i] == d[i] * 1024.0f, "d[%d]: %g with A x 2^10, %g without", i, d2[i], d[i]);
    nonzero += d[i] != 0.0f;
  }
  CHECK(nonzero > 0, "nvfp4 gemm gave all zeros");
  qa.q.global_scale = NULL;
  check_error(mxq_gemm(r, &qa.q, M, K, r, &qb.q, N, &td.t, NULL), MXQ_ERROR_INVALID_ARGUMENT,
              "a.global_scale", "an nvfp4 operand without its global scale");
  quantized_free(&qa);
  quantized_free(&qa2);
  quantized_free(&qb);
  mxq_recipe_destroy(r);
}

/* Buffers typed with DLPack 1.1's FP8 / FP4 codes, given by number (this test compiles against
 * whatever dlpack.h the machine has): the same bytes as uint8 storage. mxfp4 data is float4_e2m1fn
 * (code 17, 4 bits) of shape (R, C) elements, C / 2 bytes a row; its scales float8_e8m0fnu (14). */
static void test_dlpack_fp_codes(void) {
  enum { R = 4, C = 64 };
  printf("DLPack 1.1 FP8 / FP4 codes\n");
  static float x[R * C];
  uint32_t seed = 5;
  for (int i = 0; i < R * C; ++i) x[i] = next_value(&seed);
  Tensor in;
  tensor_init(&in, x, kDLFloat, 32, R, C);
  const char* recipes[2] = {"mxfp4", "mxfp8"};
  for (int k = 0; k < 2; ++k) {
    mxq_recipe r = parse(recipes[k]);
    mxq_layout L;
    CHECK_OK(mxq_plan(r, R, C, &L));
    Quantized plain, typed;
    quantized_alloc(&plain, &L);
    quantized_alloc(&typed, &L);
    tensor_init(&typed.t[0], typed.mem[0], k == 0 ? 17 : 10, k == 0 ? 4 : 8, R, C);
    tensor_init(&typed.t[1], typed.mem[1], 14, 8, R, C / 32);
    CHECK_OK(mxq_quantize(r, &in.t, &plain.q, NULL));
    CHECK_OK(mxq_quantize(r, &in.t, &typed.q, NULL));
    CHECK(memcmp(plain.mem[0], typed.mem[0], (size_t)L.data.bytes) == 0 &&
              memcmp(plain.mem[1], typed.mem[1], (size_t)L.scales.bytes) == 0,
          "%s: typed buffers hold the uint8 storage's bytes", recipes[k]);
    typed.t[0].t.dtype.code = 11; /* kDLFloat8_e4m3fnuz: not a format of mxq */
    check_error(mxq_quantize(r, &in.t, &typed.q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "(code 11, bits",
                "an FP8 code mxq does not store");
    quantized_free(&plain);
    quantized_free(&typed);
    mxq_recipe_destroy(r);
  }
}

/* An empty input's buffers are planned (present, 0 bytes, their dtypes), and buffers typed as
 * planned are taken; a call refused by the C layer leaves no dispatch record of the call before. */
static void test_empty_input_and_refusal_record(void) {
  printf("empty input, typed buffers; a refusal clears the dispatch record\n");
  mxq_recipe r = parse("mxfp8");
  mxq_layout L;
  CHECK_OK(mxq_plan(r, 0, 64, &L));
  CHECK(L.data.present && L.data.bytes == 0 && strcmp(L.data.dtype, "float8_e4m3fn") == 0,
        "0x64 mxfp8 data: present %d, %lld bytes, dtype '%s'", L.data.present, (long long)L.data.bytes, L.data.dtype);
  CHECK(L.scales.present && strcmp(L.scales.dtype, "float8_e8m0fnu") == 0, "0x64 scales: present %d, dtype '%s'",
        L.scales.present, L.scales.dtype);
  static float x[64];
  static uint8_t data[1], scales[1];
  Tensor in, td, ts;
  tensor_init(&in, x, kDLFloat, 32, 0, 64);
  tensor_init(&td, data, 10, 8, 0, 64);  /* kDLFloat8_e4m3fn */
  tensor_init(&ts, scales, 14, 8, 0, 2); /* kDLFloat8_e8m0fnu */
  mxq_quantized q;
  memset(&q, 0, sizeof q);
  q.data = &td.t;
  q.scales = &ts.t;
  CHECK_OK(mxq_quantize(r, &in.t, &q, NULL));
  char ran[64], kernel[128], fb[256];
  CHECK_OK(mxq_last_dispatch(ran, sizeof ran, kernel, sizeof kernel, fb, sizeof fb));
  CHECK(strcmp(ran, "cpu") == 0, "the empty call's backend '%s'", ran);
  check_error(mxq_quantize(r, NULL, &q, NULL), MXQ_ERROR_INVALID_ARGUMENT, "input", "a NULL input");
  CHECK_OK(mxq_last_dispatch(ran, sizeof ran, kernel, sizeof kernel, fb, sizeof fb));
  CHECK(strcmp(ran, "") == 0, "after a refused call the record says backend '%s'", ran);
  mxq_recipe_destroy(r);
}

int main(void) {
  test_empty_input_and_refusal_record();
  test_dlpack_fp_codes();
  test_mxfp8_float32();
  test_nvfp4_bf16();
  test_fused_reglu();
  test_gemm_exact();
  test_gemm_nvfp4();
  test_errors();
  test_info();
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    printf("all checks passed\n");
  return failures ? 1 : 0;
}
