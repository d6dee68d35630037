#!/usr/bin/env bash
# Packs this machine's build for scripts/gpu_quick_check.sh on a GPU machine whose time is too short to
# build there (a build on its 16 cores takes most of it): the libraries, the CLI,
# the GoogleTest binary and serve_host without their debug sections, and the system libraries the GPU
# image lacks (GLPK and its dependencies), into .gpu/ (git-ignored through .git/info/exclude). Copy `.gpu` to the
# GPU machine with the checkout. The binaries link the torch of scripts/setup.sh's venv, the same torch 2.11 build as the
# GPU image's; gpu_quick_check.sh puts the image's torch and CUDA libraries first on LD_LIBRARY_PATH.
# Usage: scripts/gpu_pack.sh   (after scripts/build.sh; AUTOGRAPH_BUILD_DIR as there)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${AUTOGRAPH_BUILD_DIR:-$root/build}
out=$root/.gpu
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
for f in libautograph_runtime.so libautograph.so libautograph_test_ops.so autograph autograph_tests serve_host; do
  [ -f "$build/$f" ] || { echo "gpu_pack: $build/$f missing: run scripts/build.sh first" >&2; exit 1; }
  objcopy --strip-debug "$build/$f" "$out/bin/$f"
done
# Every library of libautograph.so that is neither torch's, CUDA's nor the C runtime's.
ldd "$build/libautograph.so" | awk '$3 ~ /^\// {print $3}' |
  grep -vE '/libautograph|/torch/lib/|/cuda|/nvidia/|/(libc|libm|libdl|librt|libpthread|libutil|libgcc_s|libstdc\+\+|libz)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
gcc -O1 -shared -fPIC -o "$out/bin/segv_backtrace.so" "$root/scripts/segv_backtrace.c"
git -C "$root" rev-parse HEAD > "$out/COMMIT"
git -C "$root" diff --quiet HEAD || echo "+ uncommitted changes" >> "$out/COMMIT"
echo "gpu_pack: $(du -sh "$out" | cut -f1) in $out ($(ls "$out/lib" | tr '\n' ' ')); carry .gpu"
