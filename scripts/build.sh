#!/usr/bin/env bash
# Configure and build into build/ (ninja, ccache, PCH). Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=$(bash "$root/scripts/setup.sh" | tail -n 1)
venv_bin=$(dirname "$PYTHON")
PATH="$PATH:$venv_bin"  # PyPI cmake/ninja when setup had to install them
BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build}
prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$BUILD_DIR" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" "$@" \
    | grep -E '^-- autograph|Error|error' || true
fi
jobs=${AUTOGRAPH_JOBS:-$(nproc)}
cmake --build "$BUILD_DIR" -j "$jobs"
