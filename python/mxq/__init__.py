"""mxq: FP8, MXFP8, MXFP4 and NVFP4 quantization, bit-exact on every backend.

NumPy in, NumPy out (CPU reference backend)::

    import numpy as np, mxq
    x = np.random.default_rng(0).standard_normal((128, 256), dtype=np.float32)
    q = mxq.quantize(x, "mxfp8")
    y = mxq.dequantize(q)
    print(q.recipe, q.data.dtype, q.scales.dtype, float(np.abs(y - x).max()))

Dtype names are torch's / ml_dtypes' and come from the C++ dtype table. Output arrays use
ml_dtypes types: float8_e4m3fn / float8_e5m2 data, float8_e8m0fnu (UE8M0) or float8_e4m3fn
(NVFP4's UE4M3) scales, float32 scales in the layout's exact shape, int32 for packed_ue8m0.
FP4 (float4_e2m1fn) data is packed two per byte, element 2i in the low nibble, and is returned
as uint8 of shape (..., K/2); a torch float4_e2m1fn_x2 view comes with the torch support.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence, Tuple, Union

import ml_dtypes
import numpy as np

from . import _core
from ._core import UnsupportedError

__all__ = [
    "BufferSpec", "FP8Block", "FP8Tensor", "Layout", "MX", "NVFP4", "QuantizedTensor", "RecipeLike",
    "UnsupportedError", "__version__", "dequantize", "dtype_names", "fp8_block", "fp8_tensor", "info",
    "mx", "numpy_dtype", "nvfp4", "plan", "quantize", "recipe_name", "recipes", "set_backend", "get_backend",
    "strict", "last_dispatch", "jit_warmup", "gemm", "gemm_plan",
]

__version__: str = _core.version()

_FP4 = "float4_e2m1fn"
_INPUT_DTYPES = ("float32", "float16", "bfloat16")  # what quantize reads and dequantize writes


def _storage_dtype(name: str) -> np.dtype:
    if name == _FP4:
        return np.dtype(np.uint8)  # packed two per byte; ml_dtypes' float4_e2m1fn is one per byte
    t = getattr(ml_dtypes, name, None)
    return np.dtype(t if t is not None else name)


# Every name comes from the C++ table (include/mxq/dtype.hpp); only the NumPy type is chosen here.
_DTYPES = {name: _storage_dtype(name) for name, _bits in _core.dtype_table()}
for _name, _bits in _core.dtype_table():
    assert _name == _FP4 or _DTYPES[_name].itemsize * 8 == _bits, _name


def dtype_names() -> list:
    """The dtype names of the C++ table, in its order (torch / ml_dtypes spelling)."""
    return list(_DTYPES)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype mxq stores a table dtype in (float4_e2m1fn: uint8, two values per byte).
    An unknown name raises ValueError listing the supported ones."""
    return _DTYPES[_core.parse_dtype(name)]


def _table_name(dt: np.dtype) -> Optional[str]:
    for name, d in _DTYPES.items():
        if d == dt and name != _FP4:
            return name
    return None


# ---- recipes ---------------------------------------------------------------------------------

def _opt(v) -> str:
    return ("1" if v else "0") if isinstance(v, bool) else str(v)


