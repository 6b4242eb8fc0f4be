#!/usr/bin/env bash
# Prepared in session 46 (not run): where the mma.sync decode GEMM's time goes at M = 1 (bench/NOTES.md
# v31: a deeper ring made it slower, so not DRAM latency). ncu of one launch each (graph replay is
# off under ncu: the launch's duration, not the replay's per-call time) at 1x2112x7168 (7 K blocks a
# warp, 132 CTAs) and 1x24576x1536 (12 blocks, 192 CTAs): speed of light, warp states (the stall
# reasons), scheduler, instruction mix, memory workload, occupancy. On main as packed (`bash
# scripts/gpu_pack.sh`), carry [".deps", "prebuilt.tar.xz"].
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
MXQ_PREBUILT=prebuilt.tar.xz MXQ_GPU_TEST_FILTER='GpuGemm.BackendSelection' MXQ_SKIP_SANITIZER=1 MXQ_SKIP_BENCH=1 \
  timeout 120 bash scripts/gpu_check.sh >"$OUT/check.txt" 2>&1
G=build-gpu/bench/gpu/bench_gemm_gpu
for s in 1x2112x7168 1x24576x1536; do
  timeout 150 ncu --clock-control none -k regex:gemm_decode_mma --launch-skip 20 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    $G --shape $s >"$OUT/ncu_$s.txt" 2>&1
  echo "ncu $s: rc=$? $(grep -E 'Duration|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy|Stall' "$OUT/ncu_$s.txt" | tr -s ' ' | tr '\n' ';' | cut -c1-900)" | tee -a "$OUT/status.txt"
done
cat "$OUT/status.txt"
