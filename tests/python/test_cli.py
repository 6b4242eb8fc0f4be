"""The mxq command (MXQ_BIN): help, info, demo output and error reporting."""
import json
import math
import os
import subprocess

import pytest

# Lowest acceptable SQNR per recipe family on the demo's inputs (normal data with outliers, and
# small-variance weights). Ideal quantization noise of a format with m mantissa bits is about
# 6.02 * (m + 1) + 10.8 dB for normally distributed values; the bounds leave a wide margin for
# outliers and scale rounding but catch a wrong scale (which costs tens of dB).
MIN_SQNR_DB = {
    "fp8_tensor": 20.0,  # E4M3, one scale for the tensor incl. outliers
    "fp8_tensor_e5m2": 15.0,
    "fp8_block": 25.0,
    "mxfp8": 25.0,
    "mxfp8_e5m2": 18.0,
    "mxfp4": 12.0,
    "nvfp4": 14.0,
    "fp4_block": 10.0,
}
MAX_SQNR_DB = 60.0  # 8-bit formats cannot do better than about 40 dB on this data
# The demo's max relative error is taken over |x| >= 0.01 rms(x), which every 8-bit recipe keeps
# in the element format's normal range: at most half an ulp, 2^-4 (E4M3) or 2^-3 (E5M2). FP4 can
# round such an element to zero (relative error 1).
MAX_REL_ERR = {"e4m3": 2.0 ** -4, "e5m2": 2.0 ** -3, "fp4": 1.0}


def rel_err_bound(recipe):
    if "e5m2" in recipe:
        return MAX_REL_ERR["e5m2"]
    if "fp4" in recipe.split(":")[0]:
        return MAX_REL_ERR["fp4"]
    return MAX_REL_ERR["e4m3"]


def mxq_bin():
    path = os.environ.get("MXQ_BIN")
    if not path or not os.path.isfile(path):
        pytest.fail(f"MXQ_BIN={path!r} must name the built mxq executable (ctest sets it)")
    return path


def run(*args):
    return subprocess.run([mxq_bin(), *args], capture_output=True, text=True, timeout=120)


def sqnr_bound(recipe):
    head = recipe.split(":")[0]
    for prefix in sorted(MIN_SQNR_DB, key=len, reverse=True):
        if head.startswith(prefix):
            return MIN_SQNR_DB[prefix]
    raise AssertionError(f"no SQNR bound for recipe {recipe}")


@pytest.mark.parametrize("args", [["--help"], ["demo", "--help"], ["info", "--help"], ["recipe", "--help"]])
def test_help(args):
    r = run(*args)
    assert r.returncode == 0, r.stderr
    assert "Usage" in r.stdout


