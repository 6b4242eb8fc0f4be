"""PyTorch support: torch tensors in, torch tensors out, on the tensor's device and the current
CUDA stream, through torch.library custom ops (mxq::quantize, mxq::dequantize, mxq::gemm) with
fake implementations, so that the calls trace under torch.compile (fullgraph) and replay inside
CUDA graphs.

Imported by the mxq package when torch is already imported, or on the first torch tensor it
sees; ``import mxq.torch`` forces it. Nothing is copied: the kernels read the caller's tensors
where they are and write into tensors allocated here with torch's allocator (graph-safe).

Dtypes: FP8 data float8_e4m3fn / float8_e5m2, FP4 data float4_e2m1fn_x2 of shape (..., K/2),
UE8M0 scales float8_e8m0fnu, NVFP4's UE4M3 scales float8_e4m3fn, packed_ue8m0 int32, fp32
scales in the exact strides of their layout (mn_major_tma: (M, K/128) with strides
(1, round_up(M, 4)), DeepGEMM's convention).
"""
from __future__ import annotations

from typing import List, Optional

import torch

from . import _core
from ._frameworks import Framework, _real, register

_NAMES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2",
    torch.float8_e8m0fnu: "float8_e8m0fnu", torch.float4_e2m1fn_x2: "float4_e2m1fn",
    torch.uint8: "uint8", torch.int32: "int32",
}
_DTYPES = {name: dt for dt, name in _NAMES.items()}
# Absent buffers come back from the custom ops as this (a schema cannot return None in a list):
# no buffer mxq produces is stored as uint8.
_ABSENT_DTYPE = torch.uint8


