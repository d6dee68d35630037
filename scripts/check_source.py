#!/usr/bin/env python3
"""Checks the source layout that the build cannot (scripts/test.sh runs it; exits 1 on a violation).

  1. TorchScript stays above the executor: no file of csrc/{core,merge,stitch,stitch_plan,ops,search}/ includes a
     torch/csrc/jit header or torch/script.h, and every csrc/executor/ file that does says why on a
     line starting with "// TorchScript:" (the executor runs TorchScript Operations; nothing else may).
  2. No source file (csrc, include, tools, tests) over 600 lines.
  3. No function over 80 lines unless a comment starting with "// Long function:" in the three lines
     above it says why (measured with lizard when it is installed: the venv of scripts/setup.sh has it;
     where it is missing, e.g. a GPU machine without pip, this check is reported as not run).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_TORCHSCRIPT = ["core", "merge", "stitch", "stitch_plan", "ops", "search"]
JIT_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]torch/(csrc/jit/|script\.h)')
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCE_DIRS = ["csrc", "include", "tools", "tests"]


def sources():
    for d in SOURCE_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".h", ".cpp", ".cu", ".cuh"):
                yield p


def check_torchscript(problems):
    for layer in NO_TORCHSCRIPT:
        for p in sorted((ROOT / "csrc" / layer).rglob("*")):
            if p.suffix not in (".h", ".cpp", ".cu"):
                continue
            for n, line in enumerate(p.read_text().splitlines(), 1):
                if JIT_INCLUDE.match(line):
                    problems.append(f"{p.relative_to(ROOT)}:{n}: csrc/{layer}/ must not include TorchScript: {line.strip()}")
    for p in sorted((ROOT / "csrc" / "executor").rglob("*")):
        if p.suffix not in (".h", ".cpp"):
            continue
        text = p.read_text()
        if any(JIT_INCLUDE.match(line) for line in text.splitlines()) and "// TorchScript:" not in text:
            problems.append(f"{p.relative_to(ROOT)}: includes TorchScript without a '// TorchScript:' line saying why")


def check_file_lengths(problems):
    for p in sources():
        rel = str(p.relative_to(ROOT))
        lines = len(p.read_text().splitlines())
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}: split it by concept)")


def check_function_lengths(problems):
    try:
        import lizard
    except ImportError:
        print("check_source: function lengths not checked (lizard is not installed here)")
        return
    for p in sources():
        rel = str(p.relative_to(ROOT))
        text = p.read_text()
        lines = text.splitlines()
        for f in lizard.analyze_file.analyze_source_code(str(p), text).function_list:
            if f.length <= MAX_FUNCTION_LINES:
                continue
            name = f.name.split("autograph::")[-1].replace("cli::", "").replace("CPU_CAPABILITY::", "")
            above = lines[max(0, f.start_line - 4):f.start_line - 1]
            if any("// Long function:" in l for l in above):
                continue
            problems.append(f"{rel}:{f.start_line}: {name} has {f.length} lines (at most {MAX_FUNCTION_LINES}, "
                            "or a '// Long function:' comment above it saying why)")


def main():
    problems = []
    check_torchscript(problems)
    check_file_lengths(problems)
    check_function_lengths(problems)
    for p in problems:
        print(p)
    print(f"check_source: {'ok' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
