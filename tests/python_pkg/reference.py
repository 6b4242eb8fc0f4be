"""An independent NumPy / ml_dtypes statement of two recipes (rowwise, row_major scales, finite
inputs), written from FORMATS.md / the README, not from mxq's sources: MXFP8 (OCP MX, rceil
UE8M0 scales) and NVFP4 (TransformerEngine: S_enc, UE4M3 block scales, E2M1 elements)."""
import ml_dtypes
import numpy as np

F32 = np.float32


def block_amax(x, bw):
    """max |x| over 1 x bw blocks; a ragged last block covers only its real elements."""
    r, c = x.shape
    nb = -(-c // bw)
    p = np.zeros((r, nb * bw), F32)
    p[:, :c] = np.abs(x)
    return p.reshape(r, nb, bw).max(axis=2)


def expand(per_block, bw, cols):
    return np.repeat(per_block, bw, axis=1)[:, :cols]


def to_codes(y, dtype, fmax):
    """Round to nearest even with saturation at +-fmax, as ml_dtypes codes (one per byte)."""
    return np.clip(y, -fmax, fmax).astype(dtype).view(np.uint8)


def pack_fp4(codes):
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def mxfp8(x):
    """Returns (data codes uint8 (R, C), UE8M0 scale codes uint8 (R, ceil(C/32)))."""
    amax = block_amax(x, 32)
    v = (amax / F32(448.0)).astype(F32)
    m, e = np.frexp(np.where(v > 0, v, F32(1)))
    ceil_log2 = np.where(m == 0.5, e - 1, e)  # v = m * 2^e, 0.5 <= m < 1
    code = np.clip(np.where(v > 0, ceil_log2 + 127, 0), 0, 254).astype(np.uint8)
    mult = np.ldexp(F32(1), 127 - code.astype(np.int32)).astype(F32)  # 1 / 2^(code - 127)
    y = (x * expand(mult, 32, x.shape[1])).astype(F32)
    return to_codes(y, ml_dtypes.float8_e4m3fn, 448.0), code


def nvfp4(x):
    """Returns (packed data uint8 (R, C/2), UE4M3 scale codes (R, ceil(C/16)), global scale 1/S_enc)."""
    g = F32(np.abs(x).max())
    s_enc = F32(1) if g == 0 else min(F32(448.0 * 6.0) / g, np.finfo(F32).max)
    amax = block_amax(x, 16)
    scaled = (amax * (s_enc * F32(1.0 / 6.0))).astype(F32)
    scale_codes = to_codes(scaled, ml_dtypes.float8_e4m3fn, 448.0)
    s_dec = scale_codes.view(ml_dtypes.float8_e4m3fn).astype(F32)
    with np.errstate(divide="ignore"):
        r = np.fmin(F32(1) / (s_dec * (F32(1) / s_enc)), np.finfo(F32).max).astype(F32)
    y = (x * expand(r, 16, x.shape[1])).astype(F32)
    data = to_codes(y, ml_dtypes.float4_e2m1fn, 6.0)
    return pack_fp4(data), scale_codes, F32(1) / s_enc
