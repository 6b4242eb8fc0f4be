"""Fused epilogues from Python (CPU backend): a fused quantize equals the plain quantize of the
activated values (checked where NumPy computes them exactly: relu, srelu, reglu), gated ones
halve the last dimension, dbias comes back in q.dbias, and noop writes nothing."""
import numpy as np
import pytest

import mxq

RNG = np.random.default_rng(3)
X = RNG.standard_normal((16, 128), dtype=np.float32)


def same(a: mxq.QuantizedTensor, b: mxq.QuantizedTensor):
    for f in ("data", "scales", "col_data", "col_scales", "global_scale", "amax"):
        u, v = getattr(a, f), getattr(b, f)
        assert (u is None) == (v is None), f
        if u is not None:
            assert u.tobytes() == v.tobytes(), f


@pytest.mark.parametrize("recipe", ["mxfp8:dir=both", "nvfp4", "fp8_block_1x128"])
def test_relu_and_srelu_equal_quantizing_their_output(recipe):
    r = np.maximum(X, np.float32(0))
    same(mxq.quantize(X, recipe, activation="relu"), mxq.quantize(r, recipe))
    same(mxq.quantize(X, recipe, activation="srelu"), mxq.quantize(r * r, recipe))
    assert mxq.last_dispatch()["kernel"] == "reference"  # the last call was the plain one


def test_reglu_halves_the_width_and_returns_dbias():
    q = mxq.quantize(X, "mxfp8", activation="reglu", dbias=True)
    a, b = X[:, :64], X[:, 64:]
    y = np.maximum(a, np.float32(0)) * b
    assert q.shape == (16, 64)
    same(q, mxq.quantize(y, "mxfp8"))
    np.testing.assert_array_equal(q.dbias, y.astype(np.float64).sum(axis=0).astype(np.float32))


def test_backward_and_every_activation_run():
    for act in ("gelu", "gelu_tanh", "silu", "qgelu"):
        q = mxq.quantize(X, "mxfp8", activation=act, act_input=X * 0.5, dbias=True)
        assert q.dbias.shape == (128,) and np.isfinite(q.dbias).all()
        assert mxq.last_dispatch()["kernel"] == "reference fused"


def test_noop_writes_nothing():
    for recipe in ("mxfp8:dir=both", "nvfp4", "fp8_block_1x128:layout=mn_major_tma"):
        q = mxq.quantize(X, recipe, activation="silu", dbias=True, noop=1.0)
        assert not q.dbias.any()  # still the zeros it was allocated with
        # so are the other outputs: with noop they are allocated zeroed, never left uninitialised
        for name in ("data", "scales", "col_data", "col_scales", "global_scale", "amax"):
            a = getattr(q, name)
            if a is not None:
                storage = a.base if a.base is not None else a
                assert not np.asarray(storage).view(np.uint8).any(), (recipe, name)
    q = mxq.quantize(X, "mxfp8", activation="silu", dbias=True, noop=0.0)  # zero: the call runs
    assert q.dbias.any() and q.data.view(np.uint8).any()


def test_bad_activation_and_gated_odd_width():
    with pytest.raises(ValueError, match="unknown activation 'gelu_erf'"):
        mxq.quantize(X, "mxfp8", activation="gelu_erf")
    with pytest.raises(ValueError, match="must be even"):
        mxq.quantize(X[:, :33], "mxfp8", activation="swiglu")
