// Argument validation of the public API: every error is an mxq::Error whose message names the
// argument, the value and what was expected, and nothing is written before it is thrown (the
// poisoned output buffers are unchanged afterwards).
#include <functional>
#include <limits>

#include "mxq/gemm_plan.hpp"
#include "test_support.hpp"

namespace mxq::test {
namespace {

// ---- the check ---------------------------------------------------------------------------------
struct ErrorExpectation {
  ErrorCode code;
  std::vector<std::string> fragments;  // each must appear in the message
};

// Runs `call`, which must throw Error{code} with every fragment in its message, and checks that
// the watched byte buffers are unchanged.
void expect_error(const std::function<void()>& call, const ErrorExpectation& want,
                  const std::vector<const std::vector<uint8_t>*>& watched = {}) {
  std::vector<std::vector<uint8_t>> before;
  for (const auto* w : watched) before.push_back(*w);
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning '" << (want.fragments.empty() ? "" : want.fragments[0]) << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(int(e.code()), int(want.code)) << msg;
    for (const auto& f : want.fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an mxq::Error: " << e.what();
  }
  for (size_t i = 0; i < watched.size(); ++i) EXPECT_EQ(*watched[i], before[i]) << "buffer " << i << " was written";
}

ErrorExpectation invalid(std::vector<std::string> fragments) { return {ErrorCode::invalid_argument, std::move(fragments)}; }

std::vector<const std::vector<uint8_t>*> watch(Outputs& o) {
  return {&o.data, &o.scales, &o.col_data, &o.col_scales, &o.global_scale, &o.amax};
}

// A poisoned output set and a valid fp32 input of the same shape.
struct PoisonedCall {
  std::vector<float> x;
  Outputs out;
  PoisonedCall(const std::string& recipe, int64_t rows, int64_t cols)
      : x(random_matrix(rows, cols, 1)), out(recipe, rows, cols) {
    out.poison(0xCD);
  }
  TensorView input() { return f32_matrix(x, out.rows, out.cols); }
};

// ---- quantize: the input ------------------------------------------------------------------------
TEST(ApiErrors, NullInputData) {
  PoisonedCall s("mxfp8", 4, 64);
  expect_error([&] { quantize(TensorView::matrix(nullptr, DType::float32, 4, 64), s.out.view()); },
               invalid({"input.data is null", "256 elements"}), watch(s.out));
}

TEST(ApiErrors, MisalignedInput) {
  PoisonedCall s("mxfp8", 4, 64);
  std::vector<float> buf(4 * 64 + 1);
  void* odd = reinterpret_cast<char*>(buf.data()) + 1;
  expect_error([&] { quantize(TensorView::matrix(odd, DType::float32, 4, 64), s.out.view()); },
               invalid({"input.data=", "not aligned", "element size 4"}), watch(s.out));
  expect_error([&] { quantize(TensorView::matrix(odd, DType::bfloat16, 4, 64), s.out.view()); },
               invalid({"input.data=", "element size 2"}), watch(s.out));
}

TEST(ApiErrors, UnsupportedInputDtype) {
  PoisonedCall s("mxfp8", 4, 64);
  std::vector<int32_t> ints(256);
  expect_error([&] { quantize(TensorView::matrix(ints.data(), DType::int32, 4, 64), s.out.view()); },
               invalid({"input.dtype=int32", "expected float32, float16 or bfloat16"}), watch(s.out));
  std::vector<uint8_t> fp8(256);
  expect_error([&] { quantize(TensorView::matrix(fp8.data(), DType::float8_e4m3fn, 4, 64), s.out.view()); },
               invalid({"input.dtype=float8_e4m3fn", "expected float32, float16 or bfloat16"}), watch(s.out));
}

TEST(ApiErrors, InnerStrideAndRowLayout) {
  PoisonedCall s("mxfp8", 4, 64);
  std::vector<float> big(4 * 128);
  TensorView v = TensorView::matrix(big.data(), DType::float32, 4, 64, 128);
  v.strides[1] = 2;
  expect_error([&] { quantize(v, s.out.view()); }, invalid({"input.strides[1]=2", "must be 1"}), watch(s.out));
  // overlapping rows
  expect_error([&] { quantize(TensorView::matrix(big.data(), DType::float32, 4, 64, 32), s.out.view()); },
               invalid({"input.strides[0]=32", "must be >= shape[-1]=64"}), watch(s.out));
  // leading dimensions that do not collapse into one row stride
  TensorView v3;
  v3.data = big.data();
  v3.ndim = 3;
  v3.shape = {2, 2, 64};
  v3.strides = {256, 64, 1};
  expect_error([&] { quantize(v3, s.out.view()); }, invalid({"input.strides[0]=256", "must be 128"}), watch(s.out));
  TensorView v0 = v3;
  v0.ndim = 0;
  expect_error([&] { quantize(v0, s.out.view()); }, invalid({"input.ndim=0", "[1, 6]"}), watch(s.out));
  TensorView vneg = TensorView::matrix(big.data(), DType::float32, 4, 64);
  vneg.shape[0] = -4;
  expect_error([&] { quantize(vneg, s.out.view()); }, invalid({"input.shape[0]=-4", "negative"}), watch(s.out));
  // a reversed view (rows walked backwards), and a leading stride near -2^63 that a product of
  // strides would overflow: both refused as negative, by name
  TensorView vrev = TensorView::matrix(big.data() + 3 * 64, DType::float32, 4, 64, -64);  // -1 alone: contiguous
  expect_error([&] { quantize(vrev, s.out.view()); },
               invalid({"quantize: input.strides[0]=-64", "is negative", "contiguous copy"}), watch(s.out));
  TensorView vhuge = v3;
  vhuge.strides = {5, std::numeric_limits<int64_t>::min() / 2, 1};
  expect_error([&] { quantize(vhuge, s.out.view()); }, invalid({"input.strides[1]=", "is negative"}), watch(s.out));
}

TEST(ApiErrors, ShapeMismatch) {
  PoisonedCall s("mxfp8", 4, 64);
  std::vector<float> x(4 * 32);
  expect_error([&] { quantize(TensorView::matrix(x.data(), DType::float32, 4, 32), s.out.view()); },
               invalid({"quantized shape (4, 64)", "input shape (4, 32)"}), watch(s.out));
}

TEST(ApiErrors, OddFp4Width) {
  expect_error([] { plan(Recipe::parse("mxfp4"), 4, 33); },
               invalid({"input.shape[-1]=33", "must be even", "float4_e2m1fn"}));
  expect_error([] { plan(Recipe::parse("mxfp4:dir=col"), 3, 64); },
               invalid({"rows=3", "shape[:-1]", "must be even", "float4_e2m1fn"}));
  // quantize itself, with generous buffers
  std::vector<float> x(4 * 33);
  std::vector<uint8_t> data(256, 0xCD), scales(256, 0xCD);
  QuantizedTensor q;
  q.recipe = Recipe::parse("nvfp4");
  q.rows = 4;
  q.cols = 33;
  q.data = {data.data(), 256};
  q.scales = {scales.data(), 256};
  expect_error([&] { quantize(TensorView::matrix(x.data(), DType::float32, 4, 33), q); },
               invalid({"input.shape[-1]=33", "must be even"}), {&data, &scales});
}

// ---- quantize: the output buffers -----------------------------------------------------------------
TEST(ApiErrors, BuffersTooSmallOrMissing) {
  struct Case {
    const char* recipe;
    const char* buffer;  // which one to break
    int64_t shrink;      // bytes to take away; -1: make it null
    std::vector<std::string> fragments;
  };
  // (130, 200): mxfp8 data 26000 bytes, scales 130 * 7 = 910; dir=col: col_data 26000, col_scales
  // 200 * 5 = 1000; fp8_tensor global_scale 4; nvfp4 amax 4 (required: computed on the device).
  const std::vector<Case> cases = {
      {"mxfp8", "data", 1, {"quantize: quantized.data.bytes=25999 is too small", "needs 26000 bytes", "[130, 200]"}},
      {"mxfp8", "scales", 1, {"quantized.scales.bytes=909 is too small", "needs 910 bytes", "float8_e8m0fnu"}},
      {"mxfp8", "scales", -1, {"quantized.scales.data is null", "needs 910 bytes"}},
      {"mxfp8:dir=col", "col_data", 10, {"quantized.col_data.bytes=25990 is too small", "needs 26000 bytes"}},
      {"mxfp8:dir=col", "col_scales", 1, {"quantized.col_scales.bytes=999", "needs 1000 bytes"}},
      {"fp8_tensor", "global_scale", -1, {"quantized.global_scale.data is null", "needs 4 bytes"}},
      {"fp8_tensor", "global_scale", 1, {"quantized.global_scale.bytes=3", "needs 4 bytes"}},
      {"nvfp4", "amax", -1, {"quantized.amax.data is null", "needs 4 bytes"}},
      {"fp8_block_1x128", "scales", 4, {"quantized.scales.bytes=1036", "needs 1040 bytes", "float32"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.recipe) + " " + c.buffer);
    PoisonedCall s(c.recipe, 130, 200);
    QuantizedTensor q = s.out.view();
    Buffer* b = std::string(c.buffer) == "data" ? &q.data
                : std::string(c.buffer) == "scales" ? &q.scales
                : std::string(c.buffer) == "col_data" ? &q.col_data
                : std::string(c.buffer) == "col_scales" ? &q.col_scales
                : std::string(c.buffer) == "global_scale" ? &q.global_scale
                                                          : &q.amax;
    ASSERT_GT(b->bytes, 0);
    if (c.shrink < 0) *b = {nullptr, 0};
    else b->bytes -= c.shrink;
    expect_error([&] { quantize(s.input(), q); }, invalid(c.fragments), watch(s.out));
  }
}

// Outputs that overlap each other or an input would make the result depend on the order of the
// writes: refused before anything is written. Inputs may overlap each other.
TEST(ApiErrors, OverlappingBuffers) {
  {
    PoisonedCall s("mxfp8:dir=both", 64, 128);
    QuantizedTensor q = s.out.view();
    q.scales = {q.data.data, q.scales.bytes};  // the scales over the codes
    expect_error([&] { quantize(s.input(), q); }, invalid({"quantized.data", "overlaps quantized.scales"}), watch(s.out));
    q = s.out.view();
    q.col_data = {static_cast<uint8_t*>(q.data.data) + 100, q.col_data.bytes};  // a partial overlap
    expect_error([&] { quantize(s.input(), q); }, invalid({"quantized.data", "overlaps quantized.col_data"}),
                 watch(s.out));
    q = s.out.view();
    q.col_scales = {s.x.data() + 7, q.col_scales.bytes};  // an output inside the input
    expect_error([&] { quantize(s.input(), q); }, invalid({"input", "overlaps quantized.col_scales"}), watch(s.out));
    QuantizeOptions o;
    o.activation = num::Activation::gelu;
    o.dbias = reinterpret_cast<float*>(s.out.col_data.data());
    expect_error([&] { quantize(s.input(), s.out.view(), o); },
                 invalid({"quantized.col_data", "overlaps options.dbias"}), watch(s.out));
    o.dbias = nullptr;
    const TensorView same = s.input();
    o.act_input = &same;  // two inputs on one buffer: allowed
    EXPECT_NO_THROW(quantize(s.input(), s.out.view(), o));
  }
  PoisonedCall s("mxfp8", 8, 64);
  quantize(s.input(), s.out.view());
  std::vector<float> y(8 * 64);
  TensorView out = f32_matrix(y, 8, 64);
  out.data = s.out.data.data();  // the dequantized values over the codes they come from
  expect_error([&] { dequantize(s.out.view(), out); }, invalid({"output", "overlaps quantized.data"}));
}

// The most buffers one call can have (input, act_input, four outputs, global scale, amax, dbias,
// noop, amax_in): the overlap check takes them all.
TEST(ApiErrors, EveryBufferAtOnceIsValid) {
  PoisonedCall s("nvfp4:dir=both", 64, 128);
  std::vector<float> a = random_matrix(64, 128, 3), dbias(128);
  const TensorView act = f32_matrix(a, 64, 128);
  const float amax = 8.0f, noop = 0.0f;
  QuantizeOptions o;
  o.activation = num::Activation::gelu;
  o.act_input = &act;
  o.dbias = dbias.data();
  o.amax_in = &amax;
  o.noop = &noop;
  EXPECT_NO_THROW(quantize(s.input(), s.out.view(), o));
}

// The scalars a call reads (noop, amax_in, scale_in) may not lie in what it writes either.
TEST(ApiErrors, ScalarsInsideAnOutput) {
  PoisonedCall t("fp8_tensor", 4, 256);
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    QuantizeOptions o;
    const float* inside = reinterpret_cast<const float*>(t.out.data.data()) + 8;
    const char* name = which == 0 ? "options.noop" : which == 1 ? "options.amax_in" : "options.scale_in";
    (which == 0 ? o.noop : which == 1 ? o.amax_in : o.scale_in) = inside;
    expect_error([&] { quantize(t.input(), t.out.view(), o); },
                 invalid({"quantized.data", std::string("overlaps ") + name}), watch(t.out));
  }
}

// Every float32 pointer of the options is 4-byte aligned (on a GPU a misaligned one faults).
TEST(ApiErrors, MisalignedFloatOptions) {
  alignas(16) unsigned char raw[64] = {};
  const float* odd = reinterpret_cast<const float*>(raw + 1);
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(which);
    PoisonedCall t(which == 0 ? "mxfp8" : "fp8_tensor", 4, 256);
    QuantizeOptions o;
    const char* name = "options.dbias";
    if (which == 0) {
      o.dbias = const_cast<float*>(odd);
    } else if (which == 1) {
      o.noop = odd, name = "options.noop";
    } else if (which == 2) {
      o.amax_in = odd, name = "options.amax_in";
    } else {
      o.scale_in = odd, name = "options.scale_in";
    }
    expect_error([&] { quantize(t.input(), t.out.view(), o); }, invalid({std::string(name) + "=", "4-byte aligned"}),
                 watch(t.out));
  }
  PoisonedCall a("fp8_block_1x128", 4, 128), b("fp8_block_128x128", 8, 128);
  quantize(a.input(), a.out.view());
  quantize(b.input(), b.out.view());
  std::vector<uint8_t> d(4 * 8 * sizeof(float), 0x11);
  GemmOptions g;
  g.bias = odd;
  expect_error([&] { gemm(a.out.view(), b.out.view(), TensorView::matrix(d.data(), DType::float32, 4, 8), g); },
               invalid({"options.bias=", "4-byte aligned"}), {&d});
}

