# shellcheck shell=bash
# Sourced by the scripts (not run): makes the C++ dependencies bundled in .deps/ by
# scripts/bundle_deps.sh usable. `autograph_deps_env ROOT` unpacks the .deb files into
# .deps-unpacked/ on first use (again when .deps/MANIFEST changes) and sets:
#   AUTOGRAPH_DEPS_PREFIX  the unpacked usr/ (scripts/build.sh passes it to CMake, which searches it
#                          before the system); empty when there is no bundle (or AUTOGRAPH_DEPS_DIR=none)
#   AUTOGRAPH_DEPS_LIBDIR  its lib/<multiarch>/: libglpk and what libglpk loads
#   LD_LIBRARY_PATH        prefixed with AUTOGRAPH_DEPS_LIBDIR. libautograph.so's RUNPATH finds libglpk,
#                          but not libglpk's own dependencies (libamd, libcolamd, libltdl), which a GPU
#                          image without those packages only finds this way.
# Unpacking uses dpkg-deb -x, or ar + tar where dpkg is missing (AUTOGRAPH_DEPS_UNPACK=ar forces it).

autograph_deps_log() { echo "deps: $*" >&2; }

# ONNX Runtime's C/C++ API headers (libautograph_onnxruntime.so): no Debian 12 package has them, so
# Debian 13's libonnxruntime-dev (headers and a CMake config) is fetched by pinned URL and checksum.
# Only its headers are used: the library is the onnxruntime pip package's (ONNX Runtime's C API is
# ABI-stable, and the headers' version 1.21 is older than the package's).
# shellcheck disable=SC2034  # read by the scripts that source this file
AUTOGRAPH_ORT_DEV_PACKAGE=libonnxruntime-dev
# shellcheck disable=SC2034
AUTOGRAPH_ORT_DEV_VERSION=1.21.0+dfsg-1
AUTOGRAPH_ORT_DEV_FILE=libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb
AUTOGRAPH_ORT_DEV_URL=http://deb.debian.org/debian/pool/main/o/onnxruntime/$AUTOGRAPH_ORT_DEV_FILE
AUTOGRAPH_ORT_DEV_SHA256=14f7d959d5deacbcf1504830d4189f91fc67382b399ed9ae9d3aa9c4050ced08

# `autograph_fetch_onnxruntime_dev DIR`: makes DIR/$AUTOGRAPH_ORT_DEV_FILE, downloading it (curl) unless
# it is there with its checksum. Non-zero, with nothing left behind, when it cannot.
autograph_fetch_onnxruntime_dev() {
  local dir=$1
  local file=$dir/$AUTOGRAPH_ORT_DEV_FILE
  if [ -f "$file" ] && [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$AUTOGRAPH_ORT_DEV_SHA256" ]; then
    return 0
  fi
  command -v curl >/dev/null || { autograph_deps_log "curl is missing: cannot download $AUTOGRAPH_ORT_DEV_URL"; return 1; }
  mkdir -p "$dir"
  rm -f "$file"
  if ! curl -fsSL --retry 3 -o "$file.part" "$AUTOGRAPH_ORT_DEV_URL"; then
    rm -f "$file.part"
    autograph_deps_log "cannot download $AUTOGRAPH_ORT_DEV_URL"
    return 1
  fi
  if [ "$(sha256sum "$file.part" | cut -d' ' -f1)" != "$AUTOGRAPH_ORT_DEV_SHA256" ]; then
    rm -f "$file.part"
    autograph_deps_log "$AUTOGRAPH_ORT_DEV_URL does not match its pinned checksum"
    return 1
  fi
  mv "$file.part" "$file"
}

# Unpack one .deb into a directory without dpkg: a .deb is an ar archive whose data.tar.* member
# holds the files.
autograph_deps_unpack_ar() {
  local deb=$1 dest=$2 work member
  work=$(mktemp -d)
  member=$(cd "$work" && ar t "$deb" | grep '^data\.tar') || { rm -rf "$work"; return 1; }
  (cd "$work" && ar x "$deb" "$member") && tar -xf "$work/$member" -C "$dest"  # tar detects xz/gz/zst
  local rc=$?
  rm -rf "$work"
  return $rc
}

autograph_deps_env() {
  local root=$1
  local deps=${AUTOGRAPH_DEPS_DIR:-$root/.deps}
  local unpacked=${AUTOGRAPH_DEPS_UNPACKED:-$root/.deps-unpacked}
  AUTOGRAPH_DEPS_PREFIX=""
  AUTOGRAPH_DEPS_LIBDIR=""
  if [ "$deps" = none ] || [ ! -f "$deps/MANIFEST" ]; then
    return 0
  fi
  deps=$(cd "$deps" && pwd)  # ar runs in a scratch directory: absolute paths
  if ! cmp -s "$deps/MANIFEST" "$unpacked/.manifest"; then
    local how=dpkg-deb
    if [ "${AUTOGRAPH_DEPS_UNPACK:-}" = ar ] || ! command -v dpkg-deb >/dev/null; then how="ar + tar"; fi
    autograph_deps_log "unpacking $deps into $unpacked ($how)"
    rm -rf "$unpacked"
    mkdir -p "$unpacked"
    local pkg _version file sum
    while read -r pkg _version file sum; do
      case "$pkg" in '#'*|'') continue ;; esac
      [ -f "$deps/$file" ] || { autograph_deps_log "$deps/$file is missing: run scripts/bundle_deps.sh"; return 1; }
      if [ "$(sha256sum "$deps/$file" | cut -d' ' -f1)" != "$sum" ]; then
        autograph_deps_log "$deps/$file does not match its checksum in MANIFEST: run scripts/bundle_deps.sh --force"
        return 1
      fi
      if [ "$how" = dpkg-deb ]; then
        dpkg-deb -x "$deps/$file" "$unpacked"
      else
        autograph_deps_unpack_ar "$deps/$file" "$unpacked"
      fi || { autograph_deps_log "cannot unpack $deps/$file"; return 1; }
    done < "$deps/MANIFEST"
    cp "$deps/MANIFEST" "$unpacked/.manifest"  # last: an interrupted unpack is redone next time
  fi
  AUTOGRAPH_DEPS_PREFIX=$unpacked/usr
  local d
  for d in "$unpacked"/usr/lib/*-linux-gnu; do [ -d "$d" ] && AUTOGRAPH_DEPS_LIBDIR=$d; done
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$AUTOGRAPH_DEPS_LIBDIR:"*) ;;  # a script sourced by another: already there
    *) [ -z "$AUTOGRAPH_DEPS_LIBDIR" ] ||
         export LD_LIBRARY_PATH="$AUTOGRAPH_DEPS_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  esac
  export AUTOGRAPH_DEPS_PREFIX AUTOGRAPH_DEPS_LIBDIR
}
