"""An independent reference of the recipes of FORMATS.md section 2 in numpy fp32 arithmetic
(correctly rounded, like the contract asks), with ml_dtypes for the element conversions.
Rowwise output, row_major scales. Each function returns the buffers mxq writes, as bytes:
{"data", "scales", "global_scale"}."""
import numpy as np

import mxq_hooks
from element_cases import ml_dtype
from element_oracle import ml_codes

F32 = np.float32
FLT_MAX = np.finfo(np.float32).max
FMAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float4_e2m1fn": 6.0}
MX_EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1fn": 2}


# The NaN element code quantize writes: one fixed code per format, because backends disagree on
# the sign of a NaN product (recipes.h quantized_nan_code). Which NaN code is the library's choice
# (FORMATS.md only asks for a NaN code); test_quantized_nan_codes_are_nans checks that it is one.
QUANTIZED_NAN_CODE = {fmt: mxq_hooks.quantized_nan_code(fmt) for fmt in FMAX}


def satfinite_codes(y, fmt):
    """Round to nearest even with saturation: clip to +-fmax (NaN passes), then ml_dtypes."""
    codes = ml_codes(np.clip(y, F32(-FMAX[fmt]), F32(FMAX[fmt])), fmt)
    return np.where(np.isnan(y), np.uint8(QUANTIZED_NAN_CODE[fmt]), codes)


