"""How mxq talks to an array library: NumPy here, CuPy here (lazily), torch in _torch.py.

A Framework describes an input (address, dtype name, shape, strides in elements, device), and
allocates outputs in that library on that device. Devices are (kind, index) pairs: (0, 0) is
the CPU, (1, i) CUDA device i, as mxq::DeviceKind numbers them. Everything that checks shapes,
sizes and recipes stays in the C++ API; a Framework only translates.
"""
from __future__ import annotations

from typing import List

import ml_dtypes
import numpy as np

from ._args import check_f32

_FP4 = "float4_e2m1fn"


class Framework:
    """The interface; see NumpyFramework for the reference implementation."""
    name = ""

    def accepts(self, x) -> bool: raise NotImplementedError
    def device(self, x, op: str, arg: str): raise NotImplementedError
    def describe(self, x, op: str, arg: str, meta: bool = False): raise NotImplementedError
    # A plan buffer, in spec.view's shape and strides; zero: its whole storage zeroed.
    def empty(self, spec, device, zero: bool = False): raise NotImplementedError
    def dense(self, shape, dtype: str, device): raise NotImplementedError
    def zeros_f32(self, n: int, device): raise NotImplementedError
    def scalar(self, v, device, op: str, name: str): raise NotImplementedError  # None, or one float32 on device
    def address(self, a) -> int: raise NotImplementedError
    def capacity(self, a) -> int: raise NotImplementedError  # bytes from a's first element to its storage's end
    def dtype_name(self, a) -> str: raise NotImplementedError
    def strides(self, a): raise NotImplementedError  # in elements
    def is_contiguous(self, a) -> bool: raise NotImplementedError
    def stream(self, device) -> int: return 0


_REGISTRY: List[Framework] = []


def register(fw: Framework) -> None:
    _REGISTRY.insert(0, fw)


def framework_of(x):
    """The registered Framework that owns x, or None."""
    for fw in _REGISTRY:
        if fw.accepts(x):
            return fw
    return None


def _real(v, op: str, name: str):
    """v, a number or an array of them (a CuPy array stays one), else a TypeError naming it: a
    float32 cast would take a str, or drop a complex's imaginary part."""
    # a Python number (bool is an int) without numpy: torch.compile traces isinstance, not
    # np.asarray of a float
    if isinstance(v, (int, float)):
        kind = "b" if isinstance(v, bool) else "f"
    else:
        try:  # a device array (CuPy, a CUDA tensor) is never copied to the host here
            kind = np.dtype(v.dtype).kind if hasattr(v, "__cuda_array_interface__") else np.asarray(v).dtype.kind
        except (TypeError, ValueError, RuntimeError):
            kind = "O"
    if kind not in ("biuf" if name == "noop" else "iuf"):  # a flag may be a bool; an amax or scale is not
        raise TypeError(f"{op}: {name}={v!r}; expected a number or one float32 value")
    return check_f32(v, op, name)


def numpy_storage_dtype(name: str) -> np.dtype:
    if name == _FP4:
        return np.dtype(np.uint8)  # packed two per byte; ml_dtypes' float4_e2m1fn is one per byte
    t = getattr(ml_dtypes, name, None)
    return np.dtype(t if t is not None else name)