// C++ callers can put any number into a Recipe's enum fields: out of range is an error naming the
// field, before anything indexes a table with it (the name, the plan).
TEST(ApiErrors, RecipeFieldsOutOfRange) {
  const Recipe good = Recipe::parse("mxfp8");
  const std::vector<std::pair<std::function<void(Recipe&)>, std::string>> cases = {
      {[](Recipe& r) { r.direction = Direction(7); }, "direction=7"},
      {[](Recipe& r) { r.direction = Direction(0); }, "direction=0"},
      {[](Recipe& r) { r.scheme = Scheme(9); }, "scheme=9"},
      {[](Recipe& r) { r.elem = ElemFormat(9); }, "elem=9"},
      {[](Recipe& r) { r.scale_type = ScaleType(9); }, "scale_type=9"},
      {[](Recipe& r) { r.layout = ScaleLayout(4); }, "layout=4"},
      {[](Recipe& r) { r.column_form = ColumnForm(2); }, "column_form=2"},
      {[](Recipe& r) { r.rounding = MxRounding(2); }, "rounding=2"},
  };
  for (const auto& [spoil, fragment] : cases) {
    SCOPED_TRACE(fragment);
    Recipe r = good;
    spoil(r);
    const std::string name = r.name();  // printable, never an out-of-range read
    if (fragment == "direction=7") {
      EXPECT_NE(name.find("dir=?7"), std::string::npos) << name;
    }
    expect_error([&] { (void)plan(r, 4, 64); }, invalid({"recipe: " + fragment, "is not a valid value"}));
    PoisonedCall s("mxfp8", 4, 64);
    QuantizedTensor q = s.out.view();
    q.recipe = r;
    expect_error([&] { quantize(s.input(), q); }, invalid({fragment}), watch(s.out));
  }
}

