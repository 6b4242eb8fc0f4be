"""Runtime switches from Python: the default backend really switches, strict mode is scoped by
`with`, last_dispatch says what ran, and the JIT warm-up compiles without a GPU."""
import numpy as np
import pytest

import mxq

X = np.ones((4, 64), np.float32)


def test_set_backend_switches_and_per_call_wins():
    assert mxq.get_backend() == "auto"
    mxq.quantize(X, "mxfp8")
    assert mxq.last_dispatch() == {"op": "quantize", "backend": "cpu", "kernel": "reference", "fallback": ""}
    mxq.set_backend("cuda-aot")
    try:
        assert mxq.get_backend() == "cuda-aot"
        with pytest.raises(mxq.UnsupportedError, match="backend cuda-aot needs tensors on a CUDA device"):
            mxq.quantize(X, "mxfp8")
        mxq.quantize(X, "mxfp8", backend="cpu")  # the per-call option wins over the default
        assert mxq.last_dispatch()["backend"] == "cpu"
    finally:
        mxq.set_backend("auto")
    mxq.quantize(X, "mxfp8")


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(ValueError, match="auto, cpu, cuda-aot, cuda-jit"):
        mxq.set_backend("gpu")


def test_strict_is_scoped():
    with mxq.strict():
        assert mxq._core.strict()
        mxq.quantize(X, "mxfp8")  # the CPU reference takes no fallback
    assert not mxq._core.strict()
    mxq.strict()
    assert mxq._core.strict()
    mxq.strict(False)
    assert not mxq._core.strict()


def test_jit_warmup_compiles_or_says_why():
    if any(b["name"] == "cuda-jit" and b["detail"].startswith("not built") for b in mxq.info()["backends"]):
        with pytest.raises(mxq.UnsupportedError, match="the JIT is unavailable"):
            mxq.jit_warmup(["mxfp8"])
    else:
        assert mxq.jit_warmup(["mxfp8"], arch=90, threads=1) == 3  # fp32, fp16 and bf16 inputs
