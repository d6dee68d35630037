"""fcpe-like int8 optimize: parts in the second quantization (A) vs in the first (B, AG_PROTO_FIRST)."""
import os, statistics, sys, time
sys.path.insert(0, "bench")
import torch, autograph
import trained_models
from autograph.export.timing import samples_side_by_side
from autograph.export.measure import measured
from export_path import fresh_compile_caches, warm_isa_check
name = sys.argv[1]
model, example, more = trained_models.build(name, 13)
model.eval()
cal, fresh = more[:8], more[8:]
with torch.no_grad():
    want = [torch.utils._pytree.tree_leaves(model(*x)) for x in fresh]
ep = torch.export.export(model, example)
warm_isa_check()
mods, out = {}, {}
for how in sys.argv[2].split(","):
    fresh_compile_caches()
    if how == "B": os.environ["AG_PROTO_FIRST"] = "1"
    else: os.environ.pop("AG_PROTO_FIRST", None)
    t = time.perf_counter()
    opt, rep = autograph.optimize(ep, precision="int8" if how != "bf16" else "bf16", calibration=cal, accuracy="cosine", tolerance=0.001)
    s = time.perf_counter() - t
    m = opt.module(); mods[how] = m
    c = rep["inductor"]; kept = c["kept"]; parts = c.get("candidates", {}).get(kept, {}).get("parts_precision")
    with torch.no_grad():
        got = [torch.utils._pytree.tree_leaves(m(*x)) for x in fresh]
    loss = measured("cosine", got, want)[0]
    out[how] = dict(optimize_s=round(s, 1), kept=kept, parts=[p["precision"] for p in parts] if parts else None, fresh_loss=loss)
    print(how, out[how], flush=True)
with torch.no_grad():
    ms = samples_side_by_side({k: (lambda m=m: m(*example)) for k, m in mods.items()}, torch.device("cpu"), 30)
for k, v in ms.items(): print(k, "median ms %.2f" % statistics.median(v))
