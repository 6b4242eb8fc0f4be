"""mxq: FP8, MXFP8, MXFP4 and NVFP4 quantization, bit-exact on every backend.

PyTorch in, PyTorch out (CUDA kernels on the current stream; custom ops that trace under
torch.compile and replay in CUDA graphs)::

    import torch, mxq
    x = torch.randn(4096, 7168, dtype=torch.bfloat16, device="cuda")
    q = mxq.quantize(x, "mxfp8:dir=both")     # float8_e4m3fn data, float8_e8m0fnu scales
    y = mxq.dequantize(q, dtype=torch.bfloat16)

NumPy in, NumPy out (CPU reference backend)::

    import numpy as np, mxq
    x = np.random.default_rng(0).standard_normal((128, 256), dtype=np.float32)
    q = mxq.quantize(x, "mxfp8")
    y = mxq.dequantize(q)

Dtype names are torch's / ml_dtypes' and come from the C++ dtype table. Torch outputs use
torch's float8_e4m3fn / float8_e5m2 data, float8_e8m0fnu (UE8M0) or float8_e4m3fn (NVFP4's
UE4M3) scales and float4_e2m1fn_x2 FP4 data of shape (..., K/2); NumPy outputs the ml_dtypes
types, FP4 as uint8 (..., K/2) (element 2i in the low nibble). fp32 scales come in their
layout's exact shape and strides; int32 for packed_ue8m0. CuPy arrays are read through DLPack.
Import torch before mxq (or call ``mxq.register_torch_ops()``) so that the custom ops exist
before torch.compile traces a call.
"""
from __future__ import annotations

import dataclasses
import math
import re
import sys
from typing import Any, Optional, Sequence, Tuple, Union

import ml_dtypes
import numpy as np

from . import _core, _ops
from ._args import INT32, SIZE, check_bool, check_f32, check_int, check_str, is_int
from ._core import UnsupportedError
from ._frameworks import CupyFramework, NumpyFramework, framework_of, numpy_storage_dtype, register
from ._ops import _BUFFERS, BufferSpec, Layout

__all__ = [
    "BufferSpec", "FP8Block", "FP8Tensor", "Layout", "MX", "NVFP4", "QuantizedTensor", "RecipeLike",
    "UnsupportedError", "__version__", "dequantize", "dtype_names", "fp8_block", "fp8_tensor", "info",
    "mx", "numpy_dtype", "nvfp4", "plan", "quantize", "recipe_name", "recipes", "set_backend", "get_backend",
    "strict", "last_dispatch", "jit_warmup", "gemm", "gemm_plan", "register_torch_ops",
]

__version__: str = _core.version()

_FP4 = "float4_e2m1fn"
_BACKENDS = "'auto', 'cpu', 'cuda-aot', 'cuda-jit' or 'cublaslt'"


# Every name comes from the C++ table (include/mxq/dtype.hpp); only the NumPy type is chosen here.
_DTYPES = {name: numpy_storage_dtype(name) for name, _bits in _core.dtype_table()}
for _name, _bits in _core.dtype_table():
    assert _name == _FP4 or _DTYPES[_name].itemsize * 8 == _bits, _name


