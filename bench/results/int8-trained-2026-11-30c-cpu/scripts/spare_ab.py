"""int8 optimize wall time with and without the early quantizer processes, alternated, fresh caches.
Run from the repository root: python bench/results/int8-trained-2026-11-30c-cpu/scripts/spare_ab.py MODEL ROUNDS
(with AUTOGRAPH_LIBRARY and PYTHONPATH=python as for the tests)."""
import json, os, sys, tempfile, time
sys.path.insert(0, "bench")
import torch, autograph
import trained_models
from autograph.export.compilers import quantized_part
name, rounds = sys.argv[1], int(sys.argv[2])
model, example, more = trained_models.build(name, 9)
model.eval()
cal = more[:8]
ep = torch.export.export(model, example)
warm = quantized_part.warm
out = {"with": [], "without": [], "bf16": []}
for r in range(rounds):
    for how in ("with", "without", "bf16"):
        os.environ["AUTOGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="spare-ab-")
        quantized_part.warm = warm if how == "with" else (lambda builder, quantizer: None)
        import autograph.export.compilers.openvino as ov, autograph.export.compilers.onnxruntime as ort
        ov.warm = ort.warm = quantized_part.warm
        t = time.perf_counter()
        _, rep = autograph.optimize(ep, precision="bf16" if how == "bf16" else "int8", calibration=cal,
                                    accuracy="cosine", tolerance=0.001)
        out[how].append(round(time.perf_counter() - t, 2))
        print(how, out[how][-1], rep["inductor"]["kept"], flush=True)
print(json.dumps(out))
