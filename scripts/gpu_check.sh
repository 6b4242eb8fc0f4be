#!/usr/bin/env bash
# The GPU machine's one script: build, GPU tests, compute-sanitizer, SASS/resource checks,
# benchmarks with their peers, and one summary table printed last.
#   bash scripts/gpu_check.sh            everything
#   MXQ_SKIP_BENCH=1 bash scripts/gpu_check.sh   tests and sanitizer only
#   MXQ_SKIP_PEER=1 ...                           no torch.compile peer (it compiles for minutes)
#   MXQ_SKIP_SANITIZER=1 ...                      no compute-sanitizer
#   MXQ_SANITIZERS="memcheck racecheck" ...       which compute-sanitizer tools (default all four)
#   MXQ_PEER_TIMEOUT=240 ...                      seconds for the torch.compile peer (default 420)
#   MXQ_PEER_ARGS='--recipes mxfp8:dir=both' ...  arguments of bench/gpu/peer_torch.py (default all recipes)
#   MXQ_NCU="mxfp8 nvfp4" ...                     ncu profile of one launch per recipe
#   MXQ_NCU_ARGS='--section MemoryWorkloadAnalysis_Tables --print-details all' ...  more ncu sections / metrics
#   MXQ_SASS=REGEX ...                            SASS of the matching bf16 fast kernels
#   MXQ_GPU_TEST_FILTER='GpuFused.*' ...          gtest filter of the GPU tests (default all)
#   MXQ_SANITIZE_FILTER='GpuFused.*' ...          gtest filter of memcheck (default all)
#   MXQ_RACECHECK_FILTER='*' ...                  gtest filter of racecheck (default two quantize tests)
#   MXQ_SKIP_PYTEST=1 ...                         no Python package tests
#   MXQ_PYTEST_TIMEOUT=150 ...                    seconds for them (default 300; rc 124 when cut)
#   MXQ_PYTEST=1 MXQ_PREBUILT=... ...             with a prebuilt tree: run them from the packed extension
#   MXQ_GEMM_BENCH_ARGS=--quick ...               two GEMM shapes only
#   MXQ_BENCH_SWEEP='--only nvfp4 --shape 4096x7168 --shape 8192x7168' ...  a second quantize
#                                                 benchmark run with these arguments, its rows last
#   MXQ_BENCH=quantize ...                        the quantize benchmark alone (no JIT or GEMM
#                                                 benchmark; their programs are not built)
# The device tool stops a command at 600 s: split a full check over calls with these.
# Logs go to $OUT (the device tool's folder) or ./gpu-out. Before a device run, run
# scripts/gpu_deps.sh here and carry .deps (header-only dependencies).
#   MXQ_PREBUILT=prebuilt.tar.xz ...              the programs scripts/gpu_pack.sh built elsewhere for
#                                                 this tree (no build here; no Python package tests)
#   MXQ_AB_BASE=ab/base.tar.xz MXQ_AB_ARGS='--small --only fp8_tensor --shape 128x7168' ...
#                                                 a same-process A/B: the quantize benchmark of that
#                                                 archive (scripts/ab_base.sh REF base) and this tree's
#                                                 with these arguments, alternating, MXQ_AB_REPEAT
#                                                 times (default 2); their rows go to $OUT/ab.txt
set -uo pipefail
cd "$(dirname "$0")/.."
# The hash of everything the build reads (gpu_pack.sh stamps its archive with it): the same on
# both machines exactly when the trees are. Not through git: the GPU machine's copy of .git lags.
source_stamp() {
  find CMakeLists.txt cmake include src tests bench python -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -name '*.md' |
    LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-16
}
if [ "${1:-}" = --source-stamp ]; then source_stamp; exit 0; fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
BUILD=${MXQ_GPU_BUILD:-build-gpu}
status="$OUT/status.txt"
: >"$status"
# The device tool returns at most 8 files: status.txt and summary.txt stay as they are and every
# other log goes into logs.tar.gz when the script ends (a timeout's TERM included).
pack_logs() {
  (cd "$OUT" && ls | grep -v -E '^(status\.txt|summary\.txt|ab\.txt|logs\.tar\.gz)$' | tar czf logs.tar.gz -T - --remove-files) 2>/dev/null
}
trap pack_logs EXIT
trap 'exit 143' TERM INT
note() { echo "$*" | tee -a "$status"; }

note "date: $(date -u +%FT%TZ)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)$(git diff --quiet 2>/dev/null || echo +dirty)"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>&1 | head -1)"

