#!/usr/bin/env bash
# Ran in session 46 call 1 (H100) with bench/ab/s46-decode-ring.patch and bench/ab/s46-gx-wait.patch applied.
# session 46, one call: bench/ab/s46_2.sh (the decode GEMM ring: tests, A/B, memcheck), then
# bench/ab/s46_1.sh's exchange-wait and given-amax runs without its ncu part.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
timeout 330 bash bench/ab/s46_2.sh
Q=build-gpu/bench/gpu/bench_quantize_gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 256x7168'
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for v in "" "-DMXQ_EXP_GX_SKIP=1" "-DMXQ_EXP_GX_SLEEP=32" "-DMXQ_EXP_GX_SLEEP=200" "-DMXQ_EXP_GX_TIMER_EVERY=64" \
           "-DMXQ_EXP_GX_TIMER_EVERY=0" "-DMXQ_EXP_GX_TIMER_EVERY=0 -DMXQ_EXP_GX_SLEEP=100" "NOPDL"; do
    flags=$v; env=""
    [ "$v" = NOPDL ] && { flags=""; env="MXQ_EXP_GX_NOPDL=1"; }
    echo "=== [${v:-default}] rep $r"
    env $env MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$flags" timeout 40 $Q $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/wait.txt"
echo "wait runs: $(grep -c '^===' "$OUT/wait.txt")" | tee -a "$OUT/status.txt"
for r in 1 2 3; do
  for v in "" "-DMXQ_EXP_NO_ONE_LAUNCH"; do
    echo "=== [${v:-default}] rep $r"
    MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$v" timeout 40 $Q --small --only fp8_tensor --only nvfp4 \
      --shape 128x7168 --shape 512x7168 --shape 1024x7168 2>&1 | grep -E 'given amax'
  done
done >"$OUT/given.txt"
echo "given runs: $(grep -c '^===' "$OUT/given.txt")" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
