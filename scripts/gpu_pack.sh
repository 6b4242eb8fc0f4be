#!/usr/bin/env bash
# Run HERE (nvcc compiles sm_90a without a GPU) before a device run: builds the GPU programs and
# packs them into prebuilt.tar.xz (git-ignored, a few MB: xz's window folds the AOT kernels that
# every program links), stamped with the hash of the sources (source_stamp). On the GPU machine,
# `MXQ_PREBUILT=prebuilt.tar.xz bash scripts/gpu_check.sh` unpacks it instead of building (~150 s
# of device time saved per call) and refuses it if the tree there hashes differently. Carry
# [".deps", "prebuilt.tar.xz"]. The Python module is not packed (the GPU machine's Python is
# another version): gpu_check skips the package's tests with a prebuilt tree.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${MXQ_BUILD:-build}
stamp=$(bash scripts/gpu_check.sh --source-stamp)
mkdir -p "$BUILD"
bash scripts/build.sh --target mxq mxq_gpu_tests bench_quantize_gpu bench_gemm_gpu bench_jit >"$BUILD/gpu_pack.log" 2>&1 ||
  { grep -E "FAILED|error" -A5 "$BUILD/gpu_pack.log" | head -40; echo "gpu_pack: the build failed ($BUILD/gpu_pack.log)" >&2; exit 1; }
[ "$(bash scripts/gpu_check.sh --source-stamp)" = "$stamp" ] || { echo "gpu_pack: the sources changed during the build" >&2; exit 1; }
echo "$stamp" >"$BUILD/PREBUILT"
files="PREBUILT mxq tests/gpu/mxq_gpu_tests bench/gpu/bench_quantize_gpu bench/gpu/bench_gemm_gpu bench/bench_jit libmxq_core.a
  src/cuda/CMakeFiles/mxq_cuda.dir/gemm/wgmma.cu.o src/cuda/CMakeFiles/mxq_cuda.dir/quantize/fast_bf16.cu.o"
tar -C "$BUILD" -cf - $files | xz -T2 -6 --lzma2=dict=192MiB >prebuilt.tar.xz.tmp
mv prebuilt.tar.xz.tmp prebuilt.tar.xz
echo "prebuilt.tar.xz: $(du -h prebuilt.tar.xz | cut -f1), sources $stamp"
