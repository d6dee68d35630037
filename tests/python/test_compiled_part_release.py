"""Releasing compiled parts (autograph::loaded_compiled_parts, autograph::release_compiled_parts): the
runners keep every package they load for the process's life unless released; a released part is no
longer listed, and the program that calls it still runs right, loading it again from its package
tensor.

Tolerance: 1e-4 of the output's scale, as test_inductor_parts.py and test_openvino_parts.py (compiled
parts fold and reorder in float32; a wrong part moves outputs by order 1)."""
import copy
import hashlib
import threading
import time

import pytest
import torch

import autograph
from autograph._library import openvino_missing
from test_part_cache import Block  # the same small model

TOL = 1e-4


@pytest.fixture(scope="module")
def block():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        want = model(x)
    return model, x, want


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def inductor_whole(block):
    """The block optimized with one part, the whole graph compiled by Inductor (check_rewrites off keeps
    the finest candidate untimed; OpenVINO's left out)."""
    model, x, _ = block
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential",
                                           check_rewrites=False, openvino=False, onnxruntime=False)
    assert report["inductor"]["kept"] == "whole", report["inductor"]
    return optimized


def _close(got, want):
    assert got.shape == want.shape
    assert (got - want).abs().max().item() <= TOL * want.abs().max().item()


def _loaded():
    return set(torch.ops.autograph.loaded_compiled_parts())


def _part_digests(optimized):
    """The digests of the packages the optimized program carries (its uint8 weights), as their specs
    name them: the sha256 of the package's bytes."""
    return {hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()
            for t in optimized.state_dict.values() if t.dtype == torch.uint8}


def _released_and_reloaded(block, optimized):
    _, x, want = block
    run = optimized.module()
    _close(run(x), want)  # loaded now, whether or not the contest had loaded it
    (digest,) = _part_digests(optimized)
    assert digest in _loaded()
    assert torch.ops.autograph.release_compiled_parts([digest]) == 1
    assert digest not in _loaded()
    assert torch.ops.autograph.release_compiled_parts([digest]) == 0  # released already
    _close(run(x), want)  # loaded again from its package tensor
    assert digest in _loaded()


def test_a_released_inductor_part_is_unlisted_and_loaded_again_on_its_next_call(block, inductor_whole):
    _released_and_reloaded(block, inductor_whole)


@pytest.mark.skipif(openvino_missing() is not None, reason=f"no OpenVINO parts: {openvino_missing()}")
def test_a_released_openvino_part_is_unlisted_and_compiled_again_on_its_next_call(block, monkeypatch):
    from autograph import export as export_module
    model, x, _ = block
    # Stand-in timings (by candidate name) that make OpenVINO's candidate the fastest.
    monkeypatch.setattr(export_module.contest, "_time_candidates", lambda candidates, *args, **kwargs: {
        name: 1.0 if name == "whole_openvino" else 2.0 for name in candidates})
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential")
    assert report["inductor"]["kept"] == "whole_openvino", report["inductor"]
    _released_and_reloaded(block, optimized)


def test_a_release_while_another_thread_runs_the_part_is_safe(block, inductor_whole):
    """A call holds its part for the run, so releasing it mid-run only drops the runner's reference:
    every run stays right, each after a release loading the part again."""
    _, x, want = block
    run = inductor_whole.module()
    (digest,) = _part_digests(inductor_whole)
    outputs, stop = [], threading.Event()

    def running():
        while not stop.is_set():
            outputs.append(run(x))

    runner = threading.Thread(target=running)
    runner.start()
    try:
        for _ in range(10):  # each release after one more run: releases and reloads interleave with runs
            seen = len(outputs)
            while len(outputs) == seen and runner.is_alive():
                time.sleep(0.001)
            torch.ops.autograph.release_compiled_parts([digest])
    finally:
        stop.set()
        runner.join()
    assert len(outputs) >= 10
    for got in outputs:
        _close(got, want)
    _close(run(x), want)
    assert digest in _loaded()


def test_releasing_unknown_digests_releases_nothing():
    before = _loaded()
    assert torch.ops.autograph.release_compiled_parts(["0" * 64, "not a digest"]) == 0
    assert torch.ops.autograph.release_compiled_parts([]) == 0
    assert _loaded() == before


def test_optimize_releases_what_the_rejected_candidates_loaded(block, monkeypatch):
    """Inductor's whole-graph candidate is loaded to be checked and timed; where the plan on ATen's
    kernels is kept (stand-in timings), optimize releases that package: nothing it loaded stays."""
    from autograph import export as export_module
    model, x, want = block
    monkeypatch.setattr(export_module.contest, "_time_candidates", lambda candidates, *args, **kwargs: {
        name: 1.0 if name == "aten" else 2.0 for name in candidates})
    before = _loaded()
    optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential",
                                           openvino=False, onnxruntime=False)
    assert report["inductor"]["kept"] == "aten" and report["inductor"]["dropped"]["whole"]["why"] == "slower"
    assert _loaded() - before == set()
    with torch.no_grad():
        _close(optimized.module()(x), want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/gpu_tests.sh)")
def test_a_released_cuda_part_leaves_the_graphs_that_replay_it_running_cuda(block):
    """A CUDA part is released like a CPU one: the captured CUDA Graph that replays its kernels holds the
    part itself, so its replays stay right after the release, and the container goes with the graph.
    TF32 off (Inductor's kernels and the reference alike in float32): TOL."""
    model, x, _ = block
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model, x = copy.deepcopy(model).cuda(), x.cuda()
        with torch.no_grad():
            want = model(x)
        optimized, report = autograph.optimize(torch.export.export(model, (x,)), (x,), method="sequential",
                                               check_rewrites=False)
        assert report["inductor"]["kept"] == "whole", report["inductor"]
        run = optimized.module()
        _close(run(x), want)  # captured here, the part's container held by the graph
        (digest,) = _part_digests(optimized)
        assert torch.ops.autograph.release_compiled_parts([digest]) == 1
        assert digest not in _loaded()
        for _ in range(3):
            _close(run(x), want)
        torch.cuda.synchronize()
        del run, optimized
        import gc
        gc.collect()
        torch.cuda.synchronize()
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
