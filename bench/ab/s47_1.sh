#!/usr/bin/env bash
# Prepared in session 46 (not run): one call for main's per-tensor twins (e05a0e7) and for where the
# grid exchange's wait goes (bench/NOTES.md v31). With bench/ab/s47-gx-stamps.patch applied (it holds
# s46-gx-wait.patch's JIT knobs too) and packed: `git apply bench/ab/s47-gx-stamps.patch; bash
# scripts/gpu_pack.sh; bash scripts/ab_base.sh 17cbfbd q45`, carry [".deps", "prebuilt.tar.xz", "ab"].
# 1. bench/ab/s46_4.sh: tests, the twins' A/B against 17cbfbd, memcheck (the patch changes nothing
#    by default: its code is behind -D flags and environment variables).
# 2. The exchange's CTAs stamp %globaltimer at start, past the wait, tiles' max taken and every word
#    seen (JIT, -DMXQ_EXP_GX_STAMPS with MXQ_EXP_GX_STAMPS=1); each process's last grid-exchange
#    launch is summarised on stderr ("gx stamps: ..."), one shape and recipe per process, twice.
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
timeout 400 bash bench/ab/s46_4.sh
Q=build-gpu/bench/gpu/bench_quantize_gpu
export MXQ_CACHE_DIR=$(mktemp -d)
for r in 1 2; do
  for recipe in fp8_tensor nvfp4; do
    for shape in 64x7168 128x7168 256x7168; do
      echo "=== $recipe $shape rep $r"
      MXQ_BACKEND=cuda-jit MXQ_EXP_JIT_FLAGS="-DMXQ_EXP_GX_STAMPS" MXQ_EXP_GX_STAMPS=1 timeout 30 \
        $Q --small --only $recipe --shape $shape 2>&1 | grep -E "gx stamps| [0-9]+x[0-9]+ "
    done
  done
done >"$OUT/stamps.txt"
echo "stamp runs: $(grep -c '^===' "$OUT/stamps.txt"), summaries: $(grep -c 'every word seen' "$OUT/stamps.txt")" | tee -a "$OUT/status.txt"
cat "$OUT/status.txt"
