#!/usr/bin/env bash
# session 47 call 3 (ran as ab/s47_4b.sh, this file with cd "$(dirname "$0")/.."): the grid exchange's own word read early (grid_amax_own_word, s47_3's EARLY_OWN
# landed). Every GPU test (small sizes), memcheck of the exchange tests, then A/B base (main
# 97b1ebc, ab/q46.tar.xz from `scripts/ab_base.sh 97b1ebc q46`) / tree (AOT and JIT) at the
# decode-sized per-tensor shapes, two alternating repetitions. Packed (`bash scripts/gpu_pack.sh`),
# carry [".deps", "prebuilt.tar.xz", "ab"].
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
B=build-gpu
base=$(mktemp -d); tar -C "$base" -xJf ab/q46.tar.xz
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 16x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168'
# the prebuilt tree first (gpu_check unpacks it), A/B ahead of the long test run
OUT=$OUT/ex MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_FILTER='GpuQuantize.GridExchange*:GpuQuantize.PerTensorSmallCallsInOneLaunch' \
  MXQ_GPU_TEST_SMALL=1 MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 timeout 100 bash scripts/gpu_check.sh >/dev/null 2>&1
echo "exchange tests: rc=$?" | tee -a "$OUT/status.txt"
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for side in base tree tree-jit; do
    prog=$B/bench/gpu/bench_quantize_gpu; env=""
    [ $side = base ] && prog=$base/bench/gpu/bench_quantize_gpu
    [ $side = tree-jit ] && env="MXQ_BACKEND=cuda-jit"
    echo "=== $side rep $r"
    env $env timeout 25 $prog $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/ab.txt"
echo "ab runs: $(grep -c '^===' "$OUT/ab.txt")" | tee -a "$OUT/status.txt"
F='GpuQuantize.GridExchange*:GpuQuantize.TwoKernelCast*:GpuQuantize.CallerGivenAmaxAndScale:GpuQuantize.PerTensorSmallCallsInOneLaunch'
MXQ_GPU_TEST_SMALL=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter="$F" >"$OUT/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1) $(grep -E 'PASSED|FAILED' "$OUT/memcheck.log" | head -2 | tr '\n' ' ')" | tee -a "$OUT/status.txt"
OUT=$OUT/all MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
  timeout 330 bash scripts/gpu_check.sh >/dev/null 2>&1
rc=$?
echo "all gpu tests: rc=$rc" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
