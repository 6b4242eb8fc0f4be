#!/usr/bin/env bash
# Installs what mxq needs to build and test on a Debian machine (root), skipping what is there:
# a C++20 compiler, CMake, Ninja, GoogleTest, CLI11, nlohmann-json, DLPack, xxHash (Debian packages) and
# numpy, ml_dtypes, pytest (PyPI, for the oracle tests). CUDA is optional: with nvcc on PATH the
# CUDA backends are built too.
set -euo pipefail
need=()
for pkg in cmake ninja-build g++ libgtest-dev libcli11-dev nlohmann-json3-dev libdlpack-dev libxxhash-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
PY=${PYTHON:-python3}
# numpy, ml_dtypes, pytest: the oracle tests; nanobind, scikit-build-core: the Python package's
# build backend (ctest python_pkg pip-installs this checkout into the build tree).
if ! "$PY" -c "import numpy, ml_dtypes, pytest, nanobind, scikit_build_core" >/dev/null 2>&1; then
  echo "setup: installing numpy ml_dtypes pytest nanobind scikit-build-core" >&2
  pipi() { "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@"; }
  # Debian's own python3 refuses pip without --break-system-packages (PEP 668)
  set -- numpy ml_dtypes pytest nanobind scikit-build-core
  pipi "$@" 2>/dev/null || pipi --break-system-packages "$@"
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
