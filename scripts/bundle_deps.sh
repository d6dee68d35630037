#!/usr/bin/env bash
# Bundle the C++ dependencies that are neither part of torch nor of the CUDA toolkit — nlohmann-json,
# CLI11, the Boost headers (Boost.Graph), GoogleTest, GLPK and the shared libraries libglpk loads, and
# ONNX Runtime's headers (Debian 13's libonnxruntime-dev, pinned in scripts/deps_env.sh) — as
# Debian's own .deb files in the gitignored .deps/, for a machine with no apt and no network (the GPU
# machine): copy .deps/ there with the checkout. scripts/build.sh unpacks it on first use (see
# scripts/deps_env.sh) and builds against it; nothing is copied into the repository.
#
# Run it on a Debian 12 (bookworm, amd64) machine: it needs apt-get's package lists, not root.
# Idempotent: a package is downloaded again only when its candidate version changed.
# Usage: scripts/bundle_deps.sh [--force]      (AUTOGRAPH_DEPS_DIR overrides .deps/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${AUTOGRAPH_DEPS_DIR:-$root/.deps}
force=0
case "${1:-}" in
  --force) force=1 ;;
  -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
  "") ;;
  *) echo "bundle_deps.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
log() { echo "bundle_deps: $*" >&2; }
# shellcheck source=scripts/deps_env.sh
source "$root/scripts/deps_env.sh"

# The -dev packages the build uses, then libglpk's runtime libraries. libgmp10 and zlib1g (libglpk
# needs them too) are left out on purpose: every Debian/Ubuntu system has them (coreutils and the
# compiler depend on them), and a second copy on LD_LIBRARY_PATH would shadow the system's own for
# every program the scripts start.
PACKAGES=(nlohmann-json3-dev libcli11-dev libboost1.74-dev libgtest-dev libglpk-dev
          libglpk40 libamd2 libcolamd2 libsuitesparseconfig5 libltdl7)
# What may travel to the GPU machine in all is 64 MiB (checkout included): the bundle leaves room.
MAX_MIB=48

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
  { log "needs apt-get and dpkg-deb (a Debian machine; scripts/setup.sh installs what the build needs)"; exit 1; }

candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}'; }
if [ -z "$(candidate "${PACKAGES[0]}")" ] || [ "$(candidate "${PACKAGES[0]}")" = "(none)" ]; then
  # A fresh machine may have no package lists yet.
  log "no apt package lists: running apt-get update"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
fi

mkdir -p "$deps"
manifest=$deps/MANIFEST
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Debian packages bundled by scripts/bundle_deps.sh on $(date -u +%Y-%m-%d) ($(. /etc/os-release && echo "$PRETTY_NAME"), $(dpkg --print-architecture))."
  echo "# package version file sha256 — scripts/deps_env.sh unpacks them (dpkg-deb -x, or ar + tar)."
} > "$tmp/MANIFEST"
for p in "${PACKAGES[@]}"; do
  v=$(candidate "$p")
  [ -n "$v" ] && [ "$v" != "(none)" ] || { log "package $p is not known to apt (not Debian 12?)"; exit 1; }
  # The file name apt-get download gives: NAME_VERSION_ARCH.deb with the epoch's ':' as '%3a'.
  existing=$(find "$deps" -maxdepth 1 -name "${p}_${v/:/%3a}_*.deb" | head -n 1)
  if [ $force -eq 1 ] || [ -z "$existing" ]; then
    log "downloading $p $v"
    # -o APT::Sandbox::User=root: as root apt would otherwise warn that its _apt user cannot write here.
    (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$p=$v")
    f=$(find "$tmp" -maxdepth 1 -name "${p}_*.deb" | head -n 1)
    rm -f "$deps/${p}"_*.deb  # an older version of the same package
    mv "$f" "$deps/"
    existing=$deps/$(basename "$f")
  fi
  echo "$p $v $(basename "$existing") $(sha256sum "$existing" | cut -d' ' -f1)" >> "$tmp/MANIFEST"
done
# ONNX Runtime's headers: not from apt (no Debian 12 package), by pinned URL and checksum.
[ $force -eq 0 ] || rm -f "$deps/$AUTOGRAPH_ORT_DEV_FILE"
[ -f "$deps/$AUTOGRAPH_ORT_DEV_FILE" ] || log "downloading $AUTOGRAPH_ORT_DEV_PACKAGE $AUTOGRAPH_ORT_DEV_VERSION"
autograph_fetch_onnxruntime_dev "$deps" || exit 1
echo "$AUTOGRAPH_ORT_DEV_PACKAGE $AUTOGRAPH_ORT_DEV_VERSION $AUTOGRAPH_ORT_DEV_FILE $AUTOGRAPH_ORT_DEV_SHA256" >> "$tmp/MANIFEST"
# Drop .deb files that are no longer in the list.
for f in "$deps"/*.deb; do
  grep -q " $(basename "$f") " "$tmp/MANIFEST" || { log "removing $(basename "$f") (no longer bundled)"; rm -f "$f"; }
done
# Compare without the date line, so that an unchanged bundle keeps its manifest (and nothing re-unpacks).
if [ ! -f "$manifest" ] || ! diff -q <(tail -n +2 "$manifest") <(tail -n +2 "$tmp/MANIFEST") >/dev/null; then
  cp "$tmp/MANIFEST" "$manifest"
fi

mib=$(du -sm "$deps" | cut -f1)
log "$deps: $((${#PACKAGES[@]} + 1)) packages, ${mib} MiB ($(du -sh "$deps" | cut -f1))"
if [ "$mib" -gt "$MAX_MIB" ]; then
  log "the bundle is over ${MAX_MIB} MiB: too big to copy with the checkout"
  exit 1
fi
