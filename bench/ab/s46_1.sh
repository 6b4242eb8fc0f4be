#!/usr/bin/env bash
# Prepared in session 45 (not run): where the grid exchange's ~1.6 us wait goes (bench/NOTES.md v30).
# With bench/ab/s46-gx-wait.patch applied and packed (`git apply bench/ab/s46-gx-wait.patch;
# bash scripts/gpu_pack.sh`, carry [".deps", "prebuilt.tar.xz"]), JIT kernels (MXQ_BACKEND=cuda-jit)
# compiled with MXQ_EXP_JIT_FLAGS variants of grid_amax_bits, two alternating repetitions:
# SKIP=1 (no exchange: the floor), SLEEP=N (a nanosleep after a stale poll), TIMER_EVERY=N (the
# %globaltimer read every N polls, 0 never), and MXQ_EXP_GX_NOPDL=1 (no PDL on the exchange's
# launch). Then the given-amax calls with no one-launch code compiled in (MXQ_EXP_NO_ONE_LAUNCH),
# three alternating repetitions, and ncu's kernel durations, one launch at a time, of the default
# and of SKIP=1.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_GPU_TEST_FILTER='GpuQuantize.GridExchange*' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 timeout 120 bash scripts/gpu_check.sh
Q=build-gpu/bench/gpu/bench_quantize_gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 256x7168'
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for v in "" "-DMXQ_EXP_GX_SKIP=1" "-DMXQ_EXP_GX_SLEEP=32" "-DMXQ_EXP_GX_SLEEP=200" "-DMXQ_EXP_GX_TIMER_EVERY=64" \
           "-DMXQ_EXP_GX_TIMER_EVERY=0" "-DMXQ_EXP_GX_TIMER_EVERY=0 -DMXQ_EXP_GX_SLEEP=100" "NOPDL"; do
    flags=$v; env=""
    [ "$v" = NOPDL ] && { flags=""; env="MXQ_EXP_GX_NOPDL=1"; }
    echo "=== [${v:-default}] rep $r"
    env $env MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$flags" timeout 60 $Q $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/wait.txt"
echo "wait runs: $(grep -c '^===' "$OUT/wait.txt")" | tee -a "$OUT/status.txt"
# the given-amax loss of 1007909 (RESULTS session 45, call 4): the same JIT kernels with no
# one-launch code compiled in (MXQ_EXP_NO_ONE_LAUNCH; only the given-amax rows mean anything)
for r in 1 2 3; do
  for v in "" "-DMXQ_EXP_NO_ONE_LAUNCH"; do
    echo "=== [${v:-default}] rep $r"
    MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$v" timeout 60 $Q --small --only fp8_tensor --only nvfp4 \
      --shape 128x7168 --shape 512x7168 --shape 1024x7168 2>&1 | grep -E 'given amax'
  done
done >"$OUT/given.txt"
echo "given runs: $(grep -c '^===' "$OUT/given.txt")" | tee -a "$OUT/status.txt"
for v in "" "-DMXQ_EXP_GX_SKIP=1"; do
  MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$v" timeout 150 ncu --kernel-name regex:fast_quantize --launch-count 600 \
    --metrics gpu__time_duration.sum,launch__grid_size $Q --small --only fp8_tensor --shape 128x7168 >"$OUT/ncu${v:+_skip}.txt" 2>&1
  echo "ncu [${v:-default}]: rc=$? $(grep -c gpu__time_duration "$OUT/ncu${v:+_skip}.txt") kernels" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