def pack(codes, fmt):
    """Data bytes: FP4 two per byte, element 2i in the low nibble."""
    if fmt != "float4_e2m1fn":
        return codes.ravel()
    flat = codes.ravel()
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def block_amax(x, bh, bw):
    """max |x| over (bh x bw) blocks with NaN propagation; partial blocks cover only real elements."""
    r, c = x.shape
    rp, cp = -(-r // bh) * bh, -(-c // bw) * bw
    padded = np.zeros((rp, cp), dtype=F32)
    padded[:r, :c] = np.abs(x)
    return padded.reshape(rp // bh, bh, cp // bw, bw).max(axis=(1, 3))


def expand(per_block, bh, bw, shape):
    """Block values repeated over each block's elements."""
    return np.repeat(np.repeat(per_block, bh, axis=0), bw, axis=1)[: shape[0], : shape[1]]


def finite_amax(a):
    return np.where(np.isinf(a), FLT_MAX, a).astype(F32)


def ceil_pow2_exponent(v):
    """ceil(log2 v) for positive finite fp32 v, from frexp (v = m * 2^e, 0.5 <= m < 1)."""
    m, e = np.frexp(v)
    return np.where(m == 0.5, e - 1, e)


def pow2(e):
    return np.ldexp(F32(1.0), e).astype(F32)


def f32_bytes(a):
    return np.ascontiguousarray(a, dtype="<f4").view(np.uint8).ravel()


def fp8_tensor(x, fmt, eps=0.0, use_pow2=False, amax=None):
    amax = F32(np.max(np.abs(x))) if amax is None else F32(amax)
    if not np.isfinite(amax) or amax == 0:
        scale = F32(1.0)
    else:
        with np.errstate(over="ignore"):
            scale = F32(FMAX[fmt]) / max(amax, F32(eps))
        scale = min(scale, FLT_MAX)
        if use_pow2:  # clear the mantissa: 2^floor(log2 scale)
            scale = pow2(np.frexp(scale)[1] - 1)
    with np.errstate(invalid="ignore"):
        y = x * scale
    return {"data": pack(satfinite_codes(y, fmt), fmt), "scales": np.zeros(0, np.uint8),
            "global_scale": f32_bytes([F32(1.0) / scale])}


def fp8_block_scale(amax, fmt, eps, use_pow2):
    a = np.maximum(finite_amax(amax), F32(eps))  # NaN propagates
    s = (a / F32(FMAX[fmt])).astype(F32)
    s = np.where((a == 0) | (s == 0), F32(1.0), s)  # eps = 0 and amax 0 (or an underflow): scale 1
    if use_pow2:
        with np.errstate(invalid="ignore"):
            s = np.where(np.isnan(s), s, np.maximum(pow2(ceil_pow2_exponent(np.nan_to_num(s, nan=1.0))),
                                                    pow2(-127)))
    return s.astype(F32)


def fp8_block(x, fmt, bh, bw, eps, use_pow2=False, ue8m0=False):
    s = fp8_block_scale(block_amax(x, bh, bw), fmt, eps, use_pow2)
    with np.errstate(divide="ignore", over="ignore"):
        r = np.minimum(F32(1.0) / s, FLT_MAX)  # NaN stays NaN
    with np.errstate(invalid="ignore"):
        y = x * expand(r, bh, bw, x.shape)
    if ue8m0:
        m, e = np.frexp(np.nan_to_num(s, nan=1.0))
        scales = np.where(np.isnan(s), 255, e - 1 + 127).astype(np.uint8).ravel()
    else:
        scales = f32_bytes(s)
    return {"data": pack(satfinite_codes(y, fmt), fmt), "scales": scales, "global_scale": np.zeros(0, np.uint8)}


def mx_scale_code(amax, fmt, rounding):
    a = finite_amax(amax)
    with np.errstate(invalid="ignore"):
        if rounding == "rceil":
            v = (a / F32(FMAX[fmt])).astype(F32)
            code = ceil_pow2_exponent(np.where(v > 0, v, F32(1.0))) + 127
            code = np.where(v > 0, code, 0)
        else:
            m, e = np.frexp(np.where(a > 0, a, F32(1.0)))
            code = np.where(a > 0, (e - 1) - MX_EMAX[fmt] + 127, 0)
    code = np.clip(code, 0, 254)
    return np.where(np.isnan(amax), 255, code).astype(np.uint8)


def mx(x, fmt, rounding="rceil"):
    code = mx_scale_code(block_amax(x, 1, 32), fmt, rounding)
    mult = np.where(code == 255, F32(np.nan), pow2(127 - code.astype(np.int32)))
    with np.errstate(invalid="ignore"):
        y = x * expand(mult.astype(F32), 1, 32, x.shape)
    return {"data": pack(satfinite_codes(y, fmt), fmt), "scales": code.ravel(), "global_scale": np.zeros(0, np.uint8)}


def nvfp4(x, tile_rows=1, amax=None):
    """TransformerEngine core_nvfp4.cuh: S_enc, per-block UE4M3 scales, E2M1 elements."""
    g = F32(np.max(np.abs(x))) if amax is None else F32(amax)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_enc = np.fmin(F32(448.0 * 6.0) / g, FLT_MAX)  # fmin: a NaN quotient gives FLT_MAX
    if g == 0 or s_enc == 0:
        s_enc = F32(1.0)
    amax_b = block_amax(x, tile_rows, 16)
    with np.errstate(over="ignore"):
        scaled = finite_amax(amax_b) * (s_enc * F32(1.0 / 6.0))  # this multiplication order
    scale_codes = np.where(np.isnan(amax_b), np.uint8(0x7F), satfinite_codes(scaled, "float8_e4m3fn"))
    s_dec_f = scale_codes.view(ml_dtype("float8_e4m3fn")).astype(F32)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = np.fmin(F32(1.0) / (s_dec_f * (F32(1.0) / s_enc)), FLT_MAX)
        r = np.where(np.isnan(amax_b), F32(np.nan), r).astype(F32)
        y = x * expand(r, tile_rows, 16, x.shape)
    per_row = expand(scale_codes, tile_rows, 1, (x.shape[0], scale_codes.shape[1]))  # one scale per row
    return {"data": pack(satfinite_codes(y, "float4_e2m1fn"), "float4_e2m1fn"), "scales": per_row.ravel(),
            "global_scale": f32_bytes([F32(1.0) / s_enc])}