TEST(ApiErrors, MisalignedFp32ScaleBuffer) {
  PoisonedCall s("fp8_block_1x128", 4, 256);
  std::vector<uint8_t> scales(64, 0xCD);
  QuantizedTensor q = s.out.view();
  q.scales = {scales.data() + 1, 32};
  expect_error([&] { quantize(s.input(), q); }, invalid({"quantized.scales.data=", "4-byte aligned", "float32"}),
               {&scales, &s.out.data});
}

// ---- quantize: options ------------------------------------------------------------------------------
TEST(ApiErrors, OptionsTheRecipeDoesNotUse) {
  const float one = 1.0f;
  QuantizeOptions amax;
  amax.amax_in = &one;
  QuantizeOptions scale;
  scale.scale_in = &one;
  QuantizeOptions both = amax;
  both.scale_in = &one;
  for (const char* recipe : {"mxfp8", "fp8_block_1x128", "mxfp4"}) {
    PoisonedCall s(recipe, 4, 256);
    expect_error([&] { quantize(s.input(), s.out.view(), amax); },
                 invalid({"options.amax_in is only used by fp8_tensor and nvfp4", std::string("recipe ") + recipe}),
                 watch(s.out));
  }
  PoisonedCall n("nvfp4", 4, 256);
  expect_error([&] { quantize(n.input(), n.out.view(), scale); },
               invalid({"options.scale_in is only used by fp8_tensor", "recipe nvfp4"}), watch(n.out));
  PoisonedCall t("fp8_tensor", 4, 256);
  expect_error([&] { quantize(t.input(), t.out.view(), both); }, invalid({"scale_in", "amax_in", "not both"}),
               watch(t.out));
}

