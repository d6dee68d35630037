"""Optimized modules from Python: `autograph optimize` writes a module that loads with torch.jit.load
after torch.ops.load_library in a fresh process and gives the original module's outputs."""
import json
import subprocess
import sys
import textwrap

import pytest
import torch

import autograph


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def optimize(cli, model, out, *extra):
    r = subprocess.run([cli, "optimize", str(model), "-o", str(out), "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


OPTIMIZE_KEYS = {"model", "method", "device", "cost", "operators_before", "operators_after", "stages",
                 "groups", "streams", "predicted_ms", "measured_ms", "search_seconds", "states_explored",
                 "output"}


@pytest.mark.parametrize("method", ["sequential", "greedy", "nimble", "ios", "autograph"])
def test_fresh_python_process_loads_and_matches(cli, zoo, tmp_path, method):
    out = tmp_path / f"squeezenet_{method}.pt"
    report = optimize(cli, zoo / "squeezenet.pt", out, "--method", method, "--input-shape", "1,3,128,128")
    assert OPTIMIZE_KEYS <= report.keys()
    assert report["method"] == method and report["output"] == str(out)
    assert report["stages"] == (1 if method == "sequential" else report["stages"])
    if method == "greedy":
        assert report["streams"] == 2 and report["stages"] < report["operators_before"]
    if method in ("ios", "autograph"):
        assert report["cost"] == "analytical:cpu" and report["predicted_ms"] > 0 and report["states_explored"] > 0
    else:
        assert report["cost"] is None and report["predicted_ms"] is None
    if method == "autograph":  # its best candidates ran for real on the CPU; the fastest was kept
        assert report["measured_ms"] > 0 and 1 <= report["candidates_verified"] <= 3 + 2  # + one stream, Nimble
    # A fresh interpreter: nothing of this process (library, classes) carries over.
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(autograph.library_path().rsplit('/', 2)[0])!r})
        torch.ops.load_library({autograph.library_path()!r})
        torch.manual_seed(0)
        x = torch.randn(2, 3, 128, 128)
        with torch.no_grad():
            got = torch.jit.load({str(out)!r})(x)
            want = torch.jit.load({str(zoo / 'squeezenet.pt')!r})(x)
        err = (got - want).abs().max().item() / want.abs().max().item()
        print(err)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # Same kernels, no batch norm to fold in SqueezeNet: float32 rounding only (batch 2 also shows
    # that another batch size than the planned one runs).
    assert float(r.stdout.strip().splitlines()[-1]) < 1e-5


def test_truncated_file_is_a_clean_load_error(cli, zoo, tmp_path):
    out = tmp_path / "sq.pt"
    optimize(cli, zoo / "squeezenet.pt", out, "--input-shape", "1,3,64,64")
    data = out.read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    autograph.load_library()
    with pytest.raises(RuntimeError):
        torch.jit.load(str(tmp_path / "cut.pt"))


def test_wrong_inputs_raise_clear_errors(cli, zoo, tmp_path):
    out = tmp_path / "sq.pt"
    optimize(cli, zoo / "squeezenet.pt", out, "--input-shape", "1,3,64,64")
    autograph.load_library()
    m = torch.jit.load(str(out))
    # The TorchScript interpreter re-raises the op's error as RuntimeError, message intact.
    with pytest.raises(RuntimeError, match="rank 3"):
        m(torch.randn(3, 64, 64))
    with pytest.raises(RuntimeError, match="dtype"):
        m(torch.randn(1, 3, 64, 64, dtype=torch.float64))


def test_cli_rejects_cuda_without_a_gpu_or_bad_method(cli, zoo, tmp_path):
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"),
                        "--method", "magic"], capture_output=True, text=True)
    assert r.returncode != 0 and "magic" in r.stderr
    if not torch.cuda.is_available():
        r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"),
                            "--device", "cuda"], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("autograph: error:") and "CUDA" in r.stderr
        r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"),
                            "--device", "cuda:1"], capture_output=True, text=True)  # parsed as a device, then not there
        assert r.returncode == 2 and "cuda:1" in r.stderr and "no CUDA device" in r.stderr, r.stderr
    # Every optimize flag comes from the option table, which checks its values.
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"), "--max-streams", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "option 'max_streams' is 0; expected 1..64" in r.stderr, r.stderr


def test_bert_merged_query_key_value_linears_match(cli, zoo, tmp_path):
    # --merge-linears: each layer's Q, K and V projections read one input and become one linear
    # (12 layers x 2 merged away); the module still gives BERT's outputs.
    out = tmp_path / "bert_merged.pt"
    report = optimize(cli, zoo / "bert_base.pt", out, "--method", "ios", "--device-model", "h100",
                      "--merge-linears", "--no-merge", "--no-fuse-attention", "--no-prepack-onednn", "--no-stitch",
                      "--no-check-rewrites",
                      "--input-shape", "1,16", "--dtype", "int64")
    assert report["linears_merged"] == 24
    assert report["operators_after"] == report["operators_before"] - 24
    x = torch.randint(0, 30522, (1, 16))
    autograph.load_library()
    with torch.no_grad():
        got = torch.jit.load(str(out))(x)
        want = torch.jit.load(str(zoo / "bert_base.pt"))(x)
    got, want = _first(got), _first(want)
    # The same dot products blocked differently by wider GEMMs, through 12 layers: float32 rounding.
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4


