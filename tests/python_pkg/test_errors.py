"""Errors: Python exceptions carrying the C++ message, mapped by mxq::ErrorCode."""
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
     r"quantize: input.shape\[1\]=33 must be even for float4_e2m1fn \(two values per byte\), recipe nvfp4"),
    (np.ones((3, 32), np.float32), "mxfp4:dir=both", r"input.shape\[0\]=3 must be even"),
    (np.ones((4, 128), np.float32)[:, ::2], "mxfp8", r"strides\[1\]=2 must be 1"),
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
    with pytest.raises(ValueError, match="data"):
        mxq.dequantize(short)
    # A slice holds its own elements only, never the rest of the array behind it.
    for data in (q.data[:2], q.data.view(np.uint8)[:1, :8]):
        with pytest.raises(ValueError, match=r"quantized.data.bytes=\d+ is too small"):
            mxq.dequantize(mxq.QuantizedTensor(q.recipe, q.shape, data=data, scales=q.scales))
    with pytest.raises(ValueError, match=r"quantized.scales.bytes=\d+ is too small"):
        mxq.dequantize(mxq.QuantizedTensor(q.recipe, q.shape, data=q.data, scales=q.scales[:1]))
    # The plan's own strided views (MN-major scales, padding beyond the view) stay accepted.
    t = mxq.quantize(np.ones((6, 256), np.float32), "fp8_block_1x128:layout=mn_major_tma")
    assert not t.scales.flags.c_contiguous
    np.testing.assert_array_equal(mxq.dequantize(t), np.ones((6, 256), np.float32))
    wrong = mxq.QuantizedTensor(q.recipe, q.shape, data=q.data, scales=q.scales.astype(np.float32))
    with pytest.raises(TypeError, match=r"q.scales.dtype=float32 must be float8_e8m0fnu"):
        mxq.dequantize(wrong)
    assert mxq.dequantize(q, dtype=ml_dtypes.bfloat16).dtype == ml_dtypes.bfloat16