if [ -n "${MXQ_PREBUILT:-}" ]; then
  # tar's xz, else Python's lzma (a machine without xz-utils); the stamp is checked before anything
  # is unpacked over the build directory
  if command -v xz >/dev/null; then
    stamp() { tar -xJOf "$MXQ_PREBUILT" PREBUILT; }
    unpack() { tar -C "$BUILD" -xJf "$MXQ_PREBUILT"; }
  else
    stamp() { python3 -c "import sys, tarfile; print(tarfile.open(sys.argv[1], 'r:xz').extractfile('PREBUILT').read().decode().strip())" "$MXQ_PREBUILT"; }
    unpack() { python3 -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2])" "$MXQ_PREBUILT" "$BUILD"; }
  fi
  packed=$(stamp) || { note "prebuilt: $MXQ_PREBUILT does not unpack"; exit 1; }
  [ "$packed" = "$(source_stamp)" ] ||
    { note "prebuilt: built from sources $packed, this tree is $(source_stamp): run scripts/gpu_pack.sh again"; exit 1; }
  mkdir -p "$BUILD" && unpack || { note "prebuilt: $MXQ_PREBUILT does not unpack"; exit 1; }
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  missing=$(ldd "$BUILD/tests/gpu/mxq_gpu_tests" | grep "not found")
  [ -z "$missing" ] || { note "prebuilt: libraries not found: $missing"; exit 1; }
  # the package's tests, asked for with MXQ_PYTEST=1, run where the pack holds the extension for
  # this machine's Python (a prebuilt call is otherwise a targeted one: they stay off)
  ext=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  if [ "${MXQ_PYTEST:-}" = 1 ] && [ -f "$BUILD/python/mxq/_core$ext" ]; then
    note "build: prebuilt (sources $(cat "$BUILD/PREBUILT"); the Python extension _core$ext)"
  else
    MXQ_SKIP_PYTEST=1
    note "build: prebuilt (sources $(cat "$BUILD/PREBUILT"); no Python package tests: MXQ_PYTEST=${MXQ_PYTEST:-unset}, $(
      [ -f "$BUILD/python/mxq/_core$ext" ] && echo "extension packed" || echo "no extension for this Python"))"
  fi
else
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMXQ_BUILD_PYTHON=ON >"$OUT/configure.log" 2>&1 || { note "configure: FAILED"; tail -30 "$OUT/configure.log"; exit 1; }
  targets="mxq mxq_gpu_tests bench_quantize_gpu"
  [ -n "${MXQ_SKIP_PYTEST:-}" ] || targets+=" _core"
  [ "${MXQ_BENCH:-all}" = quantize ] || targets+=" bench_gemm_gpu bench_jit"
  if cmake --build "$BUILD" -j "$(nproc)" --target $targets >"$OUT/build.log" 2>&1; then note "build: ok"; else note "build: FAILED"; grep -E "error" -A5 "$OUT/build.log" | head -60; exit 1; fi
fi

# The GPU test binary directly (label gpu in ctest; there it reports SKIPPED without a GPU).
"$BUILD/tests/gpu/mxq_gpu_tests" --gtest_filter="${MXQ_GPU_TEST_FILTER:-*}" >"$OUT/gpu_tests.log" 2>&1
note "gpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gpu_tests.log" | tr '\n' ' ') $(grep -E 'bit-exact cases' "$OUT/gpu_tests.log")"
grep -E "Failure|differs" -A3 "$OUT/gpu_tests.log" | head -20

# The Python package over CUDA: torch tensors, custom ops, torch.compile, CUDA graphs,
# torch._scaled_mm interop (marker gpu), and the CPU-side package tests with them.
if [ -z "${MXQ_SKIP_PYTEST:-}" ]; then
  PYTHONPATH="$PWD/$BUILD/python" MXQ_CACHE_DIR="${TMPDIR:-/tmp}/mxq-py-jit-cache" PYTHONDONTWRITEBYTECODE=1 \
    timeout -k 30 "${MXQ_PYTEST_TIMEOUT:-300}" python3 -m pytest tests/python_pkg -q -p no:cacheprovider -rs \
    ${MXQ_PYTEST_ARGS:-} >"$OUT/pytest.log" 2>&1
  note "python package (torch, gpu marker included): rc=$? $(tail -1 "$OUT/pytest.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20
fi

