"""The package's surface: info, presets, dtype names, recipe helpers, plan(), the README example,
the extension's stub."""
import ast
import pathlib
import re
import runpy

import ml_dtypes
import numpy as np
import pytest

import mxq

HERE = pathlib.Path(__file__).resolve().parent


def test_info():
    i = mxq.info()
    assert i["version"] == mxq.__version__ and re.fullmatch(r"\d+\.\d+\.\d+", i["version"])
    assert i["build"]
    names = [b["name"] for b in i["backends"]]
    assert names[0] == "cpu" and i["backends"][0]["available"] and "cuda-aot" in names
    for b in i["backends"]:
        assert b["available"] or b["detail"], b  # an unavailable backend says why


def test_recipes_parse_and_round_trip():
    presets = mxq.recipes()
    assert {"mxfp8", "nvfp4", "fp8_block_1x128", "mxfp4", "fp8_tensor"} <= set(presets)
    for p in presets:
        assert mxq.recipe_name(p) == p


def test_dtype_names_are_torch_names():
    names = mxq.dtype_names()
    assert names == ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn",
                     "float8_e8m0fnu", "uint8", "int32"]
    assert mxq.numpy_dtype("float8_e8m0fnu") == ml_dtypes.float8_e8m0fnu
    assert mxq.numpy_dtype("bfloat16") == ml_dtypes.bfloat16
    assert mxq.numpy_dtype("float4_e2m1fn") == np.uint8  # packed two per byte
    with pytest.raises(ValueError, match="did you mean float8_e4m3fn"):
        mxq.numpy_dtype("float8_e4m3")


@pytest.mark.parametrize("helper, text", [
    (mxq.fp8_block(group=128, pow2=True), "fp8_block_1x128:pow2=1"),
    (mxq.fp8_block(), "fp8_block_1x128"),
    (mxq.fp8_block(group=128, rows=128), "fp8_block_128x128"),
    (mxq.fp8_block(group=64, dir="both", layout="mn_major_tma"), "fp8_block_1x64:dir=both,layout=mn_major_tma"),
    (mxq.mx("e4m3", dir="both"), "mxfp8:dir=both"),
    (mxq.mx("e5m2", rounding="floor"), "mxfp8_e5m2:rounding=floor"),
    (mxq.mx("e2m1"), "mxfp4"),
    (mxq.nvfp4(two_d=True), "nvfp4_2d"),
    (mxq.fp8_tensor("e5m2"), "fp8_tensor_e5m2"),
])
def test_recipe_helpers_render(helper, text):
    assert str(helper) == text
    mxq.recipe_name(helper)  # the C++ parser accepts it
    assert mxq.plan(helper, 32, 128) == mxq.plan(text, 32, 128)


def test_recipe_helper_bad_value():
    with pytest.raises(ValueError, match="elem='e3m4'"):
        str(mxq.mx("e3m4"))
    with pytest.raises(ValueError, match="recipe: option dir=sideways is invalid"):
        mxq.quantize(np.ones((1, 32), np.float32), mxq.mx(dir="sideways"))


def test_plan_shapes():
    L = mxq.plan("nvfp4:dir=both", 64, 96)
    assert L.recipe == "nvfp4:dir=both"
    assert (L.data.dtype, L.data.rows, L.data.cols, L.data.bytes, L.data.shape) == ("float4_e2m1fn", 64, 96, 3072,
                                                                                   (64, 48))
    assert (L.scales.dtype, L.scales.shape) == ("float8_e4m3fn", (64, 6))
    assert (L.col_data.rows, L.col_data.cols) == (96, 64)
    assert L.global_scale.bytes == 4 and L.amax.bytes == 4
    assert L.total_bytes == sum(s.bytes for s in (L.data, L.scales, L.col_data, L.col_scales, L.global_scale, L.amax))
    M = mxq.plan("mxfp8:layout=swizzled_128x4", 100, 96)
    assert M.scales.shape == (128, 4) and M.col_data is None and M.amax is None
    P = mxq.plan("mxfp8:layout=packed_ue8m0", 100, 256)
    assert P.scales.dtype == "int32" and P.scales.empty().nbytes == P.scales.bytes
    F = mxq.plan("fp8_block_1x128", 3, 256)
    assert (F.scales.dtype, F.scales.shape) == ("float32", (3, 2))


@pytest.mark.parametrize("recipe", mxq.recipes())
def test_outputs_follow_plan(recipe):
    x = np.ones((64, 128), np.float32)
    L = mxq.plan(recipe + ":dir=both", 64, 128)
    q = mxq.quantize(x, recipe + ":dir=both")
    for b in ("data", "scales", "col_data", "col_scales"):
        spec, a = getattr(L, b), getattr(q, b)
        assert (spec is None) == (a is None), b
        if a is not None:
            assert a.shape == spec.shape and a.dtype == spec.numpy_dtype and a.nbytes == spec.bytes, b


def test_readme_example_runs(capsys):
    runpy.run_path(str(HERE / "readme_example.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("QuantizedTensor(recipe='mxfp8'") and "max error" in out
    assert float(out.split()[-1]) < 0.5


def test_readme_example_is_the_readme_s():
    readme = (HERE.parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    if not blocks:
        pytest.skip("README.md has no ```python block yet")
    assert (HERE / "readme_example.py").read_text() in blocks


def _signatures(source: str) -> dict:
    """{name: (parameters, return)} of the defs in `source`, with each annotation in one spelling
    (builtin generics, `X | None`) and each default as a value (... where the stub elides it)."""
    aliases = {"_Buffer": "tuple[int, int]", "_Device": "tuple[int, int]",
               "_Spec": "tuple[str, int, int, int, tuple[int, int, int, int]] | None"}

    def spell(node):
        text = "None" if node is None else ast.unparse(node)
        for old, new in (*aliases.items(), ("Tuple[", "tuple["), ("List[", "list["),
                         ("collections.abc.Sequence[", "list[")):
            text = text.replace(old, new)
        return re.sub(r"Optional\[(.*)\]$", r"\1 | None", text)

    out = {}
    for f in ast.parse(source).body:
        if isinstance(f, ast.FunctionDef):
            args = f.args.args
            defaults = [None] * (len(args) - len(f.args.defaults)) + [ast.literal_eval(d) for d in f.args.defaults]
            out[f.name] = ([(a.arg, spell(a.annotation), d) for a, d in zip(args, defaults)], spell(f.returns))
    return out


def test_core_stub_matches_the_binding():
    stub = _signatures((pathlib.Path(mxq.__file__).parent / "_core.pyi").read_text())
    for name, (params, returns) in stub.items():
        doc = getattr(mxq._core, name).__doc__.splitlines()[0].replace("ndarray[writable=False]", "object")
        (bparams, breturns), = _signatures(f"def {doc}: ...").values()
        assert returns == breturns, (name, returns, breturns)
        assert len(params) == len(bparams), (name, params, bparams)
        for (n, t, d), (bn, bt, bd) in zip(params, bparams):
            assert (n, t) == (bn, bt) and (d is Ellipsis or d == bd), (name, (n, t, d), (bn, bt, bd))
    bound = {n for n in dir(mxq._core) if not n.startswith("_") and callable(getattr(mxq._core, n))}
    assert bound - {"UnsupportedError"} == set(stub)
    assert len(mxq._core.gemm_plan(1, 256, 256)) == 14
