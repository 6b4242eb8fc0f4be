"""ctest driver (test `python_pkg`, label cpu): `pip install` the package from this checkout into
a directory of the CMake build, then run pytest on tests/python_pkg against that install.

    python install_and_test.py <build dir> [pytest args...]

The pip build has its own CMake build directory (<build dir>/python-pkg-build), so reruns are
incremental. It builds the CPU backend only (MXQ_CUDA=OFF): the CUDA part of the package is
tested on the GPU machine. Without scikit-build-core or nanobind (a machine without a registry)
it reports SKIPPED (exit 77)."""
import importlib.util
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]


def main() -> int:
    build = pathlib.Path(sys.argv[1]).resolve()
    missing = [m for m in ("scikit_build_core", "nanobind", "pytest", "numpy", "ml_dtypes")
               if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIPPED: {sys.executable} lacks {', '.join(missing)} (scripts/setup.sh installs them)")
        return 77
    target = build / "python-pkg"
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--root-user-action=ignore",
                    "--no-build-isolation", "--no-deps", "--upgrade", "--target", str(target),
                    "-C", f"build-dir={build / 'python-pkg-build'}", "-C", "cmake.define.MXQ_CUDA=OFF", str(REPO)],
                   check=True)
    print(f"pip install: {time.monotonic() - t0:.1f} s")
    env = dict(os.environ, PYTHONPATH=str(target), PYTHONDONTWRITEBYTECODE="1",
               MXQ_CACHE_DIR=str(build / "python-pkg-jit-cache"))  # a JIT warm-up writes here
    return subprocess.run([sys.executable, "-m", "pytest", str(HERE), "-q", "-p", "no:cacheprovider",
                           *sys.argv[2:]], env=env, cwd=HERE).returncode


if __name__ == "__main__":
    sys.exit(main())
