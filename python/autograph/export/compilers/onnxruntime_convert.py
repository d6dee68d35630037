"""A part's ONNX model to an ONNX Runtime package, in a process of its own that runs this file with the
arguments FOLDER PATH (converter_process.converter_command): it reads from its stdin the line "onnx N" and
the model's N bytes, has ONNX Runtime load it as the runner will (every graph optimization: what can fault
at load faults here) and writes MAGIC followed by the model as exported at PATH. The package is the model
as exported, not as optimized for this machine: it stays portable, and the runner's load optimizes it
anyway (writing a large model's optimized copy took longer than loading it). A model ONNX Runtime cannot
load (or a crash, or a hang) fails here, never in autograph's process. It imports nothing of autograph,
whose import loads its libraries, nor torch."""
import os
import sys

MAGIC = b"AGORT1\n"  # csrc/executor/onnxruntime_part.h: the package's first bytes


def onnx_header(size: int) -> bytes:
    """The script's first line on stdin where the ONNX model's `size` bytes follow."""
    return b"onnx %d\n" % size


def check_loads(model: bytes) -> None:
    """Raises where ONNX Runtime cannot load `model` with every graph optimization on (one thread: the other
    cores are autograph's)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def save_package(model: bytes, path: str) -> None:
    """MAGIC and `model` at `path`, atomically (whole packages only, also with concurrent optimizers)."""
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "wb") as out:
        out.write(MAGIC + model)
    os.replace(partial, path)


def main(folder: str, path: str) -> int:
    line = sys.stdin.buffer.readline()
    if not line.startswith(b"onnx "):
        print("the part was not written", file=sys.stderr)
        return 1
    size = int(line.split()[1])
    data = sys.stdin.buffer.read(size)
    if len(data) != size:
        print("the ONNX model was cut short", file=sys.stderr)
        return 1
    check_loads(data)
    save_package(data, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
