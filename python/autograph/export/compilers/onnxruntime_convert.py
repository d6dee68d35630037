"""A part's ONNX model to an ONNX Runtime package, in a process of its own that runs this file with the
arguments FOLDER PATH (converter_process.converter_command): it reads from its stdin the line "onnx N" and
the model's N bytes, has ONNX Runtime load it with its basic graph optimizations (constant folding,
redundant nodes removed: rewrites that hold on any machine, so the package stays portable; the runner
applies the machine's own when it loads the package) and writes MAGIC followed by the model it optimized
at PATH. A model ONNX Runtime cannot load (or a crash, or a hang) fails here, never in autograph's process.
It imports nothing of autograph, whose import loads its libraries, nor torch."""
import os
import sys

MAGIC = b"AGORT1\n"  # csrc/executor/onnxruntime_part.h: the package's first bytes


def onnx_header(size: int) -> bytes:
    """The script's first line on stdin where the ONNX model's `size` bytes follow."""
    return b"onnx %d\n" % size


def optimized(model: bytes, folder: str) -> bytes:
    """`model` as ONNX Runtime's basic graph optimizations leave it (one thread: the other cores are
    autograph's)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    with open(options.optimized_model_filepath, "rb") as f:
        return f.read()


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
    save_package(optimized(data, folder), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
