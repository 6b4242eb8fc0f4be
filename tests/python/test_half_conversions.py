"""The 16-bit input / output conversions of formats.h: float_to_bf16 and float_to_fp16 (RNE)
against ml_dtypes / numpy on every pattern of the other 16-bit type and on random fp32 sets, and
the exact widening conversions bf16_to_float / fp16_to_float on every pattern."""
import numpy as np
import pytest

import mxq_hooks
from element_cases import (all_bf16_bits, all_fp16_bits, bf16_bits_as_f32, fp16_bits_as_f32, ml_dtype,
                           random_fp32)

RANDOM_PER_SET = 1 << 20  # five sets: about 5 million fp32 inputs per conversion


def reference_bf16(x):
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(ml_dtype("bfloat16")).view(np.uint16)


def reference_fp16(x):
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(np.float16).view(np.uint16)


def check_16bit(x, got, want, exp_mask, quiet_bit):
    """Bitwise equality, except NaN: the references drop or keep payload bits differently, and the
    contract only asks for a quiet NaN of the same sign (formats.h)."""
    nan_in = np.isnan(x)
    finite_or_inf = ~nan_in
    bad = np.flatnonzero(finite_or_inf & (got != want))
    assert bad.size == 0, ", ".join(
        f"x=0x{int(x.view(np.uint32)[i]):08x} ({float(x[i])!r}): got 0x{int(got[i]):04x} want 0x{int(want[i]):04x}"
        for i in bad[:5])
    g = got[nan_in]
    is_quiet_nan = ((g & exp_mask) == exp_mask) & ((g & quiet_bit) != 0)
    same_sign = (g >> 15) == (x[nan_in].view(np.uint32) >> 31)
    assert np.all(is_quiet_nan & same_sign)


CONVERSIONS = {
    "float_to_bf16": (mxq_hooks.float_to_bf16, reference_bf16, 0x7F80, 0x0040),
    "float_to_fp16": (mxq_hooks.float_to_fp16, reference_fp16, 0x7C00, 0x0200),
}


def other_16bit_inputs(conversion):
    """All patterns of the 16-bit type that is not the conversion's target."""
    if conversion == "float_to_bf16":
        return "float16", fp16_bits_as_f32(all_fp16_bits())
    return "bfloat16", bf16_bits_as_f32(all_bf16_bits())


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_every_pattern_of_the_other_16bit_type(conversion):
    ours, ref, exp_mask, quiet = CONVERSIONS[conversion]
    source, x = other_16bit_inputs(conversion)
    print(f"{conversion}: all {x.size} {source} patterns")
    assert x.size == 65536
    check_16bit(x, ours(x), ref(x), exp_mask, quiet)


@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_random_fp32(conversion):
    ours, ref, exp_mask, quiet = CONVERSIONS[conversion]
    total = 0
    for name, x in random_fp32(seed=20240601, n=RANDOM_PER_SET):
        check_16bit(x, ours(x), ref(x), exp_mask, quiet)
        total += x.size
    print(f"{conversion}: {total} random fp32 inputs")
    assert total == 5 * RANDOM_PER_SET


def test_bf16_to_float_every_pattern():
    h = all_bf16_bits()
    got = mxq_hooks.bf16_to_float(h)
    want = h.view(ml_dtype("bfloat16")).astype(np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_fp16_to_float_every_pattern():
    h = all_fp16_bits()
    got = mxq_hooks.fp16_to_float(h)
    want = h.view(np.float16).astype(np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tie_cases_are_present():
    """The random sets really contain ties (otherwise the RNE checks above prove little)."""
    sets = dict(random_fp32(seed=1, n=1000))
    assert np.all((sets["bf16 ties"].view(np.uint32) & 0xFFFF) == 0x8000)
    t = sets["fp16 normal ties"].astype(np.float64)
    assert np.all(t.astype(np.float16).astype(np.float64) != t)  # not representable: halfway
    s = sets["fp16 subnormal ties"].astype(np.float64) / 2.0 ** -25
    assert np.all(np.abs(s) % 2 == 1)
