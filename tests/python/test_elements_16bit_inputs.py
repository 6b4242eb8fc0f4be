"""Every bf16 and every fp16 bit pattern (converted exactly to fp32) through encode() for each
element format in both saturation modes, and through encode_e8m0(), against ml_dtypes
(FORMATS.md section 1)."""
import ml_dtypes
import numpy as np
import pytest

import mxq_hooks
from element_cases import ELEMENT_FORMATS, all_16bit_inputs, ml_dtype
from element_oracle import E2M1_NAN_CODE, comparable, describe_mismatches, expected_codes

INPUTS = all_16bit_inputs()
MODES = {"satfinite": mxq_hooks.SATFINITE, "non_saturating": mxq_hooks.NON_SATURATING}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ELEMENT_FORMATS)
@pytest.mark.parametrize("source", [name for name, _ in INPUTS])
def test_encode_every_16bit_pattern(source, fmt, mode):
    x = dict(INPUTS)[source]
    got = mxq_hooks.encode(x, fmt, MODES[mode])
    want = expected_codes(x, fmt, MODES[mode])
    keep = comparable(x, fmt)
    print(f"{source} -> {fmt} {mode}: {np.count_nonzero(keep)} of {x.size} inputs compared with ml_dtypes")
    assert x.size == 65536
    assert np.count_nonzero(keep) == (65536 if fmt != "float4_e2m1fn" else 65536 - np.count_nonzero(np.isnan(x)))
    bad = np.count_nonzero(got[keep] != want[keep])
    assert bad == 0, f"{bad} mismatches: {describe_mismatches(x[keep], got[keep], want[keep])}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", [name for name, _ in INPUTS])
def test_e2m1_nan_inputs_give_code_zero(source, mode):
    """E2M1 has no NaN: a NaN element is code 0 (FORMATS.md section 2), whatever its sign or payload."""
    x = dict(INPUTS)[source]
    nans = x[np.isnan(x)]
    assert nans.size == 2 * (127 if source == "bfloat16" else 1023)  # both signs, every payload
    got = mxq_hooks.encode(nans, "float4_e2m1fn", MODES[mode])
    assert np.all(got == E2M1_NAN_CODE), describe_mismatches(nans, got, np.zeros_like(got))


@pytest.mark.parametrize("source", [name for name, _ in INPUTS])
def test_nan_inputs_keep_their_sign_in_fp8(source):
    """NaN -> 0x7F|sign (e4m3fn) and 0x7E|sign (e5m2); ml_dtypes agrees (checked above), this pins it."""
    x = dict(INPUTS)[source]
    nans = x[np.isnan(x)]
    sign = np.where(np.signbit(nans), 0x80, 0).astype(np.uint8)
    for mode in MODES.values():
        assert np.all(mxq_hooks.encode(nans, "float8_e4m3fn", mode) == (sign | 0x7F))
        assert np.all(mxq_hooks.encode(nans, "float8_e5m2", mode) == (sign | 0x7E))


def e8m0_oracle(x):
    """ml_dtypes' float8_e8m0fnu codes of x. It rounds half up on the significand; before 0.7 it
    gave every fp32 subnormal above 2^-127 (0x400000) the code of 2^-126, where 0.7 gives it from
    the midpoint 1.5 x 2^-127 (0x600000) on, as for normal inputs. Half up is the rule we follow:
    under an older ml_dtypes the inputs between take it."""
    with np.errstate(invalid="ignore"):  # zero, negative and NaN inputs give the NaN code
        want = x.astype(ml_dtype("float8_e8m0fnu")).view(np.uint8)
    if tuple(int(v) for v in ml_dtypes.__version__.split(".")[:2]) < (0, 7):
        bits = x.view(np.uint32)
        want = np.where((bits > 0x400000) & (bits < 0x600000), np.uint8(0), want)
    return want


@pytest.mark.parametrize("source", [name for name, _ in INPUTS])
def test_e8m0_encode_every_16bit_pattern(source):
    x = dict(INPUTS)[source]
    got = mxq_hooks.encode_e8m0(x)
    want = e8m0_oracle(x)
    print(f"{source} -> float8_e8m0fnu: {x.size} inputs")
    assert x.size == 65536
    bad = np.count_nonzero(got != want)
    assert bad == 0, f"{bad} mismatches: {describe_mismatches(x, got, want)}"


def test_e8m0_encode_every_fp32_subnormal_and_zero():
    """The fp32 subnormal range is where a UE8M0 encoder must choose between codes 0 and 1
    (2^-127 and 2^-126): all 2^23 positive and 2^23 negative subnormals and zeros."""
    bits = np.arange(1 << 23, dtype=np.uint32)
    x = np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)
    got = mxq_hooks.encode_e8m0(x)
    want = e8m0_oracle(x)
    bad = np.count_nonzero(got != want)
    assert bad == 0, f"{bad} of {x.size} mismatch: {describe_mismatches(x, got, want)}"