def dtype_names() -> list:
    """The dtype names of the C++ table, in its order (torch / ml_dtypes spelling)."""
    return list(_DTYPES)


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype mxq stores a table dtype in (float4_e2m1fn: uint8, two values per byte).
    An unknown name raises ValueError listing the supported ones."""
    return _DTYPES[_core.parse_dtype(check_str(name, "numpy_dtype", "name", "a dtype name such as 'float8_e4m3fn'"))]


# ---- recipes ---------------------------------------------------------------------------------

def _opt(v) -> str:
    return ("1" if v else "0") if isinstance(v, bool) else str(v)


@dataclasses.dataclass(frozen=True)
class _RecipeBase:
    """Common options; None leaves the preset's default. str() renders the recipe text."""

    def __post_init__(self):
        op = type(self).__name__
        for f in dataclasses.fields(self):  # annotations are text (from __future__ import annotations)
            v = getattr(self, f.name)
            if v is None:
                continue
            if f.type in ("bool", "Optional[bool]"):
                object.__setattr__(self, f.name, check_bool(v, op, f.name))
            elif f.type in ("int", "Optional[int]"):
                object.__setattr__(self, f.name, check_int(v, op, f.name, "a positive int", INT32))
            elif f.type in ("float", "Optional[float]"):
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise TypeError(f"{op}: {f.name}={v!r}; expected a real number")
            elif f.type in ("str", "Optional[str]"):
                # one option's value: a separator in it would smuggle other options into the text
                if not isinstance(v, str) or not v or any(c in v for c in ",:= "):
                    raise (ValueError if isinstance(v, str) else TypeError)(
                        f"{op}: {f.name}={v!r}; expected one option value, a non-empty str without ',', ':', '=' "
                        "or spaces")
        self._preset()  # an unknown preset field (mx("e3m4")) fails here, not at first use

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

def plan(recipe: RecipeLike, rows: int, cols: int) -> Layout:
    """Exact dtype, shape and bytes of every output buffer of quantize(recipe) on a (rows, cols)
    input. Raises ValueError for an invalid recipe or shape (e.g. odd cols for FP4)."""
    return _ops.plan_layout(_recipe_text(recipe, "plan"), check_int(rows, "plan", "rows", "a size >= 0", SIZE),
                            check_int(cols, "plan", "cols", "a size >= 0", SIZE), "plan")


# ---- arrays: NumPy here, torch and CuPy when they are imported -------------------------------

_NUMPY = NumpyFramework(list(_DTYPES))
register(_NUMPY)


def _load_torch():
    from . import _torch
    return _torch


