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


def presented(spec: BufferSpec, name: str, lead=None):
    """(shape, element strides) of a buffer as the package presents it: the plan's view, except
    rowwise data, which has the input's leading dimensions `lead` (row-major), and the scalars
    global_scale and amax, of shape (1,)."""
    rows, cols, row_stride, col_stride = spec.view
    if name in ("global_scale", "amax"):
        return (1,), (1,)
    if name == "data" and lead is not None:
        shape = tuple(lead) + (cols,)
        return shape, row_major_strides(shape)
    return (rows, cols), (row_stride, col_stride)


def row_major_strides(shape):
    strides, n = [], 1
    for extent in reversed(shape):
        strides.append(n)
        n *= extent
    return tuple(reversed(strides))


def _same_view(shape, strides, want_shape, want_strides) -> bool:
    """The same elements at the same offsets: equal shapes, and equal strides wherever an extent
    is above 1 (torch gives dimensions of one element arbitrary strides; an empty array has none)."""
    if tuple(shape) != tuple(want_shape):
        return False
    return 0 in want_shape or all(s == w for n, s, w in zip(shape, strides, want_strides) if n > 1)


def _storage_dtypes(spec: BufferSpec):
    """The dtype names a buffer may carry: its own, or uint8 for a one-byte type (CuPy has no FP8
    types; NumPy stores packed FP4 as uint8)."""
    return (spec.dtype, "uint8") if spec.numpy_dtype.itemsize == 1 else (spec.dtype,)


def buffer_arg(fw, a, layout: Layout, name: str, op: str, device, prefix: str = "q."):
    """(address, bytes) of a quantized buffer for the binding, or (0, 0) when absent. The buffer
    must be exactly what quantize returns for the layout: its dtype (or uint8 for a one-byte
    type), shape and element strides. The binding receives an address and a byte count only, so
    anything else (a contiguous copy of an MN-major view, unpacked FP4, a transposed copy) would
    be read as the plan's storage and decode to wrong numbers. Its bytes run to the storage's end
    (an MN-major view's padding lies beyond its last element), at most the plan's: a slice of a
    larger array holds its own elements only."""
    if a is None:
        return (0, 0)
    arg = prefix + name
    if not fw.accepts(a):
        raise TypeError(f"{op}: {arg} is a {type(a).__module__}.{type(a).__name__}; expected a {fw.name} array "
                        "like the other buffers")
    if fw.device(a, op, arg) != tuple(device):
        raise ValueError(f"{op}: {arg} is on device {fw.device(a, op, arg)}; the other buffers on {device}")
    spec = getattr(layout, name)
    if spec is None:
        raise ValueError(f"{op}: {arg} is given but recipe {layout.recipe} has no {name} buffer; expected None")
    got, shape, strides = fw.dtype_name(a), tuple(int(s) for s in a.shape), fw.strides(a)
    # data keeps the input's leading dimensions, whatever they are, as long as they make the rows
    lead = shape[:-1] if name == "data" and shape and math.prod(shape[:-1]) == spec.rows else None
    want_shape, want_strides = presented(spec, name, lead)
    dtype_ok = got in _storage_dtypes(spec)
    if not dtype_ok or not _same_view(shape, strides, want_shape, want_strides):
        want_dtype = " or ".join(_storage_dtypes(spec))
        if spec.dtype == _FP4:
            want_dtype = "uint8 or torch.float4_e2m1fn_x2 (float4_e2m1fn packed two per byte)"
        shown = str(a.dtype) if got == _FP4 else got  # torch.float4_e2m1fn_x2, packed
        raise (ValueError if dtype_ok else TypeError)(
            f"{op}: {arg} is {shown} of shape {shape} and strides {strides}; expected {want_dtype} of shape "
            f"{want_shape} and strides {want_strides}, as quantize returns it for recipe {layout.recipe} on "
            f"({layout.rows}, {layout.cols})")
    return (fw.address(a), min(fw.capacity(a), spec.bytes))


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
    if math.prod(shape) and any(st < 0 for st, n in zip(strides, shape) if n > 1):  # a reversed view
        raise ValueError(f"quantize: x.strides={tuple(strides)} (elements) has a negative stride; expected rows and "
                         "elements at increasing addresses (pass a contiguous copy)")
    if shape[-1] > 1 and math.prod(shape) and strides[-1] != 1:  # before the C++ API names x "input"
        raise ValueError(f"quantize: x.strides[{len(shape) - 1}]={strides[-1]} must be 1 (rows may be strided, "
                         "elements within a row must be contiguous)")
    out_shape = out_shape_of(shape, activation)
    rows, cols = math.prod(shape[:-1]), out_shape[-1]
    layout = plan_layout(text, rows, cols, "quantize")
    out = []
    for b in _BUFFERS:
        spec = getattr(layout, b)
        # With noop the kernels write nothing: new outputs are then zeros, never uninitialised memory.
        a = None if spec is None else fw.empty(spec, device, zero=noop is not None)
        want = None if spec is None else presented(spec, b, out_shape[:-1])[0]
        out.append(a if a is None or tuple(a.shape) == want else a.reshape(want))
    out.append(fw.zeros_f32(cols, device) if dbias else None)
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
        if act[1] not in _INPUT_DTYPES:
            raise TypeError(f"quantize: act_input.dtype={act[1]} is not supported; expected float32, float16 or "
                            "bfloat16")
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
        if layout.data is None:
            raise ValueError(f"dequantize: recipe {recipe} has only columnwise output; pass columnwise=True")
        shape = (rows, cols)
    read = (("col_data", "col_scales") if columnwise else ("data", "scales")) + ("global_scale",)
    for a, b in zip(bufs, _BUFFERS):
        spec = getattr(layout, b)
        if a is None and spec is not None and b in read:
            raise ValueError(f"dequantize: q.{b} is None; recipe {recipe} needs it ({spec.dtype}, shape "
                             f"{presented(spec, b)[0]})")
    y = fw.dense(shape, dtype, device)
    if not run:
        return y
    args = [buffer_arg(fw, a, layout, b, "dequantize", device) for a, b in zip(bufs, _BUFFERS)]
    _core.dequantize(recipe, rows, cols, *args, fw.address(y), dtype, list(shape), list(fw.strides(y)),
                     bool(columnwise), backend, device, fw.stream(device))
    return y


