#!/usr/bin/env bash
# session 46 call 2: the per-tensor rows kernels keyed apart (FastKey::one_launch): given-amax and
# two-kernel calls run a kernel without the exchange code. Tests (quantize, dispatch), memcheck of
# the exchange tests, then A/B base (main 17cbfbd, ab/q45.tar.xz) / tree (AOT and
# JIT), two alternating repetitions (trimmed to fit the session's last device time).
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
T='GpuQuantize.PerTensorSmallCallsInOneLaunch:GpuQuantize.CallerGivenAmaxAndScale:GpuQuantize.GridExchange*'
T+=':GpuQuantize.TwoKernelCast*:GpuQuantize.CapturableInCudaGraph:GpuQuantize.BitExactAllRecipesShapesDtypes:GpuDispatch.*'
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_GPU_TEST_FILTER="$T" \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 timeout 170 bash scripts/gpu_check.sh >"$OUT/check.txt" 2>&1
echo "check: rc=$?" | tee -a "$OUT/status.txt"
B=build-gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168 --shape 1024x7168'
base=$(mktemp -d); tar -C "$base" -xJf ab/q45.tar.xz
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
F='GpuQuantize.GridExchangeInGraphsAndStreams:GpuQuantize.TwoKernelCast*:GpuQuantize.CallerGivenAmaxAndScale'
for tool in memcheck; do
  MXQ_GPU_TEST_SMALL=1 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
    --gtest_filter="$F" >"$OUT/$tool.log" 2>&1
  echo "$tool: rc=$? $(grep 'ERROR SUMMARY' "$OUT/$tool.log" | tail -1) $(grep -E 'PASSED|FAILED' "$OUT/$tool.log" | head -2 | tr '\n' ' ')" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
