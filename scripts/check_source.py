#!/usr/bin/env python3
"""Checks the source layout that the build cannot (scripts/test.sh runs it; exits 1 on a violation).

C++:
  1. TorchScript stays above the executor: no file of csrc/{core,merge,stitch,stitch_plan,ops,search}/ includes a
     torch/csrc/jit header or torch/script.h, and every csrc/executor/ file that does says why on a
     line starting with "// TorchScript:" (the executor runs TorchScript Operations; nothing else may).
  2. No source file (csrc, include, tools, tests) over 600 lines.
  3. No function over 80 lines unless a comment starting with "// Long function:" in the three lines
     above it says why (measured with lizard when it is installed: the venv of scripts/setup.sh has it;
     where it is missing, e.g. a GPU machine without pip, this check is reported as not run).
Python obeys the same rules:
  4. No .py file of python/, bench/, scripts/, tests/python/, models/ or tools/ over 600 lines, and no
     function over 80 lines unless a comment starting with "# Long function:" in the three lines above its
     `def` (or above its decorators) says why.
  5. The package python/autograph/ is layered: each of its modules is declared in LAYERS below, lowest
     first, and imports only modules declared before it (importing a package means its __init__), so
     there are no import cycles either; a cycle is reported as a path a -> b -> a. Every import counts,
     relative or absolute, at the top or inside a function (a deferred import hides a cycle; it does not
     remove it); only imports under `if TYPE_CHECKING:` are exempt, since they never run.

Usage: check_source.py [--python-layers-only] [--root DIR]
  --python-layers-only  prints only the layering report of rule 5 (and exits 1 on a violation of it)
  --root DIR            checks the checkout at DIR instead of this one
"""
import argparse
import re
import sys
from pathlib import Path

from source_rules.python_imports import import_cycles, import_graph

# python/autograph/'s modules, lowest first: a module imports only modules above it in this list.
# A name missing from the tree is skipped; a module of the tree missing here is a violation.
LAYERS = [
    "errors",                            # the error types
    "_library",                          # finds and loads the C++ library
    "settings",                          # the typed options (Settings), resolved once
    "labelled",                          # option accuracy against labels (the user's score of outputs, labels)
    "export.program_format",             # the program text's header/body and the AtenGraph JSON's names (dtypes...)
    "export.progress",                   # the "autograph" logger and optimize's progress lines
    "export.calibration",                # calibration inputs, checked and flattened before any work
    "export.aten_import",                # ExportedProgram -> AtenGraph JSON (imports only errors and program_format)
    "export.lowered_graph",              # an FX graph's matmuls and convolutions below float32, as autocast
    "export.rewrites",                   # ExportedProgram rewrites before the import (BatchNorm folding, cuDNN fusions)
    "export.cache",                      # the disk cache of compiled parts
    "export.timing",                     # the one timing policy (optimize, the .pt2 CLI, the benchmarks)
    "export.measure",                    # option accuracy: a lowered candidate's outputs against float32's
    "export.check",                      # how candidates' outputs are judged
    "export.plans",                      # calls into the C++ planner
    "export.parts.graph",                # the parts layer: what a part is made of, read off the graph and its plan
    "export.parts.digest",               # the digest of a part's content, for every compiler's cache keys
    "export.parts.cut",                  # where a graph is cut into parts
    "export.parts.profile",              # a compiled part's profile by node, and each piece's share of it
    "export.parts.builder",              # a part as a module with example inputs; the compilers' per-optimize state
    "export.parts.rewrite",              # the program rewritten to call compiled parts, of any compiler
    "export.parts",                      # (package __init__)
    "export.candidate",                  # one candidate of the contest: what runs, its report entry, why it is out
    "export.compilers.cpu_features",     # what this CPU computes below float32 (bf16), for every compiler
    "export.compilers.toolchain",        # Inductor's toolchain settings
    "export.compilers.base",             # the compilers' protocol, typed on the parts layer's types
    "export.compilers.converter_process", # a part converted in a process of its own (OpenVINO's, ONNX Runtime's)
    "export.compilers.onnx_export",      # a part as an ONNX model, exported once per optimize
    "export.compilers.onnx_profile",     # a profile of an ONNX-made part read back to the graph's nodes
    "export.compilers.lowered_module",   # a part's module computing below float32 (lowered weights)
    "export.compilers.inductor",         # parts compiled by Inductor (AOTInductor packages)
    "export.compilers.quantize_request", # what a quantizing process reads on its stdin (no autograph imports)
    "export.compilers.quantize_aim",     # a quantizing process's loss by the built-in measure (no autograph imports)
    "export.compilers.qdq_in_float",     # a QDQ model with chosen operations turned back to float32 (no autograph imports)
    "export.compilers.quantized_part",   # a part's package quantized to INT8 by a quantizing process
    "export.compilers.openvino_convert", # a part to an OpenVINO package, in or out of process
    "export.compilers.openvino_quantize", # a part's OpenVINO package quantized to INT8 by NNCF, out of process
    "export.compilers.openvino_revert",  # a quantized OpenVINO package with some operations in float32 again
    "export.compilers.openvino",         # parts compiled by OpenVINO (CPU)
    "export.compilers.onnxruntime_convert", # a part's ONNX model to an ONNX Runtime package, out of process
    "export.compilers.onnxruntime_quantize", # a part's ONNX Runtime package quantized to INT8, out of process
    "export.compilers.onnxruntime",      # parts compiled by ONNX Runtime (CPU)
    "export.compilers",                  # (package __init__)
    "export.candidates",                 # the candidates beside the plan: compiled parts, cuDNN's fusions
    "export.lowering",                   # lowering part by part where the whole graph misses the tolerance
    "export.mixing",                     # the best compiler for every part: a mix of compilers' parts
    "export.kept_precision",             # which precision the contest keeps, and the report's word on it
    "export.contest",                    # the contest: checks, times, keeps the fastest
    "export.shapes",                     # plans and graphs for other shapes
    "export.runtime",                    # ExecuteProgram, the fake kernel
    "export.packed_weights",             # the small weights of an optimized program packed, one tensor per dtype
    "export.optimize",                   # optimize_exported: the driver
    "export",                            # (package __init__)
    "api",                               # autograph.optimize / load / substitute
    "dynamo",                            # the torch.compile backend
    "export_cli",                        # the `autograph` command on .pt2 programs
    "_cli",                              # the installed `autograph` command: the C++ CLI or export_cli
    "__init__",                          # the package
]

