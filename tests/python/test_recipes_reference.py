"""mxq::quantize (CPU backend, through the hooks) against the numpy / ml_dtypes reference of
recipe_reference.py, byte for byte: data, scales and global scale, on inputs spanning many
binades, ragged shapes (partial blocks) and special values."""
import numpy as np
import pytest

import mxq_hooks
import recipe_reference as ref
from element_cases import ml_dtype

F32 = np.float32

# recipe text -> reference producing the same rowwise output.
RECIPES = {
    "fp8_tensor": lambda x, amax=None: ref.fp8_tensor(x, "float8_e4m3fn", amax=amax),
    "fp8_tensor_e5m2": lambda x, amax=None: ref.fp8_tensor(x, "float8_e5m2", amax=amax),
    "fp8_tensor:pow2=1": lambda x, amax=None: ref.fp8_tensor(x, "float8_e4m3fn", use_pow2=True, amax=amax),
    "fp8_tensor:eps=0.5": lambda x, amax=None: ref.fp8_tensor(x, "float8_e4m3fn", eps=0.5, amax=amax),
    "fp8_block_1x128": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(1e-4)),
    "fp8_block_1x64": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 64, F32(1e-4)),
    "fp8_block_1x32": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 32, F32(1e-4)),
    "fp8_block_128x128": lambda x: ref.fp8_block(x, "float8_e4m3fn", 128, 128, F32(1e-4)),
    "fp8_block_1x128:eps=0": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(0.0)),
    "fp8_block_1x128:eps=1e-10": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(1e-10)),
    "fp8_block_1x128:pow2=1": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(1e-4), use_pow2=True),
    "fp8_block_1x128:pow2=1,scale=float8_e8m0fnu":
        lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(1e-4), use_pow2=True, ue8m0=True),
    "fp8_block_1x128:pow2=1,eps=0": lambda x: ref.fp8_block(x, "float8_e4m3fn", 1, 128, F32(0.0), use_pow2=True),
    "fp8_block_1x128:elem=float8_e5m2": lambda x: ref.fp8_block(x, "float8_e5m2", 1, 128, F32(1e-4)),
    "fp4_block_1x32": lambda x: ref.fp8_block(x, "float4_e2m1fn", 1, 32, F32(1e-4), use_pow2=True, ue8m0=True),
    "mxfp8": lambda x: ref.mx(x, "float8_e4m3fn"),
    "mxfp8_e5m2": lambda x: ref.mx(x, "float8_e5m2"),
    "mxfp4": lambda x: ref.mx(x, "float4_e2m1fn"),
    "mxfp8:rounding=floor": lambda x: ref.mx(x, "float8_e4m3fn", "floor"),
    "mxfp8_e5m2:rounding=floor": lambda x: ref.mx(x, "float8_e5m2", "floor"),
    "mxfp4:rounding=floor": lambda x: ref.mx(x, "float4_e2m1fn", "floor"),
    "nvfp4": lambda x, amax=None: ref.nvfp4(x, 1, amax=amax),
    "nvfp4_2d": lambda x, amax=None: ref.nvfp4(x, 16, amax=amax),
}


# ---- input generators --------------------------------------------------------------------------
def wide_range(rows, cols, seed):
    """Normal values, each row scaled by its own power of two in [2^-40, 2^40]: every scale
    code path, and elements falling into the formats' subnormal ranges."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(F32)
    return (x * np.ldexp(F32(1), rng.integers(-40, 41, (rows, 1)))).astype(F32)


def with_specials(rows, cols, seed):
    """wide_range plus special values: a zero row segment, +-0, fp32 subnormals, values at
    element-format boundaries (448, 464, 57344, 61440, 6, 5, 0.25) and one NaN and one +-Inf
    in separate blocks."""
    x = wide_range(rows, cols, seed)
    x[0, :40] = 0.0
    x[0, 40] = -0.0
    x[1, :8] = np.array([448, 464, -464, 57344, 61440, 6, 5, 0.25], dtype=F32)
    x[1, 8:12] = np.array([1e-45, -1e-40, 2.0 ** -126, 2.0 ** -149], dtype=F32)
    x[2, 3] = np.nan
    x[3, 70] = np.inf
    x[4, 150] = -np.inf
    return x


SHAPES = [(7, 200), (130, 96), (2, 32)]  # ragged tails (200 = 6*32 + 8, 1x128: 128 + 72), 128x128 tails


def cases():
    for recipe in RECIPES:
        for rows, cols in SHAPES:
            yield pytest.param(recipe, "wide_range", rows, cols, id=f"{recipe}-wide-{rows}x{cols}")
        yield pytest.param(recipe, "with_specials", 7, 200, id=f"{recipe}-specials-7x200")


GENERATORS = {"wide_range": wide_range, "with_specials": with_specials}


# ---- checks --------------------------------------------------------------------------------------
def assert_same_bytes(name, got, want, recipe):
    want = np.asarray(want, dtype=np.uint8)
    assert got.size == want.size, f"{recipe} {name}: {got.size} bytes, reference {want.size}"
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{recipe} {name}: {bad.size} of {got.size} bytes differ, first at {bad[:8].tolist()}: "
                           f"got {got[bad[:8]].tolist()} want {want[bad[:8]].tolist()}")


@pytest.mark.parametrize("recipe, generator, rows, cols", list(cases()))
def test_quantize_matches_reference(recipe, generator, rows, cols):
    x = GENERATORS[generator](rows, cols, seed=rows * 1000 + cols)
    got = mxq_hooks.quantize(recipe, x)
    want = RECIPES[recipe](x)
    for name in ("data", "scales", "global_scale"):
        assert_same_bytes(name, got[name], want[name], recipe)


@pytest.mark.parametrize("recipe", ["fp8_tensor", "fp8_tensor_e5m2", "nvfp4", "nvfp4_2d"])
@pytest.mark.parametrize("amax", [0.0, 0.25, 3.0, 1e30, float("inf")])
def test_given_amax(recipe, amax):
    """options.amax_in (static / delayed scaling): the scale comes from it, elements beyond it
    saturate."""
    x = wide_range(16, 64, seed=7) * F32(2.0 ** -38)  # rows in [2^-78, 2^2]
    got = mxq_hooks.quantize(recipe, x, amax_in=amax)
    want = RECIPES[recipe](x, amax=amax)
    for name in ("data", "scales", "global_scale"):
        assert_same_bytes(name, got[name], want[name], recipe)


def test_reference_covers_ties_and_saturation():
    """The inputs above reach E4M3 ties and saturation (guards against a vacuous comparison)."""
    x = with_specials(7, 200, seed=7200)
    out = mxq_hooks.quantize("mxfp8", x)
    assert np.any(out["data"] == 0x7E) or np.any(out["data"] == 0xFE)
    assert np.any(out["scales"] == 0xFF)  # the NaN block


def test_quantized_nan_codes_are_nans():
    """The fixed NaN element codes decode to NaN (ml_dtypes); E2M1, which has none, uses 0
    (FORMATS.md section 2: the block's NaN scale carries the NaN)."""
    for fmt, code in ref.QUANTIZED_NAN_CODE.items():
        value = np.array([code], dtype=np.uint8).view(ml_dtype(fmt)).astype(np.float32)[0]
        if fmt == "float4_e2m1fn":
            assert code == 0
        else:
            assert np.isnan(value), (fmt, code)
