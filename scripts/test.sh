#!/usr/bin/env bash
# Set up (idempotent), build, export the model zoo if missing, run GoogleTest (ctest) and pytest, install
# the C++ package (cmake --install) and build and run examples/cpp against it, install the Python
# package with pip (editable, then not) and test what it installed, check that the README's C++
# install (scripts/build.sh && cmake --install) still installs the CMake package after pip, and check
# the source layout (scripts/check_source.py).
# Prints both summaries; exits non-zero on any failure.
# Usage: scripts/test.sh [--no-skips]
#   --no-skips: a skipped test counts as a failure (scripts/gpu_check.sh on a GPU, where every CUDA
#               test must run; without a device they skip).
#   AUTOGRAPH_TEST_JOBS: parallel ctest jobs (default 2); AUTOGRAPH_BUILD_DIR as for scripts/build.sh.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
no_skips=0
case "${1:-}" in
  --no-skips) no_skips=1 ;;
  "") ;;
  -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
PYTHON=$(bash scripts/setup.sh | tail -n 1) || { echo "test.sh: setup failed" >&2; exit 1; }
bash scripts/build.sh || { echo "test.sh: build failed" >&2; exit 1; }
PATH="$PATH:$(dirname "$PYTHON")"  # ctest may be pip's, beside the python (as in scripts/build.sh)
BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build}
# The bundled libraries (.deps/), if any: libglpk's own dependencies are found only on LD_LIBRARY_PATH.
# shellcheck source=scripts/deps_env.sh
source scripts/deps_env.sh
autograph_deps_env "$root" || { echo "test.sh: cannot use .deps/" >&2; exit 1; }

export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
export AUTOGRAPH_LIBRARY="$BUILD_DIR/libautograph.so"
export AUTOGRAPH_CLI="$BUILD_DIR/autograph"
"$PYTHON" models/export.py --out "$AUTOGRAPH_ZOO_DIR" || { echo "test.sh: model export failed" >&2; exit 1; }

status=0
echo "== GoogleTest (ctest) =="
# Tests run side by side, each with its share of the cores for intra-op threads (unless OMP_NUM_THREADS
# is set): OpenMP threads that spin on cores another test holds slowed the zoo models' tests several-fold.
jobs=${AUTOGRAPH_TEST_JOBS:-2}
cores=$(nproc)
threads=${OMP_NUM_THREADS:-$(( cores / jobs > 0 ? cores / jobs : 1 ))}
(cd "$BUILD_DIR" && OMP_NUM_THREADS=$threads ctest --output-on-failure -j "$jobs") 2>&1 | tee "$BUILD_DIR/ctest.log" |
  grep -vE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed'
# ctest's own status, read at once: under pipefail a "|| true" here would run on every ctest failure
# and leave PIPESTATUS describing `true` (a failed test passed this script until 2026-11-25).
ctest_status=${PIPESTATUS[0]}
[ "$ctest_status" -eq 0 ] || status=1
gtest_summary=$(grep -E 'tests passed|tests failed' "$BUILD_DIR/ctest.log" | tail -n 1)
gtest_skipped=$(grep -cE '\(Skipped\)$' "$BUILD_DIR/ctest.log")

