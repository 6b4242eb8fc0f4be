#!/usr/bin/env bash
# session 42's call 1: main + bench/ab/early-cast.patch + the grid exchange (one launch for per-tensor
# calls up to one CTA per SM) + the EXPERIMENT knobs (bench/ab/exp-grid-knobs.patch, MXQ_EXP_GRID_COOP;
# never merged). Tests of both, decode A/B against main 4b10ee4's bench (ab/main41.tar.xz), the
# cooperative attribute off, the fused rows grid sweep, memcheck of the new tests, ncu of mxfp8 + dbias.
# Before the call (on main 7638c65 or later): git apply bench/ab/s42-tree.patch (the early cast, the grid
# exchange and the EXPERIMENT knobs; bench/ab/grid-exchange.patch is the same without the knobs, for
# landing); bash scripts/gpu_deps.sh; bash scripts/gpu_pack.sh; bash scripts/ab_base.sh main main41;
# then run it with carry [".deps", "prebuilt.tar.xz", "ab"] (it writes into the device's $OUT).
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 16x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 1024x7168'
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore:GpuQuantize.PerTensorSmallCallsInOneLaunch:GpuQuantize.GridExchangeInGraphsAndStreams:GpuQuantize.CapturableInCudaGraph:GpuQuantize.BitExactSpecialValues:GpuQuantize.CallerGivenAmaxAndScale:GpuQuantize.OneLaunchClustersFitAWholeGpu' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 MXQ_AB_BASE=ab/main41.tar.xz MXQ_AB_REPEAT=2 MXQ_AB_ARGS="$SMALL" \
timeout 200 bash scripts/gpu_check.sh
B=build-gpu
Q=$B/bench/gpu/bench_quantize_gpu
{ echo "=== MXQ_EXP_GRID_COOP=0"; MXQ_EXP_GRID_COOP=0 timeout 30 $Q $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '; } >"$OUT/coop0.txt"
MXQ_GPU_TEST_SMALL=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter='GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore:GpuQuantize.GridExchangeInGraphsAndStreams' >"$OUT/memcheck.log" 2>&1
echo "memcheck (TwoKernelCast, GridExchange): rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$OUT/status.txt"
ARGS='--only mxfp8+fused --only nvfp4+fused --shape 8192x7168 --shape 32768x7168'
sets=("" "MXQ_EXP_ROWS_TILES=8 MXQ_EXP_FP4_TILES=8" "MXQ_EXP_ROWS_TILES=4 MXQ_EXP_FP4_TILES=4" "MXQ_EXP_ROWS_TILES=0 MXQ_EXP_FP4_TILES=2")
for s in "${sets[@]}"; do
  echo "=== [${s:-default}]"
  env $s timeout 30 $Q $ARGS 2>&1 | grep -E ' [0-9]+x[0-9]+ ' | grep -v "^copy"
done >"$OUT/grid.txt"
echo "grid runs: $(grep -c '^===' "$OUT/grid.txt")" | tee -a "$OUT/status.txt"
timeout 90 ncu --clock-control none --kernel-name-base mangled -k 'regex:ELS7_0ELi32ELb0E' --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  $Q --only mxfp8+fused --shape 8192x7168 2>&1 | grep -vE '^\s*$|^==PROF==' | tail -60 >"$OUT/ncu_dbias.txt"
cat "$OUT/status.txt"
