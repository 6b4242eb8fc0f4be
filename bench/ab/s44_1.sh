#!/usr/bin/env bash
# session 44 call 2: the fixed TwoKernelCast test + the grid-exchange / capture tests; decode A/B
# base (main 4b10ee4) / tree / tree with MXQ_EXP_EARLY=0, 3 alternating repetitions; memcheck.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.*' MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
timeout 100 bash scripts/gpu_check.sh
B=build-gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168 --shape 1024x7168'
base=$(mktemp -d); tar -C "$base" -xJf ab/main41.tar.xz
for r in 1 2 3; do
  for side in base tree early0; do
    prog=$B/bench/gpu/bench_quantize_gpu; s=""
    [ $side = base ] && prog=$base/bench/gpu/bench_quantize_gpu
    [ $side = early0 ] && s="MXQ_EXP_EARLY=0"
    echo "=== $side rep $r"
    env $s timeout 30 $prog $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/ab3.txt"
echo "ab3 runs: $(grep -c '^===' "$OUT/ab3.txt")" | tee -a "$OUT/status.txt"
MXQ_GPU_TEST_SMALL=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter='GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore:GpuQuantize.GridExchangeUnderEveryCaptureModeAndStream' >"$OUT/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
