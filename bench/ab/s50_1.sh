#!/usr/bin/env bash
# Prepared in session 50 (not run): the mma.sync decode GEMM in 16-warp CTAs and a chained
# (lean) K-block loop (bench/NOTES.md v35; session 48's wip/decode16-r, lost with its branch,
# rewritten from v33's description). With bench/ab/s50-decode16.patch applied and packed
# (`git apply bench/ab/s50-decode16.patch; bash scripts/gpu_pack.sh`, carry [".deps",
# "prebuilt.tar.xz"]):
# 1. the exact GEMM test's mma.sync decode cases alone (MXQ_GPU_TEST_MMA_DECODE_ONLY=1; three of
#    them require "16-warp CTAs" in the dispatch record, three take UE8M0 byte scales), default and
#    chained (MXQ_EXP_DECODE_CHAIN=1); the random test both ways (its largest decode error); the
#    backend selection;
# 2. the A/B in one build, two alternating repetitions of three arms: warps8
#    (MXQ_EXP_DECODE_WARPS=8: main's kernel), default (16-warp CTAs where decode_mma_warps says so:
#    of the issue shapes 1x2112x7168 only, plus 8x2112x7168 and 1x1056x7168 here) and chain
#    (16-warp CTAs and the chained loop: every mma.sync shape);
# 3. memcheck of the decode cases, default and chained.
# Predicted (v33, H100): 1x2112x7168 ~10.4 -> ~6-7 us with 16-warp CTAs; the chained loop (189
# instructions a K block with fp32 scales against 281, 92 registers against 112) a further 15-25 %
# where 8-warp CTAs run (1x4096x7168, 1x24576x1536, 1x7168x2048), less at the 16-warp shapes.
# Landing rule: 16-warp CTAs if the exact cases pass, memcheck is clean, 1x2112x7168 is faster
# in both repetitions and no control is slower than 3 %; the chained loop as the only mma.sync
# loop (knobs dropped) if its exact and random cases pass, its largest decode error stays within
# 2x the default's, and it is no slower at any shape.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_MMA_DECODE_ONLY=1 \
MXQ_GPU_TEST_FILTER='GpuGemm.ExactOnSmallIntegers:GpuGemm.BackendSelection' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 MXQ_SKIP_PYTEST=1 timeout 200 bash scripts/gpu_check.sh
T=build-gpu/tests/gpu/mxq_gpu_tests
# the random test's largest fp32 relative error of the decode kernels ("decode" in its last line),
# default against chained: the chain sums in the tensor cores' accumulator instead of fp32 FADDs
for arm in default chain; do
  ev=MXQ_EXP_NONE=1; [ $arm = chain ] && ev=MXQ_EXP_DECODE_CHAIN=1
  env $ev MXQ_GPU_TEST_MMA_DECODE_ONLY=1 MXQ_GPU_TEST_SMALL=1 timeout 120 $T \
    --gtest_filter='GpuGemm.ExactOnSmallIntegers:GpuGemm.RandomAgainstReference' >"$OUT/tests_$arm.txt" 2>&1
  echo "[$arm] rc=$? $(grep -E '^\[  (PASSED|FAILED) |^gemm cases' "$OUT/tests_$arm.txt" | tr '\n' ' ')" | tee -a "$OUT/status.txt"
done
G=build-gpu/bench/gpu/bench_gemm_gpu
SHAPES='--shape 1x2112x7168 --shape 8x2112x7168 --shape 1x1056x7168 --shape 1x4096x7168 --shape 1x7168x2048 --shape 1x24576x1536 --shape 1x32768x512'
for r in 1 2; do
  for arm in warps8 default chain; do
    echo "=== [$arm] rep $r"
    case $arm in
      warps8) ev=MXQ_EXP_DECODE_WARPS=8 ;;
      chain) ev=MXQ_EXP_DECODE_CHAIN=1 ;;
      *) ev=MXQ_EXP_NONE=1 ;;
    esac
    env $ev timeout 90 $G $SHAPES 2>&1 | grep -E '^[0-9]+x[0-9]+x[0-9]+ '
  done
done >"$OUT/ab.txt"
echo "a/b runs: $(grep -c '^===' "$OUT/ab.txt")" | tee -a "$OUT/status.txt"
# (not the warps8 arm: its records say "mma.sync", which the 16-warp exact cases refuse)
for arm in default chain; do
  ev=MXQ_EXP_NONE=1; [ $arm = chain ] && ev=MXQ_EXP_DECODE_CHAIN=1
  env $ev MXQ_GPU_TEST_MMA_DECODE_ONLY=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 $T \
    --gtest_filter='GpuGemm.ExactOnSmallIntegers' >"$OUT/memcheck_$arm.txt" 2>&1
  echo "memcheck [$arm]: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$arm.txt")" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
