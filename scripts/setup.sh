#!/usr/bin/env bash
# Idempotent environment setup; seconds when everything is there. Prints the python to use as its
# last line. Two cases:
#  - A python that already has torch 2.11.0 (AUTOGRAPH_PYTHON, else python3) is used as it is: no venv,
#    no apt, no pip (the GPU machines: torch preinstalled, no network). What is missing is warned about,
#    never fatal: torchvision (the model zoo), pytest, cmake/ninja, the C++ dependencies (Debian
#    packages, or .deps/ from scripts/bundle_deps.sh).
#  - Otherwise (the CPU machines, CI): Debian packages for the build (apt, when missing) and a venv
#    outside the clone (AUTOGRAPH_VENV, default ~/.cache/autograph/venv) with torch 2.11.0 and
#    torchvision 0.26.0 — the GPU machines' versions — plus numpy, pytest, lizard (scripts/check_source.py)
#    scikit-build-core (pip install of the package, tested by scripts/test.sh), cairosvg (the
#    timeline test renders its SVG to PNG) and the benchmark rivals (onnxruntime, openvino,
#    onnxscript, onnx) and ray[serve] (the serving example) from PyPI; and ONNX Runtime's C++ headers,
#    which the onnxruntime package lacks (Debian 13's libonnxruntime-dev, unpacked into
#    ~/.cache/autograph/onnxruntime-headers), for libautograph_onnxruntime.so; and NNCF (option precision
#    int8) in a folder of its own, ~/.cache/autograph/nncf-<version>, apart from the venv.
set -euo pipefail

TORCH_VERSION=2.11.0
TORCHVISION_VERSION=0.26.0
VENV=${AUTOGRAPH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/autograph/venv}
root=$(cd "$(dirname "$0")/.." && pwd)

log() { echo "setup: $*" >&2; }
version_of() {  # version_of PYTHON MODULE: its version without the local part (+cu130), or nothing
  "$1" -c "import $2; print($2.__version__.split('+')[0])" 2>/dev/null || true
}

