#!/usr/bin/env bash
# Run HERE (nvcc compiles sm_90a without a GPU) before a device run: builds the GPU programs and
# packs them into prebuilt.tar.xz (git-ignored, a few MB: xz's window folds the AOT kernels that
# every program links), stamped with the hash of the sources (source_stamp). On the GPU machine,
# `MXQ_PREBUILT=prebuilt.tar.xz bash scripts/gpu_check.sh` unpacks it instead of building (~150 s
# of device time saved per call) and refuses it if the tree there hashes differently. Carry
# [".deps", "prebuilt.tar.xz"]. The Python extension is packed when this machine has the GPU
# machine's Python version (below); without it gpu_check skips the package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${MXQ_BUILD:-build}
stamp=$(bash scripts/gpu_check.sh --source-stamp)
mkdir -p "$BUILD"
bash scripts/build.sh --target mxq mxq_gpu_tests bench_quantize_gpu bench_gemm_gpu bench_jit >"$BUILD/gpu_pack.log" 2>&1 ||
  { grep -E "FAILED|error" -A5 "$BUILD/gpu_pack.log" | head -40; echo "gpu_pack: the build failed ($BUILD/gpu_pack.log)" >&2; exit 1; }
# The Python extension for the GPU machine's interpreter (MXQ_DEVICE_PYTHON, default python3.12:
# Ubuntu 24.04's), so that gpu_check runs the package's torch / CUDA tests from the pack too. An
# extension module links no libpython: built here against that version's headers it imports there.
py=${MXQ_DEVICE_PYTHON:-}
if [ -z "$py" ]; then  # python3.12 on PATH, else pyenv's (its shim names versions it will not run)
  for c in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    "$c" -c '' 2>/dev/null && { py=$c; break; }
  done
fi
pyfiles=""
if [ -n "$py" ] && "$py" -c '' 2>/dev/null; then
  "$py" -m nanobind --cmake_dir >/dev/null 2>&1 || "$py" -m pip install -q nanobind >>"$BUILD/gpu_pack.log" 2>&1
  if cmake -S . -B "$BUILD" -DMXQ_BUILD_PYTHON=ON -DPython_EXECUTABLE="$("$py" -c 'import sys; print(sys.executable)')" \
    >>"$BUILD/gpu_pack.log" 2>&1 &&
    cmake --build "$BUILD" --target _core >>"$BUILD/gpu_pack.log" 2>&1; then
    pyfiles=$(cd "$BUILD" && find python/mxq -maxdepth 1 -type f | sort)
  else
    echo "gpu_pack: the Python extension for $py did not build ($BUILD/gpu_pack.log); packing without it" >&2
  fi
else
  echo "gpu_pack: no Python ${MXQ_DEVICE_PYTHON:-3.12} runs here (MXQ_DEVICE_PYTHON): packing without the Python extension" >&2
fi
[ "$(bash scripts/gpu_check.sh --source-stamp)" = "$stamp" ] || { echo "gpu_pack: the sources changed during the build" >&2; exit 1; }
echo "$stamp" >"$BUILD/PREBUILT"
files="PREBUILT mxq tests/gpu/mxq_gpu_tests bench/gpu/bench_quantize_gpu bench/gpu/bench_gemm_gpu bench/bench_jit libmxq_core.a
  src/cuda/CMakeFiles/mxq_cuda.dir/gemm/wgmma.cu.o src/cuda/CMakeFiles/mxq_cuda.dir/quantize/fast_bf16.cu.o $pyfiles"
pack=${MXQ_PACK_OUT:-prebuilt.tar.xz}  # another name keeps a second tree's pack beside this one
tar -C "$BUILD" -cf - $files | xz -T2 -6 --lzma2=dict=192MiB >"$pack.tmp"
mv "$pack.tmp" "$pack"
echo "$pack: $(du -h "$pack" | cut -f1), sources $stamp${pyfiles:+, with the Python extension for $py}"
