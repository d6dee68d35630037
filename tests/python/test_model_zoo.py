"""Model zoo tests (models/): export round trip for a quick subset, parameter counts of every model
against published figures.

Environment: AUTOGRAPH_ZOO_DIR, when set, is the directory the round-trip tests export into and
reuse (models already there are not re-exported, e.g. a zoo made by scripts/bench.sh); otherwise
a temporary directory is used. Runs on CPU with one intra-op thread, in well under a minute.
"""
import json
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models import registry  # noqa: E402
from models.export import export_model, main as export_main  # noqa: E402

QUICK = ["squeezenet", "rnntc_sru", "randwire"]

# torch.jit.trace/save/load warn that TorchScript is deprecated; the zoo is TorchScript on purpose.
pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def zoo_dir(tmp_path_factory) -> Path:
    env = os.environ.get("AUTOGRAPH_ZOO_DIR")
    return Path(env) if env else tmp_path_factory.mktemp("zoo")


def _assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = max(1.0, want.abs().max().item())
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("name", QUICK)
def test_export_round_trip(name, zoo_dir):
    fresh = export_model(name, zoo_dir) is not None
    pt, js = zoo_dir / f"{name}.pt", zoo_dir / f"{name}.json"
    assert pt.is_file() and js.is_file()

    meta = json.loads(js.read_text())
    spec = registry.spec(name)
    assert meta["name"] == name
    assert isinstance(meta["source"], str) and meta["source"]
    assert len(meta["inputs"]) == len(spec.inputs)
    for got, want in zip(meta["inputs"], spec.inputs):
        assert got["shape"] == list(want.shape)
        assert got["dtype"] == want.dtype and got["dtype"] in ("float32", "int64")
        if got["dtype"] == "int64":
            assert 0 <= got["low"] < got["high"]

    loaded = torch.jit.load(str(pt))
    eager = registry.build(name)
    if fresh:
        # Exported just now: the weights are exactly the deterministic ones.
        want_state = eager.state_dict()
        got_state = loaded.state_dict()
        assert set(want_state) == set(got_state)
        for k, v in want_state.items():
            assert torch.equal(got_state[k], v), k
    else:
        # Reused from AUTOGRAPH_ZOO_DIR (maybe made elsewhere): compare the graph, not the bits.
        eager.load_state_dict(loaded.state_dict())

    with torch.no_grad():
        for seed in (registry.EXAMPLE_SEED, 7):
            inputs = registry.make_inputs(name, seed)
            want = eager(*inputs)
            got = loaded(*inputs)
            assert torch.isfinite(want).all()
            _assert_close(got, want)
    assert meta["outputs"] == [{"shape": list(want.shape), "dtype": "float32"}]
    assert meta["params"] == registry.param_count(eager)


def test_export_skips_existing_and_rejects_unknown(tmp_path):
    assert export_model("squeezenet", tmp_path) is not None
    assert export_model("squeezenet", tmp_path) is None            # exists: skipped
    assert export_model("squeezenet", tmp_path, force=True) is not None
    assert export_main(["--out", str(tmp_path), "--only", "no_such_model"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["squeezenet.json", "squeezenet.pt"]


def test_randwire_graphs_are_fixed_ws_graphs():
    from models.randwire import watts_strogatz

    a = watts_strogatz(32, 4, 0.75, 1)
    assert a == watts_strogatz(32, 4, 0.75, 1)
    assert a != watts_strogatz(32, 4, 0.75, 2)
    assert len(a) == 32 * 4 // 2                 # rewiring keeps the edge count N*K/2
    assert all(0 <= u < v < 32 for u, v in a)    # DAG: lower index -> higher index


# Published parameter counts (relative tolerance). Counted on the bare modules, no tracing.
PUBLISHED = {
    # torchvision model docs: 25,557,032.
    "resnet50": (25_557_032, 0.001),
    # torchvision model docs: 25,028,904.
    "resnext50_32x4d": (25_028_904, 0.001),
    # torchvision 27,161,264 includes the auxiliary classifier (3,326,696); without it 23,834,568.
    "inception_v3": (23_834_568, 0.001),
    # SqueezeNet 1.0 (Iandola et al.: "1.2M"; torchvision docs 1,248,424).
    "squeezenet": (1_248_424, 0.001),
    # Zoph et al. 2018: 88.9M and 5.3M; these figures count BatchNorm running statistics too
    # (exact check in test_nasnet_counts_with_bn_statistics). Trainable: 88,753,150 / 5,289,978.
    "nasnet_a_large": (88_900_000, 0.005),
    "nasnet_a_mobile": (5_300_000, 0.01),
    # Xie et al. 2019, Table 2, RandWire-WS small regime C=78: 5.6M.
    "randwire": (5_600_000, 0.03),
    # Devlin et al. 2019: BERT-base 110M (with the 0.59M pooler, which is not built here).
    "bert_base": (110_000_000, 0.015),
    # No published count: 10000*1024 embedding + 3*1024*1024 + 2*1024 SRU + 1024*2+2 classifier.
    "rnntc_sru": (13_389_826, 0.0),
}


def test_every_model_has_a_published_count():
    assert sorted(PUBLISHED) == sorted(registry.NAMES)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_param_count(name):
    want, tol = PUBLISHED[name]
    got = registry.param_count(registry.construct(name))
    assert abs(got - want) <= tol * want, f"{name}: {got:,} parameters, published {want:,}"


def test_bert_base_parts():
    model = registry.construct("bert_base")
    # 12 x (4 x (768*768+768) + 2 x 2*768 + 768*3072+3072 + 3072*768+768) = 85,054,464
    assert registry.param_count(model.encoder) == 85_054_464
    # word 30522x768 + position 512x768 + type 2x768 + LayerNorm = 23,837,184
    assert registry.param_count(model.embeddings) == 23_837_184


@pytest.mark.parametrize("name,total", [("nasnet_a_large", 88_949_818), ("nasnet_a_mobile", 5_326_716)])
def test_nasnet_counts_with_bn_statistics(name, total):
    """Keras' NASNetLarge / NASNetMobile report 88,949,818 / 5,326,716 parameters, counting each
    BatchNorm's moving mean and variance: a layer-for-layer check of the architecture."""
    model = registry.construct(name)
    bn_channels = sum(m.num_features for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert registry.param_count(model) + 2 * bn_channels == total