def _framework(x, op: str, arg: str):
    """The Framework of x; torch and CuPy support load on first sight of one of their arrays."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{op}: {arg} is a numpy masked array; mxq reads every element and would ignore the mask: "
                        f"pass {arg}.filled(value) or {arg}.data")
    fw = framework_of(x)
    if fw is not None:
        return fw
    module = type(x).__module__.split(".")[0]
    if module == "torch":
        return _load_torch().FRAMEWORK
    if module == "cupy":
        import cupy
        register(CupyFramework(_core, cupy))
        return framework_of(x)
    raise TypeError(f"{op}: {arg} must be a numpy.ndarray, torch.Tensor or cupy.ndarray, got {module}."
                    f"{type(x).__name__}; other DLPack producers: pass torch.from_dlpack(obj) or np.from_dlpack(obj)")


# ---- quantize / dequantize ------------------------------------------------------------------

@dataclasses.dataclass
class QuantizedTensor:
    """A quantized tensor: arrays of the input's library (NumPy, torch or CuPy) on its device for
    every buffer the recipe produces (None otherwise), the canonical recipe and the input's shape.
    Rowwise ``data`` has the input's leading dimensions ((..., K); FP4: (..., K/2) packed, torch
    float4_e2m1fn_x2 / NumPy uint8); scales have their layout's 2-D shape, MN-major layouts
    (mn_major_tma, packed_ue8m0) presented as DeepGEMM does, (MN, K blocks) with strides
    (1, round_up(MN, 4)); ``col_data`` is 2-D ((K, M) transposed or (M, K)); global_scale and amax
    are float32 of shape (1,) (fp8_tensor: scale_inv; nvfp4: 1 / S_enc)."""
    recipe: str
    shape: Tuple[int, ...]
    data: Any = None
    scales: Any = None
    col_data: Any = None
    col_scales: Any = None
    global_scale: Any = None
    amax: Any = None
    dbias: Any = None  # quantize(..., dbias=True): float32 column sums of the values quantized

    @property
    def rows(self) -> int:
        rows = 1
        for s in self.shape[:-1]:
            rows *= int(s)  # Python ints: NumPy's would wrap around
        return rows

    @property
    def cols(self) -> int:
        return int(self.shape[-1])

    def __repr__(self) -> str:
        parts = [f"recipe={self.recipe!r}", f"shape={tuple(self.shape)}"]
        for b in _BUFFERS:
            a = getattr(self, b)
            if a is not None:
                parts.append(f"{b}={a.dtype}{list(a.shape)}")
        return "QuantizedTensor(" + ", ".join(parts) + ")"


def _make_quantized(recipe: str, shape, activation: str, bufs) -> QuantizedTensor:
    return QuantizedTensor(recipe, _ops.out_shape_of(shape, activation), *bufs[:6], dbias=bufs[6])


def quantize(x, recipe: RecipeLike, *, amax=None, scale=None, backend: str = "auto", activation: str = "none",
             act_input=None, dbias: bool = False, noop=None) -> QuantizedTensor:
    """Quantizes x with ``recipe`` (a preset string with options, or a helper such as
    ``mxq.mx("e4m3", dir="both")``). x is a NumPy array (CPU reference backend), a torch tensor
    (CPU or CUDA; zero-copy, on the current CUDA stream, through the custom op
    ``torch.ops.mxq.quantize``, so it traces under torch.compile and replays in CUDA graphs) or
    a CuPy array (read through DLPack). float32, float16 or bfloat16; N-D inputs collapse to rows
    over the last dimension, which must be contiguous; rows may be strided. Outputs are new
    arrays of x's library on x's device.

    ``amax``: fp8_tensor and nvfp4 use this tensor amax instead of computing it. ``scale``:
    fp8_tensor uses this encode scale directly. Both, and ``noop``, are a Python number or one
    float32 on x's device (inside a CUDA graph pass a device tensor). ``backend``: "auto",
    "cpu", "cuda-aot" or "cuda-jit".

    Fused epilogues (TransformerEngine's), computed in fp32 with mxq's own exp/tanh/erf so that
    every backend gives the same bits: ``activation`` ("gelu", "gelu_tanh", "silu", "relu",
    "qgelu", "srelu"; gated "swiglu", "geglu", "reglu" read the last dimension as [a | b] and
    halve it) quantizes act(x); with ``act_input`` (same shape) x is the gradient and
    x * act'(act_input) is quantized; ``dbias=True`` also returns the float32 column sums of the
    quantized values in ``q.dbias``; ``noop`` non-zero makes the call write nothing (the new
    outputs, allocated zeroed whenever ``noop`` is given, then hold zeros).

    Raises TypeError for an unsupported array type or dtype, ValueError for an invalid recipe,
    shape or option (with the C++ message), UnsupportedError for a request this build or backend
    cannot serve.
    """
    text = _recipe_text(recipe, "quantize")
    check_str(backend, "quantize", "backend", _BACKENDS)
    check_str(activation, "quantize", "activation", "'none', 'gelu', 'swiglu', ...")
    dbias = check_bool(dbias, "quantize", "dbias")
    fw = _framework(x, "quantize", "x")
    if fw.name == "torch":
        tq = _load_torch()
        return tq.quantize(x, text, tq.canonical_recipe(text), amax, scale, backend, activation, act_input, dbias, noop,
                                      _make_quantized)
    bufs = _ops.quantize_into(fw, x, text, amax, scale, backend, activation, act_input, dbias, noop)
    return _make_quantized(_core.recipe_name(text), tuple(int(s) for s in x.shape), activation, bufs)


def _dtype_name(dtype, op: str, arg: str = "dtype", allowed=_ops._INPUT_DTYPES) -> str:
    """The table name of an output dtype given as a name, a NumPy / ml_dtypes type or a torch
    dtype; anything else, or a dtype outside `allowed`, is a TypeError naming the argument."""
    name = None
    if isinstance(dtype, str):
        name = dtype
        if name not in allowed:
            try:
                _core.parse_dtype(name)
            except ValueError as e:  # a misspelling: keep the table's suggestion
                hint = re.search(r"did you mean \w+", str(e))
                if hint:
                    raise ValueError(f"{op}: {arg}={dtype!r} is not a dtype name ({hint.group(0)}?)") from None
    elif type(dtype).__module__.split(".")[0] == "torch":
        name = _load_torch()._NAMES.get(dtype, str(dtype))
    elif not isinstance(dtype, (bool, int, float)):
        try:
            name = _NUMPY.dtype_name(np.empty(0, dtype=dtype))
        except TypeError:
            pass
    if name not in allowed:
        expected = " or ".join([", ".join(allowed[:-1]), allowed[-1]] if len(allowed) > 1 else allowed)
        raise TypeError(f"{op}: {arg}={dtype!r} is not supported; expected {expected}")
    return name


def _quantized_framework(q: QuantizedTensor, op: str, name: str):
    """The Framework of q's buffers, once q's recipe and shape are what the binding can take and
    q.data has q.shape's leading dimensions (the buffers themselves are checked against the plan
    in _ops.buffer_arg)."""
    if not isinstance(q, QuantizedTensor):
        raise TypeError(f"{op}: {name} must be an mxq.QuantizedTensor, got {type(q).__name__}")
    check_str(q.recipe, op, f"{name}.recipe", "a recipe name")
    shape = q.shape  # a tuple, list or torch.Size (a SymInt is an int to torch.compile's tracer)
    if not isinstance(shape, (tuple, list)) or not shape or not all(is_int(s) for s in shape):
        raise TypeError(f"{op}: {name}.shape={shape!r}; expected a tuple of at least one int (the input's shape)")
    if min(shape) < 0 or q.rows > SIZE[1] or q.cols > SIZE[1]:
        raise ValueError(f"{op}: {name}.shape={tuple(shape)}; expected sizes >= 0, at most 2^63 - 1 rows and columns")
    present = [b for b in _BUFFERS if getattr(q, b) is not None]
    if not present:
        raise ValueError(f"{op}: {name} has no buffers")
    # each an array of a library mxq reads, before its shape is looked at (the first one's library
    # is q's; buffer_arg refuses a buffer of another)
    fw = [_framework(getattr(q, b), op, f"{name}.{b}") for b in present][0]
    if q.data is not None and tuple(q.data.shape[:-1]) != tuple(shape[:-1]):
        raise ValueError(f"{op}: {name}.data.shape={tuple(q.data.shape)}; expected {name}.shape's leading "
                         f"dimensions {tuple(shape[:-1])}, then the plan's columns")
    return fw


def dequantize(q: QuantizedTensor, *, dtype="float32", columnwise: bool = False, backend: str = "auto"):
    """Decodes q into a new array of q's library and device, of ``dtype`` ("float32", "float16",
    "bfloat16", or the NumPy / ml_dtypes / torch type). Rowwise: q.shape. ``columnwise=True``
    decodes col_data in its stored orientation: (K, M) for the transposed form, (M, K) for
    colform=same."""
    fw = _quantized_framework(q, "dequantize", "q")
    name = _dtype_name(dtype, "dequantize")
    check_str(backend, "dequantize", "backend", _BACKENDS)
    columnwise = check_bool(columnwise, "dequantize", "columnwise")
    if fw.name == "torch":
        y = _load_torch().dequantize(q, name, columnwise, backend)
    else:
        y = _ops.dequantize_into(fw, q.recipe, q.rows, q.cols, [getattr(q, b) for b in _BUFFERS], name, columnwise,
                                 backend)
    return y if columnwise else y.reshape(tuple(q.shape))


def gemm(a: QuantizedTensor, b: QuantizedTensor, *, alpha: float = 1.0, c=None, bias=None, out_dtype: str = "float32",
         backend: str = "auto", promote_k: int = 0, block_m: int = 0):
    """Block-scaled GEMM: alpha * A . B^T (+ c) (+ bias), A (M, K) and B (N, K) both quantized
    rowwise (K-major) in one scale family: 1D2D (A fp8_block_1x128, B fp8_block_128x128) or 1D1D
    (both fp8_block_1x128); MX (each of A and B mxfp8, mxfp8_e5m2 or mxfp4); NVFP4 (nvfp4 or
    nvfp4_2d); or per-tensor FP8 (fp8_tensor). On CUDA, our tensor-core kernels take the fp8_block
    families, cuBLASLt per-tensor FP8, and a generic kernel the rest (a fallback under "auto").
    Returns a new (M, N) array of ``out_dtype`` ("float32" or "bfloat16") in the operands'
    library (torch: the custom op ``torch.ops.mxq.gemm``). The CPU backend is the fp64
    reference. On CUDA, backend "auto" runs our TMA + wgmma kernel where it takes the call (M > 64),
    else cuBLASLt's block-scaled GEMM, else our decode or generic kernel; "cublaslt" and
    "cuda-aot" ask for one side (mxq/api.hpp lists the conditions). ``promote_k`` (32, 64 or 128)
    is the K extent of the wgmma kernel's tensor-core partial sums: 32 is the most accurate, 128
    DeepGEMM's interval (1.5x faster, cuBLASLt's accuracy); 0, the default, takes 128 for a
    bfloat16 ``out_dtype`` (whose own rounding is far coarser) and 32 for float32. ``block_m``
    (0, 128 or 256) is the wgmma kernel's tile rows; 0 lets ``gemm_plan`` choose."""
    promote_k = check_int(promote_k, "gemm", "promote_k", "0, 32, 64 or 128", INT32)
    block_m = check_int(block_m, "gemm", "block_m", "0, 128 or 256", INT32)
    if isinstance(alpha, (bool, str)) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise TypeError(f"gemm: alpha={alpha!r}; expected a real number")
    check_f32(alpha, "gemm", "alpha")
    check_str(backend, "gemm", "backend", _BACKENDS)
    out_dtype = _dtype_name(out_dtype, "gemm", "out_dtype", ("float32", "bfloat16"))  # or their numpy / torch types
    fa = _quantized_framework(a, "gemm", "a")
    fb = _quantized_framework(b, "gemm", "b")
    if fa is not fb:
        raise TypeError(f"gemm: a holds {fa.name} arrays and b {fb.name} arrays; expected one library")
    for name, q in (("a", a), ("b", b)):
        if q.data is None:
            raise ValueError(f"gemm: {name}.recipe={q.recipe} has no rowwise data; expected an operand quantized "
                             "rowwise (K-major)")
    if fa.name == "torch":
        return _load_torch().gemm(a, b, alpha, c, bias, out_dtype, backend, promote_k, block_m)
    if fa.name == "numpy":
        # c and bias are read, never written: a strided array is copied; nothing else is converted
        # (a float64 bias, or a (2, N/2) one reshaped to (N,), would be silently something else)
        c = None if c is None else np.ascontiguousarray(c) if isinstance(c, np.ndarray) else c
        bias = None if bias is None else np.ascontiguousarray(bias) if isinstance(bias, np.ndarray) else bias
    return _ops.gemm_into(fa, a.recipe, a.rows, a.cols, a.data, a.scales, b.recipe, b.rows, b.cols, b.data,
                          b.scales, alpha, c, bias, out_dtype, backend, promote_k, block_m=block_m,
                          a_global=a.global_scale, b_global=b.global_scale)