def gemm_into(fw, a_recipe: str, m: int, k: int, a_data, a_scales, b_recipe: str, n: int, kb: int, b_data, b_scales,
              alpha: float, c, bias, out_dtype: str, backend: str, promote_k: int = 0, run: bool = True,
              block_m: int = 0, a_global=None, b_global=None):
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
        if fw.dtype_name(t) != "float32" or tuple(t.shape) != shape:
            raise ValueError(f"gemm: {name} must be contiguous float32 of shape {shape}, got "
                             f"{fw.dtype_name(t)} {tuple(t.shape)} with strides {fw.strides(t)}")
        if not fw.is_contiguous(t):
            raise ValueError(f"gemm: {name} has strides {fw.strides(t)}; expected a contiguous {shape} array, "
                             f"strides {row_major_strides(shape)} (pass {name}.contiguous())")
    _core.gemm(a_recipe, m, k, buffer_arg(fw, a_data, la, "data", "gemm", device, "a."),
               buffer_arg(fw, a_scales, la, "scales", "gemm", device, "a."),
               b_recipe, n, kb, buffer_arg(fw, b_data, lb, "data", "gemm", device, "b."),
               buffer_arg(fw, b_scales, lb, "scales", "gemm", device, "b."),
               fw.address(d), out_dtype, float(alpha), 0 if c is None else fw.address(c),
               0 if bias is None else fw.address(bias), backend, int(promote_k), device, fw.stream(device), int(block_m),
               buffer_arg(fw, a_global, la, "global_scale", "gemm", device, "a."),
               buffer_arg(fw, b_global, lb, "global_scale", "gemm", device, "b."))
    return d
