# Sourced by scripts/gpu_quick_check.sh and scripts/gpu_tests.sh with root and bin set: the image's torch
# and CUDA libraries first, then the packed ones (GLPK: .gpu/lib), and autograph's variables.
PY=${PYTHON:-python3}
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
libs="$site/torch/lib"
for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$d" ] && libs+=":$d"
done
[ ! -d "$bin/../lib" ] || libs+=":$(cd "$bin/../lib" && pwd)"
export LD_LIBRARY_PATH="$libs:$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AUTOGRAPH_LIBRARY=$bin/libautograph.so AUTOGRAPH_CLI=$bin/autograph
export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo} AUTOGRAPH_SOURCE_DIR=$root PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin:$(dirname "$(command -v "$PY")")"