def gemm_plan(m: int, n: int, k: int, *, kind: str = "1d2d", out_dtype: str = "bfloat16", sms: int = 132,
              promote_k: int = 0) -> dict:
    """Which of our CUDA GEMM kernels an (M, N, K) problem runs on, and its tiles (the shape rule
    that mxq.gemm dispatches by, for a call with this promote_k; mxq/gemm_plan.hpp states it):
    {"path", "why", "block_m", "block_n", "block_k", "stages", "cluster", "split_k", "tiles",
    "ctas_per_sm", "waves", "last_wave", "smem_bytes", "promote_k"} (promote_k: the interval the
    call runs at, 0 resolved by out_dtype)."""
    keys = ("path", "why", "block_m", "block_n", "block_k", "stages", "cluster", "split_k", "tiles", "ctas_per_sm",
            "waves", "last_wave", "smem_bytes", "promote_k")
    m, n, k = (check_int(v, "gemm_plan", name, "a size >= 1") for name, v in (("m", m), ("n", n), ("k", k)))
    check_str(kind, "gemm_plan", "kind", "'1d2d' or '1d1d'")
    check_str(out_dtype, "gemm_plan", "out_dtype", "'float32' or 'bfloat16'")
    sms = check_int(sms, "gemm_plan", "sms", "a number of SMs >= 1", INT32)
    promote_k = check_int(promote_k, "gemm_plan", "promote_k", "0, 32, 64 or 128", INT32)
    return dict(zip(keys, _core.gemm_plan(m, n, k, kind, out_dtype, sms, promote_k)))


