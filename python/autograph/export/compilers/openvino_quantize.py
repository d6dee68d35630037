"""A part's OpenVINO package quantized to INT8 by NNCF's post-training quantization, in a Python process of
its own that runs this file with the arguments FOLDER PATH (converter_process): it reads the float32
package, the settings and the inputs from its stdin (quantize_request.py), quantizes the model on the
calibration inputs (activations and weights of the convolutions and matmuls to INT8, the
rest float32) and writes the package at PATH. With PATH "-" (converter_process.Spare: started before its part
is known) it imports NNCF first, then reads the path from its stdin's first line.

NNCF's model types (settings["model_types"], None: as any model; "TRANSFORMER": its softmax and
normalizations patterns, fewer operations in INT8) are tried in turn. Without an aim, by the most accurate
recipe of the last of them. With one (a built-in accuracy
measure, its bound and autograph's library, which computes it), by the first recipe, model type after
model type, whose outputs on the calibration inputs are within the bound of the float32 model's (a model
type's tries end early where one misses it by far: MISSED_BY_AT_MOST), else by NNCF's accuracy control,
which returns layers to float32, those that cost the measure most first, until they are (on a model of at
most RANKED_AT_MOST layers whose ranking costs at most RANKING_BUDGET times its quantization: ranks; else by
the last quantization made, the one its parts are tried in).

NNCF lives apart from autograph's environment, in the folder named by AUTOGRAPH_NNCF_DIR (scripts/setup.sh
installs it there), appended to this process's sys.path alone: its dependency tabulate, importable in a
process that imported torch, turns an unhandled Ctrl-C's exit into status 1 instead of the signal's
(torch's exit handler imports it), which autograph's own process keeps. It imports nothing of autograph."""
import os
import runpy
import sys
import time
from typing import Any, Dict, List

# NNCF's presets tried in order, the fastest first, each with its full bias correction (free at run time:
# only the biases change). Its defaults (fast bias correction) on the IR of trained models' parts missed a
# cosine bound of 0.001 where these met it (mtcnn_onet 0.0052, full bias correction 0.00096); its mixed
# preset (asymmetric activations: a PReLU's or an addition's outputs are signed) is the more accurate
# (0.00065 there, mtcnn_pnet 0.0048 against 0.0074).
RECIPES = [{"preset": "PERFORMANCE", "fast_bias_correction": False},
           {"preset": "MIXED", "fast_bias_correction": False}]

# NNCF's model types tried in turn on a transformer's part cut from its graph (None: as any model; a whole
# graph is quantized by each as a candidate of its own, timed side by side). The plain type first: on a
# transformer encoder's float inputs it met a cosine bound of 0.001 and ran 1.13x the transformer type's
# INT8, which keeps more of the operations in float (on bert_base, though, the transformer type's ran 1.12x
# the plain type's: neither is the faster on every model).
TRANSFORMER_TYPES = [None, "TRANSFORMER"]

# A recipe's loss beyond this many times the bound ends its model type's tries: the next recipes are the
# more accurate by about 1.5x on the models measured (mtcnn_onet 0.00096 to 0.00065, mtcnn_pnet 0.0074 to
# 0.0048), so none of them would meet it, and each quantizes the whole model once more. The accuracy
# control, where the model is small enough to rank, still runs.
MISSED_BY_AT_MOST = 4.0
# At most this many rounds of layers returned to float32 (each compiles and runs the model again): the
# accuracy control's time stays bounded on a large model; where it ends beyond the bound, the contest drops
# the candidate and the parts are tried one by one.
RESTORED_AT_MOST = 8
# The accuracy control first ranks every quantized layer by compiling and running the model with it
# returned to float32; a model with more layers than this skips it (resnet50's 71 took over 7 minutes on 2
# cores, against about a minute for its whole bf16 optimize) and, beyond the bound, is lowered part by part.
RANKED_AT_MOST = 32
# The accuracy control ranks by one compile and run of the model per group of quantizers: it runs only
# where that is expected to cost at most this many times the quantization that missed (the estimate: the
# quantized model's FakeQuantize operations, at least as many as the groups, times the compile and run of
# that model just measured). On fcpe (21 layers) its ranking of 36 groups took 22.7 s beside a 9.8-s
# quantization on 2 cores, and its result still missed the bound, where the parts tried after it met it in
# 7 s (bench/results/int8-trained-2026-11-30-cpu): the int8 optimize took 2.8x the float one's.
RANKING_BUDGET = 1.0
# On a model of more than RANKED_AT_MOST layers every recipe corrects each layer's bias on its own (fast):
# the full correction runs the model past each layer once per layer, and it makes up in each layer for the
# quantized layers before it, which a part tried after float32 ones lacks (openvino_revert). On a resnet50
# (random weights) the fast one's whole graph missed a cosine bound by less (0.017 against 0.033).

# The operations NNCF quantizes whose count stands for the layers it ranks.
_QUANTIZED_OPS = {"Convolution", "GroupConvolution", "MatMul", "ConvolutionBackpropData"}


def ranks(layers: int, quantizers: int, check_s: float, quantize_s: float) -> bool:
    """Whether NNCF's accuracy control runs on a model of `layers` quantized layers whose quantization put in
    `quantizers` FakeQuantize operations and took `quantize_s`, the quantized model's compile and run on the
    judged inputs `check_s`: at most RANKED_AT_MOST layers, and its ranking (about a check per quantizer)
    within RANKING_BUDGET times the quantization's time."""
    return layers <= RANKED_AT_MOST and quantizers * check_s <= RANKING_BUDGET * quantize_s