TEST(ApiErrors, InvalidOptionValues) {
  PoisonedCall t("fp8_tensor", 4, 256);
  for (float bad : {0.0f, -1.0f, INFINITY, NAN, 1e-45f}) {  // 1e-45: 1 / scale_in (stored) is Inf
    QuantizeOptions o;
    o.scale_in = &bad;
    expect_error([&] { quantize(t.input(), t.out.view(), o); }, invalid({"options.scale_in=", "must be finite and > 0"}),
                 watch(t.out));
  }
  for (float bad : {-1.0f, NAN}) {
    QuantizeOptions o;
    o.amax_in = &bad;
    expect_error([&] { quantize(t.input(), t.out.view(), o); }, invalid({"options.amax_in=", "must be >= 0"}),
                 watch(t.out));
  }
}

// ---- devices and backends --------------------------------------------------------------------------
TEST(ApiErrors, CudaTensorsOnABuildWithoutCuda) {
#ifdef MXQ_WITH_CUDA
  GTEST_SKIP() << "built with CUDA: CUDA tensors are tested by tests/gpu";
#else
  PoisonedCall s("mxfp8", 4, 64);
  const Device cuda{DeviceKind::cuda, 0};
  QuantizedTensor q = s.out.view();
  q.device = cuda;
  const TensorView x = TensorView::matrix(s.x.data(), DType::float32, 4, 64, -1, cuda);
  expect_error([&] { quantize(x, q); }, {ErrorCode::backend_unavailable, {"CUDA", "quantize"}}, watch(s.out));
  QuantizeOptions aot;
  aot.backend = Backend::cuda_aot;
  expect_error([&] { quantize(x, q, aot); }, {ErrorCode::backend_unavailable, {"CUDA"}}, watch(s.out));
  QuantizeOptions cpu;
  cpu.backend = Backend::cpu;
  expect_error([&] { quantize(x, q, cpu); }, {ErrorCode::unsupported, {"backend cpu", "cuda:0"}}, watch(s.out));
  std::vector<float> y(256, 0.0f);
  std::vector<uint8_t> ybytes(1024, 0xCD);
  expect_error([&] { dequantize(q, TensorView::matrix(ybytes.data(), DType::float32, 4, 64, -1, cuda)); },
               {ErrorCode::backend_unavailable, {"CUDA", "dequantize"}}, {&ybytes});
#endif
}

