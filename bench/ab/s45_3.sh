#!/usr/bin/env bash
# session 45 call 5: main 1007909 (the parity exchange) + the JIT-only MXQ_EXP_GX_SKIP knob.
# GPU tests (GpuQuantize, GpuFused), then what the one launch costs without its exchange (JIT:
# default / SKIP=1 the CTA's own maximum / SKIP=2 its store, no wait; wrong amax, timing only),
# two alternating repetitions, then ncu kernel durations (no cache flush, no clock lock) of
# fp8_tensor 128x7168 (device amax, grid exchange, then given amax).
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 \
MXQ_GPU_TEST_FILTER='GpuQuantize.*:GpuFused.*:GpuDispatch.*' MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
timeout 200 bash scripts/gpu_check.sh
Q=build-gpu/bench/gpu/bench_quantize_gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 64x7168 --shape 128x7168 --shape 256x7168'
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for g in none 1 2; do
    echo "=== skip=$g rep $r"
    f=""; [ $g != none ] && f="-DMXQ_EXP_GX_SKIP=$g"
    MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$f" timeout 60 $Q $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/skip.txt"
echo "skip runs: $(grep -c '^===' "$OUT/skip.txt")" | tee -a "$OUT/status.txt"
timeout 120 ncu --cache-control none --clock-control none --kernel-name regex:fast_quantize --launch-count 60 \
  --metrics gpu__time_duration.sum $Q --small --only fp8_tensor --shape 128x7168 >"$OUT/ncu.txt" 2>&1
echo "ncu: rc=$? $(grep -c gpu__time_duration "$OUT/ncu.txt") kernels" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
