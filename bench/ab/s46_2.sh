#!/usr/bin/env bash
# Ran in session 46 call 1 (H100) with bench/ab/s46-decode-ring.patch and bench/ab/s46-gx-wait.patch applied.
# session 46: the mma.sync decode GEMM's ring as deep as a warp's K blocks (config.h
# decode_mma_stages, up to 7 slots). GEMM tests (exact, PDL, selection) and memcheck of the exact
# test, then M <= 8 decode A/B: base (main 630e816, ab/gemm45.tar.xz) / tree, 3 alternating
# repetitions, each GEMM with its weights from DRAM (bench_gemm_gpu rotates B).
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuGemm.ExactOnSmallIntegers:GpuGemm.WaitsForTheKernelBeforeIt:GpuGemm.BackendSelection:GpuGemm.EpilogueAlphaCBiasExact' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 timeout 200 bash scripts/gpu_check.sh >"$OUT/check.txt" 2>&1
echo "check: rc=$?" | tee -a "$OUT/status.txt"
B=build-gpu
S='--shape 1x2112x7168 --shape 1x24576x1536 --shape 1x32768x512 --shape 1x4096x7168 --shape 1x7168x2048 --shape 8x2112x7168 --shape 4x4096x7168 --shape 1x7168x7168'
base=$(mktemp -d); tar -C "$base" -xJf ab/gemm45.tar.xz
for r in 1 2 3; do
  for side in base tree; do
    prog=$B/bench/gpu/bench_gemm_gpu
    [ $side = base ] && prog=$base/bench/gpu/bench_gemm_gpu
    echo "=== $side rep $r"
    timeout 60 $prog $S 2>&1
  done
done >"$OUT/ab.txt"
echo "ab runs: $(grep -c '^===' "$OUT/ab.txt")" | tee -a "$OUT/status.txt"
MXQ_GPU_TEST_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter='GpuGemm.ExactOnSmallIntegers' >"$OUT/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1) $(grep -E 'PASSED|FAILED' "$OUT/memcheck.log" | head -2 | tr '\n' ' ')" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