TEST(ApiErrors, BackendAndDeviceMismatch) {
  PoisonedCall s("mxfp8", 4, 64);
  QuantizeOptions aot;
  aot.backend = Backend::cuda_aot;
  expect_error([&] { quantize(s.input(), s.out.view(), aot); },
               {ErrorCode::unsupported, {"backend cuda-aot", "CUDA device", "cpu tensors"}}, watch(s.out));
  QuantizedTensor q = s.out.view();
  q.device = {DeviceKind::cuda, 0};
  expect_error([&] { quantize(s.input(), q); }, invalid({"quantized.device=cuda:0", "input.device=cpu"}), watch(s.out));
  expect_error([] { parse_backend("cuda"); }, invalid({"unknown backend 'cuda'", "auto, cpu, cuda-aot, cuda-jit"}));
  QuantizeOptions jit;
  jit.backend = Backend::cuda_jit;
  expect_error([&] { quantize(s.input(), s.out.view(), jit); },
               {ErrorCode::unsupported, {"backend cuda-jit needs tensors on a CUDA device"}}, watch(s.out));
}

// ---- recipes and dtypes -------------------------------------------------------------------------------
TEST(ApiErrors, UnknownRecipesAndOptions) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"mxfp9", {"unknown recipe 'mxfp9'", "presets: fp8_tensor", "mxfp8", "nvfp4"}},
      {"", {"unknown recipe ''"}},
      {"mxfp8:foo=1", {"unknown option 'foo'", "known: elem, group, block"}},
      {"mxfp8:pow2", {"option 'pow2' must be key=value"}},
      {"mxfp8:", {"'mxfp8:' has an empty option", "key=value items separated by single commas"}},
      {"mxfp8:dir=both,", {"'mxfp8:dir=both,' has an empty option"}},
      {"mxfp8:,dir=both", {"'mxfp8:,dir=both' has an empty option"}},
      {"mxfp8:dir=both,,rounding=floor", {"has an empty option"}},
      {"mxfp8:rounding=up", {"option rounding=up is invalid", "expected rceil or floor"}},
      {"mxfp8:dir=sideways", {"dir=sideways", "row, col or both"}},
      {"mxfp8:layout=diagonal", {"layout=diagonal", "swizzled_128x4"}},
      {"fp8_block_1x128:group=abc", {"group=abc", "an integer"}},
      {"fp8_block_1x128:eps=-1", {"eps=-1", "a finite float32 >= 0"}},
      {"fp8_block_1x128:eps=1e-50", {"eps=1e-50", "a finite float32 >= 0"}},  // would be 0: another rule
      {"fp8_block_1x128:eps=1e-46", {"eps=1e-46", "a finite float32 >= 0"}},
      {"fp8_block_1x128:eps=1e39", {"eps=1e39", "a finite float32 >= 0"}},
      {"fp8_block_1x128:eps= 1", {"eps= 1", "a finite float32 >= 0"}},
      {"fp8_block_1x128:pow2=yes", {"pow2=yes", "0, 1, true or false"}},
      {"fp8_block_1x128:block=1x100", {"1x32, 1x64, 1x128 or 128x128", "got 1x100"}},
      {"fp8_block_1x128:scale=float8_e8m0fnu", {"needs pow2=1"}},
      {"fp8_block_1x128:layout=packed_ue8m0", {"layout=packed_ue8m0 stores float8_e8m0fnu scales and needs pow2=1"}},
      {"mxfp8:layout=mn_major_tma", {"MX scales are row_major, packed_ue8m0 or swizzled_128x4"}},
      {"mxfp8:pow2=1", {"pow2 applies to fp8_tensor and fp8_block"}},
      {"nvfp4:elem=float8_e4m3fn", {"nvfp4 elements are float4_e2m1fn"}},
      {"fp8_tensor:elem=float4_e2m1fn", {"fp8_tensor needs elem float8_e4m3fn or float8_e5m2"}},
      {"mxfp8:elem=float32", {"elem=float32", "float8_e4m3fn, float8_e5m2 or float4_e2m1fn"}},
      {"nvfp4:rounding=floor", {"rounding=floor applies to MX recipes only"}},
      {"fp8_block_1x128:rounding=floor", {"rounding=floor applies to MX recipes only"}},
      // options that cannot change the recipe, even at their default value, and repeated options
      {"mxfp8:eps=0.5", {"eps applies to fp8_tensor and fp8_block"}},
      {"nvfp4:eps=0", {"option eps=0 applies to fp8_tensor and fp8_block only"}},
      {"mxfp8:pow2=0", {"option pow2=0 applies to fp8_tensor and fp8_block only"}},
      {"fp8_block_1x128:rounding=rceil", {"option rounding=rceil applies to MX recipes only"}},
      {"mxfp8:colform=same", {"option colform=same applies to columnwise output only"}},
      {"mxfp8:dir=row,dir=col", {"option dir is given twice ('dir=row' and 'dir=col')", "each option once"}},
      {"mxfp8:group=32", {"option group=32 cannot change this recipe", "MX blocks are 1x32"}},
      {"mxfp4:block=1x32", {"option block=1x32 cannot change this recipe"}},
      {"fp8_tensor:group=128", {"fp8_tensor"}},
      {"mxfp8:scale=float8_e8m0fnu", {"option scale=float8_e8m0fnu cannot change this recipe"}},
      {"nvfp4:scale=ue4m3", {"option scale=ue4m3 cannot change this recipe"}},
      {"fp8_tensor:layout=row_major", {"option layout=row_major cannot change this recipe"}},
      {"nvfp4:elem=float4_e2m1fn", {"option elem=float4_e2m1fn cannot change this recipe"}},
  };
  for (const auto& [text, fragments] : cases) {
    SCOPED_TRACE(text);
    expect_error([&] { Recipe::parse(text); }, invalid(fragments));
  }
}

