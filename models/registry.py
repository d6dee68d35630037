"""The zoo: names, builders, example inputs and the deterministic weight recipe.

`build(name)` returns the eval-mode module that `export.py` traces; the weights depend only on
the name (seeded), so exporting twice, or rebuilding in a test, gives the same module.
"""
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from . import bert, nasnet, randwire, sru, torchvision_models
from .weights import randomize_batch_norms, randomize_layer_norms

MODEL_SEED = 0          # torch.manual_seed before construction
NORM_SEED = 1           # LayerNorm / BatchNorm parameters and statistics
EXAMPLE_SEED = 100      # example inputs used for tracing and checking
CALIB_SEED = 101        # inputs for BatchNorm statistics calibration
CALIB_BATCH = 8         # calibration images: statistics must cover between-image variation


@dataclass(frozen=True)
class InputSpec:
    shape: Tuple[int, ...]
    dtype: str                      # "float32" | "int64"
    high: Optional[int] = None      # int64 inputs: values are drawn from [0, high)

    def to_json(self) -> dict:
        d = {"shape": list(self.shape), "dtype": self.dtype}
        if self.high is not None:
            d["low"] = 0
            d["high"] = self.high
        return d

    def make(self, gen: torch.Generator) -> torch.Tensor:
        if self.dtype == "float32":
            return torch.randn(self.shape, generator=gen, dtype=torch.float32)
        if self.dtype == "int64":
            return torch.randint(0, self.high, self.shape, generator=gen, dtype=torch.int64)
        raise ValueError(f"unsupported dtype {self.dtype}")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    builder: Callable[[], nn.Module]
    inputs: Tuple[InputSpec, ...]
    source: str


def _image(size: int) -> Tuple[InputSpec, ...]:
    return (InputSpec((1, 3, size, size), "float32"),)


_SPECS: List[ModelSpec] = [
    ModelSpec("inception_v3", torchvision_models.inception_v3, _image(299),
              "Inception-v3 (Szegedy et al. 2016), torchvision Inception3, aux_logits=False"),
    ModelSpec("resnet50", torchvision_models.resnet50, _image(224),
              "ResNet-50 (He et al. 2016), torchvision resnet50"),
    ModelSpec("resnext50_32x4d", torchvision_models.resnext50_32x4d, _image(224),
              "ResNeXt-50 32x4d (Xie et al. 2017), torchvision resnext50_32x4d"),
    ModelSpec("squeezenet", torchvision_models.squeezenet, _image(224),
              "SqueezeNet 1.0 (Iandola et al. 2016), torchvision squeezenet1_0"),
    ModelSpec("nasnet_a_large", nasnet.nasnet_a_large, _image(331),
              "NASNet-A Large 6@4032 (Zoph et al. 2018), layout of Cadene pretrainedmodels nasnetalarge"),
    ModelSpec("nasnet_a_mobile", nasnet.nasnet_a_mobile, _image(224),
              "NASNet-A Mobile 4@1056 (Zoph et al. 2018), layout of Cadene pretrainedmodels nasnetamobile"),
    ModelSpec("randwire", randwire.randwire_ws_small, _image(224),
              "RandWire-WS(N=32,K=4,P=0.75) small regime C=78 (Xie et al. 2019), graphs seeded"),
    ModelSpec("rnntc_sru", sru.rnntc_sru, (InputSpec((1, 20), "int64", high=10000),),
              "RNN text classifier: embedding 10000x1024, 1 SRU layer (Lei et al. 2018) unrolled over "
              "20 steps, mean pool, linear 2 classes (MetaFlow RNNTC)"),
    ModelSpec("bert_base", bert.bert_base, (InputSpec((1, 128), "int64", high=30522),),
              "BERT-base encoder (Devlin et al. 2019): 12 layers, 768 hidden, 12 heads, 3072 FFN, "
              "seq 128; outputs last hidden state"),
]

MODELS: Dict[str, ModelSpec] = {s.name: s for s in _SPECS}
NAMES: List[str] = [s.name for s in _SPECS]


def spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(NAMES)}") from None


def construct(name: str) -> nn.Module:
    """The bare module with its initialiser's weights (seeded), no normalisation tweaks, eval mode."""
    s = spec(name)
    torch.manual_seed(MODEL_SEED)
    return s.builder().eval()


def make_inputs(name: str, seed: int = EXAMPLE_SEED, batch: Optional[int] = None) -> List[torch.Tensor]:
    """Random inputs of the model's shapes (batch size replaced by `batch` when given)."""
    gen = torch.Generator()
    gen.manual_seed(seed)
    inputs = spec(name).inputs
    if batch is not None:
        inputs = [InputSpec((batch,) + i.shape[1:], i.dtype, i.high) for i in inputs]
    return [i.make(gen) for i in inputs]


def build(name: str) -> nn.Module:
    """The module that gets exported: seeded weights, randomized normalisation layers, eval mode."""
    model = construct(name)
    randomize_layer_norms(model, seed=NORM_SEED)
    with torch.no_grad():
        randomize_batch_norms(model, make_inputs(name, CALIB_SEED, CALIB_BATCH), seed=NORM_SEED)
    return model.eval()


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
