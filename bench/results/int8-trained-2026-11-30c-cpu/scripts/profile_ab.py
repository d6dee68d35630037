"""An int8 optimize with lowering by parts estimated from OpenVINO's profiles and without them, alternated,
fresh caches. Run from the repository root: python bench/results/int8-trained-2026-11-30c-cpu/scripts/profile_ab.py
MODEL ROUNDS (with AUTOGRAPH_LIBRARY and PYTHONPATH=python as for the tests)."""
import json, os, sys, tempfile, time
sys.path.insert(0, "bench")
import torch, autograph
import trained_models
from autograph.export.compilers.openvino import OpenVinoCompiler
from autograph.export.parts import NOT_PROFILED
name, rounds = sys.argv[1], int(sys.argv[2])
model, example, more = trained_models.build(name, 9)
ep = torch.export.export(model.eval(), example)
node_times = OpenVinoCompiler.node_times
out = {"profiles": [], "whole only": []}
for r in range(rounds):
    for how in out:
        os.environ["AUTOGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="prof-ab-")
        OpenVinoCompiler.node_times = node_times if how == "profiles" else (lambda self, b, p, m: NOT_PROFILED)
        t = time.perf_counter()
        opt, rep = autograph.optimize(ep, precision="int8", calibration=more[:8], accuracy="cosine", tolerance=0.001)
        s = time.perf_counter() - t
        c = rep["inductor"]
        e = c["candidates"].get("parts_openvino_int8") or c["dropped"].get("parts_openvino_int8") or {}
        out[how].append((round(s, 1), c["kept"], e.get("lowered_s"), e.get("median_ms")))
        print(how, out[how][-1], flush=True)
print(json.dumps(out))
