"""scripts/gpu_check.sh's MXQ_PREBUILT switch, on a machine without a GPU: an archive stamped with
this tree's sources runs its programs instead of a build, and an archive of other sources is
refused before anything is unpacked. The archive's GPU test program is a stand-in script, so what
the check reports can only come from it."""
import io
import os
import pathlib
import subprocess
import tarfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_check.sh"


def source_stamp():
    return subprocess.run(["bash", str(SCRIPT), "--source-stamp"], capture_output=True, text=True,
                          check=True).stdout.strip()


def tar_xz(path, files):
    """An xz tar of (name, bytes, mode) entries."""
    with tarfile.open(path, "w:xz") as tar:
        for name, data, mode in files:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))


def bench_standin(side):
    """A benchmark program that prints one row naming its side and its arguments."""
    return f"#!/bin/sh\necho 'fp8_tensor  128x7168  {side} ran with:' \"$@\"\n".encode()


def archive(path, stamp):
    """An xz tar like gpu_pack.sh's: PREBUILT, a GPU test program that prints one gtest line, and
    a quantize benchmark stand-in."""
    program = b"#!/bin/sh\necho '[  PASSED  ] 1 test from the prebuilt stand-in.'\n"
    tar_xz(path, (("PREBUILT", (stamp + "\n").encode(), 0o644), ("tests/gpu/mxq_gpu_tests", program, 0o755),
                  ("bench/gpu/bench_quantize_gpu", bench_standin("tree"), 0o755)))


def check(tmp_path, stamp, **extra_env):
    tar = tmp_path / "prebuilt.tar.xz"
    archive(tar, stamp)
    build, out = tmp_path / "build-gpu", tmp_path / "out"
    env = dict(os.environ, MXQ_PREBUILT=str(tar), MXQ_GPU_BUILD=str(build), OUT=str(out), MXQ_SKIP_SANITIZER="1",
               MXQ_SKIP_BENCH="1", **extra_env)
    r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300)
    return r, build, out


@pytest.mark.skipif(subprocess.run(["bash", "-c", "command -v xz"], capture_output=True).returncode != 0,
                    reason="needs xz")
def test_prebuilt_archive_of_this_tree_runs_without_a_build(tmp_path):
    r, build, out = check(tmp_path, source_stamp())
    status = (out / "status.txt").read_text()
    assert f"build: prebuilt (sources {source_stamp()}" in status, status + r.stderr
    assert "[  PASSED  ] 1 test from the prebuilt stand-in." in status, status
    assert not (build / "CMakeCache.txt").exists()  # nothing was configured or built


def test_prebuilt_archive_of_other_sources_is_refused_unpacked(tmp_path):
    r, build, out = check(tmp_path, "0123456789abcdef")
    assert r.returncode == 1
    status = (out / "status.txt").read_text()
    assert f"built from sources 0123456789abcdef, this tree is {source_stamp()}" in status, status
    assert not (build / "tests").exists()  # refused before unpacking


@pytest.mark.skipif(subprocess.run(["bash", "-c", "command -v xz"], capture_output=True).returncode != 0,
                    reason="needs xz")
def test_ab_base_runs_both_benchmarks_alternating(tmp_path):
    base = tmp_path / "base.tar.xz"
    tar_xz(base, (("REV", b"0123abcd\n", 0o644), ("bench/gpu/bench_quantize_gpu", bench_standin("base"), 0o755)))
    r, _, out = check(tmp_path, source_stamp(), MXQ_AB_BASE=str(base), MXQ_AB_REPEAT="2",
                      MXQ_AB_ARGS="--small --shape 128x7168")
    status = (out / "status.txt").read_text()
    assert "a/b: base 0123abcd against this tree, 4 runs" in status, status + r.stderr
    rows = [line for line in (out / "ab.txt").read_text().splitlines() if not line.startswith("===")]
    assert [row.split()[2] for row in rows] == ["base", "tree", "base", "tree"], rows
    assert all(row.endswith("ran with: --small --shape 128x7168") for row in rows), rows


@pytest.mark.skipif(subprocess.run(["bash", "-c", "command -v xz"], capture_output=True).returncode != 0,
                    reason="needs xz")
def test_ab_base_that_is_no_benchmark_archive_is_reported(tmp_path):
    base = tmp_path / "base.tar.xz"
    tar_xz(base, (("REV", b"0123abcd\n", 0o644),))
    r, _, out = check(tmp_path, source_stamp(), MXQ_AB_BASE=str(base))
    status = (out / "status.txt").read_text()
    assert "does not unpack to bench/gpu/bench_quantize_gpu" in status, status + r.stderr
    assert not (out / "ab.txt").exists()
