#!/usr/bin/env bash
# session 47 call 2: (1) every GPU test (small sizes) on main's code (the experiments below are behind -D
# flags); (2) the grid exchange's words' trip (s47_1's stamps: ~1.4-1.9 us from the last CTA's
# "tiles' max taken" to "every word seen", the launch skew only 60-350 ns): JIT variants
# EARLY_OWN (the CTA's own word loaded right after the programmatic wait, off the chain) and SEEN (a
# word seen with the launch's parity is not polled again: less L2 traffic on the words' lines), A/B
# against the default in alternating processes, then stamps of both together; (3) ncu of the
# decode GEMM (s47_2). With bench/ab/s47-gx-stamps.patch and the s47 variants applied and packed.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_SMALL=1 MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
  timeout 200 bash scripts/gpu_check.sh >"$OUT/check.txt" 2>&1
echo "check: rc=$? $(grep -E 'gpu tests:' "$OUT/check.txt" | tail -1)" | tee -a "$OUT/status.txt"
Q=build-gpu/bench/gpu/bench_quantize_gpu
SH='--shape 64x7168 --shape 128x7168 --shape 256x7168'
for r in 1 2; do
  for v in none EARLY_OWN SEEN "EARLY_OWN SEEN"; do
    f=""; [ "$v" != none ] && for d in $v; do f+=" -DMXQ_EXP_GX_$d"; done
    echo "=== $v rep $r"
    MXQ_CACHE_DIR=/tmp/jc-${v// /_} MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="$f" timeout 40 \
      $Q --small --only fp8_tensor --only nvfp4 $SH 2>&1 | grep -E ' [0-9]+x[0-9]+ |rror'
  done
done >"$OUT/gx.txt"
echo "gx runs: $(grep -c '^===' "$OUT/gx.txt")" | tee -a "$OUT/status.txt"
for recipe in fp8_tensor nvfp4; do
  echo "=== stamps EARLY_OWN SEEN $recipe 128x7168"
  MXQ_CACHE_DIR=/tmp/jc-st MXQ_BACKEND=cuda-jit MXQ_EXP_GX_STAMPS=1 \
    MXQ_EXP_JIT_FLAGS="-DMXQ_EXP_GX_STAMPS -DMXQ_EXP_GX_EARLY_OWN -DMXQ_EXP_GX_SEEN" timeout 30 \
    $Q --small --only $recipe --shape 128x7168 2>&1 | grep -E "gx stamps| [0-9]+x[0-9]+ "
done >"$OUT/stamps.txt"
G=build-gpu/bench/gpu/bench_gemm_gpu
for s in 1x2112x7168 1x24576x1536; do
  timeout 120 ncu --clock-control none -k regex:gemm_decode_mma --launch-skip 20 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    $G --shape $s >"$OUT/ncu_$s.txt" 2>&1
  echo "ncu $s: rc=$?" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
