#!/usr/bin/env bash
# Run HERE: builds the benchmark programs of git revision REF (a branch, tag or commit) in a
# temporary worktree and packs them into ab/NAME.tar.xz, the "base" side of a same-process A/B
# on the GPU machine (ab/ is git-excluded and travels with carry ["ab"]; unpack there with
# `tar -C /tmp/NAME -xJf ab/NAME.tar.xz` and run /tmp/NAME/bench/gpu/bench_quantize_gpu). The
# programs link the library statically, so each side runs its own kernels.
#   bash scripts/ab_base.sh main base          # ~4 min on 2 cores
#   MXQ_AB_TARGETS="bench_quantize_gpu bench_gemm_gpu" bash scripts/ab_base.sh REF NAME
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/ab_base.sh REF NAME" >&2; exit 2; }
ref=$1 name=$2
rev=$(git rev-parse --verify "$ref^{commit}") || { echo "ab_base: REF '$ref' is not a commit" >&2; exit 2; }
[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { echo "ab_base: NAME '$name': letters, digits, '.', '_' and '-' only" >&2; exit 2; }
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/src" "$rev"
targets=${MXQ_AB_TARGETS:-bench_quantize_gpu}
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1 ||
  { tail -20 "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" --target $targets >"$tmp/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$tmp/build.log" | head -40; exit 1; }
mkdir -p "$tmp/pack/bench/gpu" ab
for t in $targets; do
  f=$(find "$tmp/build" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "ab_base: no program $t was built" >&2; exit 1; }
  cp "$f" "$tmp/pack/bench/gpu/"
done
echo "$rev" >"$tmp/pack/REV"
tar -C "$tmp/pack" -cJf "ab/$name.tar.xz" REV bench
grep -qx '/ab/' .git/info/exclude 2>/dev/null || { mkdir -p "$(git rev-parse --git-common-dir)/info"; echo '/ab/' >>"$(git rev-parse --git-common-dir)/info/exclude"; }
echo "ab/$name.tar.xz: $(du -h "ab/$name.tar.xz" | cut -f1), $targets of $rev"
