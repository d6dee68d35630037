#!/usr/bin/env bash
# Configure and build into build/ (ninja, ccache, PCH). Usage: scripts/build.sh [extra cmake args]
#   AUTOGRAPH_BUILD_DIR: the build directory (default build/); AUTOGRAPH_JOBS: parallel jobs (all cores).
# Uses the C++ dependencies bundled in .deps/ (scripts/bundle_deps.sh) when that exists, ahead of the
# system's. CMake runs again when the build directory is new, when arguments are given, when the
# bundle appeared or went away, or when `pip install` (scikit-build-core, e.g. scripts/test.sh's pip
# step) configured it last: its SKBUILD* settings are dropped, so that `cmake --install` afterwards
# installs the CMake package, not the Python package's layout. A failed configuration prints CMake's
# errors and exits non-zero.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=$(bash "$root/scripts/setup.sh" | tail -n 1)
PATH="$PATH:$(dirname "$PYTHON")"  # cmake/ninja from pip live beside the python (venv or GPU image)
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"
autograph_deps_env "$root"
BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build}
prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')

cached() { sed -n "s|^$1:[A-Z]*=||p" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true; }
configured_by_pip() { grep -q '^SKBUILD[A-Z_]*:' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; }
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ $# -gt 0 ] || [ "$(cached AUTOGRAPH_DEPS_PREFIX)" != "$AUTOGRAPH_DEPS_PREFIX" ] ||
   configured_by_pip; then
  mkdir -p "$BUILD_DIR"
  configure_log=$BUILD_DIR/configure.log
  if configured_by_pip; then
    echo "build.sh: configuring $BUILD_DIR again without pip's SKBUILD* settings (for the CMake package's install)"
  fi
  if cmake -S "$root" -B "$BUILD_DIR" -G Ninja -U 'SKBUILD*' -DCMAKE_PREFIX_PATH="$prefix" \
       -DAUTOGRAPH_DEPS_PREFIX="$AUTOGRAPH_DEPS_PREFIX" "$@" > "$configure_log" 2>&1; then
    grep -E '^-- autograph|^ +autograph: ' "$configure_log" || true  # incl. our warnings (e.g. no GLPK)
  else
    # Show CMake's own messages: everything from its first error (or the end of its output).
    echo "build.sh: CMake configuration failed:" >&2
    if grep -q '^CMake Error' "$configure_log"; then
      sed -n '/^CMake Error/,$p' "$configure_log" >&2
    else
      tail -n 40 "$configure_log" >&2
    fi
    echo "build.sh: CMake configuration failed (full output: $configure_log)" >&2
    exit 1
  fi
fi
jobs=${AUTOGRAPH_JOBS:-$(nproc)}
cmake --build "$BUILD_DIR" -j "$jobs"
