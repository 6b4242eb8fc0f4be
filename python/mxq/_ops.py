"""The one place the package plans, allocates and calls the C++ API, for every array library
(a Framework from _frameworks.py). With run=False nothing is called: only the outputs are
allocated, which is what torch's fake implementations need."""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Tuple

from . import _core
from ._frameworks import numpy_storage_dtype

_BUFFERS = ("data", "scales", "col_data", "col_scales", "global_scale", "amax")
_INPUT_DTYPES = ("float32", "float16", "bfloat16")  # what quantize reads and dequantize writes
_GATED = ("swiglu", "geglu", "reglu")
_FP4 = "float4_e2m1fn"


@dataclasses.dataclass(frozen=True)
class BufferSpec:
    """One output buffer: its dtype name, logical (rows, cols) and bytes. ``shape`` is the
    row-major storage shape in storage elements (FP4 data: (rows, cols/2) bytes; packed_ue8m0:
    int32 words); ``view`` is (rows, cols, row stride, col stride) of how mxq presents it:
    the storage itself, except MN-major scales (mn_major_tma, packed_ue8m0), presented as
    DeepGEMM does: (MN, K blocks) with strides (1, round_up(MN, 4))."""
    dtype: str
    rows: int
    cols: int
    bytes: int
    view: Tuple[int, int, int, int]

    @property
    def shape(self) -> Tuple[int, int]:
        return (self.rows, self.cols // 2) if self.dtype == _FP4 else (self.rows, self.cols)

    @property
    def numpy_dtype(self):
        """The NumPy dtype mxq stores this buffer in (FP4: uint8, two values per byte)."""
        return numpy_storage_dtype(self.dtype)

    def empty(self):
        """A new C-contiguous NumPy array of the storage shape (not the view)."""
        import numpy as np
        a = np.empty(self.shape, dtype=self.numpy_dtype)
        if a.nbytes != self.bytes:
            raise RuntimeError(f"mxq internal error: {self} gives {a.nbytes} bytes, plan says {self.bytes}")
        return a


@dataclasses.dataclass(frozen=True)
class Layout:
    """plan()'s answer: the canonical recipe and every output buffer (None when absent)."""
    recipe: str
    rows: int
    cols: int
    data: Optional[BufferSpec]
    scales: Optional[BufferSpec]
    col_data: Optional[BufferSpec]
    col_scales: Optional[BufferSpec]
    global_scale: Optional[BufferSpec]
    amax: Optional[BufferSpec]

    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in (getattr(self, b) for b in _BUFFERS) if s is not None)


def plan_layout(text: str, rows: int, cols: int, op: str) -> Layout:
    name, *specs = _core.plan(text, int(rows), int(cols), op)
    return Layout(name, int(rows), int(cols),
                  *(None if s is None else BufferSpec(s[0], s[1], s[2], s[3], tuple(s[4])) for s in specs))


def buffer_arg(fw, a, spec: Optional[BufferSpec], name: str, op: str, device):
    """(address, capacity in bytes) of a quantized buffer, or (0, 0) when absent. It must be
    contiguous, and then holds its own elements only (a slice of a larger array is its slice, never
    the array behind it), or exactly the plan's view of its buffer (the MN-major scale views, whose
    padding lies beyond the view: their capacity runs to the storage's end)."""
    if a is None:
        return (0, 0)
    if not fw.accepts(a):
        raise TypeError(f"{op}: q.{name} is a {type(a).__module__}.{type(a).__name__}; expected a {fw.name} array "
                        "like the other buffers")
    if fw.device(a, op, f"q.{name}") != tuple(device):
        raise ValueError(f"{op}: q.{name} is on device {fw.device(a, op, 'q.' + name)}; the other buffers on {device}")
    if spec is not None:
        got = fw.dtype_name(a)
        if got not in (spec.dtype, "uint8"):
            raise TypeError(f"{op}: q.{name}.dtype={got} must be {spec.dtype} or uint8 storage")
        view_strides = (spec.view[2], spec.view[3])
        plan_view = (got == spec.dtype and tuple(int(s) for s in a.shape) == (spec.view[0], spec.view[1])
                     and fw.strides(a) == view_strides)
        if plan_view:
            return (fw.address(a), fw.capacity(a))
        if not fw.is_contiguous(a):
            raise ValueError(f"{op}: q.{name} has strides {fw.strides(a)}; expected a contiguous buffer or the "
                             f"layout's view strides {view_strides}")
    return (fw.address(a), fw.nbytes(a))