san() {  # tool, gtest filter
  MXQ_GPU_TEST_SMALL=1 compute-sanitizer --tool "$1" --error-exitcode 9 "$BUILD/tests/gpu/mxq_gpu_tests" \
    --gtest_filter="$2" >"$OUT/sanitizer_$1.log" 2>&1
  note "compute-sanitizer $1 ($2): rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_$1.log" | tail -1)"
}
# MXQ_SANITIZERS picks the tools (default: all four).
if [ -z "${MXQ_SKIP_SANITIZER:-}" ]; then
  for tool in ${MXQ_SANITIZERS:-memcheck racecheck synccheck initcheck}; do
    case $tool in
      memcheck) san memcheck "${MXQ_SANITIZE_FILTER:-*}" ;;
      racecheck) san racecheck "${MXQ_RACECHECK_FILTER:-GpuQuantize.BitExactSpecialValues:GpuQuantize.RandomShapes}" ;;
      *) san "$tool" 'GpuQuantize.BitExactSpecialValues' ;;
    esac
  done
fi

lib="$BUILD/libmxq_core.a"  # the CUDA objects (mxq_cuda is an object library) live in it
cuobjdump --dump-resource-usage "$lib" >"$OUT/resource_usage.txt" 2>&1
# (A line "trap: line 2: unexpected EOF while looking for matching `)'" with "reader_loop: bad jump"
# here, and no counts, means a `timeout` around this script sent TERM while cuobjdump ran inside a
# command substitution: bash runs the TERM trap mid-parse and aborts (session 45: 177 s of tests
# under `timeout 200`). Leave the script time for the counts after the tests.)
sass_count() { cuobjdump -sass "$1" 2>/dev/null | grep -cE "$2"; }
local_mem='\b(LDL|STL)(\.[A-Z0-9]+)*\s'
max_reg() { grep -oE 'REG:[0-9]+' "$1" | sort -t: -k2 -n | tail -1; }
note "sass: F2FP (fp8 cvt) instructions: $(sass_count "$lib" F2FP); local-memory (LDL/STL): $(sass_count "$lib" "$local_mem"); max REG: $(max_reg "$OUT/resource_usage.txt")"
wg="$BUILD/src/cuda/CMakeFiles/mxq_cuda.dir/gemm/wgmma.cu.o"  # issue 6: QGMMA present, no local memory
wg_usage() { cuobjdump --dump-resource-usage "$wg" 2>/dev/null | grep -oE 'REG:[0-9]+ STACK:[0-9]+' | sort -u | tr '\n' ' '; }
note "gemm wgmma kernel sass: QGMMA $(sass_count "$wg" QGMMA), LDL/STL $(sass_count "$wg" "$local_mem"), $(wg_usage)"

if [ -n "${MXQ_SASS:-}" ]; then  # MXQ_SASS=REGEX: SASS of the matching bf16 fast kernels
  cuobjdump -sass "$BUILD/src/cuda/CMakeFiles/mxq_cuda.dir/quantize/fast_bf16.cu.o" 2>&1 |
    awk -v pat="$MXQ_SASS" '/Function :/ {keep = ($0 ~ pat)} keep' >"$OUT/sass.txt"
  note "sass dump: $(grep -c 'Function :' "$OUT/sass.txt") functions in sass.txt"
fi