def test_bert_substitutions_and_stitching_halve_memory_bound_launches(cli, zoo, tmp_path):
    # What the substitutions and stitching aim at on BERT-base: attention fused (scale, softmax and the
    # head-merging copy gone), LayerNorm with its residual add one stitched kernel, memory-bound launches
    # at least halved; the search, not a fixed rewrite, decides whether Q, K and V run as one merged GEMM.
    out = tmp_path / "bert_all.pt"
    # The CPU's prepacked (transposed) linears are another target's rewrite: off here.
    report = optimize(cli, zoo / "bert_base.pt", out, "--method", "autograph", "--substitutions", "--stitch",
                      "--no-prepack-onednn", "--no-check-rewrites",
                      "--verify", "0", "--input-shape", "1,32", "--dtype", "int64")
    assert report["attentions_fused"] == 12
    assert report["memory_bound_after"] * 2 <= report["memory_bound_before"], report
    assert report["operators_after"] < report["operators_before"]
    x = torch.randint(0, 30522, (1, 32))
    autograph.load_library()
    with torch.no_grad():
        got = _first(torch.jit.load(str(out))(x))
        want = _first(torch.jit.load(str(zoo / "bert_base.pt"))(x))
    # Fused attention (online softmax), stitched layer norms and wider GEMMs reorder float32 sums
    # through 12 layers: rounding only.
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4


def test_inception_merges_sibling_convolutions_and_matches(cli, zoo, tmp_path):
    # IOS and AutoGraph both may merge sibling convolutions; the analytical model of an H100 favours
    # merging Inception's 1x1 siblings, so fewer kernels launch than there are operators. Without
    # the CPU's oneDNN prepacking (its prim::mkldnn_convolution the merge rules do not take) and
    # channels-last pools (their layout conversions are kernels too).
    out = tmp_path / "inception_autograph.pt"
    report = optimize(cli, zoo / "inception_v3.pt", out, "--method", "autograph", "--device-model", "h100",
                      "--verify", "0", "--no-prepack-onednn", "--no-channels-last-pools",
                      "--input-shape", "1,3,160,160")
    assert report["operators_after"] < report["operators_before"]
    x = torch.randn(1, 3, 160, 160)
    autograph.load_library()
    with torch.no_grad():
        got = torch.jit.load(str(out))(x)
        want = torch.jit.load(str(zoo / "inception_v3.pt"))(x)
    got, want = _first(got), _first(want)
    # conv+bn folding and merged (zero-padded) kernels change float32 rounding only.
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4


def test_measured_cost_runs_stages_and_caches_them_on_disk(cli, zoo, tmp_path):
    cache = tmp_path / "costs.json"
    # --no-check-rewrites: the rewrites are kept unmeasured, so both runs plan the same graph (timed
    # rewrite checks may keep another set on a noisy machine, and then its stages are new to the cache).
    args = ["--method", "autograph", "--cost", "measured", "--cost-cache", str(cache), "--verify", "1",
            "--no-check-rewrites", "--input-shape", "1,3,64,64"]
    first = optimize(cli, zoo / "squeezenet.pt", tmp_path / "a.pt", *args)
    assert first["cost"].startswith("measured:cpu") and first["stages_measured"] > 0
    assert first["predicted_ms"] > 0 and first["measured_ms"] > 0 and cache.exists()
    assert first["search_seconds"] < 60 + 5  # the default time limit with measured costs (60 s) held
    # The same model again: every stage the first run measured comes from the disk cache. A first search
    # cut short by its time limit (a loaded machine) leaves the second, quicker one stages to explore
    # and measure; one that finished leaves none.
    second = optimize(cli, zoo / "squeezenet.pt", tmp_path / "b.pt", *args)
    assert second["cost_cache_hits"] >= first["stages_measured"]
    assert second["stages_measured"] == 0 or first["search_seconds"] > 55, (first, second)
    x = torch.randn(1, 3, 64, 64)
    autograph.load_library()
    with torch.no_grad():
        got = torch.jit.load(str(tmp_path / "b.pt"))(x)
        want = torch.jit.load(str(zoo / "squeezenet.pt"))(x)
    # Same kernels in another order: float32 rounding only.
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-5


