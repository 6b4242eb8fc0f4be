#!/usr/bin/env bash
# Run HERE (not on the GPU machine) before a device run: the GPU machine reaches no registry,
# so the header-only dependencies travel in .deps/include (git-ignored; pass carry [".deps"]).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p .deps/include
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/dlpack .deps/include/
# xxHash is used header-only (XXH_INLINE_ALL): the one header is all the GPU machine needs.
cp /usr/include/xxhash.h .deps/include/
du -sh .deps
