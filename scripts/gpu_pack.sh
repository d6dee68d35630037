#!/usr/bin/env bash
# Packs this machine's build for scripts/gpu_quick_check.sh on a GPU machine whose time is too short to
# build there (a build on its 16 cores takes most of it): the libraries, the CLI,
# the GoogleTest binary and serve_host without their debug sections, and the system libraries the GPU
# image lacks (GLPK and its dependencies), into .gpu/ (git-ignored through .git/info/exclude). Copy `.gpu` to the
# GPU machine with the checkout. The binaries link the torch of scripts/setup.sh's venv, the same torch 2.11 build as the
# GPU image's; gpu_quick_check.sh puts the image's torch and CUDA libraries first on LD_LIBRARY_PATH.
# Refuses a build without CUDA and a pack over 55 MiB; prints the pack's size.
# Usage: scripts/gpu_pack.sh   (after scripts/build.sh; AUTOGRAPH_BUILD_DIR as there)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${AUTOGRAPH_BUILD_DIR:-$root/build}
out=$root/.gpu
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
# A build without CUDA would run the GPU check on the CPU and pass for a GPU run.
ldd "$build/libautograph.so" 2>/dev/null | grep -q 'libtorch_cuda\.so' ||
  { echo "gpu_pack: $build/libautograph.so is built without CUDA (no libtorch_cuda.so among its libraries): build with the CUDA toolkit" >&2; exit 1; }
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
# The GPU machine gets the checkout and the pack together, 64 MiB at most: the pack leaves room for the checkout.
size_mib=$(du -sm "$out" | cut -f1)
if [ "$size_mib" -gt 55 ]; then
  echo "gpu_pack: $out is ${size_mib} MiB, over the 55 MiB that leave room for the checkout: strip more or pack less" >&2
  exit 1
fi
echo "gpu_pack: ${size_mib} MiB in $out ($(ls "$out/lib" | tr '\n' ' ')); carry .gpu"