def test_unwritable_cost_cache_is_one_clear_error(cli, zoo, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "x.pt"), "--method", "ios",
                        "--cost", "measured", "--cost-cache", str(blocker / "costs.json"),
                        "--input-shape", "1,3,32,32"], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and str(blocker / "costs.json") in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("model,shape,dtype,tol", [
    ("bert_base", "1,16", "int64", 1e-4),
    ("rnntc_sru", None, None, 1e-4),
    ("nasnet_a_mobile", None, None, 1e-4),
])
def test_stitched_memory_bound_operators_match(cli, zoo, tmp_path, model, shape, dtype, tol):
    # --stitch: the planner groups memory-intensive operators into autograph::stitched kernels; fewer
    # memory-bound kernels launch and the module still gives the model's outputs. Substitutions off:
    # attention fusion would remove softmaxes too, and the count below is the stitch pass's alone. Tolerance: float32
    # reductions (softmax, layer norm, mean) summed in another order, through a dozen layers.
    out = tmp_path / f"{model}_stitched.pt"
    extra = ["--input-shape", shape] if shape else []
    if dtype:
        extra += ["--dtype", dtype]
    report = optimize(cli, zoo / f"{model}.pt", out, "--method", "autograph", "--device-model", "h100",
                      "--verify", "0", "--stitch", "--no-substitutions", "--no-check-rewrites", *extra)
    assert report["stitch_groups"] > 0
    assert report["memory_bound_after"] == report["memory_bound_before"] - report["ops_stitched"] + report["stitch_groups"]
    spec = json.loads((zoo / f"{model}.json").read_text())
    inputs = []
    for i, inp in enumerate(spec["inputs"]):
        dims = [int(d) for d in shape.split(",")] if shape and i == 0 else inp["shape"]
        if inp["dtype"].startswith("int"):
            inputs.append(torch.randint(0, 100, dims))
        else:
            inputs.append(torch.randn(*dims))
    autograph.load_library()
    with torch.no_grad():
        got = _first(torch.jit.load(str(out))(*inputs))
        want = _first(torch.jit.load(str(zoo / f"{model}.pt"))(*inputs))
    assert ((got - want).abs().max() / want.abs().max()).item() < tol


def test_substitutions_on_cpu_keep_outputs_and_skip_the_cuda_fold(cli, zoo, tmp_path):
    # --substitutions on CPU: grouped convolutions are timed with fewer groups and kept only when
    # faster (on this CPU they are not: oneDNN is fastest with ResNeXt's 32 groups); the cuDNN fold
    # has no CPU kernel, so nothing folds; the outputs are the original's.
    out = tmp_path / "resnext_subst.pt"
    report = optimize(cli, zoo / "resnext50_32x4d.pt", out, "--method", "sequential", "--substitutions",
                      "--input-shape", "1,3,64,64")
    assert report["convolutions_folded"] == 0 and report["ops_folded"] == 0
    x = torch.randn(1, 3, 64, 64)
    autograph.load_library()
    with torch.no_grad():
        got = _first(torch.jit.load(str(out))(x))
        want = _first(torch.jit.load(str(zoo / "resnext50_32x4d.pt"))(x))
    # Regrouped convolutions (if any) add exact zeros: float32 rounding of longer sums only.
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the cuDNN fold and GPU regrouping need a CUDA device")
@pytest.mark.parametrize("model", ["resnet50", "resnext50_32x4d"])
def test_substitutions_on_cuda_match(cli, zoo, tmp_path, model):
    # On CUDA conv + relu and conv + residual add + relu fold into cuDNN's fused kernels (ResNet-50:
    # 49), and ResNeXt's grouped convolutions regroup where cuDNN is faster with fewer groups.
    out = tmp_path / f"{model}_subst.pt"
    # Unmeasured, without stitching: what the substitutions do, whether or not they pay on this GPU.
    report = optimize(cli, zoo / f"{model}.pt", out, "--method", "greedy", "--device", "cuda", "--substitutions",
                      "--no-stitch", "--no-check-rewrites")
    assert report["convolutions_folded"] == 49 if model == "resnet50" else report["convolutions_folded"] > 0
    autograph.load_library()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    # The zoo's traced models call aten::_convolution with allow_tf32=True fixed at trace time, so the
    # original runs its convolutions in TF32 whatever torch.backends.cudnn.allow_tf32 says: on these
    # random-weight models it lands well over 1e-3 of the output's scale from the float32 result, while
    # the folded cuDNN kernels read the global flag. Both are measured against the original in float64
    # (no TF32 there): the optimized module may be no further from it than the original itself is
    # (twice, for the remaining TF32 convolutions' own rounding), and within 1e-3 when that is smaller.
    # A wrong fold (a lost bias, a wrong alpha, a missing ReLU) moves the output by its own scale.
    tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            got = _first(torch.jit.load(str(out), map_location="cuda")(x))
            original = torch.jit.load(str(zoo / f"{model}.pt"), map_location="cuda")
            want = _first(original(x))
            exact = _first(original.double()(x.double()))
    finally:
        torch.backends.cudnn.allow_tf32 = tf32

    def error(y):
        return ((y.double() - exact).abs().max() / exact.abs().max()).item()

    assert error(got) <= max(1e-3, 2 * error(want)), (error(got), error(want))
