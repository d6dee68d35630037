#!/usr/bin/env bash
# The main command: set up, build, export missing zoo models, and report on the default device.
# For now (the executor and search are later issues) it prints the operator-graph statistics of
# every zoo model: `autograph inspect --json` over the zoo, as a Markdown table.
# Usage: scripts/bench.sh [--zoo DIR] [--models "resnet50 bert_base"]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
zoo=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
models=""
while [ $# -gt 0 ]; do
  case "$1" in
    --zoo) zoo=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
PYTHON=$(bash scripts/setup.sh | tail -n 1)
bash scripts/build.sh >/dev/null
# shellcheck disable=SC2086
"$PYTHON" models/export.py --out "$zoo" ${models:+--only $models}
[ -n "$models" ] || models=$("$PYTHON" -c 'from models.registry import NAMES; print(" ".join(NAMES))')
"$PYTHON" bench/inspect_table.py --cli "${AUTOGRAPH_BUILD_DIR:-$root/build}/autograph" --zoo "$zoo" $models
