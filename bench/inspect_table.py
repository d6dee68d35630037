"""Runs `autograph inspect --json` over zoo models and prints a Markdown table of the statistics."""
import argparse
import json
import subprocess
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cli", required=True, help="path of the built autograph binary")
    p.add_argument("--zoo", required=True, help="directory with NAME.pt and NAME.json")
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    print("| model | operators | edges | width d | critical path (ops) | critical path (GFLOP) "
          "| GFLOP | compute / memory / view |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in a.models:
        r = subprocess.run([a.cli, "inspect", f"{a.zoo}/{name}.pt", "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr.strip(), file=sys.stderr)
            return r.returncode
        s = json.loads(r.stdout)
        k = s["ops_by_kind"]
        print(f"| {name} | {s['operators']} | {s['edges']} | {s['width']} | {s['critical_path_ops']} "
              f"| {s['critical_path_flops'] / 1e9:.2f} | {s['flops'] / 1e9:.2f} "
              f"| {k.get('compute', 0)} / {k.get('memory', 0)} / {k.get('view', 0)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
