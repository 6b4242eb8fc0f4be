"""mxq.gemm on the CPU backend: the exact integer case, alpha / c / bias, bf16 output, errors."""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

import mxq

RNG = np.random.default_rng(5)


def ints(shape):
    return RNG.integers(-8, 9, size=shape).astype(np.float32)  # <= 3 significant bits: exact in E4M3


@pytest.mark.parametrize("b_recipe", ["fp8_block_128x128:pow2=1", "fp8_block_1x128:pow2=1"])
def test_exact_integer_gemm(b_recipe):
    a, b = ints((33, 384)), ints((130, 384))
    d = mxq.gemm(mxq.quantize(a, "fp8_block_1x128:pow2=1"), mxq.quantize(b, b_recipe))
    np.testing.assert_array_equal(d, (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.float32))
    assert mxq.last_dispatch()["op"] == "gemm"


FP4_INTS = np.array([0, 1, -1, 2, -2, 3, -3, 4, -4, 6, -6], np.float32)  # exact in E2M1 under any MX block scale


@pytest.mark.parametrize("a_recipe,b_recipe", [("mxfp8", "mxfp4"), ("mxfp4", "mxfp4:layout=swizzled_128x4"),
                                               ("mxfp8_e5m2", "mxfp8")])
def test_exact_mx_gemm(a_recipe, b_recipe):
    def operand(recipe, rows):
        if recipe.startswith("mxfp4"):  # rows of |x| <= 1, <= 3 and <= 6: block scales 1/4, 1/2 and 1
            x = np.stack([RNG.choice(FP4_INTS[:(3, 7, 11)[r % 3]], size=320) for r in range(rows)])
        else:
            x = ints((rows, 320))
        return x, mxq.quantize(x, recipe)
    a, qa = operand(a_recipe, 17)
    b, qb = operand(b_recipe, 40)
    d = mxq.gemm(qa, qb)
    np.testing.assert_array_equal(d, (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.float32))
    assert mxq.last_dispatch()["backend"] == "cpu"


@pytest.mark.parametrize("recipe", ["nvfp4", "fp8_tensor"])
def test_global_scale_gemm(recipe):
    """NVFP4 and per-tensor FP8 operands carry a global scale; the product is that of the
    dequantized operands (dequantize rounds code * scale * global to float32 once)."""
    a, b = RNG.standard_normal((9, 96)).astype(np.float32), RNG.standard_normal((12, 96)).astype(np.float32) * 300
    qa, qb = mxq.quantize(a, recipe), mxq.quantize(b, recipe)
    ref = mxq.dequantize(qa).astype(np.float64) @ mxq.dequantize(qb).astype(np.float64).T
    d = mxq.gemm(qa, qb)
    assert np.linalg.norm(d - ref) / np.linalg.norm(ref) < 2e-7
    with pytest.raises(ValueError, match="b.global_scale"):
        mxq.gemm(qa, dataclasses.replace(qb, global_scale=None))


def test_alpha_c_bias_and_bf16():
    a, b = ints((8, 128)), ints((16, 128))
    qa, qb = mxq.quantize(a, "fp8_block_1x128:pow2=1"), mxq.quantize(b, "fp8_block_128x128:pow2=1")
    base = mxq.gemm(qa, qb)
    c = np.arange(8 * 16, dtype=np.float32).reshape(8, 16) % 5
    bias = np.arange(16, dtype=np.float32) * 0.25
    np.testing.assert_array_equal(mxq.gemm(qa, qb, alpha=0.5, c=c, bias=bias), 0.5 * base + c + bias)
    d16 = mxq.gemm(qa, qb, out_dtype="bfloat16")
    assert d16.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(d16, base.astype(ml_dtypes.bfloat16))


def test_gemm_errors():
    qa = mxq.quantize(ints((8, 128)), "fp8_block_1x128")
    qb = mxq.quantize(ints((8, 128)), "fp8_block_128x128")
    for bad in (-32, 48, 256):
        with pytest.raises(ValueError, match=f"options.promote_k={bad}; expected 0 \\(by D's dtype\\), 32, 64 or 128"):
            mxq.gemm(qa, qb, promote_k=bad)
    np.testing.assert_array_equal(mxq.gemm(qa, qb, promote_k=128), mxq.gemm(qa, qb))  # the fp64 reference ignores it
    for bad in (64, 192, -1):
        with pytest.raises(ValueError, match=f"options.block_m={bad}; expected 0 \\(the plan's choice\\), 128 or 256"):
            mxq.gemm(qa, qb, block_m=bad)
    np.testing.assert_array_equal(mxq.gemm(qa, qb, block_m=256), mxq.gemm(qa, qb))
    for name, bad in (("block_m", 256.5), ("block_m", "256"), ("block_m", None), ("promote_k", 32.0), ("block_m", True)):
        with pytest.raises(TypeError, match=f"gemm: {name}={bad!r}; expected an int"):
            mxq.gemm(qa, qb, **{name: bad})
    # c and bias: float32 of exactly (M, N) and (N,); nothing converted or reshaped
    for name, bad, msg in (("bias", np.zeros(8, np.float64), "float64 \\(8,\\)"),
                           ("bias", np.zeros((1, 8), np.float32), "float32 \\(1, 8\\)"),
                           ("bias", np.zeros((2, 4), np.float32), "float32 \\(2, 4\\)"),
                           ("c", np.zeros((8, 8), np.float16), "float16 \\(8, 8\\)"),
                           ("c", np.zeros(64, np.float32), "float32 \\(64,\\)")):
        with pytest.raises(ValueError, match=f"gemm: {name} must be contiguous float32 of shape .*, got {msg}"):
            mxq.gemm(qa, qb, **{name: bad})
    with pytest.raises(TypeError, match="gemm: bias is a builtins.list; expected a numpy array"):
        mxq.gemm(qa, qb, bias=[0.0] * 8)
    strided_c = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)[:, ::2]  # read only: copied
    np.testing.assert_array_equal(mxq.gemm(qa, qb, c=strided_c), mxq.gemm(qa, qb, c=strided_c.copy()))
    with pytest.raises(ValueError, match=r"a.recipe=mxfp8 \(MX\) and b.recipe=fp8_block_1x128 .* differ in scaling"):
        mxq.gemm(mxq.quantize(ints((8, 128)), "mxfp8"), qa)
    with pytest.raises(ValueError, match="same K"):
        mxq.gemm(qa, mxq.quantize(ints((8, 256)), "fp8_block_128x128"))