// eps takes every float32 >= 0, subnormals too (strtof flags them ERANGE), and a recipe's name
// parses back to it.
TEST(ApiErrors, EpsTakesSubnormals) {
  for (const char* text : {"fp8_block_1x128:eps=1e-40", "fp8_block_1x128:eps=1.4e-45", "fp8_block_1x128:eps=0"}) {
    SCOPED_TRACE(text);
    const Recipe r = Recipe::parse(text);
    EXPECT_EQ(Recipe::parse(r.name()).eps, r.eps);
  }
  EXPECT_GT(Recipe::parse("fp8_block_1x128:eps=1e-40").eps, 0.0f);
}

TEST(ApiErrors, Float8E4m3IsNotFloat8E4m3fn) {
  const std::string supported =
      "supported: float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1fn, float8_e8m0fnu";
  expect_error([] { parse_dtype("float8_e4m3"); },
               invalid({"dtype: unknown dtype 'float8_e4m3'", "did you mean float8_e4m3fn?", supported}));
  expect_error([] { Recipe::parse("mxfp8:elem=float8_e4m3"); },
               invalid({"option elem", "'float8_e4m3'", "did you mean float8_e4m3fn?", supported}));
  expect_error([] { parse_dtype("float8_e3m4", "x.dtype"); }, invalid({"x.dtype: unknown dtype 'float8_e3m4'", supported}));
  EXPECT_EQ(parse_dtype("float4_e2m1fn_x2"), DType::float4_e2m1fn);  // torch's packed storage name
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::float8_e4m3fn);
}

