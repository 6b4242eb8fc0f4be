"""PyTorch in, PyTorch out. CPU-tensor tests run wherever torch is installed (the CPU backend);
tests marked `gpu` need a CUDA device and report SKIPPED elsewhere. Every comparison is byte
for byte against the C++ API through NumPy (the CPU reference backend)."""
import dataclasses
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import mxq  # noqa: E402
from mxq import _core  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
CUDA = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device of sm_90 or newer")

RECIPES = ["fp8_tensor", "fp8_tensor_e5m2:dir=both", "fp8_block_1x128", "fp8_block_1x128:pow2=1,layout=mn_major_tma",
           "fp8_block_1x128:pow2=1,layout=packed_ue8m0", "fp8_block_128x128", "mxfp8", "mxfp8:dir=both",
           "mxfp8:dir=both,colform=same", "mxfp8:layout=swizzled_128x4", "mxfp4:dir=both", "nvfp4", "nvfp4_2d",
           "fp4_block_1x32"]
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
BUFFERS = ("data", "scales", "col_data", "col_scales", "global_scale", "amax")


def sample(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 3
    x.view(-1)[:: 97] *= 40  # outliers
    return x.to(dtype)


def to_numpy(x: torch.Tensor) -> np.ndarray:
    if x.dtype == torch.bfloat16:
        import ml_dtypes
        return x.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.cpu().numpy()


def raw(a) -> bytes:
    """The bytes of a buffer's storage in its layout (views included), for either library."""
    if isinstance(a, torch.Tensor):
        st = a.untyped_storage()
        return bytes(torch.empty(0, dtype=torch.uint8).set_(st.cpu() if a.is_cuda else st).numpy())
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base.tobytes()


def assert_same_bytes(qt, qn, what=""):
    assert qt.recipe == qn.recipe
    for b in BUFFERS:
        t, n = getattr(qt, b), getattr(qn, b)
        assert (t is None) == (n is None), (what, b)
        if t is not None:
            assert tuple(t.shape) == tuple(n.shape), (what, b, t.shape, n.shape)
            assert raw(t) == raw(n), f"{what}: {b} differs"


# ---- CPU torch tensors -------------------------------------------------------------------------

@pytest.mark.parametrize("recipe", RECIPES)
def test_cpu_torch_equals_numpy(recipe):
    x = sample((64, 256))
    qt = mxq.quantize(x, recipe)
    qn = mxq.quantize(to_numpy(x), recipe)
    assert_same_bytes(qt, qn, recipe)
    if qt.col_data is None or "colform=same" not in recipe:
        yt = mxq.dequantize(qt)
        assert yt.dtype == torch.float32 and yt.shape == x.shape
        assert np.array_equal(to_numpy(yt), mxq.dequantize(qn))


def test_dtypes_and_shapes():
    x = sample((4, 3, 128), torch.bfloat16)
    q = mxq.quantize(x, "mxfp8")
    assert q.data.dtype == torch.float8_e4m3fn and q.data.shape == (4, 3, 128)
    assert q.scales.dtype == torch.float8_e8m0fnu and q.scales.shape == (12, 4)
    q4 = mxq.quantize(x, "nvfp4")
    assert q4.data.dtype == torch.float4_e2m1fn_x2 and q4.data.shape == (4, 3, 64)
    assert q4.scales.dtype == torch.float8_e4m3fn and q4.global_scale.dtype == torch.float32
    assert q4.global_scale.shape == (1,) and q4.amax.shape == (1,)
    qe = mxq.quantize(x, "mxfp8_e5m2")
    assert qe.data.dtype == torch.float8_e5m2
    qp = mxq.quantize(x, "fp8_block_1x128:pow2=1,layout=packed_ue8m0")
    assert qp.scales.dtype == torch.int32


def test_mn_major_scales_have_deepgemm_strides():
    m, k = 130, 512
    q = mxq.quantize(sample((m, k)), "fp8_block_1x128:layout=mn_major_tma")
    assert q.scales.shape == (m, k // 128) and q.scales.stride() == (1, 132)
    qn = mxq.quantize(to_numpy(sample((m, k))), "fp8_block_1x128:layout=mn_major_tma")
    assert qn.scales.shape == (m, k // 128) and qn.scales.strides == (4, 132 * 4)
    assert np.array_equal(q.scales.numpy(), qn.scales)  # the same logical values
    # a buffer in the view's strides goes back in unchanged
    assert torch.equal(mxq.dequantize(q), torch.from_numpy(mxq.dequantize(qn)))


def test_errors_are_clear():
    with pytest.raises(TypeError, match=r"x.dtype=torch.float64 is not supported"):
        mxq.quantize(torch.ones(4, 32, dtype=torch.float64), "mxfp8")
    with pytest.raises(ValueError, match=r"input.shape\[-1\]=33 \(the columns\) must be even"):
        mxq.quantize(torch.ones(4, 33), "nvfp4")
    q = mxq.quantize(torch.ones(4, 64), "mxfp8")
    q.scales = q.scales.t()
    with pytest.raises(ValueError, match=r"q.scales is float8_e8m0fnu of shape \(2, 4\) and strides \(1, 2\); "
                                         r"expected float8_e8m0fnu or uint8 of shape \(4, 2\) and strides \(2, 1\)"):
        mxq.dequantize(q)


# Every tensor argument is checked against the call's device and library: a meta tensor among CPU
# ones would send the call to the fake implementation (uninitialised outputs).
def test_arguments_on_another_device_or_library_are_refused():
    x = sample((16, 256))
    qa, qb = mxq.quantize(x, "fp8_block_1x128"), mxq.quantize(sample((8, 256), seed=1), "fp8_block_128x128")
    meta = {"device": "meta"}
    for call, says in [
        (lambda: mxq.gemm(qa, qb, bias=torch.zeros(8, **meta)), "gemm: bias.device=meta"),
        (lambda: mxq.gemm(qa, qb, c=torch.zeros(16, 8, **meta)), "gemm: c.device=meta"),
        (lambda: mxq.quantize(x, "mxfp8", activation="gelu", act_input=torch.zeros(16, 256, **meta)),
         "quantize: act_input.device=meta"),
        (lambda: mxq.dequantize(mxq.QuantizedTensor(qa.recipe, qa.shape, data=qa.data,
                                                    scales=torch.empty_like(qa.scales, **meta))),
         "dequantize: q.scales.device=meta"),
    ]:
        with pytest.raises(ValueError, match=says):
            call()
    with pytest.raises(TypeError, match="gemm: bias is a numpy.ndarray; expected a torch.Tensor like a"):
        mxq.gemm(qa, qb, bias=np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="quantize: act_input is a numpy.ndarray"):
        mxq.quantize(x, "mxfp8", activation="gelu", act_input=np.zeros((16, 256), np.float32))
    with pytest.raises(ValueError, match="gemm: a.recipe=fp8_block_1x128:dir=col has no rowwise data"):
        mxq.gemm(mxq.quantize(x, "fp8_block_1x128:dir=col"), qb)
    with pytest.raises(TypeError, match="gemm: alpha='2'; expected a real number"):
        mxq.gemm(qa, qb, alpha="2")
    with pytest.raises(TypeError, match="quantize: amax='2.5'; expected a number"):
        mxq.quantize(x, "nvfp4", amax="2.5")
    with pytest.raises(TypeError, match="dequantize: columnwise='no'; expected a bool"):
        mxq.dequantize(qa, columnwise="no")
    assert mxq.gemm(qa, qb, out_dtype=torch.bfloat16).dtype == torch.bfloat16  # torch's dtype objects too


# Quantization is not differentiable: outputs never carry a grad_fn, and a Parameter's quantize
# traces under torch.compile.
def test_outputs_are_not_differentiable():
    w = torch.nn.Linear(256, 128).weight
    q = mxq.quantize(w, "fp8_block_128x128")
    assert not q.data.requires_grad and not q.scales.requires_grad and q.data.grad_fn is None
    x = sample((16, 256)).requires_grad_()
    d = mxq.gemm(mxq.quantize(x, "fp8_block_1x128"), q, c=torch.zeros(16, 128, requires_grad=True))
    assert not d.requires_grad
    f = torch.compile(lambda w: mxq.quantize(w, "fp8_block_128x128").data, fullgraph=True)
    assert torch.equal(f(w).view(torch.uint8), q.data.view(torch.uint8))


def test_strided_rows_and_empty():
    big = sample((16, 384))
    x = big[::2, 64:320]  # row stride 768, last dimension contiguous
    assert_same_bytes(mxq.quantize(x, "mxfp8"), mxq.quantize(to_numpy(x.contiguous()), "mxfp8"), "strided")
    q = mxq.quantize(torch.empty(0, 64), "mxfp8")
    assert q.data.shape == (0, 64) and mxq.dequantize(q).shape == (0, 64)


def test_fused_on_cpu_tensors():
    x, g = sample((32, 256), seed=1), sample((32, 128), seed=2)
    qt = mxq.quantize(x, "mxfp8", activation="swiglu", dbias=True)
    qn = mxq.quantize(to_numpy(x), "mxfp8", activation="swiglu", dbias=True)
    assert_same_bytes(qt, qn, "swiglu")
    assert np.array_equal(qt.dbias.numpy(), qn.dbias)
    qt = mxq.quantize(g, "mxfp8", activation="gelu", act_input=sample((32, 128), seed=3))
    qn = mxq.quantize(to_numpy(g), "mxfp8", activation="gelu", act_input=to_numpy(sample((32, 128), seed=3)))
    assert_same_bytes(qt, qn, "dgelu")


# opcheck's test_schema runs arithmetic on the outputs, which torch does not implement for FP8
# on the CPU; the fake-tensor and AOT-dispatch checks (static and dynamic shapes) are the ones
# torch.compile relies on.
OPCHECKS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_static", "test_aot_dispatch_dynamic")


def test_custom_ops_pass_opcheck():
    x = sample((8, 128))
    q = mxq.quantize(x, "mxfp8")  # the package loads its torch part, the ops' registration, at first use
    for recipe in ("mxfp8:dir=both", "nvfp4", "fp8_block_1x128:layout=mn_major_tma", "fp8_tensor"):
        torch.library.opcheck(torch.ops.mxq.quantize.default, (x, recipe, None, None, "none", None, False, None, "auto"),
                              test_utils=OPCHECKS)
    torch.library.opcheck(torch.ops.mxq.dequantize.default,
                          (q.recipe, 8, 128, q.data, q.scales, None, None, None, None, "float32", False, "auto"),
                          test_utils=OPCHECKS)
    # the gemm op, each family (the global scales of NVFP4 and per-tensor FP8 among its arguments)
    w = sample((128, 128), seed=3)
    for ra, rb in (("fp8_block_1x128:layout=mn_major_tma", "fp8_block_128x128"), ("nvfp4", "nvfp4_2d"),
                   ("fp8_tensor", "fp8_tensor"), ("mxfp8", "mxfp4")):
        qa, qb = mxq.quantize(x, ra), mxq.quantize(w, rb)
        torch.library.opcheck(torch.ops.mxq.gemm.default,
                              (qa.recipe, 8, 128, qa.data, qa.scales, qb.recipe, 128, 128, qb.data, qb.scales, 1.0,
                               None, None, "float32", "auto", 0, 0, qa.global_scale, qb.global_scale),
                              test_utils=OPCHECKS)


def test_torch_compile_fullgraph_cpu():
    x = sample((32, 256))

    recipes = []

    def f(t):
        q = mxq.quantize(t, "mxfp8:dir=both,elem=float8_e4m3fn")
        recipes.append(q.recipe)  # canonical in the trace too (a constant of it)
        return q.data, q.scales, q.col_data, q.col_scales, mxq.dequantize(q)

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    want = f(x)
    assert recipes == ["mxfp8:dir=both"] * 2, recipes
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape and raw(a) == raw(b)


@pytest.mark.parametrize("kwargs", [{"amax": 3.0}, {"scale": 0.5}, {"amax": 7}, {"noop": True}, {"noop": 0.0}])
def test_torch_compile_fullgraph_host_scalars(kwargs):
    """Host numbers (amax, scale, noop) go through the package's checks under torch.compile's
    fullgraph mode too: those checks must trace (numpy's errstate, np.asarray of a float or
    type(v).__module__ do not), and give the eager call's bytes."""
    x = sample((8, 256))
    recipe = "nvfp4" if "scale" not in kwargs else "fp8_tensor"
    got = torch.compile(lambda t: mxq.quantize(t, recipe, **kwargs), fullgraph=True, backend="aot_eager")(x)
    assert_same_bytes(got, mxq.quantize(x, recipe, **kwargs), str(kwargs))


def test_gemm_on_cpu_tensors():
    g = torch.Generator().manual_seed(5)
    a = torch.randint(-4, 5, (8, 256), generator=g).float()
    b = torch.randint(-4, 5, (128, 256), generator=g).float()
    qa = mxq.quantize(a, "fp8_block_1x128:pow2=1")
    qb = mxq.quantize(b, "fp8_block_128x128:pow2=1")
    d = mxq.gemm(qa, qb)
    assert d.dtype == torch.float32 and torch.equal(d, a @ b.T)


@pytest.mark.parametrize("a_recipe,b_recipe", [("nvfp4", "nvfp4_2d"), ("mxfp8", "mxfp4"), ("fp8_tensor", "fp8_tensor")])
def test_gemm_families_on_cpu_tensors(a_recipe, b_recipe):
    """Every GEMM family through the torch op, eager and under torch.compile, equal to NumPy's
    call on the same values: the global scales (NVFP4, per-tensor FP8) reach the op too."""
    a, b = sample((8, 256), seed=1), sample((24, 256), seed=2)
    qa, qb = mxq.quantize(a, a_recipe), mxq.quantize(b, b_recipe)
    d = mxq.gemm(qa, qb)
    want = mxq.gemm(mxq.quantize(a.numpy(), a_recipe), mxq.quantize(b.numpy(), b_recipe))
    assert d.dtype == torch.float32 and raw(d) == want.tobytes()
    compiled = torch.compile(lambda x, y: mxq.gemm(x, y), fullgraph=True, backend="aot_eager")(qa, qb)
    assert raw(compiled) == want.tobytes()


def test_dlpack_import_describes_the_tensor():
    x = sample((6, 64), torch.bfloat16)[:, :32]
    address, name, shape, strides, device, _keep = _core.dlpack_describe(x)
    assert (address, name, shape, strides, device) == (x.data_ptr(), "bfloat16", [6, 32], [64, 1], (0, 0))


# ---- CUDA tensors ---------------------------------------------------------------------------------

@gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("recipe", RECIPES)
def test_cuda_equals_cpu_reference(recipe, dtype):
    for shape in ((1, 7168), (127, 256), (256, 1024)):
        x = sample(shape, TORCH_DTYPES[dtype], seed=shape[0])
        if "fp4" in recipe and "both" in recipe and shape[0] % 2:
            continue
        qg = mxq.quantize(x.cuda(), recipe)
        assert qg.data is None or qg.data.is_cuda
        assert mxq.last_dispatch()["backend"].startswith("cuda")
        qc = mxq.quantize(x, recipe, backend="cpu")
        assert_same_bytes(qg, qc, f"{recipe} {dtype} {shape}")
        if "colform=same" not in recipe and qg.data is not None:
            assert torch.equal(mxq.dequantize(qg).cpu(), mxq.dequantize(qc))


@gpu
@needs_cuda
@pytest.mark.parametrize("recipe, activation, dact", [("mxfp8:dir=both", "swiglu", False),
                                                      ("fp8_block_1x128:layout=mn_major_tma", "gelu", True),
                                                      ("nvfp4", "silu", False)])
def test_cuda_fused_equals_cpu(recipe, activation, dact):
    x = sample((256, 2048), torch.bfloat16, 4)
    a = sample((256, 2048), torch.bfloat16, 5) if dact else None
    amax = 30.0 if recipe.startswith("nvfp4") else None
    qg = mxq.quantize(x.cuda(), recipe, activation=activation, act_input=None if a is None else a.cuda(),
                      dbias=True, amax=amax)
    assert mxq.last_dispatch()["backend"] == "cuda-jit"
    qc = mxq.quantize(x, recipe, activation=activation, act_input=a, dbias=True, amax=amax, backend="cpu")
    assert_same_bytes(qg, qc, f"fused {recipe} {activation}")
    # dbias: fp32 atomics on the GPU, fp64 sums on the CPU; rows * 2^-24 * sum|y| bounds any
    # order. |y| <= |a| |b| (swiglu), 1.13 |grad| (dgelu: |gelu'| < 1.13), |x| (silu).
    xf = x.float()
    bound = {"swiglu": xf[:, :1024].abs() * xf[:, 1024:].abs(), "gelu": 1.13 * xf.abs(), "silu": xf.abs()}[activation]
    tol = 256 * 2.0 ** -24 * bound.sum(0) + 1e-6
    assert torch.all((qg.dbias.cpu() - qc.dbias).abs() <= tol)


@gpu
@needs_cuda
def test_cuda_runs_on_the_current_stream():
    x = sample((512, 1024), torch.bfloat16).cuda()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy: a kernel on another stream would run first
        q = mxq.quantize(x, "fp8_tensor")
        y = mxq.dequantize(q, dtype=torch.bfloat16)
    s.synchronize()
    assert_same_bytes(q, mxq.quantize(x.cpu(), "fp8_tensor", backend="cpu"), "stream")
    assert y.dtype == torch.bfloat16 and y.is_cuda


@gpu
@needs_cuda
def test_cuda_torch_compile_inductor():
    x = sample((256, 2048), torch.bfloat16).cuda()

    def f(t):
        q = mxq.quantize(t * 2, "mxfp8:dir=both")
        return q.data, q.scales, q.col_data, q.col_scales

    got = torch.compile(f, fullgraph=True)(x)
    want = f(x)
    for a, b in zip(got, want):
        assert raw(a) == raw(b)


@gpu
@needs_cuda
@pytest.mark.parametrize("recipe", ["fp8_tensor", "mxfp8:dir=both", "nvfp4", "fp8_block_1x128"])
def test_cuda_graph_capture_and_replay(recipe):
    x = sample((256, 1024), torch.bfloat16).cuda()
    mxq.quantize(x, recipe)  # warm-up outside the capture (JIT, allocator)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        q = mxq.quantize(x, recipe)
    x.copy_(sample((256, 1024), torch.bfloat16, seed=9).cuda())
    g.replay()
    torch.cuda.synchronize()
    assert_same_bytes(q, mxq.quantize(x.cpu(), recipe, backend="cpu"), f"graph {recipe}")


@gpu
@needs_cuda
@pytest.mark.parametrize("b_recipe", ["fp8_block_128x128", "fp8_block_1x128:layout=mn_major_tma"])
def test_block_fp8_feeds_torch_scaled_mm(b_recipe):
    """quantize -> torch._scaled_mm (cuBLASLt 1x128 / 128x128 block scaling) with no reshuffle:
    A's mn_major_tma scales are DeepGEMM's (M, K/128) with strides (1, M); B's 128x128 scales
    transpose to (K/128, N/128); B's 1x128 mn_major_tma scales transpose to (K/128, N)."""
    m, n, k = 256, 512, 1024
    a, b = sample((m, k), torch.bfloat16, 1).cuda(), sample((n, k), torch.bfloat16, 2).cuda()
    qa = mxq.quantize(a, "fp8_block_1x128:layout=mn_major_tma")
    qb = mxq.quantize(b, b_recipe)
    d = torch._scaled_mm(qa.data, qb.data.t(), scale_a=qa.scales, scale_b=qb.scales.t(), out_dtype=torch.bfloat16)
    cpu = lambda q: mxq.QuantizedTensor(q.recipe, q.shape, *(None if getattr(q, f) is None else getattr(q, f).cpu()
                                                            for f in BUFFERS))
    ref = mxq.gemm(cpu(qa), cpu(qb), out_dtype="float32")  # fp64 reference on the same quantized operands
    err = ((d.float().cpu() - ref).norm() / ref.norm()).item()
    assert err <= 4e-3, err


@gpu
@needs_cuda
def test_readme_torch_example_runs():
    r = subprocess.run([sys.executable, str(HERE / "readme_torch_example.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "torch.float8_e4m3fn" in r.stdout


def test_readme_torch_example_is_the_readme_s():
    readme = (HERE.parents[1] / "README.md").read_text()
    assert (HERE / "readme_torch_example.py").read_text() in readme


def test_cupy_through_dlpack():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(to_numpy(sample((64, 256))))
    q = mxq.quantize(x, "mxfp8")
    qn = mxq.quantize(to_numpy(sample((64, 256))), "mxfp8")
    assert cp.asnumpy(q.data).tobytes() == qn.data.tobytes()
    assert cp.asnumpy(q.scales).tobytes() == qn.scales.tobytes()


def exact_gemm_operands(m, n, k, seed):
    """Values in [-2, 2] with a 2 in every 128-block: exact codes and partial sums
    (test_gemm_gpu.cpp); A 1x128 (mn_major_tma) and B 128x128 with pow2 scales, on the GPU."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-2, 3, (m, k), generator=g).float()
    b = torch.randint(-2, 3, (n, k), generator=g).float()
    a[:, ::128] = 2
    b[:, ::128] = 2
    return (a, b, mxq.quantize(a.cuda(), "fp8_block_1x128:pow2=1,layout=mn_major_tma"),
            mxq.quantize(b.cuda(), "fp8_block_128x128:pow2=1"))


@gpu
@needs_cuda
@pytest.mark.parametrize("promote_k,block_m", [(32, 0), (128, 0), (32, 256)])
def test_gemm_wgmma_kernel_on_cuda_tensors_exact(promote_k, block_m):
    # M > 32: our TMA + wgmma kernel (128-row tiles: the plan's choice here); every promotion
    # interval is exact on these values
    a, b, qa, qb = exact_gemm_operands(200, 136, 1152, seed=12)
    d = mxq.gemm(qa, qb, promote_k=promote_k, block_m=block_m)
    ran = mxq.last_dispatch()
    tile = f"wgmma {block_m or 128}x128"
    assert ran["backend"] == "cuda-aot" and f"{tile} TMA warp-specialized, promote-k {promote_k}" in ran["kernel"]
    assert torch.equal(d.cpu(), a @ b.T), ran


@gpu
@needs_cuda
@pytest.mark.parametrize("backend", ["auto", "cublaslt", "cuda-aot"])
def test_gemm_on_cuda_tensors_exact(backend):
    a, b, qa, qb = exact_gemm_operands(64, 256, 1024, seed=11)
    d = mxq.gemm(qa, qb, backend=backend)
    ran = mxq.last_dispatch()
    assert d.is_cuda and d.dtype == torch.float32 and ran["backend"] == ("cublaslt" if backend == "auto" else backend)
    assert torch.equal(d.cpu(), a @ b.T), ran
    compiled = torch.compile(lambda x, y: mxq.gemm(x, y, out_dtype="bfloat16"), fullgraph=True)
    db = compiled(qa, qb)
    assert db.dtype == torch.bfloat16 and torch.equal(db.float().cpu(), (a @ b.T).bfloat16().float())


# amax, scale and noop are taken detached too: an amax computed from a Parameter gives outputs
# without a grad_fn, eager and under torch.compile(fullgraph=True).
def test_scalar_tensors_are_detached():
    w = torch.nn.Parameter(sample((64, 256)))
    for q in (mxq.quantize(w, "nvfp4", amax=w.abs().amax().reshape(1)),
              mxq.quantize(w, "fp8_tensor", scale=torch.tensor([3.0], requires_grad=True)),
              mxq.quantize(w, "mxfp8", noop=torch.tensor([0.0], requires_grad=True))):
        for b in BUFFERS:
            t = getattr(q, b)
            assert t is None or (t.grad_fn is None and not t.requires_grad), (q.recipe, b)
    f = torch.compile(lambda w: mxq.quantize(w, "nvfp4", amax=w.abs().amax().reshape(1)).data, fullgraph=True)
    got = f(w)
    assert got.grad_fn is None and torch.equal(got.view(torch.uint8), mxq.quantize(w.detach(), "nvfp4").data.view(
        torch.uint8))


def test_torch_buffers_must_be_the_plans_view():
    x = sample((30, 1024))
    R = dataclasses.replace
    mn = mxq.quantize(x, "fp8_block_1x128:layout=mn_major_tma")
    packed = mxq.quantize(x, "fp8_block_1x128:pow2=1,layout=packed_ue8m0")
    fp4 = mxq.quantize(x, "mxfp4")
    b = fp4.data.view(torch.uint8)
    unpacked = torch.stack([b & 0xF, b >> 4], -1).reshape(30, 1024)
    qb = mxq.quantize(sample((64, 1024), seed=1), "fp8_block_128x128")
    for call, error, match in [
        (lambda: mxq.dequantize(R(mn, scales=mn.scales.contiguous())), ValueError,
         r"dequantize: q.scales is float32 of shape \(30, 8\) and strides \(8, 1\); expected float32 of shape "
         r"\(30, 8\) and strides \(1, 32\)"),
        (lambda: mxq.dequantize(R(mn, scales=mn.scales.clone())), ValueError,
         r"q.scales is float32 of shape \(30, 8\) and strides \(1, 30\)"),
        (lambda: mxq.gemm(R(mn, scales=mn.scales.contiguous()), qb), ValueError, r"gemm: a.scales is float32"),
        (lambda: mxq.dequantize(R(packed, scales=packed.scales.contiguous())), ValueError,
         r"q.scales is int32 of shape \(30, 2\) and strides \(2, 1\)"),
        (lambda: mxq.dequantize(R(fp4, data=unpacked)), ValueError, r"q.data is uint8 of shape \(30, 1024\)"),
        (lambda: mxq.dequantize(R(fp4, data=unpacked.view(torch.float4_e2m1fn_x2))), ValueError,
         r"q.data is torch.float4_e2m1fn_x2 of shape \(30, 1024\)"),
        (lambda: mxq.dequantize(R(fp4, scales=fp4.scales.t().contiguous())), ValueError,
         r"q.scales is float8_e8m0fnu of shape \(32, 30\)"),
        (lambda: mxq.gemm(R(mn, data=mn.data.view(torch.int8)), qb), TypeError, r"gemm: a.data is torch.int8"),
    ]:
        with pytest.raises(error, match=match):
            call()
    # Round trips that keep the view are taken: uint8 storage of a one-byte type, and NumPy's
    # buffers (the same strides) brought over with torch.from_numpy (M a multiple of 4: torch's
    # storage of a view ends at its last element, before an MN-major layout's padding).
    assert torch.equal(mxq.dequantize(R(mn, data=mn.data.view(torch.uint8))), mxq.dequantize(mn))
    qn = mxq.quantize(to_numpy(x[:28]), "fp8_block_1x128:layout=mn_major_tma")
    back = R(qn, data=torch.from_numpy(qn.data.view(np.uint8)), scales=torch.from_numpy(qn.scales))
    assert torch.equal(mxq.dequantize(back), mxq.dequantize(mxq.quantize(x[:28], mn.recipe)))


def test_gemm_c_and_bias_strides_are_named():
    qa, qb = mxq.quantize(sample((64, 256)), "fp8_block_1x128"), mxq.quantize(sample((64, 256), seed=1),
                                                                             "fp8_block_128x128")
    for kwargs, match in [
        ({"c": torch.zeros(64, 64).t()}, r"gemm: c has strides \(1, 64\); expected a contiguous \(64, 64\) array, "
                                         r"strides \(64, 1\) \(pass c.contiguous\(\)\)"),
        ({"c": torch.zeros(64).expand(64, 64)}, r"gemm: c has strides \(0, 1\)"),
        ({"bias": torch.zeros(128)[::2]}, r"gemm: bias has strides \(2,\)"),
        ({"bias": torch.zeros(1).expand(64)}, r"gemm: bias has strides \(0,\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            mxq.gemm(qa, qb, **kwargs)
    with pytest.raises(ValueError, match=r"gemm: bias must be contiguous float32 of shape \(64,\), got "
                                         r"torch.float64 \(64,\) with strides \(1,\)"):
        mxq.gemm(qa, qb, bias=torch.zeros(64, dtype=torch.float64))


def test_torch_plain_arguments():
    x = sample((8, 64))
    with pytest.raises(TypeError, match=r"quantize: amax=1j; expected a number"):
        mxq.quantize(x, "fp8_tensor", amax=1j)
    with pytest.raises(TypeError, match=r"quantize: scale=np.complex64"):
        mxq.quantize(x, "fp8_tensor", scale=np.complex64(2))
    with pytest.raises(TypeError, match="quantize: dbias=1; expected a bool"):
        mxq.quantize(x, "mxfp8", dbias=1)
    with pytest.raises(ValueError, match=r"quantize: x.strides\[1\]=2 must be 1"):
        mxq.quantize(torch.ones(4, 128)[:, ::2], "mxfp8")


# With noop the outputs are allocated zeroed, FP4's float4_e2m1fn_x2 data too (zeroed as bytes:
# torch has had no fill kernel for that type), and the call writes nothing into them.
def test_noop_zeroes_every_output_dtype():
    x = sample((32, 256))
    for recipe in ("nvfp4", "mxfp4:dir=both", "mxfp8", "fp8_block_1x128"):
        q = mxq.quantize(x, recipe, noop=1.0)
        for b in BUFFERS:
            t = getattr(q, b)
            assert t is None or not t.view(torch.uint8).any(), (recipe, b)
