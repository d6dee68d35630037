"""autograph.Settings: every option of autograph.optimize as one typed, validated object.

The options are declared once, in C++ (csrc/api/option_table.cpp: name, type, default, what they apply
to, help); this dataclass mirrors that table for editors and type checkers, and a test checks that the
two agree (names, types, defaults). Options whose default is decided at the call (the inputs' device,
the cost model by device) are None here. `autograph.option_table()` returns the C++ table itself.

    settings = autograph.Settings(method="autograph", max_streams=4, inductor=False)
    optimized, report = autograph.optimize(model, inputs, settings=settings)
"""
import dataclasses
import functools
import json
from typing import Any, Callable, Dict, List, Optional, Union

import torch

from ._library import load_library
from .errors import InputError, translate


def shapes_text(shapes: Any) -> str:
    """`shapes` as lists (one per shape: a tensor's sizes, or a list of them for several input tensors)
    in the option's text form: "1x128,1x128;8x512,8x512"."""
    def tensor(sizes: Any) -> str:
        return "x".join(str(int(n)) for n in sizes)
    try:
        out = []
        for shape in shapes:
            if hasattr(shape[0], "__len__"):  # a list of tensor sizes, one per input tensor
                out.append(",".join(tensor(t) for t in shape))
            else:
                out.append(tensor(shape))
        return ";".join(out)
    except (TypeError, ValueError, IndexError) as e:
        raise InputError(f"shapes: {shapes!r} is not a list of shapes (e.g. [(1, 3, 224, 224), (8, 3, 224, 224)], "
                         f"or [[(1, 128), (1, 128)], [(8, 512), (8, 512)]] for two input tensors)") from e


def declared(options: Dict[str, Any]) -> Dict[str, Any]:
    """`options` as the C++ table takes them: an accuracy measure given as a Python function (the export path's
    gate calls it; the C++ side never judges with it) left out."""
    return {k: v for k, v in options.items() if not (k == "accuracy" and callable(v))}


def check_options(options: Dict[str, Any], path: Optional[str] = None) -> None:
    """Raises InputError naming the first option optimize would refuse (an unknown name, a value of the
    wrong type or out of range): what every entry point checks before it does any work. With `path`
    ("torchscript" or "export", the path the model takes), also each option given that applies to the
    other path alone (check_options_apply), and an accuracy measure given as a function on the TorchScript path."""
    load_library()
    if path == "torchscript" and callable(options.get("accuracy")):
        raise InputError("option accuracy: a Python function judges candidates on the export path only; the "
                         "TorchScript path takes a built-in measure by name (max_error, top1, cosine, sqnr), or pass "
                         "ir=\"export\"")
    try:
        torch.ops.autograph.check_options(json.dumps(declared(options)))
    except (RuntimeError, ValueError) as e:
        raise translate(e) from None
    except TypeError as e:  # a value json cannot write (an object)
        raise InputError(f"options must be numbers, strings, booleans or lists of them: {e}") from None
    if path is not None:
        check_options_apply(options, path)


_PATHS = {"torchscript": "TorchScript path", "export": "export path"}
# What takes a model onto each path, for the message.
_HOW = {"torchscript": "a ScriptModule, a saved one's path, or an nn.Module without ir=\"export\"",
        "export": "an ExportedProgram, or ir=\"export\""}


def check_options_apply(names, path: str) -> None:
    """Raises InputError for the first of `names` (options set: a keyword given, whatever its value, or a
    Settings field apart from its default) whose declaration (option_table()'s "applies") names the other
    path alone: "TorchScript path", "export path, cpu", ... An option that names a device is not refused
    on another device: it is ignored there (cuda_graph on the CPU), as the table says."""
    if path not in _PATHS:
        raise InputError(f"unknown path '{path}': 'torchscript' or 'export'")
    applies = _applies()
    other = "export" if path == "torchscript" else "torchscript"
    for name in names:
        paths = {p for p, label in _PATHS.items() if label in _items(applies.get(name, ""))}
        if paths and path not in paths:
            raise InputError(f"option '{name}' applies to the {_PATHS[other]} (\"{applies[name]}\"), not the "
                             f"{_PATHS[path]} this model takes: drop it here. The {_PATHS[other]} takes "
                             f"{_HOW[other]}")