if [ -n "${MXQ_NCU:-}" ]; then  # MXQ_NCU="mxfp8 nvfp4 ...": one profiled tile-kernel launch each
  for r in $MXQ_NCU; do
    ncu --clock-control none -k regex:quantize_ --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats \
      ${MXQ_NCU_ARGS:-} "$BUILD/bench/gpu/bench_quantize_gpu" --only "$r" >"$OUT/ncu_${r//[^a-z0-9_]/_}.txt" 2>&1
    note "ncu $r: $(grep -E 'Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Executed Instructions |Issue Slots Busy' "$OUT/ncu_${r//[^a-z0-9_]/_}.txt" | tr -s ' ' | tr '\n' ';')"
  done
fi

# MXQ_AB_BASE: the base's benchmark and this tree's, alternating, in one process each, on one GPU.
if [ -n "${MXQ_AB_BASE:-}" ]; then
  abdir=$(mktemp -d)
  if tar -C "$abdir" -xJf "$MXQ_AB_BASE" && [ -x "$abdir/bench/gpu/bench_quantize_gpu" ]; then
    for i in $(seq "${MXQ_AB_REPEAT:-2}"); do
      for side in base tree; do
        prog="$BUILD/bench/gpu/bench_quantize_gpu"
        [ $side = base ] && prog="$abdir/bench/gpu/bench_quantize_gpu"
        echo "=== $side, repetition $i"
        "$prog" ${MXQ_AB_ARGS:-} 2>&1 | grep -E ' [0-9]+x[0-9]+ '
      done
    done >"$OUT/ab.txt"
    note "a/b: base $(cat "$abdir/REV" 2>/dev/null || echo "of unknown revision") against this tree, $(grep -c '^===' "$OUT/ab.txt") runs of bench_quantize_gpu ${MXQ_AB_ARGS:-}: ab.txt"
  else
    note "a/b: $MXQ_AB_BASE does not unpack to bench/gpu/bench_quantize_gpu (make it with scripts/ab_base.sh)"
  fi
  rm -rf "$abdir"
fi

if [ -z "${MXQ_SKIP_BENCH:-}" ]; then
  # The SM clock, power and throttle reasons every 500 ms while the benchmarks run: the
  # issue-bound kernels move with the SM clock, the copy and the memory-bound ones do not
  # (session 22 saw some FP4 and fused kernels up to 27% slower late in the full benchmark).
  nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader,nounits \
    -lms 500 >"$OUT/clocks.csv" 2>/dev/null &
  clocks_pid=$!
  if [ "${MXQ_BENCH:-all}" != quantize ]; then
  # JIT costs: compile, disk load, memory hit (bench_jit), and a cold vs warm `mxq cache warmup`
  "$BUILD/bench/bench_jit" >"$OUT/bench_jit.log" 2>&1 || note "bench_jit: FAILED rc=$?"
  note "jit: $(grep -E 'compile|fused|disk-cache|memory-cache' "$OUT/bench_jit.log" | tr -s ' ' | tr '\n' ';')"
  jc="${TMPDIR:-/tmp}/mxq-warmup-cache"  # not under $OUT: 200 files would crowd what comes back
  rm -rf "$jc"
  t0=$(date +%s.%N); MXQ_CACHE_DIR="$jc" "$BUILD/mxq" cache warmup >/dev/null 2>&1; t1=$(date +%s.%N)
  MXQ_CACHE_DIR="$jc" "$BUILD/mxq" cache warmup >/dev/null 2>&1; t2=$(date +%s.%N)
  note "jit warm-up of every configuration: cold $(python3 -c "print(round($t1 - $t0, 2))") s, from the disk cache $(python3 -c "print(round($t2 - $t1, 2))") s ($(ls "$jc" | wc -l) entries)"
  fi
  "$BUILD/bench/gpu/bench_quantize_gpu" --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1 || note "bench: FAILED rc=$?"
  if [ -n "${MXQ_BENCH_SWEEP:-}" ]; then  # a second run of the benchmark with these arguments (--only, --shape, --repeat)
    "$BUILD/bench/gpu/bench_quantize_gpu" $MXQ_BENCH_SWEEP >"$OUT/bench_sweep.log" 2>&1 || note "bench sweep: FAILED rc=$?"
  fi
  [ -n "${MXQ_SKIP_PEER:-}" ] || PYTHONUNBUFFERED=1 timeout "${MXQ_PEER_TIMEOUT:-420}" python3 bench/gpu/peer_torch.py --json "$OUT/peer.json" ${MXQ_PEER_ARGS:-} >"$OUT/peer.log" 2>&1 || note "torch peer: FAILED or timed out rc=$?"
  # The GEMM (issue 6): cuBLASLt's block-scaled path and the generic kernel through mxq::gemm.
  [ "${MXQ_BENCH:-all}" = quantize ] ||
    "$BUILD/bench/gpu/bench_gemm_gpu" ${MXQ_GEMM_BENCH_ARGS:-} >"$OUT/bench_gemm.log" 2>&1 || note "bench_gemm: FAILED rc=$?"
  kill "$clocks_pid" 2>/dev/null; wait "$clocks_pid" 2>/dev/null
  note "clocks during the benchmarks ($(wc -l <"$OUT/clocks.csv") samples): SM $(cut -d, -f1 "$OUT/clocks.csv" | sort -n | sed -n '1p;$p' | tr -d ' ' | paste -sd-) MHz, power $(cut -d, -f2 "$OUT/clocks.csv" | sort -n | sed -n '1p;$p' | tr -d ' ' | paste -sd-) W, throttle reasons $(cut -d, -f3 "$OUT/clocks.csv" | tr -d ' ' | sort | uniq -c | tr -s ' ' | paste -sd' ')"
  python3 scripts/summary.py "$OUT/bench.json" "$OUT/peer.json" "$status" | tee "$OUT/summary.txt"
  if [ -n "${MXQ_BENCH_SWEEP:-}" ]; then
    { echo; echo "bench_quantize_gpu $MXQ_BENCH_SWEEP:"; grep -E 'x[0-9]+ ' "$OUT/bench_sweep.log"; } | tee -a "$OUT/summary.txt"
  fi
  if [ "${MXQ_BENCH:-all}" != quantize ]; then
    echo; echo "GEMM (bf16 D, A 1x128 mn_major_tma x B 128x128, CUDA-graph replay):" | tee -a "$OUT/summary.txt"
    tee -a "$OUT/summary.txt" <"$OUT/bench_gemm.log"
  fi
else
  cat "$status"
fi
