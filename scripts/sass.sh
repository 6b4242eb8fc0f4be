#!/usr/bin/env bash
# Run HERE (no GPU): the SASS of the JIT kernels a recipe compiles to, through a throwaway disk
# cache. Needs the build's mxq and cuobjdump, from the CUDA toolkit or, where the toolkit here
# lacks it (this machine's nvcc comes without), from triton's wheel (PyPI): `bash scripts/sass.sh
# --fetch` puts cuobjdump and nvdisasm in .tools/ (git-ignored).
#   bash scripts/sass.sh 'nvfp4:dir=both'            instruction count of each configuration
#   MXQ_SASS_DUMP=1 bash scripts/sass.sh RECIPE      and the SASS, in .tools/sass/<key>.sass
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.tools
if [ "${1:-}" = --fetch ]; then
  mkdir -p "$tools" && tmp=$(mktemp -d)
  python3 -m pip download --no-deps --only-binary=:all: triton -d "$tmp" >/dev/null
  unzip -o -j -q "$tmp"/triton-*.whl 'triton/backends/nvidia/bin/cuobjdump' 'triton/backends/nvidia/bin/nvdisasm' -d "$tools"
  rm -rf "$tmp"; "$tools/cuobjdump" --version | tail -1; exit 0
fi
[ $# -ge 1 ] || { echo "usage: scripts/sass.sh RECIPE [RECIPE ...] | --fetch" >&2; exit 2; }
dump=$(command -v cuobjdump || true); [ -n "$dump" ] || { dump=$tools/cuobjdump; export NVDISASM_PATH=$PWD/$tools/nvdisasm; }
[ -x "$dump" ] || { echo "sass.sh: no cuobjdump (run: bash scripts/sass.sh --fetch)" >&2; exit 1; }
cache=$(mktemp -d); trap 'rm -rf "$cache"' EXIT
MXQ_CACHE_DIR=$cache "${MXQ_BUILD:-build}/mxq" cache warmup "$@" >/dev/null
mkdir -p "$tools/sass"
for f in "$cache"/*.cubin; do
  key=$(head -c 400 "$f" | tr -c '[:print:]' '\n' | grep -m1 -oE '(bf16|f16|f32) [a-z0-9_]+ [a-z0-9]+ (rows|colblocks|two_d) [^ ]+ [^ ]+ [^ ]+ [^ ]+') || key=$(basename "$f")
  off=$(grep -obUaP '\x7fELF' "$f" | head -1 | cut -d: -f1)
  tail -c +$((off + 1)) "$f" >"$cache/k.elf"
  n=$("$dump" -sass "$cache/k.elf" | grep -cE '^\s+/\*[0-9a-f]{4,}\*/')
  printf '%6d  %s\n' "$n" "$key"
  [ -z "${MXQ_SASS_DUMP:-}" ] || "$dump" -sass "$cache/k.elf" >"$tools/sass/$(echo "$key" | tr ' /=' '_+.').sass"
done | sort -k2