# --- A python that already has the pinned torch: use it directly ---------------------------------
PY=${AUTOGRAPH_PYTHON:-python3}
if command -v "$PY" >/dev/null && [ "$(version_of "$PY" torch)" = "$TORCH_VERSION" ]; then
  PY=$("$PY" -c 'import sys; print(sys.executable)')  # the venv's path, not the interpreter it links to
  bin=$(dirname "$PY")
  tv=$(version_of "$PY" torchvision)
  [ "$tv" = "$TORCHVISION_VERSION" ] ||
    log "warning: torchvision ${tv:-is missing} (want $TORCHVISION_VERSION): models/export.py cannot make the zoo"
  for m in pytest numpy; do
    "$PY" -c "import $m" 2>/dev/null || log "warning: $m is missing: scripts/test.sh needs it"
  done
  PATH="$PATH:$bin"  # pip's cmake and ninja sit beside the python; scripts/build.sh looks there too
  command -v cmake >/dev/null || log "warning: cmake (>= 3.25) is missing: the build needs it"
  command -v ninja >/dev/null || log "warning: ninja is missing: the build needs it"
  command -v c++ >/dev/null || command -v g++ >/dev/null || log "warning: no C++ compiler (c++/g++)"
  if [ ! -f "${AUTOGRAPH_DEPS_DIR:-$root/.deps}/MANIFEST" ]; then
    missing=()
    for h in nlohmann/json.hpp CLI/CLI.hpp boost/graph/adjacency_list.hpp gtest/gtest.h glpk.h; do
      [ -e "/usr/include/$h" ] || [ -e "/usr/local/include/$h" ] || missing+=("$h")
    done
    [ ${#missing[@]} -eq 0 ] ||
      log "warning: no .deps/ and no system ${missing[*]}: run scripts/bundle_deps.sh on a Debian 12 machine and carry .deps/ here"
  fi
  echo "$PY"
  exit 0
fi

# --- Debian packages --------------------------------------------------------------------------
# binutils and xz-utils: ar and xz, for unpacking .deps/ without dpkg (scripts/deps_env.sh); libcairo2:
# what cairosvg draws with.
APT_PACKAGES=(g++ cmake ninja-build ccache libgtest-dev libcli11-dev nlohmann-json3-dev
              libboost-graph-dev libglpk-dev python3-venv binutils xz-utils libcairo2)
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
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv at $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
# onnxruntime, openvino, onnxscript, onnx: the rivals' columns of the benchmarks (bench/rivals.py);
# ray[serve]: the serving example (examples/serve/, tests/python/test_serve.py)
want="torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION numpy pytest lizard scikit-build-core cairosvg onnxruntime openvino onnxscript onnx ray[serve]"
stamp="$VENV/.autograph-stamp"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing into venv: $want (first time: several minutes, a few GB)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q $want
  echo "$want" > "$stamp"
fi

# --- ONNX Runtime's headers: libautograph_onnxruntime.so builds against them (CMake looks here) ------
# The onnxruntime package has none; Debian 13's libonnxruntime-dev, pinned in scripts/deps_env.sh,
# has them. Optional: without them the build skips ONNX Runtime's parts and says so.
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"
ort_headers=${XDG_CACHE_HOME:-$HOME/.cache}/autograph/onnxruntime-headers
if [ "$(cat "$ort_headers/.sha256" 2>/dev/null)" != "$AUTOGRAPH_ORT_DEV_SHA256" ]; then
  if [ "$(dpkg --print-architecture)" != amd64 ]; then
    log "warning: ONNX Runtime's headers are pinned for amd64 only: no ONNX Runtime parts in this build"
  elif autograph_fetch_onnxruntime_dev "$ort_headers.download"; then
    log "unpacking ONNX Runtime's headers ($AUTOGRAPH_ORT_DEV_FILE) into $ort_headers"
    rm -rf "$ort_headers"
    mkdir -p "$ort_headers"
    if dpkg-deb --fsys-tarfile "$ort_headers.download/$AUTOGRAPH_ORT_DEV_FILE" | tar -x -C "$ort_headers" ./usr/include; then
      echo "$AUTOGRAPH_ORT_DEV_SHA256" > "$ort_headers/.sha256"  # last: an interrupted unpack is redone
    else
      rm -rf "$ort_headers"
      log "warning: cannot unpack ONNX Runtime's headers: no ONNX Runtime parts in this build"
    fi
    rm -rf "$ort_headers.download"
  else
    log "warning: ONNX Runtime's headers could not be fetched: no ONNX Runtime parts in this build"
  fi
fi

# --- NNCF (option precision int8), apart from the venv: for the quantizing process alone -------------
# Its dependency tabulate, importable in a process that imported torch, turns an unhandled Ctrl-C's exit
# into status 1 (torch's exit handler imports it); autograph's own process keeps the signal's status, so
# NNCF and its dependencies go into a folder only NNCF's process puts on its path
# (python/autograph/export/compilers/openvino_quantize.py), numpy pinned to the venv's. The version is
# the one python/autograph/export/compilers/openvino.py names. Optional: without it, no int8 candidates.
nncf_version=$(sed -n 's/^NNCF_VERSION = "\(.*\)"$/\1/p' "$root/python/autograph/export/compilers/openvino.py")
nncf_dir=${AUTOGRAPH_NNCF_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autograph/nncf-$nncf_version}
nncf_want="nncf==$nncf_version numpy==$(version_of "$VENV/bin/python" numpy)"
if [ "$(cat "$nncf_dir/.autograph-stamp" 2>/dev/null)" != "$nncf_want" ]; then
  log "installing $nncf_want into $nncf_dir (option precision int8; apart from the venv)"
  rm -rf "$nncf_dir"
  # shellcheck disable=SC2086
  if "$VENV/bin/python" -m pip install -q --target "$nncf_dir" $nncf_want; then
    echo "$nncf_want" > "$nncf_dir/.autograph-stamp"  # last: an interrupted install is redone
  else
    rm -rf "$nncf_dir"
    log "warning: NNCF could not be installed: no int8 candidates"
  fi
fi

# --- CMake / ninja: PyPI versions only when the system ones are too old ---------------------------
cmake_ok() { command -v cmake >/dev/null && [ "$(printf '%s\n3.25\n' "$(cmake --version | awk 'NR==1{print $3}')" | sort -V | head -1)" = "3.25" ]; }
if ! cmake_ok && [ ! -x "$VENV/bin/cmake" ]; then
  log "system cmake is missing or older than 3.25: installing cmake and ninja from PyPI"
  "$VENV/bin/python" -m pip install -q cmake ninja
fi

echo "$VENV/bin/python"