TEST(ApiErrors, PlanShapes) {
  expect_error([] { plan(Recipe::parse("mxfp8"), -1, 64); }, invalid({"shape (-1, 64)", "non-negative"}));
  // Shapes whose element or byte counts would overflow int64 (or exceed any memory): refused by name.
  const int64_t big = int64_t(1) << 62, max = std::numeric_limits<int64_t>::max();
  for (auto [r, c] : {std::pair{big, big}, std::pair{max, max}, std::pair{int64_t(4000000000), int64_t(4000000000)},
                      std::pair{max, int64_t(0)}, std::pair{int64_t(1), kMaxElements + 1}})
    expect_error([&] { plan(Recipe::parse("mxfp8:layout=swizzled_128x4,dir=both"), r, c); },
                 invalid({"plan: shape (" + std::to_string(r) + ", " + std::to_string(c) + ") is too large",
                          "at most 2^48 elements"}));
  EXPECT_EQ(plan(Recipe::parse("mxfp8"), 1, kMaxElements).data.bytes, kMaxElements);  // the limit itself plans
  TensorView x = TensorView::matrix(nullptr, DType::float32, 1, 1);
  x.ndim = 3;
  x.shape = {int64_t(1) << 20, int64_t(1) << 20, int64_t(1) << 20};
  x.strides = {int64_t(1) << 40, int64_t(1) << 20, 1};
  QuantizedTensor q;
  q.recipe = Recipe::parse("mxfp8");
  expect_error([&] { quantize(x, q); }, invalid({"input.shape=(1048576, 1048576, 1048576) is too large"}));
  // A row stride whose span overflows (or wraps the address) is refused, never used.
  std::vector<float> two_rows(128);
  Outputs o2("mxfp8", 2, 64);
  for (int64_t stride : {std::numeric_limits<int64_t>::max(), int64_t(1) << 62, (int64_t(1) << 62) + 64,
                         int64_t(1) << 48}) {
    TensorView xs = TensorView::matrix(two_rows.data(), DType::float32, 2, 64, stride);
    expect_error([&] { quantize(xs, o2.view()); }, invalid({"input: row stride " + std::to_string(stride),
                                                             "spans more than 2^48 elements"}));
  }
  expect_error([] { plan_gemm(big, big, big, GemmKind::d1d2, DType::bfloat16, ArchDesc::sm90(132)); },
               invalid({"gemm plan: M, N, K", "is too large", "each at most 2^48 elements"}));
}