# ---- runtime switches ----------------------------------------------------------------------

def set_backend(name: str) -> None:
    """Process-wide default backend ("auto", "cpu", "cuda-aot", "cuda-jit", "cublaslt") for calls whose
    `backend` is "auto"; it wins over the environment variable MXQ_BACKEND. "auto" clears it."""
    _core.set_default_backend(check_str(name, "set_backend", "name", _BACKENDS))


def get_backend() -> str:
    """The process-wide default backend (the setter's, else MXQ_BACKEND's, else "auto")."""
    return _core.default_backend()


class strict:
    """Strict mode: every fallback (e.g. from a specialised CUDA kernel to the generic one) raises
    instead. `mxq.strict()` turns it on; `with mxq.strict():` turns it on for the block and then
    restores the previous setting; `mxq.strict(False)` turns it off."""

    def __init__(self, on: bool = True):
        on = check_bool(on, "strict", "on")
        self._previous = _core.strict()
        _core.set_strict(on)

    def __enter__(self) -> "strict":
        return self

    def __exit__(self, *exc) -> None:
        _core.set_strict(self._previous)


def last_dispatch() -> dict:
    """What this thread's last quantize, dequantize or gemm ran: {"op", "backend", "kernel",
    "fallback"}. A call that fails before it reaches a backend leaves the previous record or none."""
    op, backend, kernel, fallback = _core.last_dispatch()
    return {"op": op, "backend": backend, "kernel": kernel, "fallback": fallback}


