#!/usr/bin/env bash
# The main command: set up, build, export missing zoo models, then on the default device (CUDA if
# present, else CPU) print each model's operator-graph statistics and the latency of the TorchScript
# module as loaded (jit) against autograph's schedules, side by side in one run. Results go to
# bench/results/<device>-<date>/ (results.csv, results.md, environment.txt).
# Usage: scripts/bench.sh [--full] [--device cpu|cuda] [--models "resnet50 bert_base"] [--runs N]
#   --full: every zoo model (NASNet-A Large included) and 100 timed runs after 50 warm-up runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
zoo=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
models="" device="" runs=50 warmup=10 full=0
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1; runs=100; warmup=50; shift ;;
    --device) device=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
PYTHON=$(bash scripts/setup.sh | tail -n 1)
bash scripts/build.sh >/dev/null
cli=${AUTOGRAPH_BUILD_DIR:-$root/build}/autograph
[ -n "$device" ] || device=$("$PYTHON" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
if [ -z "$models" ]; then
  models=$("$PYTHON" -c 'from models.registry import NAMES; print(" ".join(NAMES))')
  # NASNet-A Large takes seconds per run on a CPU: in the quick CPU set only with --full.
  [ $full -eq 1 ] || [ "$device" = cuda ] || models=${models/nasnet_a_large/}
fi
# shellcheck disable=SC2086
"$PYTHON" models/export.py --out "$zoo" --only $models >&2

methods="jit sequential greedy"
[ "$device" = cuda ] && methods="$methods greedy_graph"
out=bench/results/$device-$(date -u +%Y-%m-%d)
mkdir -p "$out"
echo "## Operator graphs"
# shellcheck disable=SC2086
"$PYTHON" bench/inspect_table.py --cli "$cli" --zoo "$zoo" $models | tee "$out/graphs.md"
echo
echo "## Latency ($device)"
# shellcheck disable=SC2086
"$cli" bench $models --zoo "$zoo" --device "$device" --methods $methods --runs "$runs" --warmup "$warmup" --out "$out"
echo
echo "## Host overhead per operator"
"$cli" bench --host-overhead --out "$out"
{
  echo "command: scripts/bench.sh $*"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  "$PYTHON" - <<'PY'
import platform, torch
print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})")
print(f"cpu: {platform.processor() or platform.machine()}, {torch.get_num_threads()} intra-op threads")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"gpu: {p.name}, {p.total_memory // 2**20} MiB, driver {torch.cuda.driver_version() if hasattr(torch.cuda, 'driver_version') else 'n/a'}")
PY
} > "$out/environment.txt"
echo "results: $out"
