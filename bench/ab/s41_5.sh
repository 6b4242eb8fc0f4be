#!/usr/bin/env bash
# session 41's call 5 (did not run: no machine): main + bench/ab/early-cast.patch + the EXPERIMENT
# grid knobs (bench/ab/exp-grid-knobs.patch, never merged). Tests of the early cast, decode A/B against main ccf6cc4's bench
# (ab/main41.tar.xz), the fused rows grid sweep (one round), memcheck of the new test.
# From bench/ab (kept in the repository: ab/ is not carried between checkouts). Before the call:
#   git apply bench/ab/early-cast.patch bench/ab/exp-grid-knobs.patch (on main 9142edd or later);
#   bash scripts/gpu_pack.sh; bash scripts/ab_base.sh main main41 (the base bench, ab/main41.tar.xz)
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore:GpuQuantize.PerTensorSmallCallsInOneLaunch:GpuQuantize.CapturableInCudaGraph:GpuQuantize.BitExactSpecialValues:GpuQuantize.CallerGivenAmaxAndScale' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 MXQ_AB_BASE=ab/main41.tar.xz MXQ_AB_REPEAT=2 \
MXQ_AB_ARGS='--small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 1024x7168' \
timeout 150 bash scripts/gpu_check.sh
B=build-gpu
Q=$B/bench/gpu/bench_quantize_gpu
ARGS='--only mxfp8+fused --only nvfp4+fused --only fp8_block_1x128:layout=mn_major_tma+fused --shape 4096x7168 --shape 8192x7168 --shape 32768x7168'
sets=("" "MXQ_EXP_ROWS_TILES=8 MXQ_EXP_FP4_TILES=8 MXQ_EXP_RING_MOST=0" "MXQ_EXP_ROWS_TILES=0 MXQ_EXP_FP4_TILES=2 MXQ_EXP_RING_MOST=8")
for s in "${sets[@]}"; do
  echo "=== [${s:-default}]"
  env $s timeout 30 $Q $ARGS 2>&1 | grep -E ' [0-9]+x[0-9]+ ' | grep -v "^copy"
done >"$OUT/grid.txt"
echo "grid runs: $(grep -c '^===' "$OUT/grid.txt")" | tee -a "$OUT/status.txt"
for n in 0 2 4 8 16; do  # the amax kernel's rows per CTA at decode sizes (EXPERIMENT knob)
  echo "=== MXQ_EXP_AMAX_ROWS=$n"
  MXQ_EXP_AMAX_ROWS=$n timeout 20 $Q --small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 1024x7168 2>&1 | grep -E ' [0-9]+x[0-9]+ '
done >"$OUT/amax_rows.txt"
MXQ_GPU_TEST_SMALL=1 timeout 45 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu/mxq_gpu_tests \
  --gtest_filter='GpuQuantize.TwoKernelCastReadsWhatTheStreamWroteJustBefore' >"$OUT/memcheck.log" 2>&1
echo "memcheck (TwoKernelCast...): rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$OUT/status.txt"
# ncu of mxfp8 + dbias (fuse 32) at 8192 x 7168: its L2 reductions (NOTES v26)
timeout 90 ncu --clock-control none --kernel-name-base mangled -k 'regex:ELS7_0ELi32ELb0E' --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
  $Q --only mxfp8+fused --shape 8192x7168 2>&1 | grep -vE '^\s*$|^==PROF==' | tail -80 >"$OUT/ncu_dbias.txt"
cat "$OUT/status.txt"