@dataclasses.dataclass(frozen=True)
class _RecipeBase:
    """Common options; None leaves the preset's default. str() renders the recipe text."""

    def _preset(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        opts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None and not f.metadata.get("preset", False):
                opts.append(f"{f.metadata.get('key', f.name)}={_opt(v)}")
        return self._preset() + (":" + ",".join(opts) if opts else "")

    @property
    def name(self) -> str:
        """The canonical recipe text (validated by the C++ parser)."""
        return _core.recipe_name(str(self))


_PRESET = {"preset": True}


@dataclasses.dataclass(frozen=True)
class FP8Block(_RecipeBase):
    """DeepSeek-style FP8 blocks: 1 x group (or 128 x 128 with rows=128), fp32 or power-of-two
    scales. ``fp8_block(group=128, pow2=True)`` is ``"fp8_block_1x128:pow2=1"``."""
    group: int = dataclasses.field(default=128, metadata=_PRESET)
    pow2: Optional[bool] = None
    rows: int = dataclasses.field(default=1, metadata=_PRESET)
    dir: Optional[str] = None
    colform: Optional[str] = None
    layout: Optional[str] = None
    scale: Optional[str] = None
    eps: Optional[float] = None

    def _preset(self) -> str:
        return f"fp8_block_{self.rows}x{self.group}"


@dataclasses.dataclass(frozen=True)
class MX(_RecipeBase):
    """OCP MX, 1 x 32 blocks with UE8M0 scales: elem "e4m3" (mxfp8), "e5m2" or "e2m1" (mxfp4).
    ``mx("e4m3", dir="both")`` is ``"mxfp8:dir=both"``."""
    elem: str = dataclasses.field(default="e4m3", metadata=_PRESET)
    dir: Optional[str] = None
    colform: Optional[str] = None
    layout: Optional[str] = None
    rounding: Optional[str] = None

    def _preset(self) -> str:
        presets = {"e4m3": "mxfp8", "e4m3fn": "mxfp8", "e5m2": "mxfp8_e5m2", "e2m1": "mxfp4", "e2m1fn": "mxfp4"}
        if self.elem not in presets:
            raise ValueError(f"mx: elem={self.elem!r} is invalid; expected one of {', '.join(presets)}")
        return presets[self.elem]


@dataclasses.dataclass(frozen=True)
class NVFP4(_RecipeBase):
    """NVFP4 (TransformerEngine): 1 x 16 blocks, UE4M3 scales and an fp32 global scale;
    ``two_d=True`` takes block amaxes over 16 x 16 tiles (nvfp4_2d)."""
    two_d: bool = dataclasses.field(default=False, metadata=_PRESET)
    dir: Optional[str] = None
    colform: Optional[str] = None
    layout: Optional[str] = None

    def _preset(self) -> str:
        return "nvfp4_2d" if self.two_d else "nvfp4"


@dataclasses.dataclass(frozen=True)
class FP8Tensor(_RecipeBase):
    """FP8 with one fp32 scale per tensor: elem "e4m3" or "e5m2"."""
    elem: str = dataclasses.field(default="e4m3", metadata=_PRESET)
    dir: Optional[str] = None
    colform: Optional[str] = None

    def _preset(self) -> str:
        if self.elem not in ("e4m3", "e4m3fn", "e5m2"):
            raise ValueError(f"fp8_tensor: elem={self.elem!r} is invalid; expected e4m3 or e5m2")
        return "fp8_tensor_e5m2" if self.elem == "e5m2" else "fp8_tensor"


fp8_block = FP8Block
mx = MX
nvfp4 = NVFP4
fp8_tensor = FP8Tensor

RecipeLike = Union[str, _RecipeBase]


def _recipe_text(recipe: RecipeLike, op: str) -> str:
    if isinstance(recipe, str):
        return recipe
    if isinstance(recipe, _RecipeBase):
        return str(recipe)
    raise TypeError(f"{op}: recipe must be a str (e.g. 'mxfp8:dir=both') or an mxq recipe helper "
                    f"(mxq.mx, mxq.fp8_block, ...), got {type(recipe).__name__}")


def recipe_name(recipe: RecipeLike) -> str:
    """The canonical text of a recipe; raises ValueError with the parser's message if invalid."""
    return _core.recipe_name(_recipe_text(recipe, "recipe_name"))


def recipes() -> list:
    """The preset names (options follow a colon: 'mxfp8:dir=both,layout=swizzled_128x4')."""
    return _core.preset_names().split(", ")


# ---- plan ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class BufferSpec:
    """One output buffer: its dtype name, logical (rows, cols), bytes, and the shape of the NumPy
    array mxq stores it in (FP4 data: (rows, cols/2) uint8; packed_ue8m0: int32 words)."""
    dtype: str
    rows: int
    cols: int
    bytes: int

    @property
    def numpy_dtype(self) -> np.dtype:
        return _DTYPES[self.dtype]

    @property
    def shape(self) -> Tuple[int, int]:
        return (self.rows, self.cols // 2) if self.dtype == _FP4 else (self.rows, self.cols)

    def empty(self) -> np.ndarray:
        a = np.empty(self.shape, dtype=self.numpy_dtype)
        if a.nbytes != self.bytes:
            raise RuntimeError(f"mxq internal error: {self} gives {a.nbytes} bytes, plan says {self.bytes}")
        return a


_BUFFERS = ("data", "scales", "col_data", "col_scales", "global_scale", "amax")


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


def plan(recipe: RecipeLike, rows: int, cols: int) -> Layout:
    """Exact dtype, shape and bytes of every output buffer of quantize(recipe) on a (rows, cols)
    input. Raises ValueError for an invalid recipe or shape (e.g. odd cols for FP4)."""
    return _plan(_recipe_text(recipe, "plan"), rows, cols, "plan")


def _plan(text: str, rows: int, cols: int, op: str) -> Layout:
    name, *specs = _core.plan(text, int(rows), int(cols), op)
    return Layout(name, int(rows), int(cols), *(None if s is None else BufferSpec(*s) for s in specs))


# ---- quantize / dequantize ------------------------------------------------------------------

@dataclasses.dataclass
class QuantizedTensor:
    """A quantized tensor: NumPy arrays for every buffer the recipe produces (None otherwise),
    the canonical recipe and the input's shape. Rowwise ``data`` has the input's leading
    dimensions ((..., K), FP4: (..., K/2) uint8); scales have their layout's exact 2-D shape;
    ``col_data`` is 2-D ((K, M) transposed or (M, K)); global_scale and amax are float32 of
    shape (1,) (fp8_tensor: scale_inv; nvfp4: 1 / S_enc)."""
    recipe: str
    shape: Tuple[int, ...]
    data: Optional[np.ndarray] = None
    scales: Optional[np.ndarray] = None
    col_data: Optional[np.ndarray] = None
    col_scales: Optional[np.ndarray] = None
    global_scale: Optional[np.ndarray] = None
    amax: Optional[np.ndarray] = None
    dbias: Optional[np.ndarray] = None  # quantize(..., dbias=True): float32 column sums of the values quantized

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:-1])

    @property
    def cols(self) -> int:
        return self.shape[-1]

    def __repr__(self) -> str:
        parts = [f"recipe={self.recipe!r}", f"shape={self.shape}"]
        for b in _BUFFERS:
            a = getattr(self, b)
            if a is not None:
                parts.append(f"{b}={a.dtype}{list(a.shape)}")
        return "QuantizedTensor(" + ", ".join(parts) + ")"


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _buffer_arg(a: Optional[np.ndarray], spec: Optional[BufferSpec], name: str, op: str):
    if a is None:
        return (0, 0)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{op}: q.{name} must be a numpy.ndarray or None, got {type(a).__name__}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{op}: q.{name} must be C-contiguous (quantized buffers are contiguous)")
    if spec is not None and a.dtype not in (spec.numpy_dtype, np.dtype(np.uint8)):
        raise TypeError(f"{op}: q.{name}.dtype={a.dtype} must be {spec.numpy_dtype} ({spec.dtype}) or uint8")
    return (_address(a), a.nbytes)


