"""Byte equality of the package's output with an independent NumPy / ml_dtypes reference, the
CPU backend's invariances (input dtype, N-D and strided inputs, columnwise = rowwise of the
transpose) and round-trip bounds for every preset."""
import ml_dtypes
import numpy as np
import pytest

import mxq
import reference

SHAPES = [(1, 32), (4, 64), (7, 96), (3, 48), (16, 256), (5, 40)]  # (5, 40), (3, 48): ragged last blocks


def activations(rng, shape, dtype=np.float32):
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(3.0)
    x.flat[:: max(1, x.size // 5)] *= np.float32(40.0)  # outliers
    if x.size > 3:
        x.flat[1] = 0.0
        x.flat[2] = np.float32(1e-30)  # below every format's smallest subnormal after scaling
    return x.astype(dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_mxfp8_matches_reference(rng, shape, dtype):
    x = activations(rng, shape, dtype)
    q = mxq.quantize(x, "mxfp8")
    data, scales = reference.mxfp8(x.astype(np.float32))
    assert q.data.dtype == ml_dtypes.float8_e4m3fn and q.data.shape == shape
    assert q.scales.dtype == ml_dtypes.float8_e8m0fnu and q.scales.shape == scales.shape
    np.testing.assert_array_equal(q.data.view(np.uint8), data)
    np.testing.assert_array_equal(q.scales.view(np.uint8), scales)
    assert q.col_data is None and q.global_scale is None and q.amax is None


@pytest.mark.parametrize("shape", [(1, 32), (4, 64), (7, 96), (3, 48), (16, 256), (2, 40)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_nvfp4_matches_reference(rng, shape, dtype):
    x = activations(rng, shape, dtype)
    q = mxq.quantize(x, "nvfp4")
    data, scales, global_scale = reference.nvfp4(x.astype(np.float32))
    assert q.data.dtype == np.uint8 and q.data.shape == (shape[0], shape[1] // 2)
    assert q.scales.dtype == ml_dtypes.float8_e4m3fn and q.scales.shape == scales.shape
    np.testing.assert_array_equal(q.data, data)
    np.testing.assert_array_equal(q.scales.view(np.uint8), scales)
    assert q.global_scale.dtype == np.float32 and q.global_scale.shape == (1,)
    assert q.global_scale.view(np.uint32)[0] == np.float32(global_scale).view(np.uint32)
    assert q.amax[0] == np.abs(x.astype(np.float32)).max()


def test_nvfp4_given_amax_is_used(rng):
    x = activations(rng, (4, 64))
    q = mxq.quantize(x, "nvfp4", amax=2.0 * float(np.abs(x).max()))
    assert q.amax[0] == np.float32(2.0 * float(np.abs(x).max()))
    assert not np.array_equal(q.scales.view(np.uint8), mxq.quantize(x, "nvfp4").scales.view(np.uint8))


def test_fp4_packing_low_nibble_first():
    x = np.zeros((2, 32), np.float32)
    x[0, 0], x[0, 1] = 1.0, -6.0  # mxfp4: amax 6 -> scale 1; codes 0x2 and 0xF
    q = mxq.quantize(x, "mxfp4")
    assert q.data.shape == (2, 16) and q.data.dtype == np.uint8
    assert q.data[0, 0] == 0xF2 and not q.data[0, 1:].any() and not q.data[1].any()


def test_nd_and_row_strided_inputs_equal_contiguous(rng):
    x = activations(rng, (6, 128))
    ref = mxq.quantize(x, "mxfp8:dir=both")
    q3 = mxq.quantize(x.reshape(2, 3, 128), "mxfp8:dir=both")
    assert q3.data.shape == (2, 3, 128) and q3.shape == (2, 3, 128)
    np.testing.assert_array_equal(q3.data.reshape(6, 128).view(np.uint8), ref.data.view(np.uint8))
    np.testing.assert_array_equal(q3.col_data.view(np.uint8), ref.col_data.view(np.uint8))
    wide = np.full((6, 200), np.nan, np.float32)
    wide[:, :128] = x
    qs = mxq.quantize(wide[:, :128], "mxfp8:dir=both")  # row stride 200, poison beyond
    for b in ("data", "scales", "col_data", "col_scales"):
        np.testing.assert_array_equal(getattr(qs, b).view(np.uint8), getattr(ref, b).view(np.uint8))
    np.testing.assert_array_equal(mxq.dequantize(q3), mxq.dequantize(ref).reshape(2, 3, 128))


@pytest.mark.parametrize("recipe", ["mxfp8", "nvfp4", "fp8_block_1x128"])
def test_columnwise_is_rowwise_of_transpose(rng, recipe):
    x = activations(rng, (64, 160))
    q = mxq.quantize(x, recipe + ":dir=both")
    qt = mxq.quantize(np.ascontiguousarray(x.T), recipe)
    if recipe == "nvfp4":  # the global scale is per tensor, the same for x and x.T
        np.testing.assert_array_equal(q.global_scale, qt.global_scale)
    np.testing.assert_array_equal(q.col_data.view(np.uint8), qt.data.view(np.uint8))
    np.testing.assert_array_equal(q.col_scales.view(np.uint8), qt.scales.view(np.uint8))
    np.testing.assert_array_equal(mxq.dequantize(q, columnwise=True), mxq.dequantize(qt))


# Worst-case relative error of one element against its block's amax: half an ulp of the element
# format at the top binade, times the headroom the scale rounding leaves (x2 for power-of-two scales).
BOUND = {"fp8_tensor": 2 ** -4, "fp8_tensor_e5m2": 2 ** -3, "fp8_block_1x128": 2 ** -4, "fp8_block_1x64": 2 ** -4,
         "fp8_block_1x32": 2 ** -4, "fp8_block_128x128": 2 ** -4, "mxfp8": 2 ** -3, "mxfp8_e5m2": 2 ** -2,
         "mxfp4": 2 ** -1, "nvfp4": 0.3, "nvfp4_2d": 0.3, "fp4_block_1x32": 2 ** -1}


@pytest.mark.parametrize("recipe", mxq.recipes())
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_round_trip_bounds(rng, recipe, out_dtype):
    x = rng.standard_normal((128, 256)).astype(np.float32)
    q = mxq.quantize(x, recipe + ":dir=both")
    y = mxq.dequantize(q, dtype=out_dtype)
    assert y.dtype == mxq.numpy_dtype(out_dtype) and y.shape == x.shape
    err = np.abs(y.astype(np.float32) - x).max() / np.abs(x).max()
    tol = BOUND[recipe] + (2 ** -8 if out_dtype == "bfloat16" else 0)
    assert err <= tol, (recipe, err)
    yc = mxq.dequantize(q, columnwise=True)
    assert yc.shape == (256, 128)
    assert np.abs(yc - x.T).max() / np.abs(x).max() <= BOUND[recipe]


def test_dequantize_matches_decoded_mxfp8(rng):
    x = activations(rng, (8, 64))
    q = mxq.quantize(x, "mxfp8")
    scale = np.repeat(q.scales.astype(np.float32), 32, axis=1)
    np.testing.assert_array_equal(mxq.dequantize(q), q.data.astype(np.float32) * scale)


def test_empty_input():
    q = mxq.quantize(np.zeros((0, 64), np.float32), "mxfp8")
    assert q.data.shape == (0, 64) and mxq.dequantize(q).shape == (0, 64)


def test_mxfp8_scale_at_exact_powers_of_two(rng):
    """Block amax = 448 * 2^k sits exactly on a scale boundary (rceil must not round it up)."""
    x = rng.uniform(-1, 1, (8, 64)).astype(np.float32)
    x[np.arange(8), np.arange(8) * 3] = np.float32(448.0) * np.ldexp(np.float32(1), np.arange(-4, 4))
    q = mxq.quantize(x, "mxfp8")
    data, scales = reference.mxfp8(x)
    np.testing.assert_array_equal(q.scales.view(np.uint8), scales)
    np.testing.assert_array_equal(q.data.view(np.uint8), data)
