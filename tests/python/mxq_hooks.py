"""ctypes binding of the mxq_testhooks library (tests/hooks/testhooks.cpp).

The library path comes from the MXQ_TESTHOOKS environment variable, which ctest sets. A missing
or unloadable library is an error, never a skip: a test run that silently checked nothing would
look green.
"""
import ctypes
import os

import numpy as np

ABI_VERSION = 2

# num::ElemFormat values and the ml_dtypes names of the element formats.
ELEM_CODES = {"float8_e4m3fn": 0, "float8_e5m2": 1, "float4_e2m1fn": 2}
SATFINITE, NON_SATURATING = 0, 1
MX_ROUNDING = {"rceil": 0, "floor": 1}
PLAN_BUFFERS = ("data", "scales", "col_data", "col_scales", "global_scale", "amax")


def _load():
    path = os.environ.get("MXQ_TESTHOOKS")
    if not path:
        raise RuntimeError(
            "MXQ_TESTHOOKS is not set: it must name the mxq_testhooks shared library "
            "(ctest sets it; by hand: MXQ_TESTHOOKS=build-tests/tests/libmxq_testhooks.so)")
    if not os.path.isfile(path):
        raise RuntimeError(f"MXQ_TESTHOOKS={path} does not exist; build the mxq_testhooks target")
    lib = ctypes.CDLL(path)
    if lib.mxq_th_abi_version() != ABI_VERSION:
        raise RuntimeError(f"{path}: ABI version {lib.mxq_th_abi_version()}, expected {ABI_VERSION}")
    lib.mxq_th_last_error.restype = ctypes.c_char_p
    lib.mxq_th_nvfp4_encode_scale.restype = ctypes.c_float
    lib.mxq_th_nvfp4_encode_scale.argtypes = [ctypes.c_float]
    return lib


LIB = _load()
_i64 = ctypes.c_int64


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def _contig(a, dtype):
    a = np.ascontiguousarray(a)
    if a.dtype != dtype:
        raise TypeError(f"expected {np.dtype(dtype).name}, got {a.dtype}")
    return a


def _map(fn, x, in_dtype, out_dtype, *extra):
    x = _contig(x, in_dtype)
    out = np.empty(x.shape, dtype=out_dtype)
    fn(_ptr(x), _ptr(out), _i64(x.size), *extra)
    return out


def encode(x, fmt, saturation=SATFINITE):
    """fp32 -> element codes (FP4: one code per byte)."""
    return _map(LIB.mxq_th_encode, x, np.float32, np.uint8, ctypes.c_int(ELEM_CODES[fmt]),
                ctypes.c_int(saturation))


def quantized_nan_code(fmt):
    """The element code quantize() writes for a NaN (recipes.h quantized_nan_code)."""
    return int(LIB.mxq_th_quantized_nan_code(ctypes.c_int(ELEM_CODES[fmt])))


def decode(codes, fmt):
    return _map(LIB.mxq_th_decode, codes, np.uint8, np.float32, ctypes.c_int(ELEM_CODES[fmt]))


def encode_e8m0(x):
    return _map(LIB.mxq_th_encode_e8m0, x, np.float32, np.uint8)


def decode_e8m0(codes):
    return _map(LIB.mxq_th_decode_e8m0, codes, np.uint8, np.float32)


def float_to_bf16(x):
    return _map(LIB.mxq_th_float_to_bf16, x, np.float32, np.uint16)


def bf16_to_float(h):
    return _map(LIB.mxq_th_bf16_to_float, h, np.uint16, np.float32)


def float_to_fp16(x):
    return _map(LIB.mxq_th_float_to_fp16, x, np.float32, np.uint16)


def fp16_to_float(h):
    return _map(LIB.mxq_th_fp16_to_float, h, np.uint16, np.float32)


def mx_scale_code(amax, fmt, rounding="rceil"):
    return _map(LIB.mxq_th_mx_scale_code, amax, np.float32, np.uint8, ctypes.c_int(ELEM_CODES[fmt]),
                ctypes.c_int(MX_ROUNDING[rounding]))


def fp8_block_scale(amax, fmax, eps, pow2):
    return _map(LIB.mxq_th_fp8_block_scale, amax, np.float32, np.float32, ctypes.c_float(fmax),
                ctypes.c_float(eps), ctypes.c_int(int(pow2)))


def nvfp4_encode_scale(global_amax):
    return np.float32(LIB.mxq_th_nvfp4_encode_scale(float(global_amax)))


def nvfp4_block_scale_code(amax, s_enc):
    return _map(LIB.mxq_th_nvfp4_block_scale_code, amax, np.float32, np.uint8, ctypes.c_float(s_enc))


class MxqError(Exception):
    pass


def plan(recipe, rows, cols):
    """Byte sizes of the output buffers, as a dict keyed by PLAN_BUFFERS."""
    sizes = np.zeros(len(PLAN_BUFFERS), dtype=np.int64)
    if LIB.mxq_th_plan(recipe.encode(), _i64(rows), _i64(cols), _ptr(sizes)):
        raise MxqError(LIB.mxq_th_last_error().decode())
    return dict(zip(PLAN_BUFFERS, (int(s) for s in sizes)))


def quantize(recipe, x, amax_in=None, poison=0xCD):
    """Quantizes a 2-D fp32 array on the CPU backend; returns the buffers as uint8 arrays."""
    x = _contig(x, np.float32)
    rows, cols = x.shape
    sizes = plan(recipe, rows, cols)
    bufs = {k: np.full(max(n, 4), poison, dtype=np.uint8) for k, n in sizes.items()}  # >= 4: aligned, non-null
    n = len(PLAN_BUFFERS)
    ptrs = (ctypes.c_void_p * n)(*[bufs[k].ctypes.data if sizes[k] else None for k in PLAN_BUFFERS])
    nbytes = (ctypes.c_int64 * n)(*[sizes[k] for k in PLAN_BUFFERS])
    amax_arr = None if amax_in is None else np.array([amax_in], dtype=np.float32)
    amax_ptr = None if amax_arr is None else _ptr(amax_arr)
    if LIB.mxq_th_quantize(recipe.encode(), _ptr(x), _i64(rows), _i64(cols), ptrs, nbytes, amax_ptr):
        raise MxqError(LIB.mxq_th_last_error().decode())
    return {k: bufs[k][:sizes[k]] for k in PLAN_BUFFERS}
