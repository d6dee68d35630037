import json, os, sys, tempfile, time
sys.path.insert(0, "bench")
import torch, autograph
import trained_models
name, precision = sys.argv[1], sys.argv[2]
model, example, more = trained_models.build(name, 9)
ep = torch.export.export(model.eval(), example)
os.environ["AUTOGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="ab-")
t = time.perf_counter()
_, rep = autograph.optimize(ep, precision=precision, calibration=more[:8], accuracy="cosine", tolerance=0.001)
print(json.dumps({"s": round(time.perf_counter() - t, 2), "kept": rep["inductor"]["kept"], "error": rep["inductor"]["precision"].get("error")}))
