#!/usr/bin/env bash
# session 45 call 3: the grid exchange as one word per CTA (parity flag, no atomics or fences).
# Tests (per-tensor, grid exchange, capture), memcheck + racecheck of the exchange tests, then
# decode A/B base (main 6487afb, ab/main44.tar.xz) / tree, 3 alternating repetitions.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.*' MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
timeout 150 bash scripts/gpu_check.sh
B=build-gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168 --shape 1024x7168'
base=$(mktemp -d); tar -C "$base" -xJf ab/main44.tar.xz
for r in 1 2 3; do
  for side in base tree; do
    prog=$B/bench/gpu/bench_quantize_gpu
    [ $side = base ] && prog=$base/bench/gpu/bench_quantize_gpu
    echo "=== $side rep $r"
    timeout 30 $prog $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
  echo "=== tree-jit rep $r"
  MXQ_BACKEND=cuda-jit timeout 60 $B/bench/gpu/bench_quantize_gpu $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
done >"$OUT/ab.txt"
echo "ab runs: $(grep -c '^===' "$OUT/ab.txt")" | tee -a "$OUT/status.txt"
F='GpuQuantize.GridExchange*:GpuQuantize.PerTensorSmallCallsInOneLaunch:GpuQuantize.CapturableInCudaGraph'
for tool in memcheck racecheck synccheck; do
  MXQ_GPU_TEST_SMALL=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
    --gtest_filter="$F" >"$OUT/$tool.log" 2>&1
  echo "$tool: rc=$? $(grep 'ERROR SUMMARY' "$OUT/$tool.log" | tail -1) $(grep -E 'PASSED|FAILED' "$OUT/$tool.log" | head -2 | tr '\n' ' ')" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