def _scalar(v, name: str) -> Optional[np.ndarray]:
    if v is None:
        return None
    a = np.ascontiguousarray(np.asarray(v, dtype=np.float32)).reshape(-1)
    if a.size != 1:
        raise ValueError(f"quantize: {name} must be one float32 value, got {a.size} values")
    return a


def _check_array(x, op: str, arg: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        kind = f"{type(x).__module__}.{type(x).__name__}"
        raise TypeError(f"{op}: {arg} must be a numpy.ndarray of float32, float16 or ml_dtypes.bfloat16, got {kind}"
                        + (" (torch tensors are not supported yet)" if kind.startswith("torch.") else ""))
    return x


def quantize(x: np.ndarray, recipe: RecipeLike, *, amax=None, scale=None, backend: str = "auto",
             activation: str = "none", act_input: Optional[np.ndarray] = None, dbias: bool = False,
             noop=None) -> QuantizedTensor:
    """Quantizes x (float32, float16 or ml_dtypes.bfloat16; N-D arrays collapse to rows over the
    last dimension, which must be contiguous; rows may be strided) with ``recipe`` (a preset string
    with options, or a helper such as ``mxq.mx("e4m3", dir="both")``).

    ``amax``: fp8_tensor and nvfp4 use this tensor amax instead of computing it. ``scale``:
    fp8_tensor uses this encode scale directly. ``backend``: "auto", "cpu", "cuda-aot"
    ("auto" is the CPU reference for NumPy arrays).

    Fused epilogues (TransformerEngine's), computed in fp32 with mxq's own exp/tanh/erf so that
    every backend gives the same bits: ``activation`` ("gelu", "gelu_tanh", "silu", "relu",
    "qgelu", "srelu"; gated "swiglu", "geglu", "reglu" read the last dimension as [a | b] and
    halve it) quantizes act(x); with ``act_input`` (same shape) x is the gradient and
    x * act'(act_input) is quantized; ``dbias=True`` also returns the float32 column sums of the
    quantized values in ``q.dbias``; ``noop`` (a scalar) non-zero makes the call write nothing.

    Raises TypeError for a non-NumPy input or an unsupported dtype, ValueError for an invalid
    recipe, shape or option (with the C++ message), UnsupportedError for a request this build
    or backend cannot serve.
    """
    x = _check_array(x, "quantize", "x")
    dt = _table_name(x.dtype)
    if dt not in _INPUT_DTYPES:
        raise TypeError(f"quantize: x.dtype={x.dtype} is not supported; expected float32, float16 or "
                        "ml_dtypes.bfloat16")
    if not isinstance(backend, str):
        raise TypeError(f"quantize: backend must be a str, got {type(backend).__name__}")
    text = _recipe_text(recipe, "quantize")
    if x.ndim < 1:
        raise ValueError("quantize: x.ndim=0; expected an array of at least one dimension")
    if any(s % x.itemsize for s in x.strides):
        raise ValueError(f"quantize: x.strides={x.strides} (bytes) are not multiples of the element size {x.itemsize}")
    shape = tuple(int(s) for s in x.shape)
    gated = activation in ("swiglu", "geglu", "reglu")
    if gated and shape[-1] % 2:
        raise ValueError(f"quantize: activation={activation} reads the last dimension as [a | b]; "
                         f"x.shape[-1]={shape[-1]} must be even")
    out_shape = shape[:-1] + (shape[-1] // 2,) if gated else shape
    rows, cols = math.prod(shape[:-1]), out_shape[-1]
    layout = _plan(text, rows, cols, "quantize")
    out = {b: (None if getattr(layout, b) is None else getattr(layout, b).empty()) for b in _BUFFERS}
    amax_in, scale_in = _scalar(amax, "amax"), _scalar(scale, "scale")
    noop_in = _scalar(noop, "noop")
    act = None
    if act_input is not None:
        act = _check_array(act_input, "quantize", "act_input")
        if _table_name(act.dtype) not in _INPUT_DTYPES:
            raise TypeError(f"quantize: act_input.dtype={act.dtype} is not supported")
    dbias_out = np.zeros(cols, np.float32) if dbias else None
    args = [_buffer_arg(out[b], None, b, "quantize") for b in _BUFFERS]
    _core.quantize(_address(x), dt, list(shape), [s // x.itemsize for s in x.strides], text, rows, cols, *args,
                   0 if amax_in is None else _address(amax_in), 0 if scale_in is None else _address(scale_in),
                   backend, activation,
                   0 if act is None else _address(act), "float32" if act is None else _table_name(act.dtype),
                   [] if act is None else [int(s) for s in act.shape],
                   [] if act is None else [s // act.itemsize for s in act.strides],
                   0 if dbias_out is None else _address(dbias_out), 0 if noop_in is None else _address(noop_in))
    shape = out_shape
    if out["data"] is not None:
        out["data"] = out["data"].reshape(shape[:-1] + (out["data"].shape[-1],))
    for b in ("global_scale", "amax"):
        if out[b] is not None:
            out[b] = out[b].reshape(1)
    return QuantizedTensor(layout.recipe, shape, **out, dbias=dbias_out)


def dequantize(q: QuantizedTensor, *, dtype: Union[str, type, np.dtype] = "float32", columnwise: bool = False,
               backend: str = "auto") -> np.ndarray:
    """Decodes q into a new array of ``dtype`` ("float32", "float16", "bfloat16" or the NumPy /
    ml_dtypes type). Rowwise: q.shape. ``columnwise=True`` decodes col_data in its stored
    orientation: (K, M) for the transposed form, q.shape's (M, K) for colform=same."""
    if not isinstance(q, QuantizedTensor):
        raise TypeError(f"dequantize: q must be an mxq.QuantizedTensor, got {type(q).__name__}")
    if isinstance(dtype, str):
        name = _core.parse_dtype(dtype)
    else:
        name = _table_name(np.dtype(dtype))
    if name not in _INPUT_DTYPES:
        raise TypeError(f"dequantize: dtype={dtype!r} is not supported; expected float32, float16 or bfloat16")
    layout = _plan(q.recipe, q.rows, q.cols, "dequantize")
    args = [_buffer_arg(getattr(q, b), getattr(layout, b), b, "dequantize") for b in _BUFFERS]
    if columnwise:
        if layout.col_data is None:
            raise ValueError(f"dequantize: columnwise=True but recipe {q.recipe} has no columnwise output "
                             "(use dir=col or dir=both)")
        shape = (layout.col_data.rows, layout.col_data.cols)
    else:
        shape = tuple(q.shape)
    y = np.empty(shape, dtype=_DTYPES[name])
    strides = [s // y.itemsize for s in y.strides]
    _core.dequantize(q.recipe, q.rows, q.cols, *args, _address(y), name, list(shape), strides, bool(columnwise),
                     backend)
    return y


def gemm(a: QuantizedTensor, b: QuantizedTensor, *, alpha: float = 1.0, c: Optional[np.ndarray] = None,
         bias: Optional[np.ndarray] = None, out_dtype: str = "float32", backend: str = "auto") -> np.ndarray:
    """Block-scaled FP8 GEMM: alpha * A . B^T (+ c) (+ bias), A (M, K) and B (N, K) both quantized
    K-major: 1D2D (A fp8_block_1x128, B fp8_block_128x128) or 1D1D (both fp8_block_1x128).
    Returns a new (M, N) array of ``out_dtype`` ("float32" or "bfloat16"). The CPU backend is the
    fp64 reference; the CUDA GEMM is not in this build yet."""
    for name, q in (("a", a), ("b", b)):
        if not isinstance(q, QuantizedTensor):
            raise TypeError(f"gemm: {name} must be an mxq.QuantizedTensor, got {type(q).__name__}")
    if out_dtype not in ("float32", "bfloat16"):
        raise TypeError(f"gemm: out_dtype={out_dtype!r}; expected 'float32' or 'bfloat16'")
    m, n, k = a.rows, b.rows, a.cols
    la, lb = _plan(a.recipe, a.rows, a.cols, "gemm"), _plan(b.recipe, b.rows, b.cols, "gemm")
    d = np.empty((m, n), dtype=_DTYPES[out_dtype])
    cc = None if c is None else np.ascontiguousarray(np.asarray(c, dtype=np.float32))
    bb = None if bias is None else np.ascontiguousarray(np.asarray(bias, dtype=np.float32)).reshape(-1)
    if cc is not None and cc.shape != (m, n):
        raise ValueError(f"gemm: c.shape={cc.shape}; expected ({m}, {n})")
    if bb is not None and bb.size != n:
        raise ValueError(f"gemm: bias has {bb.size} values; expected {n}")
    _core.gemm(a.recipe, m, k, _buffer_arg(a.data, la.data, "data", "gemm"), _buffer_arg(a.scales, la.scales, "scales", "gemm"),
               b.recipe, n, b.cols, _buffer_arg(b.data, lb.data, "data", "gemm"), _buffer_arg(b.scales, lb.scales, "scales", "gemm"),
               _address(d), out_dtype, float(alpha), 0 if cc is None else _address(cc), 0 if bb is None else _address(bb),
               backend)
    return d


def gemm_plan(m: int, n: int, k: int, *, kind: str = "1d2d", out_dtype: str = "bfloat16", sms: int = 132) -> dict:
    """How the Hopper GEMM is planned for an (M, N, K) problem (mxq/gemm_plan.hpp states the
    rules): {"path", "why", "block_m", "block_n", "block_k", "stages", "cluster", "split_k",
    "tiles", "waves", "last_wave", "smem_bytes"}."""
    keys = ("path", "why", "block_m", "block_n", "block_k", "stages", "cluster", "split_k", "tiles", "waves",
            "last_wave", "smem_bytes")
    return dict(zip(keys, _core.gemm_plan(int(m), int(n), int(k), kind, out_dtype, int(sms))))


# ---- runtime switches ----------------------------------------------------------------------

def set_backend(name: str) -> None:
    """Process-wide default backend ("auto", "cpu", "cuda-aot", "cuda-jit") for calls whose
    `backend` is "auto"; it wins over the environment variable MXQ_BACKEND. "auto" clears it."""
    _core.set_default_backend(name)


def get_backend() -> str:
    """The process-wide default backend (the setter's, else MXQ_BACKEND's, else "auto")."""
    return _core.default_backend()


class strict:
    """Strict mode: every fallback (e.g. from a specialised CUDA kernel to the generic one) raises
    instead. `mxq.strict()` turns it on; `with mxq.strict():` turns it on for the block and then
    restores the previous setting; `mxq.strict(False)` turns it off."""

    def __init__(self, on: bool = True):
        self._previous = _core.strict()
        _core.set_strict(bool(on))

    def __enter__(self) -> "strict":
        return self

    def __exit__(self, *exc) -> None:
        _core.set_strict(self._previous)


def last_dispatch() -> dict:
    """What this thread's last quantize / dequantize ran: {"op", "backend", "kernel", "fallback"}."""
    op, backend, kernel, fallback = _core.last_dispatch()
    return {"op": op, "backend": backend, "kernel": kernel, "fallback": fallback}


def jit_warmup(recipes: Sequence[RecipeLike] = (), *, arch: int = 0, threads: int = 0) -> int:
    """Compiles the cuda-jit kernels of `recipes` (every preset and option when empty) into the
    memory and disk caches, in parallel; needs no GPU. Returns the number of configurations
    cached; raises UnsupportedError when the JIT is off or a configuration fails to compile."""
    configs, failures = _core.jit_warmup([_recipe_text(r, "jit_warmup") for r in recipes], arch, threads)
    if failures:
        raise UnsupportedError("jit_warmup: " + "; ".join(failures))
    return configs


# ---- build ---------------------------------------------------------------------------------

def info() -> dict:
    """{"version", "build", "backends": [{"name", "available", "detail"}]}: the build (type,
    compiler, CUDA) and each backend with what it runs on or why it is unavailable."""
    return {
        "version": _core.version(),
        "build": _core.build_info(),
        "backends": [{"name": n, "available": a, "detail": d} for n, a, d in _core.backend_status()],
    }
