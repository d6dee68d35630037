#!/usr/bin/env bash
# Set up (idempotent), build, export the model zoo if missing, run GoogleTest (ctest) and pytest.
# Prints both summaries; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PYTHON=$(bash scripts/setup.sh | tail -n 1) || { echo "test.sh: setup failed" >&2; exit 1; }
bash scripts/build.sh || { echo "test.sh: build failed" >&2; exit 1; }
BUILD_DIR=${AUTOGRAPH_BUILD_DIR:-$root/build}

export AUTOGRAPH_ZOO_DIR=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
export AUTOGRAPH_LIBRARY="$BUILD_DIR/libautograph.so"
export AUTOGRAPH_CLI="$BUILD_DIR/autograph"
"$PYTHON" models/export.py --out "$AUTOGRAPH_ZOO_DIR" || { echo "test.sh: model export failed" >&2; exit 1; }

status=0
echo "== GoogleTest (ctest) =="
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2) 2>&1 | tee "$BUILD_DIR/ctest.log" | grep -vE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' || true
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
gtest_summary=$(grep -E 'tests passed|tests failed' "$BUILD_DIR/ctest.log" | tail -n 1)

echo "== pytest =="
"$PYTHON" -m pytest -q torch_ops_test || status=1

echo "== summary =="
echo "ctest:  ${gtest_summary:-no summary (see $BUILD_DIR/ctest.log)}"
[ $status -eq 0 ] && echo "all tests passed" || echo "FAILURES above"
exit $status
