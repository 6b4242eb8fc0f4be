#!/usr/bin/env bash
# Prepared in session 44 (not run): with bench/ab/s44-gx-knobs.patch applied and packed, what the
# grid exchange's 2.2 us (over a given-amax call, H100) is made of. JIT kernels (MXQ_BACKEND=cuda-jit)
# compiled with MXQ_EXP_GX bits (fast.cuh grid_amax_bits: 1 relaxed polls + one fence, 2 no
# nanosleep, 4 release arrival + the last CTA's fence), and the launch without the cooperative
# attribute (MXQ_EXP_NOCOOP=1), alternating, two repetitions; then ncu's kernel time of the default.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_GPU_TEST_FILTER='GpuQuantize.GridExchange*' \
MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 timeout 80 bash scripts/gpu_check.sh
Q=build-gpu/bench/gpu/bench_quantize_gpu
SMALL='--small --only fp8_tensor --only nvfp4 --shape 1x7168 --shape 64x7168 --shape 128x7168 --shape 256x7168'
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for v in "MXQ_EXP_GX=0" "MXQ_EXP_GX=1" "MXQ_EXP_GX=2" "MXQ_EXP_GX=4" "MXQ_EXP_GX=7" "MXQ_EXP_GX=0 MXQ_EXP_NOCOOP=1"; do
    g=${v%% *}; g=${g#MXQ_EXP_GX=}; extra=""; [ "$v" != "${v#* }" ] && extra=${v#* }
    echo "=== [$v] rep $r"
    env MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="-DMXQ_EXP_GX=$g" $extra timeout 60 $Q $SMALL 2>&1 | grep -E ' [0-9]+x[0-9]+ '
  done
done >"$OUT/gx.txt"
echo "gx runs: $(grep -c '^===' "$OUT/gx.txt")" | tee -a "$OUT/status.txt"
MXQ_BACKEND=cuda-jit timeout 120 ncu --kernel-name regex:fast_quantize --launch-count 6 --metrics gpu__time_duration.sum \
  $Q --small --only fp8_tensor --shape 128x7168 >"$OUT/ncu.txt" 2>&1
echo "ncu: rc=$? $(grep -c gpu__time_duration "$OUT/ncu.txt") kernels" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
