"""scripts/check_source.py's Python rules on small synthetic trees: the layering of python/autograph/
(cycles through deferred imports, upward imports, undeclared modules, TYPE_CHECKING imports exempt,
packages and relative imports) and the size limits of files and functions."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "scripts"))
import check_source  # noqa: E402

LAYERS = ["errors", "low", "high", "absent", "__init__"]


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def layer_problems(root, files, layers=LAYERS):
    write(root, {f"python/autograph/{name}": text for name, text in files.items()})
    problems = []
    check_source.check_python_layers(root, problems, layers)
    return problems


def test_downward_imports_of_every_form_pass_and_absent_layers_are_skipped(tmp_path):
    assert layer_problems(tmp_path, {
        "__init__.py": "from .high import h\nimport autograph.low\n",
        "errors.py": "class E(Exception): pass\n",
        "low.py": "from .errors import E\n",
        "high.py": "import os\nfrom autograph import low\nfrom . import errors\n"
                   "def f():\n    from autograph.errors import E\n",
    }) == []


def test_a_cycle_hidden_in_a_function_level_import_is_reported_as_a_path(tmp_path):
    problems = layer_problems(tmp_path, {
        "__init__.py": "",
        "low.py": "def later():\n    from . import high\n    return high\n",
        "high.py": "from .low import later\n",
    })
    assert "python/autograph: import cycle high -> low -> high (imports at python/autograph/high.py:1, " \
           "python/autograph/low.py:2)" in problems
    assert "python/autograph/low.py:2: low imports high, which comes after it in LAYERS " \
           "(a module imports only modules before it)" in problems
    assert len(problems) == 2


def test_an_upward_import_is_reported_with_its_line(tmp_path):
    problems = layer_problems(tmp_path, {
        "__init__.py": "",
        "high.py": "X = 1\n",
        "low.py": "import json\n\nimport autograph.high as h\n",
    })
    assert problems == ["python/autograph/low.py:3: low imports high, which comes after it in LAYERS "
                        "(a module imports only modules before it)"]


def test_importing_the_package_itself_is_importing_its_init(tmp_path):
    problems = layer_problems(tmp_path, {"__init__.py": "from .low import f\n", "low.py": "import autograph\n"})
    assert problems == ["python/autograph: import cycle __init__ -> low -> __init__ (imports at "
                        "python/autograph/__init__.py:1, python/autograph/low.py:1)",
                        "python/autograph/low.py:1: low imports __init__, which comes after it in LAYERS "
                        "(a module imports only modules before it)"]


def test_a_module_missing_from_layers_is_reported(tmp_path):
    problems = layer_problems(tmp_path, {"__init__.py": "", "low.py": "", "extra.py": "from . import low\n"})
    assert problems == ["python/autograph/extra.py: module extra is not in check_source.py's LAYERS: declare it "
                        "in LAYERS (lowest first) with a comment saying what it is"]


def test_type_checking_imports_are_exempt_and_their_else_branch_is_not(tmp_path):
    files = {
        "__init__.py": "",
        "high.py": "from .low import f\nclass H: pass\n",
        "low.py": "import typing\nfrom typing import TYPE_CHECKING\n"
                  "if TYPE_CHECKING:\n    from .high import H\n"
                  "if typing.TYPE_CHECKING:\n    import autograph.high\n"
                  "def f(h: 'H'): return h\n",
    }
    assert layer_problems(tmp_path, files) == []
    files["low.py"] += "if TYPE_CHECKING:\n    pass\nelse:\n    from . import high\n"
    assert len(layer_problems(tmp_path, files)) == 2  # the cycle and the upward import


def test_subpackages_relative_levels_and_from_package_import_submodules(tmp_path):
    layers = ["errors", "export.cache", "export.timing", "export", "api", "__init__"]
    files = {
        "__init__.py": "from .api import optimize\n",
        "errors.py": "",
        "api.py": "from .export import optimize_exported\n",
        "export/__init__.py": "from .timing import t\ndef optimize_exported(): pass\n",
        "export/cache.py": "from ..errors import E\n",
        "export/timing.py": "from . import cache\nfrom .. import errors\nfrom autograph.export.cache import c\n",
    }
    assert layer_problems(tmp_path, files, layers) == []
    # A name of export/__init__.py is an import of the package's __init__, above cache; a package
    # missing from LAYERS is reported like a module.
    files["export/cache.py"] = "from autograph.export import optimize_exported\n"
    files["export/compilers/__init__.py"] = ""
    assert layer_problems(tmp_path, files, layers) == [
        "python/autograph: import cycle export -> export.timing -> export.cache -> export (imports at "
        "python/autograph/export/__init__.py:1, python/autograph/export/timing.py:1, python/autograph/export/cache.py:1)",
        "python/autograph/export/cache.py:1: export.cache imports export, which comes after it in LAYERS "
        "(a module imports only modules before it)",
        "python/autograph/export/compilers/__init__.py: module export.compilers is not in check_source.py's LAYERS: "
        "declare it in LAYERS (lowest first) with a comment saying what it is",
    ]


def python_function(name, body_lines, above=""):
    return above + f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(body_lines))


def test_python_files_over_600_lines_are_reported(tmp_path):
    write(tmp_path, {"bench/big.py": "x = 1\n" * 601, "tools/fine.py": "x = 1\n" * 600,
                     "python/autograph/errors.py": "x = 1\n" * 601, "examples/elsewhere.py": "x = 1\n" * 700})
    problems = []
    check_source.check_file_lengths(tmp_path, problems)
    assert sorted(problems) == ["bench/big.py: 601 lines (at most 600: split it by concept)",
                                "python/autograph/errors.py: 601 lines (at most 600: split it by concept)"]


def test_python_functions_over_80_lines_are_reported_unless_a_long_function_comment_says_why(tmp_path):
    pytest.importorskip("lizard")
    write(tmp_path, {"scripts/a.py": python_function("fits", 79) + python_function("too_long", 80),
                     "tests/python/b.py": python_function("explained", 90, "# Long function: one table, row by row\n"),
                     "models/c.py": python_function("decorated", 90, "# Long function: why\n@first\n@second\n@third\n"),
                     "python/d.py": python_function("far", 90, "# Long function: too far above\n\n\n\n")})
    problems = []
    check_source.check_function_lengths(tmp_path, problems)
    assert sorted(problems) == [
        "python/d.py:5: far has 91 lines (at most 80, or a '# Long function:' comment above it saying why)",
        "scripts/a.py:81: too_long has 81 lines (at most 80, or a '# Long function:' comment above it saying why)",
    ]


def test_python_layers_only_prints_the_layering_report_alone(tmp_path):
    write(tmp_path, {"python/autograph/__init__.py": "", "python/autograph/stray.py": "x = 1\n" * 700})
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_source.py"), "--python-layers-only",
                             "--root", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "python/autograph/stray.py: module stray is not in check_source.py's LAYERS: declare it in LAYERS "
        "(lowest first) with a comment saying what it is",
        "check_source: 1 problem(s)"]