NO_TORCHSCRIPT = ["core", "merge", "stitch", "stitch_plan", "ops", "search"]
JIT_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]torch/(csrc/jit/|script\.h)')
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCE_DIRS = ["csrc", "include", "tools", "tests"]
PYTHON_DIRS = ["python", "bench", "scripts", "tests/python", "models", "tools"]
PACKAGE_DIR = Path("python") / "autograph"


def sources(root):
    for d in SOURCE_DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.suffix in (".h", ".cpp", ".cu", ".cuh"):
                yield p


def python_sources(root):
    for d in PYTHON_DIRS:
        for p in sorted((root / d).rglob("*.py")):
            if "__pycache__" not in p.parts:
                yield p


def check_torchscript(root, problems):
    for layer in NO_TORCHSCRIPT:
        for p in sorted((root / "csrc" / layer).rglob("*")):
            if p.suffix not in (".h", ".cpp", ".cu"):
                continue
            for n, line in enumerate(p.read_text().splitlines(), 1):
                if JIT_INCLUDE.match(line):
                    problems.append(f"{p.relative_to(root)}:{n}: csrc/{layer}/ must not include TorchScript: {line.strip()}")
    for p in sorted((root / "csrc" / "executor").rglob("*")):
        if p.suffix not in (".h", ".cpp"):
            continue
        text = p.read_text()
        if any(JIT_INCLUDE.match(line) for line in text.splitlines()) and "// TorchScript:" not in text:
            problems.append(f"{p.relative_to(root)}: includes TorchScript without a '// TorchScript:' line saying why")


def check_file_lengths(root, problems):
    for p in [*sources(root), *python_sources(root)]:
        lines = len(p.read_text().splitlines())
        if lines > MAX_FILE_LINES:
            problems.append(f"{p.relative_to(root)}: {lines} lines (at most {MAX_FILE_LINES}: split it by concept)")


def _explained(lines, start_line, marker, python):
    """Whether one of the three lines above a function (above its decorators in Python) holds the marker."""
    first = start_line - 1  # 0-based index of the function's first line
    while python and first > 0 and lines[first - 1].lstrip().startswith("@"):
        first -= 1
    return any(marker in l for l in lines[max(0, first - 3):first])


def check_function_lengths(root, problems):
    try:
        import lizard
    except ImportError:
        print("check_source: function lengths not checked (lizard is not installed here)")
        return
    for p in [*sources(root), *python_sources(root)]:
        python = p.suffix == ".py"
        marker = "# Long function:" if python else "// Long function:"
        text = p.read_text()
        lines = text.splitlines()
        for f in lizard.analyze_file.analyze_source_code(str(p), text).function_list:
            if f.length <= MAX_FUNCTION_LINES or _explained(lines, f.start_line, marker, python):
                continue
            name = f.name.split("autograph::")[-1].replace("cli::", "").replace("CPU_CAPABILITY::", "")
            problems.append(f"{p.relative_to(root)}:{f.start_line}: {name} has {f.length} lines (at most "
                            f"{MAX_FUNCTION_LINES}, or a '{marker}' comment above it saying why)")


def check_python_layers(root, problems, layers=LAYERS):
    """Rule 5: import cycles, modules missing from LAYERS, and imports of modules after the importer in it."""
    package_dir = root / PACKAGE_DIR
    if not package_dir.is_dir():
        return
    modules, graph = import_graph(package_dir)
    rank = {m: i for i, m in enumerate(layers)}
    rel = {m: p.relative_to(root) for m, p in modules.items()}
    for cycle in import_cycles(graph):
        where = ", ".join(f"{rel[a]}:{graph[a][b]}" for a, b in zip(cycle, cycle[1:]))
        problems.append(f"{PACKAGE_DIR}: import cycle {' -> '.join(cycle)} (imports at {where})")
    for module in sorted(graph):
        if module not in rank:
            problems.append(f"{rel[module]}: module {module} is not in check_source.py's LAYERS: declare it in "
                            "LAYERS (lowest first) with a comment saying what it is")
            continue
        for target, line in sorted(graph[module].items(), key=lambda e: e[1]):
            if target in rank and rank[target] > rank[module]:
                problems.append(f"{rel[module]}:{line}: {module} imports {target}, which comes after it in "
                                "LAYERS (a module imports only modules before it)")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Checks the source layout that the build cannot.")
    parser.add_argument("--python-layers-only", action="store_true",
                        help="print only the layering report of python/autograph/")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout to check (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    problems = []
    if not args.python_layers_only:
        check_torchscript(root, problems)
        check_file_lengths(root, problems)
        check_function_lengths(root, problems)
    check_python_layers(root, problems)
    for p in problems:
        print(p)
    print(f"check_source: {'ok' if not problems else str(len(problems)) + ' problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
