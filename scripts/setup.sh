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
# Debian's own python3 refuses pip without --break-system-packages (PEP 668)
pipi() {
  "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore "$@" 2>/dev/null ||
    "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --break-system-packages "$@"
}
if ! "$PY" -c "import numpy, ml_dtypes, pytest, nanobind, scikit_build_core" >/dev/null 2>&1; then
  echo "setup: installing numpy ml_dtypes pytest nanobind scikit-build-core" >&2
  pipi numpy ml_dtypes pytest nanobind scikit-build-core
fi
# torch, for the Python package's torch tests on CPU tensors (custom ops, opcheck, torch.compile
# fullgraph: a check that dynamo cannot trace fails only there). The test command asks for it
# (scripts/test.sh: MXQ_TORCH=1 unless set); the demo does not. PyPI's Linux wheels are CUDA
# builds (~5 GB with their libraries, ~3 min here) that run on CPU tensors without a GPU.
if [ "${MXQ_TORCH:-0}" = 1 ] && ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing torch (MXQ_TORCH=1)" >&2
  pipi torch
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
