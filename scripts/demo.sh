#!/usr/bin/env bash
# One command from a fresh machine to the main job: install, build, run `mxq demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target mxq
exec "${MXQ_BUILD:-build}/mxq" demo "$@"