class TorchFramework(Framework):
    name = "torch"

    def accepts(self, x) -> bool:
        return isinstance(x, torch.Tensor)

    def device(self, x, op: str, arg: str):
        d = x.device
        if d.type == "cpu":
            return (0, 0)
        if d.type == "cuda":
            return (1, d.index if d.index is not None else torch.cuda.current_device())
        raise ValueError(f"{op}: {arg}.device={d}; expected a cpu or cuda tensor")

    def describe(self, x, op: str, arg: str, meta: bool = False):
        name = _NAMES.get(x.dtype)
        if name is None:
            expected = ("torch.float32, torch.float16 or torch.bfloat16" if arg in ("x", "act_input")
                        else "one of " + ", ".join(str(d) for d in _NAMES))
            raise TypeError(f"{op}: {arg}.dtype={x.dtype} is not supported; expected {expected}")
        if x.dim() == 0:
            raise ValueError(f"{op}: {arg}.ndim=0; expected a tensor of at least one dimension")
        # meta: a fake tensor (torch.compile), no address; symbolic sizes specialise here, since
        # the scale layouts' padding is not expressible symbolically.
        return (0 if meta else x.data_ptr(), name, [int(s) for s in x.shape], [int(s) for s in x.stride()],
                self.device(x, op, arg))

    def empty(self, spec, device, zero=False):
        dev = _device(device)
        rows, cols, rs, cs = spec.view
        dt = _DTYPES[spec.dtype]
        if zero and dt.itemsize == 1:  # zeroed as bytes: torch has had no fill kernel for some 1-byte types (FP4 x2)
            storage = torch.zeros(spec.bytes, dtype=torch.uint8, device=dev).view(dt)
        else:
            storage = (torch.zeros if zero else torch.empty)(spec.bytes // dt.itemsize, dtype=dt, device=dev)
        return storage.as_strided((rows, cols), (rs, cs))

    def dense(self, shape, dtype: str, device):
        return torch.empty(tuple(shape), dtype=_DTYPES[dtype], device=_device(device))

    def zeros_f32(self, n: int, device):
        return torch.zeros(n, dtype=torch.float32, device=_device(device))

    def scalar(self, v, device, op: str, name: str):
        if v is None:
            return None
        if isinstance(v, torch.Tensor):
            if v.dtype != torch.float32 or v.numel() != 1 or self.device(v, op, name) != tuple(device):
                raise ValueError(f"{op}: {name} must be one float32 value on the input's device, got "
                                 f"{v.dtype} of shape {tuple(v.shape)} on {v.device}")
            return v.detach()  # an amax computed from a Parameter: the outputs must not carry a grad_fn
        try:
            # the package's one rule for a host scalar (_frameworks._real: a number, a bool for noop
            # only, within float32's range), then float(), which alone would take str and drop a
            # complex's imaginary part
            f = float(_real(v, op, name))
        except TypeError:
            raise TypeError(f"{op}: {name}={v!r}; expected a number or one float32 tensor on the input's device") from None
        return torch.tensor([f], dtype=torch.float32, device=_device(device))

    def address(self, a) -> int:
        return a.data_ptr()

    def capacity(self, a) -> int:
        return a.untyped_storage().nbytes() - a.storage_offset() * a.element_size()

    def dtype_name(self, a) -> str:
        return _NAMES.get(a.dtype, str(a.dtype))

    def strides(self, a):
        return tuple(a.stride())

    def is_contiguous(self, a) -> bool:
        return a.is_contiguous()

    def stream(self, device) -> int:
        if device[0] != 1:
            return 0
        return torch.cuda.current_stream(device[1]).cuda_stream


def _device(device) -> torch.device:
    return torch.device("cpu") if device[0] == 0 else torch.device("cuda", device[1])


FRAMEWORK = TorchFramework()
register(FRAMEWORK)

# ---- custom ops ------------------------------------------------------------------------------
# The package's quantize / dequantize / gemm call these for torch tensors. Each real
# implementation plans, allocates with torch and calls the C++ API; each fake one plans and
# allocates only, so shapes, dtypes and strides agree between the two by construction.

from . import _ops  # noqa: E402  (needs FRAMEWORK registered)


def _absent(device) -> torch.Tensor:
    return torch.empty(0, dtype=_ABSENT_DTYPE, device=device)


def _out_list(bufs, device) -> List[torch.Tensor]:
    return [(_absent(device) if b is None else b) for b in bufs]


@torch.library.custom_op("mxq::quantize", mutates_args=())
def quantize_op(x: torch.Tensor, recipe: str, amax: Optional[torch.Tensor], scale: Optional[torch.Tensor],
                activation: str, act_input: Optional[torch.Tensor], dbias: bool, noop: Optional[torch.Tensor],
                backend: str) -> List[torch.Tensor]:
    """[data, scales, col_data, col_scales, global_scale, amax, dbias]; an absent one is an empty uint8."""
    bufs = _ops.quantize_into(FRAMEWORK, x, recipe, amax, scale, backend, activation, act_input, dbias, noop)
    return _out_list(bufs, x.device)


@quantize_op.register_fake
def _quantize_fake(x, recipe, amax, scale, activation, act_input, dbias, noop, backend):
    bufs = _ops.quantize_into(FRAMEWORK, x, recipe, amax, scale, backend, activation, act_input, dbias, noop,
                              run=False)
    return _out_list(bufs, x.device)


@torch.library.custom_op("mxq::dequantize", mutates_args=())
def dequantize_op(recipe: str, rows: int, cols: int, data: Optional[torch.Tensor], scales: Optional[torch.Tensor],
                  col_data: Optional[torch.Tensor], col_scales: Optional[torch.Tensor],
                  global_scale: Optional[torch.Tensor], amax: Optional[torch.Tensor], dtype: str, columnwise: bool,
                  backend: str) -> torch.Tensor:
    return _ops.dequantize_into(FRAMEWORK, recipe, rows, cols, [data, scales, col_data, col_scales, global_scale, amax],
                                dtype, columnwise, backend)


@dequantize_op.register_fake
def _dequantize_fake(recipe, rows, cols, data, scales, col_data, col_scales, global_scale, amax, dtype, columnwise,
                     backend):
    return _ops.dequantize_into(FRAMEWORK, recipe, rows, cols, [data, scales, col_data, col_scales, global_scale, amax],
                                dtype, columnwise, backend, run=False)


@torch.library.custom_op("mxq::gemm", mutates_args=())
def gemm_op(a_recipe: str, m: int, k: int, a_data: torch.Tensor, a_scales: Optional[torch.Tensor],
            b_recipe: str, n: int, kb: int, b_data: torch.Tensor, b_scales: Optional[torch.Tensor], alpha: float,
            c: Optional[torch.Tensor], bias: Optional[torch.Tensor], out_dtype: str, backend: str, promote_k: int,
            block_m: int = 0, a_global: Optional[torch.Tensor] = None,
            b_global: Optional[torch.Tensor] = None) -> torch.Tensor:
    return _ops.gemm_into(FRAMEWORK, a_recipe, m, k, a_data, a_scales, b_recipe, n, kb, b_data, b_scales, alpha, c,
                          bias, out_dtype, backend, promote_k, block_m=block_m, a_global=a_global, b_global=b_global)


@gemm_op.register_fake
def _gemm_fake(a_recipe, m, k, a_data, a_scales, b_recipe, n, kb, b_data, b_scales, alpha, c, bias, out_dtype,
               backend, promote_k, block_m=0, a_global=None, b_global=None):
    return _ops.gemm_into(FRAMEWORK, a_recipe, m, k, a_data, a_scales, b_recipe, n, kb, b_data, b_scales, alpha, c,
                          bias, out_dtype, backend, promote_k, run=False, block_m=block_m)


def _same_device(t, dev, op: str, name: str, main: str):
    """t (a tensor argument of a call on `main`'s device `dev`), detached: a torch tensor on that
    device, else a TypeError / ValueError naming it (a meta tensor among real ones would otherwise
    send the call to the fake implementation, which returns uninitialised memory)."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} is a {type(t).__module__}.{type(t).__name__}; expected a torch.Tensor "
                        f"like {main}")
    if FRAMEWORK.device(t, op, name) != tuple(dev):
        raise ValueError(f"{op}: {name}.device={t.device}; expected {main}'s device {_device(dev)}")
    return t.detach()


# Quantization is not differentiable: the ops take their tensors detached, so that their outputs
# never carry a grad_fn (a Parameter's quantize traces under torch.compile; a backward through
# them would have no formula).
@torch.compiler.assume_constant_result
def canonical_recipe(text: str) -> str:
    """The parser's canonical name of a recipe; under torch.compile a constant of the trace (the
    text is one), so q.recipe is the same text compiled or not."""
    return _core.recipe_name(text)


def quantize(x, recipe: str, canonical: str, amax, scale, backend, activation, act_input, dbias, noop, make):
    """The package's quantize for a torch tensor: the custom op, then the QuantizedTensor (both
    trace under torch.compile: nothing here calls into C++)."""
    dev = FRAMEWORK.device(x, "quantize", "x")
    amax = FRAMEWORK.scalar(amax, dev, "quantize", "amax")
    scale = FRAMEWORK.scalar(scale, dev, "quantize", "scale")
    noop = FRAMEWORK.scalar(noop, dev, "quantize", "noop")
    act_input = _same_device(act_input, dev, "quantize", "act_input", "x")
    outs = torch.ops.mxq.quantize(x.detach(), recipe, amax, scale, activation, act_input, dbias, noop, backend)
    bufs = [None if t.dtype == _ABSENT_DTYPE else t for t in outs]
    return make(canonical, x.shape, activation, bufs)


def _buffers(q, op: str, prefix: str):
    first = next(t for t in (q.data, q.scales, q.col_data, q.col_scales, q.global_scale, q.amax) if t is not None)
    dev = FRAMEWORK.device(first, op, prefix + "data")
    return dev, [_same_device(getattr(q, n), dev, op, prefix + n, prefix + "data")
                 for n in ("data", "scales", "col_data", "col_scales", "global_scale", "amax")]


def dequantize(q, dtype: str, columnwise: bool, backend: str):
    _, bufs = _buffers(q, "dequantize", "q.")
    return torch.ops.mxq.dequantize(q.recipe, q.rows, q.cols, *bufs, dtype, columnwise, backend)


def gemm(a, b, alpha, c, bias, out_dtype, backend, promote_k, block_m=0):
    dev, abufs = _buffers(a, "gemm", "a.")
    bdev, bbufs = _buffers(b, "gemm", "b.")
    if bdev != dev:
        raise ValueError(f"gemm: b is on {_device(bdev)}, a on {_device(dev)}; expected one device")
    c = _same_device(c, dev, "gemm", "c", "a")
    bias = _same_device(bias, dev, "gemm", "bias", "a")
    return torch.ops.mxq.gemm(a.recipe, a.rows, a.cols, abufs[0], abufs[1], b.recipe, b.rows, b.cols, bbufs[0],
                              bbufs[1], float(alpha), c, bias, out_dtype, backend, int(promote_k), int(block_m),
                              abufs[4], bbufs[4])