echo "== pytest =="
# -rs lists each skipped test with its reason; --durations the slowest tests (CI's time is watched).
"$PYTHON" -m pytest -q -rs --durations=40 --durations-min=15 tests/python 2>&1 | tee "$BUILD_DIR/pytest.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
pytest_summary=$(grep -E '[0-9]+ (passed|failed|error|skipped)' "$BUILD_DIR/pytest.log" | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')
# Skips that --no-skips counts: not those of a missing optional package (pytest.importorskip's "could not
# import": the rivals and Ray, which a GPU machine without network cannot install), which say so above.
pytest_skipped=$(grep -E '^SKIPPED \[[0-9]+\]' "$BUILD_DIR/pytest.log" | grep -v 'could not import' |
  sed -E 's/^SKIPPED \[([0-9]+)\].*/\1/' | awk '{n += $1} END {print n + 0}')

echo "== installed C++ package (cmake --install, examples/cpp) =="
# As a LibTorch user consumes it: installed to a prefix, found by a separate project with
# find_package(autograph), which optimizes a zoo model and compares its outputs. scripts/build.sh
# above configured the build directory without scikit-build-core's settings (the pip step below
# sets them), so it installs the CMake package.
cpp_dir=$BUILD_DIR/cpp-package
cpp_log=$BUILD_DIR/cpp-package.log
rm -rf "$cpp_dir"
torch_prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
json_dir=$(sed -n 's|^nlohmann_json_DIR:PATH=||p' "$BUILD_DIR/CMakeCache.txt")
if { cmake --install "$BUILD_DIR" --prefix "$cpp_dir/prefix" &&
     cmake -S examples/cpp -B "$cpp_dir/example" -G Ninja -DCMAKE_PREFIX_PATH="$cpp_dir/prefix;$torch_prefix" \
       ${json_dir:+-Dnlohmann_json_DIR="$json_dir"} &&
     cmake --build "$cpp_dir/example"; } > "$cpp_log" 2>&1 &&
   "$cpp_dir/example/optimize_model" "$AUTOGRAPH_ZOO_DIR/squeezenet.pt" 1,3,64,64 "$cpp_dir/squeezenet_opt.pt" 2>&1 |
     tee -a "$cpp_log"; then
  cpp_summary="built against the install and ran: $(grep -m1 '^optimized' "$cpp_log")"
else
  cpp_summary="failed (see $cpp_log)"
  tail -n 20 "$cpp_log"
  status=1
fi

echo "== installed package (pip install) =="
# As a user installs it: a venv that has torch (the test venv's packages through a .pth file, so no
# second torch), `pip install -e .` and then `pip install .`, both building in this build directory
# (scikit-build-core; nothing recompiles); then the package's own tests and the examples, run from
# outside the checkout against what pip installed.
package_summary="not run"
package_ok=0
if ! "$PYTHON" -c 'import scikit_build_core' 2>/dev/null; then
  package_summary="skipped: scikit-build-core is not installed beside torch (scripts/setup.sh installs it)"
  echo "$package_summary"
else
  pkg_venv=${AUTOGRAPH_PACKAGE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/autograph/venv-package}
  [ -x "$pkg_venv/bin/python" ] || "$PYTHON" -m venv "$pkg_venv"
  base=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$base" > "$("$pkg_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/autograph_test_base.pth"
  # Same configuration as scripts/build.sh gave this build directory (its build type: Release in CI
  # and on the GPU machines), or CMake would rebuild it.
  build_type=$(sed -n 's|^CMAKE_BUILD_TYPE:[A-Z]*=||p' "$BUILD_DIR/CMakeCache.txt")
  pip_install() {
    "$pkg_venv/bin/python" -m pip install -q --no-build-isolation -Cbuild-dir="$BUILD_DIR" \
      ${build_type:+-Ccmake.build-type="$build_type"} -Ccmake.define.AUTOGRAPH_BUILD_TESTS=ON \
      -Ccmake.define.AUTOGRAPH_DEPS_PREFIX="${AUTOGRAPH_DEPS_PREFIX:-}" "$@" "$root"
  }
  pkg_log=$BUILD_DIR/package.log
  if ! pip_install -e > "$pkg_log" 2>&1; then
    package_summary="pip install -e . failed (see $pkg_log)"
  elif ! (cd /tmp && env -u AUTOGRAPH_LIBRARY -u AUTOGRAPH_CLI "$pkg_venv/bin/python" -c "
import autograph, os
assert os.path.samefile(os.path.dirname(autograph.__file__), '$root/python/autograph'), autograph.__file__
autograph.load_library()
print('pip install -e .: autograph from', os.path.dirname(autograph.__file__), 'with', autograph.library_path())") 2>&1 | tee -a "$pkg_log"; then
    package_summary="the editable install does not import (see $pkg_log)"
  elif ! pip_install >> "$pkg_log" 2>&1; then
    package_summary="pip install . failed (see $pkg_log)"
  else
    (cd /tmp && env -u AUTOGRAPH_LIBRARY -u AUTOGRAPH_CLI AUTOGRAPH_TEST_INSTALLED=1 "$pkg_venv/bin/python" -m pytest -q -rs \
       -p no:cacheprovider --rootdir="$root" -c "$root/pytest.ini" "$root/tests/python/test_installed_package.py" \
       "$root/tests/python/test_examples.py") 2>&1 | tee -a "$pkg_log"
    pkg_pytest=${PIPESTATUS[0]}
    package_summary=$(grep -E '[0-9]+ (passed|failed|error)' "$pkg_log" | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')
    [ "$pkg_pytest" -eq 0 ] && package_ok=1
  fi
  [ "$package_ok" -eq 1 ] || status=1
fi

echo "== the README's C++ install after pip (scripts/build.sh && cmake --install) =="
# What the README tells a LibTorch user, run literally after the pip step, which configured the build
# directory for the Python package (SKBUILD*): scripts/build.sh configures it back (a relink at most)
# and the install must hold the CMake package.
readme_prefix=$BUILD_DIR/readme-install
readme_log=$BUILD_DIR/readme-install.log
rm -rf "$readme_prefix"
if { bash scripts/build.sh && cmake --install "$BUILD_DIR" --prefix "$readme_prefix"; } > "$readme_log" 2>&1 &&
   compgen -G "$readme_prefix/lib*/cmake/autograph/autographConfig.cmake" > /dev/null; then
  readme_summary="installs $(cd "$readme_prefix" && echo lib*/cmake/autograph/autographConfig.cmake)"
else
  readme_summary="failed: no lib/cmake/autograph/autographConfig.cmake under $readme_prefix (see $readme_log)"
  tail -n 20 "$readme_log"
  status=1
fi
rm -rf "$readme_prefix"
echo "$readme_summary"

echo "== source layout =="
"$PYTHON" scripts/check_source.py || status=1

echo "== summary =="
echo "ctest:  ${gtest_summary:-no summary (see $BUILD_DIR/ctest.log)}, $gtest_skipped skipped"
echo "pytest: ${pytest_summary:-no summary (see $BUILD_DIR/pytest.log)}"
echo "installed C++ package: $cpp_summary"
echo "installed package: $package_summary"
echo "README's C++ install after pip: $readme_summary"
if [ $no_skips -eq 1 ] && [ $((gtest_skipped + ${pytest_skipped:-0})) -gt 0 ]; then
  echo "skipped tests with --no-skips: $gtest_skipped GoogleTest, ${pytest_skipped:-0} pytest (listed above)"
  status=1
fi
[ $status -eq 0 ] && echo "all tests passed" || echo "FAILURES above"
exit $status