def jit_warmup(recipes: Sequence[RecipeLike] = (), *, arch: int = 0, threads: int = 0) -> int:
    """Compiles the cuda-jit kernels of `recipes` (every preset and option when empty) into the
    memory and disk caches, in parallel; needs no GPU. Returns the number of configurations
    cached; raises UnsupportedError when the JIT is off or a configuration fails to compile, and
    ValueError for a recipe that does not parse or has no JIT kernel (its calls run cuda-aot's
    generic kernel)."""
    if isinstance(recipes, (str, _RecipeBase)):
        raise TypeError(f"jit_warmup: recipes={str(recipes)!r}; expected a sequence of recipes, e.g. ['mxfp8']")
    try:
        recipes = list(recipes)
    except TypeError:
        raise TypeError(f"jit_warmup: recipes={recipes!r}; expected a sequence of recipes, e.g. ['mxfp8']") from None
    arch = check_int(arch, "jit_warmup", "arch", "an sm number such as 90, or 0 for the device's", INT32)
    threads = check_int(threads, "jit_warmup", "threads", "0 (one per core) or more", INT32)
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


def register_torch_ops() -> None:
    """Registers the torch.library custom ops (torch.ops.mxq.quantize / dequantize / gemm) now.
    They register on their own when torch was imported before mxq, or at the first torch tensor
    mxq sees; call this first when torch.compile may trace the first call."""
    _load_torch()


if "torch" in sys.modules:
    register_torch_ops()
