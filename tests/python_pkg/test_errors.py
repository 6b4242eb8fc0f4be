"""Errors: Python exceptions carrying the C++ message, mapped by mxq::ErrorCode, and the package's
own checks, which name the Python argument before anything reaches the binding."""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

import mxq

X = np.ones((4, 64), np.float32)


def test_unsupported_error_is_a_runtime_error():
    assert issubclass(mxq.UnsupportedError, RuntimeError)


@pytest.mark.parametrize("x, match", [
    ([1.0, 2.0], r"x must be a numpy.ndarray, torch.Tensor or cupy.ndarray, got builtins.list"),
    (3.0, r"got builtins.float"),
    (np.ones((2, 32), np.float64), r"x.dtype=float64 is not supported"),
    (np.ones((2, 32), np.int32), r"x.dtype=int32 is not supported"),
    (np.ones((2, 32), ml_dtypes.float8_e4m3fn), r"x.dtype=float8_e4m3fn is not supported"),
])
def test_type_errors(x, match):
    with pytest.raises(TypeError, match=match):
        mxq.quantize(x, "mxfp8")


def test_recipe_type_error():
    with pytest.raises(TypeError, match="recipe must be a str"):
        mxq.quantize(X, 3)


@pytest.mark.parametrize("x, recipe, match", [
    (X, "mxfp9", r"recipe: unknown recipe 'mxfp9'; presets: fp8_tensor"),
    (np.ones((4, 33), np.float32), "nvfp4",
     r"quantize: input.shape\[-1\]=33 \(the columns\) must be even for float4_e2m1fn \(two values per byte\), "
     r"recipe nvfp4"),
    (np.ones((3, 32), np.float32), "mxfp4:dir=both", r"rows=3 \(shape\[:-1\]'s product\) must be even"),
    # N-D: the columns are the last dimension, the rows the product of the others
    (np.ones((2, 3, 33), np.float32), "nvfp4", r"input.shape\[-1\]=33 \(the columns\)"),
    (np.ones((3, 3, 64), np.float32), "mxfp4:dir=both", r"rows=9 \(shape\[:-1\]'s product\)"),
    (np.ones((4, 64), np.float32)[::-1], "mxfp8", r"quantize: x.strides=\(-64, 1\) \(elements\) has a negative stride"),
    (np.ones((4, 3, 64), np.float32)[:, :2], "mxfp8", r"so that the leading dimensions collapse into rows"),
    (X, "mxfp8:rounding=up", r"option rounding=up is invalid"),
])
def test_value_errors_carry_the_cpp_message(x, recipe, match):
    with pytest.raises(ValueError, match=match):
        mxq.quantize(x, recipe)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'gpu'; valid: auto, cpu, cuda-aot, cuda-jit"):
        mxq.quantize(X, "mxfp8", backend="gpu")


def test_cuda_backend_on_numpy_is_unsupported():
    with pytest.raises(mxq.UnsupportedError, match="backend cuda-aot needs tensors on a CUDA device"):
        mxq.quantize(X, "mxfp8", backend="cuda-aot")


def test_jit_backend_on_numpy_is_unsupported():
    with pytest.raises(mxq.UnsupportedError, match="backend cuda-jit needs tensors on a CUDA device"):
        mxq.quantize(X, "mxfp8", backend="cuda-jit")


def test_scalar_options():
    with pytest.raises(ValueError, match="amax must be one float32 value, got 2"):
        mxq.quantize(X, "nvfp4", amax=[1.0, 2.0])
    for name in ("amax", "noop"):
        with pytest.raises(TypeError, match=f"{name}='2.5'; expected a number"):
            mxq.quantize(X, "nvfp4", **{name: "2.5"})
    for name in ("amax", "scale"):  # a bool is no amax or scale (noop, a flag, may be one)
        with pytest.raises(TypeError, match=f"{name}=True; expected a number"):
            mxq.quantize(X, "fp8_tensor", **{name: True})
    assert not mxq.quantize(X, "mxfp8", noop=True).data.view(np.uint8).any()
    with pytest.raises(TypeError, match="dbias='no'; expected a bool"):
        mxq.quantize(X, "mxfp8", dbias="no")


