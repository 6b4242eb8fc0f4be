"""Every code of every format decodes exactly to ml_dtypes' value (FORMATS.md section 1), and
FP4 packing puts element 2i in the low nibble."""
import numpy as np
import pytest

import mxq_hooks
from element_cases import ELEMENT_FORMATS, CODES_PER_FORMAT, all_codes, ml_dtype


def same_float(a, b):
    """Bitwise equal, except that any two NaNs of the same sign are equal."""
    nan = np.isnan(a) & np.isnan(b)
    return np.where(nan, np.signbit(a) == np.signbit(b), a.view(np.uint32) == b.view(np.uint32))


@pytest.mark.parametrize("fmt", ELEMENT_FORMATS + ("float8_e8m0fnu",))
def test_decode_every_code(fmt):
    codes = all_codes(fmt)
    got = mxq_hooks.decode_e8m0(codes) if fmt == "float8_e8m0fnu" else mxq_hooks.decode(codes, fmt)
    want = codes.view(ml_dtype(fmt)).astype(np.float32)
    print(f"decode {fmt}: {codes.size} codes")
    assert codes.size == CODES_PER_FORMAT[fmt]
    ok = same_float(got, want)
    assert ok.all(), [(int(c), float(g), float(w)) for c, g, w in zip(codes[~ok], got[~ok], want[~ok])]


@pytest.mark.parametrize("fmt", ELEMENT_FORMATS)
def test_encode_decode_round_trip(fmt):
    """encode(decode(c)) == c for every non-NaN code: the codec is a bijection on finite values."""
    codes = all_codes(fmt)
    values = mxq_hooks.decode(codes, fmt)
    keep = ~np.isnan(values) & ~np.isinf(values)
    for mode in (mxq_hooks.SATFINITE, mxq_hooks.NON_SATURATING):
        assert np.array_equal(mxq_hooks.encode(values[keep], fmt, mode), codes[keep])


def test_fp4_packing_low_nibble_first():
    """Element 2i in bits 0-3, element 2i+1 in bits 4-7 (torch float4_e2m1fn_x2)."""
    a, b = np.meshgrid(np.arange(16, dtype=np.uint8), np.arange(16, dtype=np.uint8))
    pairs = np.stack([a.ravel(), b.ravel()], axis=1).ravel()
    packed = np.empty(256, dtype=np.uint8)
    mxq_hooks.LIB.mxq_th_pack_fp4(mxq_hooks._ptr(pairs), mxq_hooks._ptr(packed), mxq_hooks._i64(256))
    assert np.array_equal(packed, (a.ravel() | (b.ravel() << 4)).astype(np.uint8))