def quantize_into(fw, x, text: str, amax, scale, backend: str, activation: str, act_input, dbias: bool, noop,
                  run: bool = True):
    """Quantizes x (a fw array) into new fw arrays: [data, scales, col_data, col_scales,
    global_scale, amax, dbias] (None where absent); data has x's leading dimensions."""
    address, dt, shape, strides, device = fw.describe(x, "quantize", "x", meta=not run)
    if dt not in _INPUT_DTYPES:
        raise TypeError(f"quantize: x.dtype={dt} is not supported; expected float32, float16 or bfloat16")
    if activation in _GATED and shape[-1] % 2:
        raise ValueError(f"quantize: activation={activation} reads the last dimension as [a | b]; "
                         f"x.shape[-1]={shape[-1]} must be even")
    out_shape = out_shape_of(shape, activation)
    rows, cols = math.prod(shape[:-1]), out_shape[-1]
    layout = plan_layout(text, rows, cols, "quantize")
    # With noop the kernels write nothing: new outputs are then zeros, never uninitialised memory.
    out = [None if getattr(layout, b) is None else fw.empty(getattr(layout, b), device, zero=noop is not None)
           for b in _BUFFERS]
    out.append(fw.zeros_f32(cols, device) if dbias else None)
    if out[0] is not None:
        out[0] = out[0].reshape(tuple(out_shape[:-1]) + (out[0].shape[-1],))
    for i in (4, 5):
        if out[i] is not None:
            out[i] = out[i].reshape(1)
    if not run:
        return out
    amax_in = fw.scalar(amax, device, "quantize", "amax")
    scale_in = fw.scalar(scale, device, "quantize", "scale")
    noop_in = fw.scalar(noop, device, "quantize", "noop")
    act = None
    if act_input is not None:
        if not fw.accepts(act_input):
            raise TypeError(f"quantize: act_input is a {type(act_input).__name__}; expected a {fw.name} array like x")
        act = fw.describe(act_input, "quantize", "act_input")
        if act[4] != device:
            raise ValueError(f"quantize: act_input is on device {act[4]}, x on {device}")
    args = [(0, 0) if a is None else (fw.address(a), getattr(layout, b).bytes) for a, b in zip(out, _BUFFERS)]
    _core.quantize(address, dt, shape, strides, text, rows, cols, *args,
                   0 if amax_in is None else fw.address(amax_in), 0 if scale_in is None else fw.address(scale_in),
                   backend, activation,
                   0 if act is None else act[0], "float32" if act is None else act[1],
                   [] if act is None else act[2], [] if act is None else act[3],
                   0 if out[6] is None else fw.address(out[6]), 0 if noop_in is None else fw.address(noop_in),
                   device, fw.stream(device))
    return out


def out_shape_of(shape, activation: str):
    shape = tuple(shape)
    return shape[:-1] + (shape[-1] // 2,) if activation in _GATED else shape


def dequantize_into(fw, recipe: str, rows: int, cols: int, bufs, dtype: str, columnwise: bool, backend: str,
                    run: bool = True):
    """Decodes the buffers (a list in _BUFFERS order) into a new fw array of dtype."""
    if dtype not in _INPUT_DTYPES:
        raise TypeError(f"dequantize: dtype={dtype!r} is not supported; expected float32, float16 or bfloat16")
    layout = plan_layout(recipe, rows, cols, "dequantize")
    first = next((b for b in bufs if b is not None), None)
    if first is None:
        raise ValueError("dequantize: the quantized tensor has no buffers")
    device = fw.device(first, "dequantize", "q")
    if columnwise:
        if layout.col_data is None:
            raise ValueError(f"dequantize: columnwise=True but recipe {recipe} has no columnwise output "
                             "(use dir=col or dir=both)")
        shape = (layout.col_data.rows, layout.col_data.cols)
    else:
        shape = (rows, cols)
    y = fw.dense(shape, dtype, device)
    if not run:
        return y
    args = [buffer_arg(fw, a, getattr(layout, b), b, "dequantize", device) for a, b in zip(bufs, _BUFFERS)]
    _core.dequantize(recipe, rows, cols, *args, fw.address(y), dtype, list(shape), list(fw.strides(y)),
                     bool(columnwise), backend, device, fw.stream(device))
    return y


def gemm_into(fw, a_recipe: str, m: int, k: int, a_data, a_scales, b_recipe: str, n: int, kb: int, b_data, b_scales,
              alpha: float, c, bias, out_dtype: str, backend: str, promote_k: int = 0, run: bool = True,
              block_m: int = 0):
    if out_dtype not in ("float32", "bfloat16"):
        raise TypeError(f"gemm: out_dtype={out_dtype!r}; expected 'float32' or 'bfloat16'")
    device = fw.device(a_data, "gemm", "a.data")
    d = fw.dense((m, n), out_dtype, device)
    if not run:
        return d
    la, lb = plan_layout(a_recipe, m, k, "gemm"), plan_layout(b_recipe, n, kb, "gemm")
    for name, t, shape in (("c", c, (m, n)), ("bias", bias, (n,))):
        if t is None:
            continue
        if not fw.accepts(t):
            raise TypeError(f"gemm: {name} is a {type(t).__module__}.{type(t).__name__}; expected a {fw.name} "
                            "array like the operands")
        if fw.device(t, "gemm", name) != device:
            raise ValueError(f"gemm: {name}.device={fw.device(t, 'gemm', name)}; expected the operands' {device}")
        if fw.dtype_name(t) != "float32" or tuple(t.shape) != shape or not fw.is_contiguous(t):
            raise ValueError(f"gemm: {name} must be contiguous float32 of shape {shape}, got "
                             f"{fw.dtype_name(t)} {tuple(t.shape)}")
    _core.gemm(a_recipe, m, k, buffer_arg(fw, a_data, la.data, "data", "gemm", device),
               buffer_arg(fw, a_scales, la.scales, "scales", "gemm", device),
               b_recipe, n, kb, buffer_arg(fw, b_data, lb.data, "data", "gemm", device),
               buffer_arg(fw, b_scales, lb.scales, "scales", "gemm", device),
               fw.address(d), out_dtype, float(alpha), 0 if c is None else fw.address(c),
               0 if bias is None else fw.address(bias), backend, int(promote_k), device, fw.stream(device), int(block_m))
    return d
