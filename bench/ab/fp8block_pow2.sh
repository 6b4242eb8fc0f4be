#!/usr/bin/env bash
# Branch wip/fp8block-pow2's GPU check (on the GPU machine, from the repository root). Here first:
#   bash scripts/gpu_pack.sh                  # this branch's programs -> prebuilt.tar.xz
#   bash scripts/ab_base.sh main base         # main's benchmark -> ab/base.tar.xz
# then run this with carry [".deps", "prebuilt.tar.xz", "ab"]. It runs GpuQuantize.* (bit-exact
# against the CPU reference, fp8_block pow2 recipes among them) with memcheck over the all-recipes
# test, then the A/B of the recipes the change reaches, main's benchmark against this tree's.
# Predicted (bench/NOTES.md v19): fp4_block_1x32 row+col 0.72 / 0.70 -> ~0.75 of copy on an H100.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_SKIP_BENCH=1 MXQ_GPU_TEST_SMALL=1 MXQ_GPU_TEST_FILTER='GpuQuantize.*' \
  MXQ_SANITIZERS="memcheck" MXQ_SANITIZE_FILTER='GpuQuantize.BitExactAllRecipesShapesDtypes' \
  MXQ_AB_BASE=ab/base.tar.xz MXQ_AB_REPEAT=2 \
  MXQ_AB_ARGS='--only fp4_block_1x32:dir=both --only fp4_block_1x32 --only fp8_block_1x128:pow2=1,layout=packed_ue8m0,scale=float8_e8m0fnu --only fp8_block_1x128 --only mxfp4:dir=both --shape 8192x7168 --shape 32768x7168' \
  timeout 400 bash scripts/gpu_check.sh >/dev/null 2>&1
echo "check rc=$?"; cat "$OUT/status.txt"; grep -E "x7168" "$OUT/ab.txt" | cut -c1-150
