#!/usr/bin/env bash
# Prepared in session 47 (not run): the grid exchange's own word read inside take_amax's grid branch,
# ahead of the tiles' re-read (JIT -DMXQ_EXP_GX_OWN_IN_TAKE), against main's kernel, over the
# cluster-path shapes (1, 16 rows) that 2a83bcb's placement slowed and the grid-path ones (64-256)
# it sped up (bench/NOTES.md v32). With bench/ab/s48-own-in-take.patch applied (it holds
# s47-gx-stamps.patch's JIT flags too; do not combine with -DMXQ_EXP_GX_STAMPS, whose branch comes
# first) and packed (`bash scripts/gpu_pack.sh`), carry [".deps", "prebuilt.tar.xz"]. Predicted: the
# grid rows as call 3 of session 47 (-0.07 to -0.22 us), the cluster rows unchanged (+-0.03).
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
OUT=$OUT/check MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
  MXQ_GPU_TEST_FILTER='GpuQuantize.GridExchange*:GpuQuantize.PerTensorSmallCallsInOneLaunch' \
  timeout 120 bash scripts/gpu_check.sh >/dev/null 2>&1
echo "check: rc=$?" | tee -a "$OUT/status.txt"
# the variant's own bits: the JIT's all-recipes bit-exact test compiled with the flag
MXQ_GPU_TEST_SMALL=1 MXQ_CACHE_DIR=/tmp/jc-OWN_IN_TAKE MXQ_EXP_JIT_FLAGS=-DMXQ_EXP_GX_OWN_IN_TAKE timeout 120 \
  build-gpu/tests/gpu/mxq_gpu_tests --gtest_filter='GpuDispatch.JitBitExactAllRecipes' >"$OUT/jit_test.log" 2>&1
echo "jit test with the variant: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/jit_test.log" | tr '\n' ' ')" | tee -a "$OUT/status.txt"
Q=build-gpu/bench/gpu/bench_quantize_gpu
SH='--shape 1x7168 --shape 16x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168 --shape 512x7168'
for r in 1 2 3; do
  for v in main OWN_IN_TAKE; do
    f=""; [ $v != main ] && f="-DMXQ_EXP_GX_$v"
    echo "=== $v rep $r"
    MXQ_CACHE_DIR=/tmp/jc-$v MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$f" timeout 40 \
      $Q --small --only fp8_tensor --only nvfp4 $SH 2>&1 | grep -E ' [0-9]+x[0-9]+ |rror'
  done
done >"$OUT/ab.txt"
echo "ab runs: $(grep -c '^===' "$OUT/ab.txt")" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