def _layers(model) -> int:
    """How many layers of `model` NNCF quantizes (its convolutions and matmuls)."""
    return sum(op.get_type_name() in _QUANTIZED_OPS for op in model.get_ops())


def _beside(name: str) -> Dict[str, Any]:
    """The module `name`.py beside this file, run by path (this process has no autograph on its sys.path)."""
    return runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))


def main(folder: str, path: str) -> int:
    import warnings
    warnings.simplefilter("ignore")
    where = os.environ.get("AUTOGRAPH_NNCF_DIR", "")
    if where:
        sys.path.append(where)  # after autograph's environment: its numpy and OpenVINO stay the ones used
    import nncf  # first: a process started before its part is known imports it meanwhile
    import openvino as ov
    if path == "-":
        path = sys.stdin.buffer.readline().decode().rstrip("\n")
    read = _beside("quantize_request")["read"](sys.stdin.buffer.read())
    if read is None or not path:
        print("the package was cut short", file=sys.stderr)
        return 1
    package, settings, judged, calls = read
    convert = _beside("openvino_convert")
    xml, weights = convert["read_package"](package)
    model = ov.Core().read_model(model=xml, weights=ov.Tensor(weights))
    kinds = [{"model_type": getattr(nncf.ModelType, t)} if t else {} for t in settings["model_types"]]
    fast = _layers(model) > RANKED_AT_MOST  # each layer's bias corrected on its own (above RANKED_AT_MOST)
    families = [[dict(subset_size=len(calls), preset=getattr(nncf.QuantizationPreset, r["preset"]),
                      fast_bias_correction=r["fast_bias_correction"] or fast, **kind) for r in RECIPES]
                for kind in kinds]
    if settings["aim"]:
        quantized = _aimed(nncf, model, calls, judged, dict(settings["aim"], library=settings["library"]), families)
    else:
        quantized = nncf.quantize(model, nncf.Dataset(calls), **families[-1][-1])
    convert["save_package"](quantized, path, inside=folder)
    return 0


def _aimed(nncf, model, calls: List[List["numpy.ndarray"]], judged: List[List["numpy.ndarray"]],  # noqa: F821
           aim: Dict[str, Any], families: List[List[Dict[str, Any]]]):
    """`model` quantized on `calls` by the first recipe of `families` (lists of recipes, the less accurate
    first) within the aim's bound (none after one in its family that missed a bound above 0 by more than
    MISSED_BY_AT_MOST times), else by NNCF's accuracy control with the last recipe of the last family (where
    it ranks; else the last quantization made, for the parts).
    The validation is 1 - the aim's measure (autograph's own, core/output_error, through its library:
    quantize_aim) of the outputs on the `judged` inputs (the example's and the calibration inputs, as the contest judges)
    against the float32 model's."""
    import numpy as np
    import openvino as ov
    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters
    loss_of = _beside("quantize_aim")["loss_by"](aim)
    core = ov.Core()
    reference = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})

    def run(compiled, call) -> List["numpy.ndarray"]:  # noqa: F821 - copies: a request's outputs are reused
        return [np.array(o) for o in compiled(call).to_tuple()]
    want = {id(call): run(reference, call) for call in judged}

    def validate(compiled, items) -> float:  # NNCF passes the dataset, or the items it ranks on
        items = list(items)
        return 1.0 - loss_of([run(compiled, call) for call in items], [want[id(call)] for call in items])

    dataset = nncf.Dataset(calls)
    for recipes in families:
        for recipe in recipes:
            start = time.perf_counter()
            quantized = nncf.quantize(model, dataset, **recipe)
            quantized_at = time.perf_counter()
            loss = 1.0 - validate(core.compile_model(quantized, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}), judged)
            quantize_s, check_s = quantized_at - start, time.perf_counter() - quantized_at
            if loss <= aim["bound"]:
                return quantized
            if 0 < aim["bound"] and MISSED_BY_AT_MOST * aim["bound"] < loss:
                break
    layers = _layers(model)
    quantizers = sum(op.get_type_name() == "FakeQuantize" for op in quantized.get_ops())
    if not ranks(layers, quantizers, check_s, quantize_s):  # the contest finds it beyond the bound and tries the parts
        print(f"no accuracy control: {layers} layers, {quantizers} quantizers to rank at {check_s:.2f} s each "
              f"(at most {RANKED_AT_MOST} layers, {RANKING_BUDGET:g} x the quantization's {quantize_s:.1f} s)",
              file=sys.stderr)
        # The parts are tried in the last quantization made, turned back to float32 where they miss
        # (openvino_revert). Not in one by the most accurate recipe made for them: on fcpe, whose first recipe
        # missed by far, that took as long as the first, and fewer of its parts kept INT8 within the bound.
        return quantized
    return nncf.quantize_with_accuracy_control(
        model, dataset, nncf.Dataset(judged), validate, max_drop=aim["bound"],
        advanced_accuracy_restorer_parameters=AdvancedAccuracyRestorerParameters(
            num_ranking_workers=1, max_num_iterations=RESTORED_AT_MOST),
        **families[-1][-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