def test_gemm_plan():
    p = mxq.gemm_plan(1, 7168, 7168)
    # M <= 8, mma.sync: 448 groups of 16 weight rows x 8 warps would not fit one wave: 4 warps each
    assert p["path"] == "swap-ab" and p["block_m"] == 8 and p["block_n"] == 32 and p["split_k"] == 1
    assert p["ctas_per_sm"] == 2 and p["waves"] == 1  # 224 CTAs, 2 resident per SM: one wave
    # M > 8, wgmma: 112 tiles of 64 weight rows; clusters of 2 CTAs split K (4 would not fit one wave)
    q = mxq.gemm_plan(16, 7168, 7168)
    assert q["path"] == "swap-ab" and q["block_m"] == 16 and q["block_n"] == 64 and q["split_k"] == 2
    assert mxq.gemm_plan(4096, 7168, 7168)["path"] == "tma-wgmma"
    with pytest.raises(ValueError, match="kind='2d2d'"):
        mxq.gemm_plan(16, 16, 16, kind="2d2d")
    # split-K clusters where 128-row tiles are few: 56 tiles, 2 CTAs each
    r = mxq.gemm_plan(128, 7168, 7168)
    assert r["path"] == "tma-wgmma" and r["split_k"] == 2 and r["cluster"] == 2 and r["tiles"] == 112
    # at promote-k 128 the wgmma kernel takes short K from the decode kernel; by default the
    # interval follows out_dtype: 128 for bfloat16 (the default), 32 for float32
    assert mxq.gemm_plan(64, 24576, 1536, promote_k=32)["path"] == "swap-ab"
    assert mxq.gemm_plan(64, 24576, 1536, promote_k=128)["path"] == "tma-wgmma"
    assert mxq.gemm_plan(64, 24576, 1536)["promote_k"] == 128
    assert mxq.gemm_plan(64, 24576, 1536)["path"] == "tma-wgmma"
    f32 = mxq.gemm_plan(64, 24576, 1536, out_dtype="float32")
    assert f32["path"] == "swap-ab" and f32["promote_k"] == 32
    with pytest.raises(ValueError, match="promote_k=48; expected 0 \\(by D's dtype\\), 32, 64 or 128"):
        mxq.gemm_plan(64, 24576, 1536, promote_k=48)


def test_gemm_operands_must_be_the_plans_view():
    a, b = ints((64, 256)), ints((64, 256))
    qa = mxq.quantize(a, "fp8_block_1x128:layout=mn_major_tma")
    qb = mxq.quantize(b, "fp8_block_128x128")
    want = mxq.gemm(qa, qb)
    R = dataclasses.replace
    for call, error, match in [
        (lambda: mxq.gemm(R(qa, scales=np.ascontiguousarray(qa.scales)), qb), ValueError,
         r"gemm: a.scales is float32 of shape \(64, 2\) and strides \(2, 1\); expected float32 of shape \(64, 2\) "
         r"and strides \(1, 64\)"),
        (lambda: mxq.gemm(R(qa, data=np.ascontiguousarray(qa.data.T)), qb), ValueError,
         r"gemm: a.data.shape=\(256, 64\); expected a.shape's leading dimensions \(64,\)"),
        (lambda: mxq.gemm(qa, R(qb, scales=np.ascontiguousarray(qb.scales.T))), ValueError,
         r"gemm: b.scales is float32 of shape \(2, 1\)"),
        (lambda: mxq.gemm(R(qa, data=qa.data.view(np.int8)), qb), TypeError, r"gemm: a.data is int8"),
        (lambda: mxq.gemm(a, qb), TypeError, r"gemm: a must be an mxq.QuantizedTensor, got ndarray"),
        (lambda: mxq.gemm(qa, b), TypeError, r"gemm: b must be an mxq.QuantizedTensor, got ndarray"),
        (lambda: mxq.gemm(qa, qb, promote_k=2 ** 40), ValueError,
         r"gemm: promote_k=1099511627776 is out of range; expected 0, 32, 64 or 128"),
        (lambda: mxq.gemm(qa, qb, block_m=2 ** 32 + 128), ValueError, r"gemm: block_m=4294967424 is out of range"),
    ]:
        with pytest.raises(error, match=match):
            call()
    np.testing.assert_array_equal(mxq.gemm(R(qa, data=qa.data.view(np.uint8)), qb), want)
