#!/usr/bin/env bash
# session 43 call (prepared, not run): with bench/ab/s43-land.patch and bench/ab/s43-knobs.patch applied, tests of the capture fix, the grid exchange and the DRAM-keyed fused rows grid;
# decode A/B (one repetition); fused rows grid, new default against two tiles per CTA; memcheck.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 16x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168 --shape 1024x7168'
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.*:GpuFused.TallShapesWalkManyTiles:GpuFused.DbiasAtAnyFloatAlignment' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 MXQ_AB_BASE=ab/main41.tar.xz MXQ_AB_REPEAT=1 MXQ_AB_ARGS="$SMALL" \
timeout 150 bash scripts/gpu_check.sh
B=build-gpu
Q=$B/bench/gpu/bench_quantize_gpu
ARGS='--only mxfp8+fused --shape 8192x7168 --shape 32768x7168'
for r in 1 2; do for s in "" "MXQ_EXP_ROWS_TILES=2"; do
  echo "=== [${s:-default}] rep $r"
  env $s timeout 25 $Q $ARGS 2>&1 | grep -E ' [0-9]+x[0-9]+ ' | grep -v "^copy"
done; done >"$OUT/grid.txt"
echo "grid runs: $(grep -c '^===' "$OUT/grid.txt")" | tee -a "$OUT/status.txt"
MXQ_GPU_TEST_SMALL=1 timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter='GpuQuantize.GridExchangeInGraphsAndStreams' >"$OUT/memcheck.log" 2>&1
echo "memcheck (GridExchange): rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