@functools.lru_cache(maxsize=None)
def _applies() -> Dict[str, str]:
    """Each option's "applies", as the C++ table declares it."""
    load_library()
    return {o["name"]: o["applies"] for o in json.loads(torch.ops.autograph.option_table())}


def _items(applies: str):
    return [item.strip() for item in applies.split(",")]


@dataclasses.dataclass(frozen=True)
class Settings:
    method: str = "autograph"
    device: Optional[str] = None
    shapes: Optional[str] = None
    plan_new_shapes: int = 0
    max_streams: int = 8
    cuda_graph: bool = True
    max_cuda_graphs: int = 16
    substitutions: Optional[bool] = None
    fuse_attention: bool = True
    merge_linears: bool = True
    regroup_convolutions: bool = True
    fold_conv_relu: bool = True
    prepack_onednn: bool = True
    channels_last_pools: bool = True
    stitch: bool = True
    inductor: bool = True
    openvino: bool = True
    onnxruntime: bool = True
    precision: str = "fp32"
    tolerance: float = 0.01
    # A built-in's name, or (export path) a function of (outputs, float32 outputs) giving a score, or
    # autograph.labelled(score, labels): a function of (outputs, labels), one label per calibration input.
    accuracy: Union[str, Callable[..., float]] = "max_error"
    check_rewrites: bool = True
    merge: bool = True
    alpha: float = 1.0
    block_ops: int = 40
    block_states: int = 1000
    r: int = 4
    budget: int = 20000
    time_limit: Optional[float] = None
    verify: int = 3
    ios_r: int = 3
    ios_s: int = 8
    ios_block: int = 24
    cost: Optional[str] = None
    device_model: Optional[str] = None
    cost_cache: Optional[str] = None

    def __post_init__(self) -> None:
        if self.device is not None and not isinstance(self.device, str):  # a torch.device
            object.__setattr__(self, "device", str(self.device))
        if self.shapes is not None and not isinstance(self.shapes, str):  # lists: the text form
            object.__setattr__(self, "shapes", shapes_text(self.shapes))
        self.validate()

    def options(self) -> Dict[str, Any]:
        """The options that differ from the defaults, by name, as the C++ side reads them."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None and getattr(self, f.name) != f.default}

    def validate(self) -> None:
        """Raises InputError naming the first option optimize would refuse (wrong type, out of range,
        not one of its choices, a device other than cpu, cuda, cuda:N)."""
        check_options(self.options())

    def declared(self) -> Dict[str, Any]:
        """options() as the C++ planner reads them (declared())."""
        return declared(self.options())

    @classmethod
    def of(cls, settings: Optional["Settings"] = None, **options: Any) -> "Settings":
        """`settings` (default: the defaults) with `options` set on top; unknown names and bad values are
        InputErrors naming them."""
        if options.get("shapes") is not None and not isinstance(options["shapes"], str):
            options = dict(options, shapes=shapes_text(options["shapes"]))
        check_options(options)  # the C++ table's message for an unknown name or a bad value
        try:
            return dataclasses.replace(settings if settings is not None else cls(), **options)
        except TypeError as e:
            raise InputError(str(e)) from None


def option_table() -> List[Dict[str, Any]]:
    """The C++ declaration of every option: [{name, type, default, default_note?, applies, help,
    choices?, min?, max?}]."""
    load_library()
    return json.loads(torch.ops.autograph.option_table())


def option_docs() -> str:
    """The option table as Markdown (the README's, written by scripts/option_docs.py)."""
    rows = ["| option | type | default | applies to | what it does |", "|---|---|---|---|---|"]
    for o in option_table():
        default = o.get("default_note") or json.dumps(o["default"])
        kind = o["type"]
        if o.get("choices"):
            kind += ": " + ", ".join(c for c in o["choices"] if c)
        elif "min" in o or "max" in o:
            bounds = (f"{o['min']:g}" if "min" in o else "") + ".." + (f"{o['max']:g}" if "max" in o else "")
            kind += f" ({bounds})"
        rows.append(f"| `{o['name']}` | {kind} | {default} | {o['applies']} | {o['help']} |")
    return "\n".join(rows) + "\n"


__all__ = ["Settings", "declared", "option_table", "option_docs"]
