#!/usr/bin/env bash
# One command from a fresh machine to the whole test suite: install, build, run ctest.
# GPU tests (label gpu) run where a supported GPU is present and report SKIPPED elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
MXQ_TORCH=${MXQ_TORCH:-1} bash scripts/setup.sh  # torch for the torch tests (MXQ_TORCH=0: without)
bash scripts/build.sh
cd "${MXQ_BUILD:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