// ---- dequantize ------------------------------------------------------------------------------------
TEST(ApiErrors, Dequantize) {
  PoisonedCall s("mxfp8", 4, 64);
  quantize(s.input(), s.out.view());
  std::vector<uint8_t> y(4 * 64 * 4, 0xCD);
  auto out = [&](DType t, int64_t r, int64_t c) { return TensorView::matrix(y.data(), t, r, c); };
  expect_error([&] { dequantize(s.out.view(), out(DType::int32, 4, 64)); },
               invalid({"output.dtype=int32", "expected float32, float16 or bfloat16"}), {&y});
  expect_error([&] { dequantize(s.out.view(), out(DType::float32, 64, 4)); },
               invalid({"output shape (64, 4)", "must be (4, 64)"}), {&y});
  DequantizeOptions col;
  col.columnwise = true;
  expect_error([&] { dequantize(s.out.view(), out(DType::float32, 64, 4), col); },
               invalid({"options.columnwise is set", "recipe mxfp8 has no columnwise output"}), {&y});
  expect_error([&] { dequantize(s.out.view(), TensorView::matrix(nullptr, DType::float32, 4, 64)); },
               invalid({"output.data is null"}), {&y});
  QuantizedTensor q = s.out.view();
  q.scales = {nullptr, 0};
  expect_error([&] { dequantize(q, out(DType::float32, 4, 64)); }, invalid({"dequantize: quantized.scales.data is null"}), {&y});
  q = s.out.view();
  q.data.bytes = 100;
  expect_error([&] { dequantize(q, out(DType::float32, 4, 64)); },
               invalid({"quantized.data.bytes=100 is too small", "needs 256 bytes"}), {&y});
  PoisonedCall c("mxfp8:dir=col", 4, 64);
  expect_error([&] { dequantize(c.out.view(), out(DType::float32, 4, 64)); },
               invalid({"recipe mxfp8:dir=col has only columnwise output", "set options.columnwise"}), {&y});
  PoisonedCall t("fp8_tensor", 4, 64);
  q = t.out.view();
  q.global_scale = {nullptr, 0};
  expect_error([&] { dequantize(q, out(DType::float32, 4, 64)); }, invalid({"quantized.global_scale.data is null"}), {&y});
}

}  // namespace
}  // namespace mxq::test