def test_info_json_lists_backends_with_reasons():
    r = run("info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    backends = {b["backend"]: b for b in info["backends"]}
    assert set(backends) == {"cpu", "cuda-aot", "cuda-jit", "cublaslt"}
    assert backends["cpu"]["available"] is True
    for b in backends.values():
        if not b["available"]:
            assert b["detail"].strip(), f"{b['backend']} is unavailable without a reason"
    assert "float8_e4m3fn" in info["dtypes"] and "mxfp8" in info["recipes"]


DEMO_ARGS = ["demo", "--rows", "64", "--weight-rows", "64", "--cols", "256", "--repeats", "1", "--json"]


@pytest.fixture(scope="module")
def demo_rows():
    r = run(*DEMO_ARGS)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_demo_has_one_row_per_tensor_and_recipe(demo_rows):
    keys = [(row["tensor"], row["recipe"]) for row in demo_rows]
    assert len(keys) == len(set(keys))
    tensors = {t for t, _ in keys}
    recipes = {rc for _, rc in keys}
    assert tensors == {"activation", "weight"}
    assert len(keys) == 2 * len(recipes)
    assert {"fp8_tensor", "mxfp8", "mxfp4", "nvfp4"} <= recipes


def test_demo_quality_is_sane(demo_rows):
    for row in demo_rows:
        sqnr = row["sqnr_db"]
        assert sqnr is not None and math.isfinite(sqnr), row
        assert sqnr_bound(row["recipe"]) < sqnr < MAX_SQNR_DB, row
        assert 0.0 < row["max_rel_err"] <= rel_err_bound(row["recipe"]) * (1 + 1e-6), row
        assert 4.0 <= row["bits_per_element"] <= 9.0, row
        assert row["ms"] >= 0.0 and row["backend"] == "cpu", row


def test_demo_fp4_costs_half_of_fp8(demo_rows):
    bits = {(r["tensor"], r["recipe"]): r["bits_per_element"] for r in demo_rows}
    assert bits[("weight", "mxfp4")] == pytest.approx(4.25)  # 4 + 8/32
    assert bits[("weight", "mxfp8")] == pytest.approx(8.25)
    assert bits[("weight", "nvfp4")] == pytest.approx(4.5, abs=0.01)  # 4 + 8/16 + global


@pytest.mark.parametrize("recipe, fragment", [
    ("nonsense", "unknown recipe 'nonsense'"),
    ("mxfp8:elem=float8_e4m3", "float8_e4m3fn"),
    ("mxfp8:rounding=up", "rounding=up"),
])
def test_invalid_recipe_fails_cleanly(recipe, fragment):
    r = run("demo", "--rows", "4", "--weight-rows", "4", "--cols", "64", "--repeats", "1", "--json",
            "--recipe", recipe)
    assert r.returncode != 0
    assert r.stdout == ""
    assert fragment in r.stderr and "error" in r.stderr


# Sizes whose element counts overflow, or exceed host memory: one error line, never a crash.
@pytest.mark.parametrize("args, fragment", [
    (("recipe", "mxfp8", "--rows", "9223372036854775807", "--cols", "9223372036854775807"), "is too large"),
    (("recipe", "mxfp8", "--rows", "4000000000", "--cols", "4000000000"), "is too large"),
    (("demo", "--rows", "4294967296", "--cols", "4294967296", "--weight-rows", "1"), "--rows=4294967296 x --cols"),
    (("gemm-plan", "9223372036854775807", "9223372036854775807", "9223372036854775807"), "is too large"),
])
def test_oversized_shapes_fail_cleanly(args, fragment):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert fragment in r.stderr and "2^48" in r.stderr and r.stdout == "", r.stderr


def test_recipe_subcommand_reports_fp4_bytes_packed():
    r = run("recipe", "mxfp4", "--rows", "128", "--cols", "256", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["data"] == {"dtype": "float4_e2m1fn", "shape": [128, 256], "bytes": 128 * 128}
    assert j["scales"]["bytes"] == 128 * 8
    assert j["total_bytes"] == 128 * 128 + 128 * 8


# Every buffer the plan needs is listed, the per-tensor amax too, and they add up to total_bytes.
@pytest.mark.parametrize("recipe", ["fp8_tensor", "nvfp4", "mxfp8:dir=both"])
def test_recipe_subcommand_lists_every_buffer(recipe):
    r = run("recipe", recipe, "--rows", "4", "--cols", "64", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    listed = [k for k in ("data", "scales", "col_data", "col_scales", "global_scale", "amax") if k in j]
    assert ("amax" in listed) == (not recipe.startswith("mxfp8")), listed
    assert sum(j[k]["bytes"] for k in listed) == j["total_bytes"], j


# Output that cannot be written is a failure (exit code and message), not a success.
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_unwritable_output_fails():
    with open("/dev/full", "w") as full:
        r = subprocess.run([mxq_bin(), "recipe", "mxfp8", "--json"], stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    assert r.returncode == 2 and "writing the output failed" in r.stderr, (r.returncode, r.stderr)


# Bad command lines name what is wrong: an unknown command, a count past int64, a negative seed.
def test_bad_command_lines_name_the_value():
    r = run("bogus")
    assert r.returncode == 2 and "unknown command 'bogus'" in r.stderr and "demo" in r.stderr, r.stderr
    r = run("recipe", "mxfp8", "--rows", "99999999999999999999")
    assert r.returncode != 0 and "99999999999999999999 is not a non-negative integer" in r.stderr, r.stderr
    r = run("cache", "ls", "--arch", "90")
    assert r.returncode == 2 and "cache ls takes no --arch" in r.stderr, r.stderr
    r = run("--json", "bogus")
    assert r.returncode == 2 and "unknown command 'bogus'" in r.stderr, r.stderr
    r = run("demo", "--seed", "-1")
    assert r.returncode != 0 and "-1 is not a non-negative integer" in r.stderr, r.stderr
    r = run("demo", "--seed", "18446744073709551616")
    assert r.returncode != 0 and "is not a non-negative integer up to 18446744073709551615" in r.stderr, r.stderr
    r = run("demo", "--seed", "18446744073709551615", "--rows", "4", "--weight-rows", "4", "--cols", "64",
            "--repeats", "1", "--recipe", "mxfp8", "--backend", "cpu")
    assert r.returncode == 0, r.stderr


def _cuda_usable():
    info = json.loads(run("info", "--json").stdout)
    return any(b["backend"] == "cuda-aot" and b["available"] for b in info["backends"])


# `mxq demo --backend` really switches: each value changes which backend runs (or refuses).
def test_demo_backend_switch():
    small = ("demo", "--rows", "16", "--weight-rows", "16", "--cols", "256", "--repeats", "1",
             "--recipe", "mxfp8", "--json")
    cpu = run(*small, "--backend", "cpu")
    assert cpu.returncode == 0, cpu.stderr
    assert {r["backend"] for r in json.loads(cpu.stdout)} == {"cpu"}
    aot = run(*small, "--backend", "cuda-aot")
    if _cuda_usable():
        assert aot.returncode == 0, aot.stderr
        assert {r["backend"] for r in json.loads(aot.stdout)} == {"cuda-aot"}
    else:
        assert aot.returncode == 2 and aot.stdout == ""
        assert "backend cuda-aot needs tensors on a CUDA device" in aot.stderr
    jit = run(*small, "--backend", "cuda-jit")
    if _cuda_usable():
        assert jit.returncode == 0, jit.stderr
        assert {r["backend"] for r in json.loads(jit.stdout)} == {"cuda-jit"}
    else:
        assert jit.returncode == 2 and jit.stdout == ""
        assert "backend cuda-jit needs tensors on a CUDA device" in jit.stderr
    bad = run(*small, "--backend", "gpu")
    assert bad.returncode == 2 and "unknown backend 'gpu'" in bad.stderr


# `mxq gemm-plan` prints the GEMM's pure planning function (mxq/gemm_plan.hpp).
def test_gemm_plan():
    decode = run("gemm-plan", "1", "7168", "7168", "--json")
    assert decode.returncode == 0, decode.stderr
    p = json.loads(decode.stdout)
    assert p["path"] == "swap-ab" and p["block_m"] == 8 and p["block_n"] == 32 and p["tiles"] == 224
    assert p["stages"] == 3 and p["split_k"] == 1 and p["ctas_per_sm"] == 2 and p["waves"] == 1
    assert p["early_launch"] is True  # 224 of 264 CTA slots: programmatic launch (gemm_config::decode_pdl)
    sparse = json.loads(run("gemm-plan", "1", "2112", "7168", "--json").stdout)
    assert sparse["early_launch"] is False and sparse["last_wave"] == 0.5
    assert "no programmatic launch" in run("gemm-plan", "1", "2112", "7168").stdout
    wg = json.loads(run("gemm-plan", "16", "7168", "7168", "--json").stdout)
    assert wg["block_m"] == 16 and wg["block_n"] == 64 and wg["cluster"] == 2 and wg["stages"] == 6
    big = json.loads(run("gemm-plan", "4096", "7168", "7168", "--json").stdout)
    assert big["path"] == "tma-wgmma" and big["block_m"] == 256 and big["block_n"] == 128 and big["stages"] == 4
    mid = json.loads(run("gemm-plan", "128", "7168", "7168", "--json").stdout)
    assert mid["path"] == "tma-wgmma" and mid["block_m"] == 128 and mid["stages"] == 5
    odd = run("gemm-plan", "7", "7168", "100")
    assert odd.returncode == 0 and odd.stdout.startswith("generic:") and "K=100" in odd.stdout
    bad = run("gemm-plan", "0", "16", "16")
    assert bad.returncode != 0 and "M: 0 is not a positive integer" in bad.stderr, bad.stderr
    shape = run("gemm-plan", "128x7168x7168")  # bench gemm's form: named, with what was expected
    assert shape.returncode != 0 and "M: 128x7168x7168 is not a positive integer" in shape.stderr, shape.stderr
    big = run("gemm-plan", "1", "16", "16", "--sms", "3000000000")  # an int option: its bound, named
    want = "--sms: 3000000000 is not a positive integer up to 2147483647"
    assert big.returncode != 0 and want in big.stderr, big.stderr
    # --sms switches the architecture: 39 tiles of 64 rows take clusters of 8 on the H200 (45
    # resident), of 4 with 114 SMs (a modelled 38)
    h200 = json.loads(run("gemm-plan", "64", str(39 * 64), "7168", "--json").stdout)
    other = json.loads(run("gemm-plan", "64", str(39 * 64), "7168", "--sms", "114", "--json").stdout)
    assert h200["cluster"] == 8 and other["cluster"] == 4
    # --promote-k switches the routing: at 128 the wgmma kernel takes this short-K call from the
    # decode kernel; 128 x 7168 splits K over clusters of 2. Without it (0) the interval follows
    # --out: 128 for bfloat16 (the default), 32 for float32
    for args, pk, path in ((["--promote-k", "32"], 32, "swap-ab"), (["--promote-k", "128"], 128, "tma-wgmma"),
                           ([], 128, "tma-wgmma"), (["--out", "float32"], 32, "swap-ab"),
                           (["--out", "float32", "--promote-k", "0"], 32, "swap-ab")):
        plan = json.loads(run("gemm-plan", "64", "24576", "1536", *args, "--json").stdout)
        assert plan["path"] == path and plan["promote_k"] == pk, (args, plan)
    assert mid["split_k"] == 2 and mid["cluster"] == 2 and mid["tiles"] == 112
    assert run("gemm-plan", "64", "24576", "1536", "--promote-k", "48").returncode != 0


# `mxq cache`: several processes warming the same configurations into one cache directory at
# once all succeed and leave intact entries; a second warm-up reads them back; clear empties it.
def test_cache_concurrent_warmup_ls_clear(tmp_path):
    env = dict(os.environ, MXQ_CACHE_DIR=str(tmp_path / "cache"))
    probe = subprocess.run([mxq_bin(), "cache", "warmup", "mxfp8", "--arch", "90", "--threads", "1"],
                           capture_output=True, text=True, timeout=300, env=env)
    if probe.returncode != 0 and "the JIT is unavailable" in probe.stderr:
        pytest.skip(f"no JIT in this build: {probe.stderr.strip()}")
    assert probe.returncode == 0, probe.stderr
    subprocess.run([mxq_bin(), "cache", "clear"], env=env, check=True, capture_output=True)
    procs = [subprocess.Popen([mxq_bin(), "cache", "warmup", "mxfp8", "nvfp4", "--arch", "90", "--threads", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        # mxfp8's 3 input dtypes, nvfp4's 3 with their one-launch twins (FastKey::one_launch)
        assert "compiled or found 9 kernel configurations" in out
    ls = json.loads(subprocess.run([mxq_bin(), "cache", "ls", "--json"], capture_output=True, text=True, env=env,
                                   check=True).stdout)
    assert len(ls["entries"]) == 9 and all(e["bytes"] > 1000 for e in ls["entries"])
    assert not [f for f in os.listdir(tmp_path / "cache") if f.startswith(".tmp-")]  # no temp files left
    cleared = json.loads(subprocess.run([mxq_bin(), "cache", "clear", "--json"], capture_output=True, text=True,
                                        env=env, check=True).stdout)
    assert cleared["removed"] == 9


# `mxq bench gemm`: times the GEMM on the GPU, per backend; without a GPU it says so, and bad
# shapes or backends are errors naming them.
def test_bench_gemm():
    r = run("bench", "gemm", "8x512x512", "--backends", "cublaslt,cuda-aot", "--json")
    if "no usable CUDA device" in r.stderr:
        assert r.returncode == 2
    else:
        assert r.returncode == 0, r.stderr
        rows = json.loads(r.stdout)
        assert [x["backend"] for x in rows] == ["cublaslt", "cuda-aot"] and all(x["us"] > 0 for x in rows), rows
        # --block-m switches our wgmma kernel's tiles, one row each
        t = run("bench", "gemm", "256x512x512", "--backends", "cuda-aot", "--block-m", "128,256", "--json")
        assert t.returncode == 0, t.stderr
        tiles = json.loads(t.stdout)
        assert [x["block_m"] for x in tiles] == [128, 256], tiles
        assert "wgmma 128x128" in tiles[0]["ran"] and "wgmma 256x128" in tiles[1]["ran"], tiles
        # --kind 1d1d: B with 1x128 scales, our wgmma kernel's 1D1D instance
        w = run("bench", "gemm", "256x512x512", "--backends", "cuda-aot", "--kind", "1d1d", "--json")
        assert w.returncode == 0, w.stderr
        assert "1D1D" in json.loads(w.stdout)[0]["ran"], w.stdout
    kind = run("bench", "gemm", "--kind", "2d2d")
    assert kind.returncode != 0 and "--kind" in kind.stderr and "2d2d" in kind.stderr, kind.stderr
    bad = run("bench", "gemm", "8x512")
    assert bad.returncode == 2 and "gemm shape '8x512' is not MxNxK" in bad.stderr
    cpu = run("bench", "gemm", "--backends", "cpu")
    assert cpu.returncode == 2 and "--backends: cpu is the fp64 reference" in cpu.stderr
    unknown = run("bench", "gemm", "--backends", "gpu")
    assert unknown.returncode == 2 and "unknown backend 'gpu'" in unknown.stderr
    tile = run("bench", "gemm", "--block-m", "0,192")
    assert tile.returncode != 0 and "--block-m" in tile.stderr and "192" in tile.stderr, tile.stderr


# `mxq cache warmup ENTRIES` into the cache directory tmp_path/cache, with extra environment.
def warm_cache(tmp_path, cache, *entries, **extra):
    env = dict(os.environ, MXQ_CACHE_DIR=str(tmp_path / cache), **extra)
    return subprocess.run([mxq_bin(), "cache", "warmup", *entries, "--arch", "90", "--threads", "2"],
                          capture_output=True, text=True, timeout=600, env=env)


# Fused kernels are warmed by name: RECIPE+ACT, +dACT, +dbias; the cache lists them as fused.
def test_cache_warmup_fused_entries(tmp_path):
    env = dict(os.environ, MXQ_CACHE_DIR=str(tmp_path / "cache"))
    ok = warm_cache(tmp_path, "cache", "mxfp8+swiglu", "mxfp8:dir=both+dgelu+dbias")
    if ok.returncode != 0 and "the JIT is unavailable" in ok.stderr:
        pytest.skip(f"no JIT in this build: {ok.stderr.strip()}")
    assert ok.returncode == 0, ok.stderr
    assert "compiled or found 6 kernel configurations" in ok.stdout, ok.stdout
    ls = json.loads(subprocess.run([mxq_bin(), "cache", "ls", "--json"], capture_output=True, text=True, env=env,
                                   check=True).stdout)
    configs = sorted(e["config"] for e in ls["entries"])
    assert len(configs) == 6, configs
    assert sum(c.endswith(" swiglu sm_90") for c in configs) == 3, configs
    assert sum(c.endswith(" dgelu+dbias sm_90") for c in configs) == 3, configs
    for bad, says in [("mxfp8+bogus", "unknown activation 'bogus'"), ("mxfp8+dswiglu", "dACT takes an elementwise"),
                      ("mxfp8+dbogus", "unknown activation 'bogus'"), ("mxfp8+gelu+silu", "a second activation"),
                      ("mxfp8+dbias+dbias", "a second dbias")]:
        r = warm_cache(tmp_path, "cache", bad)
        assert r.returncode != 0 and says in r.stderr and bad in r.stderr, r.stderr


# MXQ_JIT=0 turns the JIT off; MXQ_CACHE_MAX_MB caps the disk cache (least recently used
# entries go); a bad cap warns once, and MXQ_LOG=off silences that warning.
def test_jit_and_cache_switches(tmp_path):
    def warm(cache, *recipes, **extra):
        return warm_cache(tmp_path, cache, *recipes, **extra)

    on = warm("on", "mxfp8")
    if on.returncode != 0 and "not built" in on.stderr:
        pytest.skip(f"no JIT in this build: {on.stderr.strip()}")
    assert on.returncode == 0, on.stderr
    # a recipe named that has no JIT kernel is an error naming it, not "0 kernels compiled"
    none = warm("none", "fp8_block_128x128:dir=both")
    assert none.returncode != 0 and "'fp8_block_128x128:dir=both' has no JIT kernel" in none.stderr, none.stderr
    off = warm("off", "mxfp8", MXQ_JIT="0")
    assert off.returncode != 0 and "turned off by MXQ_JIT=0" in off.stderr, off.stderr
    for value in ("off", "false", "banana"):  # only 0 and 1: anything else is an error, never "on"
        bad = warm("bad", "mxfp8", MXQ_JIT=value)
        assert bad.returncode != 0 and f"MXQ_JIT='{value}' is not valid; valid: 0, 1" in bad.stderr, bad.stderr
    for arch in ("80", "-1"):
        r = subprocess.run([mxq_bin(), "cache", "warmup", "mxfp8", "--arch", arch], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, MXQ_CACHE_DIR=str(tmp_path / "arch")))
        assert r.returncode != 0 and f"arch={arch} is not supported; expected 0" in r.stderr, r.stderr
        assert "ptxas" not in r.stderr and r.stderr.count("\n") <= 2, r.stderr  # one line, no compiler log
    assert not (tmp_path / "off").exists() or not os.listdir(tmp_path / "off")

    many = ["mxfp8:dir=both", "mxfp4:dir=both", "nvfp4", "nvfp4_2d", "fp8_block_1x128", "fp8_block_1x64",
            "fp8_block_1x32", "fp8_block_128x128", "fp4_block_1x32", "mxfp8_e5m2", "fp8_tensor", "mxfp4"]
    capped = warm("capped", *many, MXQ_CACHE_MAX_MB="1")
    assert capped.returncode == 0, capped.stderr
    configs = int(capped.stdout.split("compiled or found ")[1].split()[0])
    ls = json.loads(subprocess.run([mxq_bin(), "cache", "ls", "--json"], capture_output=True, text=True, check=True,
                                   env=dict(os.environ, MXQ_CACHE_DIR=str(tmp_path / "capped"))).stdout)
    total = sum(e["bytes"] for e in ls["entries"])
    assert total <= 1 << 20 < total + 200_000 and len(ls["entries"]) < configs, (total, len(ls["entries"]), configs)

    bad = warm("bad", "mxfp8", MXQ_CACHE_MAX_MB="lots")
    assert bad.returncode == 0 and "MXQ_CACHE_MAX_MB='lots'" in bad.stderr, bad.stderr
    quiet = warm("quiet", "mxfp8", MXQ_CACHE_MAX_MB="lots", MXQ_LOG="off")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


# A cache directory the disk cache refused (here: world-writable) is not emptied: `cache clear`
# says so and fails, never "removed 0 entries" with the files still there; `cache ls` says why
# it lists nothing. A relative MXQ_CACHE_DIR is the working directory's.
def test_cache_clear_of_a_refused_directory(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    (d / "0123.cubin").write_bytes(b"x" * 16)
    d.chmod(0o777)
    env = dict(os.environ, MXQ_CACHE_DIR=str(d))
    clear = subprocess.run([mxq_bin(), "cache", "clear"], capture_output=True, text=True, env=env, timeout=60)
    if "the JIT is unavailable" in clear.stderr or "not built" in clear.stderr:
        pytest.skip(f"no JIT in this build: {clear.stderr.strip()}")
    assert clear.returncode != 0 and f"the disk cache at {d} is not in use" in clear.stderr, clear.stderr
    assert "nothing was removed" in clear.stderr and (d / "0123.cubin").exists()
    ls = subprocess.run([mxq_bin(), "cache", "ls"], capture_output=True, text=True, env=env, timeout=60)
    assert ls.returncode == 0 and "memory only" in ls.stdout and "writable" in ls.stdout, ls.stdout
    rel = subprocess.run([mxq_bin(), "cache", "ls", "--json"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, MXQ_CACHE_DIR="relcache"), cwd=tmp_path)
    assert rel.returncode == 0 and json.loads(rel.stdout)["dir"] == str(tmp_path / "relcache"), rel.stdout


# `--block-m` takes one comma-separated argument: a shape after it stays a shape; the demo
# refuses cublaslt (a GEMM backend) by name.
def test_cli_option_edges():
    r = run("bench", "gemm", "--block-m", "128", "128x128x128", "--json")
    assert "--block-m: 128x128x128" not in r.stderr, r.stderr
    assert r.returncode == 0 or "no usable CUDA device" in r.stderr, r.stderr
    demo = run("demo", "--rows", "16", "--weight-rows", "16", "--cols", "256", "--repeats", "1", "--backend",
               "cublaslt")
    assert demo.returncode == 2 and "--backend=cublaslt runs GEMMs only" in demo.stderr, demo.stderr
