"""Expected element conversions, derived from ml_dtypes (the independent oracle of FORMATS.md
section 1) and from the contract's satfinite rule."""
import numpy as np

from element_cases import ml_dtype
from mxq_hooks import SATFINITE

MAX_CODE = {"float8_e4m3fn": 0x7E, "float8_e5m2": 0x7B, "float4_e2m1fn": 0x7}
SIGN_BIT = {"float8_e4m3fn": 0x80, "float8_e5m2": 0x80, "float4_e2m1fn": 0x8}


def ml_codes(x, fmt):
    """ml_dtypes' conversion (the non-saturating reference), as codes (FP4: one per byte)."""
    with np.errstate(invalid="ignore", over="ignore"):  # overflow / NaN casts are the point
        return x.astype(ml_dtype(fmt)).view(np.uint8)


def is_nan_or_inf_code(codes, fmt):
    mag = codes & np.uint8(0x7F)
    if fmt == "float8_e4m3fn":
        return mag == 0x7F
    if fmt == "float8_e5m2":
        return mag >= 0x7C
    return np.zeros(codes.shape, dtype=bool)  # E2M1 has neither


def expected_codes(x, fmt, saturation, ref=None, x_nan=None, x_neg=None):
    """Non-saturating: ml_dtypes exactly. satfinite: the same, except that a non-NaN input that
    ml_dtypes maps to NaN (e4m3fn overflow) or Inf (e5m2 overflow, +-Inf) gives +-max finite.
    ref / x_nan / x_neg may be passed precomputed (the fp32 sweep shares them)."""
    ref = ml_codes(x, fmt) if ref is None else ref
    if saturation != SATFINITE:
        return ref
    x_nan = np.isnan(x) if x_nan is None else x_nan
    x_neg = np.signbit(x) if x_neg is None else x_neg
    overflow = is_nan_or_inf_code(ref, fmt) & ~x_nan
    saturated = np.where(x_neg, np.uint8(SIGN_BIT[fmt] | MAX_CODE[fmt]), np.uint8(MAX_CODE[fmt]))
    return np.where(overflow, saturated, ref)


# Our rule for NaN inputs where ml_dtypes is not a usable reference: FP4 E2M1 has no NaN code, and
# FORMATS.md section 2 gives a NaN element code 0 (its block's NaN scale carries the NaN).
# ml_dtypes returns a zero whose sign bit is the inverse of the input NaN's, an artefact of its
# conversion routine rather than a rule, so NaN inputs are left out of the E2M1 comparison with
# ml_dtypes and checked against this rule instead.
E2M1_NAN_CODE = 0


def comparable(x, fmt, x_nan=None):
    """Mask of the inputs on which ml_dtypes is the reference."""
    if fmt != "float4_e2m1fn":
        return np.ones(x.shape, dtype=bool)
    return ~(np.isnan(x) if x_nan is None else x_nan)


def describe_mismatches(x, got, want, limit=5):
    idx = np.flatnonzero(got != want)[:limit]
    return ", ".join(f"x=0x{int(x.view(np.uint32)[i]):08x} ({float(x[i])!r}): got 0x{int(got[i]):02x} "
                     f"want 0x{int(want[i]):02x}" for i in idx)