def test_dequantize_errors():
    q = mxq.quantize(X, "mxfp8")
    with pytest.raises(TypeError, match="q must be an mxq.QuantizedTensor"):
        mxq.dequantize(X)
    with pytest.raises(ValueError, match="did you mean float8_e4m3fn"):
        mxq.dequantize(q, dtype="float8_e4m3")
    with pytest.raises(TypeError, match="dtype='float8_e4m3fn' is not supported"):
        mxq.dequantize(q, dtype="float8_e4m3fn")
    with pytest.raises(ValueError, match="has no columnwise output"):
        mxq.dequantize(q, columnwise=True)
    short = mxq.QuantizedTensor(q.recipe, q.shape, data=q.data[:2].copy(), scales=q.scales)
    with pytest.raises(ValueError, match=r"q.data.shape=\(2, 64\); expected q.shape's leading dimensions \(4,\)"):
        mxq.dequantize(short)
    with pytest.raises(ValueError, match=r"q.scales is float8_e8m0fnu of shape \(1, 2\)"):
        mxq.dequantize(mxq.QuantizedTensor(q.recipe, q.shape, data=q.data, scales=q.scales[:1]))
    # The plan's own strided views (MN-major scales, padding beyond the view) stay accepted.
    t = mxq.quantize(np.ones((6, 256), np.float32), "fp8_block_1x128:layout=mn_major_tma")
    assert not t.scales.flags.c_contiguous
    np.testing.assert_array_equal(mxq.dequantize(t), np.ones((6, 256), np.float32))
    wrong = mxq.QuantizedTensor(q.recipe, q.shape, data=q.data, scales=q.scales.astype(np.float32))
    with pytest.raises(TypeError, match=r"q.scales is float32 of shape \(4, 2\) and strides \(2, 1\); expected "
                                        r"float8_e8m0fnu or uint8 of shape \(4, 2\)"):
        mxq.dequantize(wrong)
    assert mxq.dequantize(q, dtype=ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16


# The binding receives an address and a byte count only: every buffer must be exactly the view
# quantize returns (dtype, shape, element strides), else it would be read as the plan's storage.
def test_buffers_must_be_the_plans_view():
    x = np.random.default_rng(3).standard_normal((64, 256), dtype=np.float32)
    R = dataclasses.replace
    mn = mxq.quantize(x, "fp8_block_1x128:layout=mn_major_tma")
    packed = mxq.quantize(np.tile(x, 4), "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu,layout=packed_ue8m0")
    block = mxq.quantize(x, "fp8_block_1x128")
    fp4 = mxq.quantize(x, "mxfp4")
    unpacked = np.stack([fp4.data & 0xF, fp4.data >> 4], -1).reshape(64, 256)
    for q, error, match in [
        (R(mn, scales=np.ascontiguousarray(mn.scales)), ValueError,
         r"q.scales is float32 of shape \(64, 2\) and strides \(2, 1\); expected float32 of shape \(64, 2\) and "
         r"strides \(1, 64\), as quantize returns it for recipe fp8_block_1x128:layout=mn_major_tma on \(64, 256\)"),
        (R(packed, scales=np.ascontiguousarray(packed.scales)), ValueError,
         r"q.scales is int32 of shape \(64, 2\) and strides \(2, 1\); expected int32 of shape \(64, 2\) and strides "
         r"\(1, 64\)"),
        (R(block, scales=np.ascontiguousarray(block.scales.T)), ValueError, r"q.scales is float32 of shape \(2, 64\)"),
        (R(fp4, data=unpacked), ValueError, r"q.data is uint8 of shape \(64, 256\) and strides \(256, 1\); expected "
         r"uint8 or torch.float4_e2m1fn_x2 \(float4_e2m1fn packed two per byte\) of shape \(64, 128\)"),
        (R(fp4, data=unpacked.view(ml_dtypes.float4_e2m1fn)), TypeError,
         r"q.data is ml_dtypes.float4_e2m1fn \(one value per byte\) of shape \(64, 256\)"),
        (R(fp4, data=fp4.data.view(ml_dtypes.float4_e2m1fn)), TypeError, r"q.data is ml_dtypes.float4_e2m1fn"),
        (R(block, shape=(64, 128)), ValueError, r"q.data is float8_e4m3fn of shape \(64, 256\) and strides \(256, 1\); "
         r"expected float8_e4m3fn or uint8 of shape \(64, 128\)"),
        (R(block, shape=(32, 256)), ValueError, r"q.data.shape=\(64, 256\); expected q.shape's leading dimensions"),
        (R(block, data=np.zeros((64, 512), ml_dtypes.float8_e4m3fn)[:, :256]), ValueError,
         r"q.data is float8_e4m3fn of shape \(64, 256\) and strides \(512, 1\)"),
        (R(mxq.quantize(x, "fp8_tensor"), global_scale=np.ones((1, 1), np.float32)), ValueError,
         r"q.global_scale is float32 of shape \(1, 1\) and strides \(1, 1\); expected float32 of shape \(1,\)"),
        (R(block, col_data=block.data), ValueError,
         r"q.col_data is given but recipe fp8_block_1x128 has no col_data buffer; expected None"),
        (R(block, scales=None), ValueError, r"q.scales is None; recipe fp8_block_1x128 needs it \(float32, shape "
         r"\(64, 2\)\)"),
    ]:
        with pytest.raises(error, match=match):
            mxq.dequantize(q)
    # Still taken: the outputs themselves, a uint8 view of a one-byte type (CuPy's FP8), the
    # buffer's own rows within a larger array, and an MN-major view rebuilt over its storage.
    want = mxq.dequantize(block)
    np.testing.assert_array_equal(mxq.dequantize(R(block, data=block.data.view(np.uint8))), want)
    big = np.zeros((128, 256), ml_dtypes.float8_e4m3fn)
    big[:64] = block.data
    np.testing.assert_array_equal(mxq.dequantize(R(block, data=big[:64])), want)
    storage = mn.scales.base.copy()
    view = np.lib.stride_tricks.as_strided(storage.view(np.float32), (64, 2), (4, 64 * 4))
    np.testing.assert_array_equal(mxq.dequantize(R(mn, scales=view)), mxq.dequantize(mn))


def test_flags_must_be_bools():
    for call, match in [
        (lambda: mxq.strict("no"), "strict: on='no'; expected a bool"),
        (lambda: mxq.strict(1), "strict: on=1; expected a bool"),
        (lambda: mxq.nvfp4(two_d="no"), "NVFP4: two_d='no'; expected a bool"),
        (lambda: mxq.fp8_block(pow2=2), "FP8Block: pow2=2; expected a bool"),
        (lambda: mxq.quantize(X, "mxfp8", dbias=1), "quantize: dbias=1; expected a bool"),
        (lambda: mxq.dequantize(mxq.quantize(X, "mxfp8:dir=both"), columnwise=1), "columnwise=1; expected a bool"),
    ]:
        with mxq.strict(False):  # restores the setting even where a refused strict() did change it
            with pytest.raises(TypeError, match=match):
                call()
            assert not mxq._core.strict()  # a refused strict() changes nothing
    assert mxq.nvfp4(two_d=np.True_).name == "nvfp4_2d" and mxq.nvfp4(two_d=False).name == "nvfp4"
    assert str(mxq.fp8_block(pow2=np.False_)) == "fp8_block_1x128:pow2=0"
    with mxq.strict(np.True_):
        assert mxq._core.strict()


@pytest.mark.parametrize("call, error, match", [
    (lambda q: mxq.dequantize(dataclasses.replace(q, shape=())), TypeError,
     r"dequantize: q.shape=\(\); expected a tuple of at least one int"),
    (lambda q: mxq.dequantize(dataclasses.replace(q, shape=(4.0, 64))), TypeError, r"q.shape=\(4.0, 64\)"),
    (lambda q: mxq.dequantize(dataclasses.replace(q, shape=(2 ** 64, 64))), ValueError,
     r"q.shape=\(18446744073709551616, 64\); expected sizes >= 0, at most 2\^63 - 1 rows and columns"),
    (lambda q: mxq.dequantize(dataclasses.replace(q, recipe=None)), TypeError, r"q.recipe=None; expected a str"),
    (lambda q: mxq.plan("mxfp8", 64.5, 32), TypeError, r"plan: rows=64.5; expected an int"),
    (lambda q: mxq.plan("mxfp8", 64, 2 ** 63), ValueError, r"plan: cols=9223372036854775808 is out of range"),
    (lambda q: mxq.gemm_plan(1.9, 256, 512), TypeError, r"gemm_plan: m=1.9; expected an int"),
    (lambda q: mxq.gemm_plan(1, 256, 512, sms=2 ** 40), ValueError, r"gemm_plan: sms=1099511627776 is out of range"),
    (lambda q: mxq.gemm_plan(1, 256, 512, kind=None), TypeError, r"gemm_plan: kind=None; expected a str"),
    (lambda q: mxq.set_backend(None), TypeError, r"set_backend: name=None; expected a str"),
    (lambda q: mxq.numpy_dtype(5), TypeError, r"numpy_dtype: name=5; expected a str"),
    (lambda q: mxq.quantize(X, "fp8_tensor", amax=1j), TypeError, r"quantize: amax=1j; expected a number"),
    (lambda q: mxq.quantize(X, "fp8_tensor", scale=np.complex64(2)), TypeError, r"quantize: scale=np.complex64"),
    (lambda q: mxq.quantize(X, "mxfp8", backend=None), TypeError, r"quantize: backend=None; expected a str"),
    (lambda q: mxq.jit_warmup("mxfp8"), TypeError, r"jit_warmup: recipes='mxfp8'; expected a sequence"),
    (lambda q: mxq.jit_warmup(["mxfp8"], threads=2 ** 31), ValueError, r"jit_warmup: threads=2147483648 is out"),
])
def test_plain_arguments_are_checked_before_the_binding(call, error, match):
    """Named errors instead of nanobind's 'incompatible function arguments', an IndexError, or a
    float silently truncated."""
    with pytest.raises(error, match=match):
        call(mxq.quantize(X, "mxfp8"))


def test_messages_name_the_python_arguments():
    with pytest.raises(ValueError, match=r"quantize: x.strides\[1\]=2 must be 1"):
        mxq.quantize(np.ones((4, 128), np.float32)[:, ::2], "mxfp8")
    with pytest.raises(ValueError, match=r"quantize: x.strides\[2\]=3 must be 1"):
        mxq.quantize(np.ones((2, 4, 96), np.float32)[:, :, ::3], "mxfp8")
    with pytest.raises(ValueError, match="dequantize: recipe mxfp8:dir=col has only columnwise output; pass "
                                         "columnwise=True"):
        mxq.dequantize(mxq.quantize(X, "mxfp8:dir=col"))


# Python floats are float64: a value float32 cannot hold would reach the C++ API as inf or 0 and
# the call would quietly run on that; each is refused by name instead.
@pytest.mark.parametrize("call, name", [
    (lambda qa, qb: mxq.gemm(qa, qb, alpha=1e-50), "alpha=1e-50"),
    (lambda qa, qb: mxq.gemm(qa, qb, alpha=1e300), "alpha=1e\\+300"),
    (lambda qa, qb: mxq.gemm(qa, qb, alpha=2 ** 200), "alpha=1606938"),
    (lambda qa, qb: mxq.quantize(X, "fp8_tensor", amax=1e300), "amax=1e\\+300"),
    (lambda qa, qb: mxq.quantize(X, "nvfp4", amax=np.float64(1e-50)), "amax=np.float64\\(1e-50\\)"),
    (lambda qa, qb: mxq.quantize(X, "fp8_tensor", scale=np.array([1e300])), "scale=array"),
])
def test_float32_range_of_scalars(call, name):
    a = np.ones((4, 128), np.float32)
    qa, qb = mxq.quantize(a, "fp8_block_1x128"), mxq.quantize(np.ones((128, 128), np.float32), "fp8_block_128x128")
    with pytest.raises(ValueError, match=name + ".* is outside float32's range"):
        call(qa, qb)
    # what float32 holds still runs: its smallest subnormal, its largest finite, 0
    assert mxq.gemm(qa, qb, alpha=1e-45).shape == (4, 128) and mxq.gemm(qa, qb, alpha=0).shape == (4, 128)
    assert mxq.quantize(X, "fp8_tensor", amax=3.4e38).data.shape == X.shape


def test_recipe_helpers_check_their_fields():
    with pytest.raises(ValueError, match=r"MX: dir='both,layout=swizzled_128x4'; expected one option value"):
        mxq.mx(dir="both,layout=swizzled_128x4")
    with pytest.raises(TypeError, match=r"FP8Block: eps=True; expected a real number"):
        mxq.fp8_block(eps=True)
    with pytest.raises(TypeError, match=r"FP8Block: group='128'; expected an int"):
        mxq.fp8_block(group="128")
    with pytest.raises(ValueError, match=r"mx: elem='e3m4' is invalid"):  # at construction, not first use
        mxq.mx("e3m4")
    assert str(mxq.fp8_block(group=64, eps=1e-4)) == "fp8_block_1x64:eps=0.0001"
    assert str(mxq.mx("e2m1", dir="both")) == "mxfp4:dir=both"


def test_arguments_named_before_they_are_read():
    q = mxq.quantize(X, "mxfp8")
    with pytest.raises(TypeError, match=r"quantize: x is a numpy masked array; .* would ignore the mask"):
        mxq.quantize(np.ma.masked_array(X, mask=X > 0), "mxfp8")
    with pytest.raises(TypeError, match=r"dequantize: q.data must be a numpy.ndarray, .* got builtins.list"):
        mxq.dequantize(dataclasses.replace(q, data=[1]))
    with pytest.raises(TypeError, match=r"quantize: act_input.dtype=float64 is not supported; expected float32"):
        mxq.quantize(X, "mxfp8", activation="relu", act_input=X.astype(np.float64))
    a = mxq.quantize(np.ones((4, 128), np.float32), "fp8_block_1x128")
    b = mxq.quantize(np.ones((128, 128), np.float32), "fp8_block_128x128")
    with pytest.raises(TypeError, match=r"gemm: out_dtype=<class 'numpy.float64'> is not supported; expected "
                                        r"float32 or bfloat16$"):
        mxq.gemm(a, b, out_dtype=np.float64)
    with pytest.raises(TypeError, match=r"gemm: out_dtype='float16' is not supported; expected float32 or bfloat16"):
        mxq.gemm(a, b, out_dtype="float16")
    for dtype in (3, "float64", np.float64):
        with pytest.raises(TypeError, match=r"dequantize: dtype=.* is not supported; expected float32, float16 or "
                                            r"bfloat16"):
            mxq.dequantize(q, dtype=dtype)
    with pytest.raises(TypeError, match=r"jit_warmup: recipes=None; expected a sequence of recipes"):
        mxq.jit_warmup(None)
