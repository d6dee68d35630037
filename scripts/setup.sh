#!/usr/bin/env bash
# Idempotent environment setup: Debian packages for the build and a Python venv outside the clone
# (AUTOGRAPH_VENV, default ~/.cache/autograph/venv) with the torch the GPU machines have.
# Seconds when everything is already there. Prints the venv's python path as its last line.
set -euo pipefail

TORCH_VERSION=2.11.0
TORCHVISION_VERSION=0.26.0
VENV=${AUTOGRAPH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/autograph/venv}

log() { echo "setup: $*" >&2; }

# --- Debian packages --------------------------------------------------------------------------
APT_PACKAGES=(g++ cmake ninja-build ccache libgtest-dev libcli11-dev nlohmann-json3-dev
              libboost-graph-dev libglpk-dev)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- Python venv --------------------------------------------------------------------------------
PY=${AUTOGRAPH_PYTHON:-python3}
has_pinned_torch() {
  "$1" -c "import sys, torch, torchvision
sys.exit(0 if (torch.__version__.split('+')[0], torchvision.__version__.split('+')[0]) == ('$TORCH_VERSION', '$TORCHVISION_VERSION') else 1)" 2>/dev/null
}
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  if has_pinned_torch "$PY"; then
    # The pinned torch is already installed (the GPU machines, which have no network): the venv
    # sees it instead of downloading another.
    log "creating venv at $VENV on top of $PY's torch $TORCH_VERSION"
    "$PY" -m venv --system-site-packages "$VENV"
  else
    log "creating venv at $VENV"
    "$PY" -m venv "$VENV"
  fi
fi
want="torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION numpy pytest"
stamp="$VENV/.autograph-stamp"
if [ ! -f "$stamp" ] && has_pinned_torch "$VENV/bin/python"; then
  # torch came with the system: only what is missing besides it, and without a network that is
  # not fatal (benchmarks need no pytest).
  "$VENV/bin/python" -c "import numpy, pytest" 2>/dev/null ||
    "$VENV/bin/python" -m pip install -q numpy pytest 2>/dev/null || log "numpy/pytest not installed (no network?)"
  echo "$want" > "$stamp"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing into venv: $want (first time: several minutes, a few GB)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q $want
  echo "$want" > "$stamp"
fi

# --- CMake / ninja: PyPI versions only when the system ones are too old ---------------------------
cmake_ok() { command -v cmake >/dev/null && [ "$(printf '%s\n3.25\n' "$(cmake --version | awk 'NR==1{print $3}')" | sort -V | head -1)" = "3.25" ]; }
if ! cmake_ok && [ ! -x "$VENV/bin/cmake" ]; then
  log "system cmake is missing or older than 3.25: installing cmake and ninja from PyPI"
  "$VENV/bin/python" -m pip install -q cmake ninja
fi

echo "$VENV/bin/python"