class NumpyFramework(Framework):
    name = "numpy"

    def __init__(self, names):
        self._dtypes = {n: numpy_storage_dtype(n) for n in names}

    def accepts(self, x) -> bool:
        return isinstance(x, np.ndarray)

    def device(self, x, op, arg):
        return (0, 0)

    def dtype_name(self, a) -> str:
        for name, d in self._dtypes.items():
            if d == a.dtype and name != _FP4:
                return name
        if a.dtype == ml_dtypes.float4_e2m1fn:  # one value per byte: not mxq's packed FP4 (uint8)
            return "ml_dtypes.float4_e2m1fn (one value per byte)"
        return str(a.dtype)

    def describe(self, x, op, arg, meta=False):
        if x.ndim < 1:
            raise ValueError(f"{op}: {arg}.ndim=0; expected an array of at least one dimension")
        if any(s % x.itemsize for s in x.strides):
            raise ValueError(f"{op}: {arg}.strides={x.strides} (bytes) are not multiples of the element size "
                             f"{x.itemsize}")
        return (self.address(x), self.dtype_name(x), [int(s) for s in x.shape], list(self.strides(x)), (0, 0))

    def empty(self, spec, device, zero=False):
        dt = self._dtypes[spec.dtype]
        rows, cols, rs, cs = spec.view
        storage = (np.zeros if zero else np.empty)(spec.bytes, dtype=np.uint8)
        return np.ndarray((rows, cols), dtype=dt, buffer=storage, strides=(rs * dt.itemsize, cs * dt.itemsize))

    def dense(self, shape, dtype, device):
        return np.empty(tuple(shape), dtype=self._dtypes[dtype])

    def zeros_f32(self, n, device):
        return np.zeros(n, np.float32)

    def scalar(self, v, device, op, name):
        if v is None:
            return None
        a = np.ascontiguousarray(_real(v, op, name), dtype=np.float32).reshape(-1)
        if a.size != 1:
            raise ValueError(f"{op}: {name} must be one float32 value, got {a.size} values")
        return a

    def address(self, a) -> int:
        return a.__array_interface__["data"][0]

    def capacity(self, a) -> int:
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        return self.address(base) + base.nbytes - self.address(a)

    def strides(self, a):
        # exact: a byte stride that is not a whole number of elements shows as a fraction
        return tuple(s // a.itemsize if s % a.itemsize == 0 else s / a.itemsize for s in a.strides)

    def is_contiguous(self, a) -> bool:
        return a.flags.c_contiguous


class CupyFramework(Framework):
    """CuPy arrays: read through DLPack (zero-copy), outputs allocated with CuPy. CuPy has no FP8
    or FP4 dtypes, so quantized buffers come back as uint8 (1-byte formats) or their fp32 / int32
    type, in the same shapes and strides as with torch."""
    name = "cupy"

    def __init__(self, core, cupy):
        self._core, self._cp = core, cupy

    def accepts(self, x) -> bool:
        return isinstance(x, self._cp.ndarray)

    def device(self, x, op, arg):
        return (1, int(x.device.id))

    def describe(self, x, op, arg, meta=False):
        address, name, shape, strides, device, _keep = self._core.dlpack_describe(x)
        if not name:
            raise TypeError(f"{op}: {arg}.dtype={x.dtype} is not supported")
        return (address, name, shape, strides, device)

    def _dtype(self, name):
        return {"float32": "float32", "float16": "float16", "int32": "int32"}.get(name, "uint8")

    def empty(self, spec, device, zero=False):
        cp = self._cp
        rows, cols, rs, cs = spec.view
        with cp.cuda.Device(device[1]):
            storage = (cp.zeros if zero else cp.empty)(spec.bytes, dtype=cp.uint8).view(self._dtype(spec.dtype))
        n = storage.itemsize
        return cp.lib.stride_tricks.as_strided(storage, (rows, cols), (rs * n, cs * n))

    def dense(self, shape, dtype, device):
        if dtype == "bfloat16":
            raise TypeError("cupy has no bfloat16: dequantize to float32 or float16")
        with self._cp.cuda.Device(device[1]):
            return self._cp.empty(tuple(shape), dtype=dtype)

    def zeros_f32(self, n, device):
        with self._cp.cuda.Device(device[1]):
            return self._cp.zeros(n, dtype=self._cp.float32)

    def scalar(self, v, device, op, name):
        if v is None:
            return None
        with self._cp.cuda.Device(device[1]):
            a = self._cp.asarray(_real(v, op, name), dtype=self._cp.float32).reshape(-1)
        if a.size != 1:
            raise ValueError(f"{op}: {name} must be one float32 value, got {a.size} values")
        return a

    def address(self, a) -> int:
        return int(a.data.ptr)

    def capacity(self, a) -> int:
        return int(a.data.mem.size) - (int(a.data.ptr) - int(a.data.mem.ptr))

    def dtype_name(self, a) -> str:
        return {"float32": "float32", "float16": "float16", "int32": "int32", "uint8": "uint8"}.get(str(a.dtype),
                                                                                                   str(a.dtype))

    def strides(self, a):
        return tuple(s // a.itemsize for s in a.strides)

    def is_contiguous(self, a) -> bool:
        return a.flags.c_contiguous

    def stream(self, device) -> int:
        return int(self._cp.cuda.get_current_stream().ptr)
