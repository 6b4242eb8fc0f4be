#!/usr/bin/env bash
# Configures and builds mxq into ${MXQ_BUILD:-build} (Release, Ninja). Extra arguments go to cmake --build.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
BUILD=${MXQ_BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$BUILD" "$@"
