#!/usr/bin/env bash
# The main command: set up, build, export missing zoo models, then on the default device (CUDA if
# present, else CPU) print each model's operator-graph statistics and the AutoGraph paper's table:
# jit, jit_frozen, taso_jit, nimble, taso_nimble, ios and autograph side by side in one run (outputs
# checked against jit, 50 warm-up + 100 timed runs, median ms). Results go to
# bench/results/<device>-<date>/: results.csv, results.md (tables), speedup.svg, environment.txt.
# Usage: scripts/bench.sh [--full] [--device cpu|cuda] [--models "resnet50 bert_base"] [--batch "1 16"]
#                         [--methods "jit autograph"] [--runs N] [--warmup N] [--out DIR]
#   --full: every zoo model (NASNet-A Large included on CPU too) and the other tools' columns
#   (bench/torch_compile_bench.py): torch.compile default and with weight freezing (CUDA: default and
#   max-autotune), ONNX Runtime and OpenVINO (CPU), and autograph's export path (torch.export +
#   Inductor parts), each with its compile time. On a GPU machine whose python3 already has torch 2.11 (no
#   network) that python is used directly (scripts/setup.sh); copy .deps/ (scripts/bundle_deps.sh) there
#   where the C++ dependencies are not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
zoo=${AUTOGRAPH_ZOO_DIR:-$root/models/zoo}
args="$*"
models="" device="" runs=100 warmup=50 full=0 batches=1 out=""
methods="jit jit_frozen taso_jit nimble taso_nimble ios autograph"
while [ $# -gt 0 ]; do
  case "$1" in
    --full) full=1; shift ;;
    --device) device=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --batch) batches=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
PYTHON=$(bash scripts/setup.sh | tail -n 1)
bash scripts/build.sh >/dev/null
# shellcheck source=scripts/deps_env.sh
source scripts/deps_env.sh
autograph_deps_env "$root"  # built against .deps/? then libglpk's libraries come from LD_LIBRARY_PATH
cli=${AUTOGRAPH_BUILD_DIR:-$root/build}/autograph
[ -n "$device" ] || device=$("$PYTHON" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
if [ -z "$models" ]; then
  models=$("$PYTHON" -c 'from models.registry import NAMES; print(" ".join(NAMES))')
  # NASNet-A Large takes seconds per run on a CPU: in the quick CPU set only with --full.
  [ $full -eq 1 ] || [ "$device" = cuda ] || models=${models/nasnet_a_large/}
fi
# shellcheck disable=SC2086
"$PYTHON" models/export.py --out "$zoo" --only $models >&2

[ -n "$out" ] || out=bench/results/$device-$(date -u +%Y-%m-%d)
mkdir -p "$out"
echo "## Operator graphs"
# shellcheck disable=SC2086
"$PYTHON" bench/inspect_table.py --cli "$cli" --zoo "$zoo" $models | tee "$out/graphs.md"
echo
echo "## Latency ($device)"
# A method that fails on a model is reported and skipped (exit 1): the table keeps the rest.
# shellcheck disable=SC2086
"$cli" bench $models --zoo "$zoo" --device "$device" --methods $methods --batch $batches --runs "$runs" \
  --warmup "$warmup" --out "$out" >/dev/null || echo "bench.sh: some method runs failed (see above)" >&2
if [ $full -eq 1 ]; then
  # The other tools' columns and the export path, appended to results.csv (compiles take minutes per model).
  if [ "$device" = cuda ]; then modes="default max-autotune" rivals=""; else modes="default freezing" rivals="--rivals"; fi
  for b in $batches; do
    # shellcheck disable=SC2086
    "$PYTHON" bench/torch_compile_bench.py --zoo "$zoo" --models $models --device "$device" --batch "$b" \
      --runs "$runs" --warmup "$warmup" --out "$out" --modes $modes $rivals --export-path \
      || echo "bench.sh: the other tools' columns skipped" >&2
  done
fi
"$PYTHON" bench/report.py "$out"
echo
echo "## Host overhead per operator"
"$cli" bench --host-overhead --out "$out"
{
  echo "command: scripts/bench.sh $args"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  "$PYTHON" - <<'PY'
import platform, torch
print(f"torch: {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})")
print(f"cpu: {platform.processor() or platform.machine()}, {torch.get_num_threads()} intra-op threads")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"gpu: {p.name}, {p.total_memory // 2**20} MiB, {p.multi_processor_count} SMs, compute capability {p.major}.{p.minor}")
PY
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader \
    | sed 's/^/nvidia-smi: /' || true
} > "$out/environment.txt"
echo "results: $out"
