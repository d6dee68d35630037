#!/usr/bin/env python3
"""Writes the README's option table from the C++ declaration of the options (csrc/api/option_table.cpp,
read through autograph.option_table()), between the <!-- options:begin --> and <!-- options:end -->
markers. --check exits 1 when the README's table is not what the declaration gives (a test runs it)."""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import autograph  # noqa: E402
from autograph.settings import option_docs  # noqa: E402

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the README is stale")
    parser.add_argument("--readme", default=str(ROOT / "README.md"))
    args = parser.parse_args()
    path = Path(args.readme)
    text = path.read_text()
    if BEGIN not in text or END not in text:
        print(f"{path}: no {BEGIN} ... {END} markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    updated = head + BEGIN + "\n" + option_docs() + END + tail
    if args.check:
        if updated != text:
            print(f"{path}: the option table differs from the declaration; run scripts/option_docs.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
