import sys, time, os
sys.path.insert(0, "bench")
import torch, numpy as np
import trained_models
name = sys.argv[1]
model, example, more = trained_models.build(name, 9)
sys.path.append(os.environ["AUTOGRAPH_NNCF_DIR"])
import nncf, openvino as ov
m = ov.convert_model(model.eval(), example_input=example)
calls=[[x.numpy() for x in c] for c in more[:8]]
judged=[[x.numpy() for x in example]]+calls
core=ov.Core(); ref=core.compile_model(m,"CPU",{"INFERENCE_PRECISION_HINT":"f32"})
want=[[np.array(o) for o in ref(c).to_tuple()] for c in judged]
def cos(cm):
    worst=0
    for c,w in zip(judged,want):
        for a,b in zip([np.array(o) for o in cm(c).to_tuple()],w):
            a=a.ravel().astype(np.float64); b=b.ravel().astype(np.float64)
            worst=max(worst,1-np.dot(a,b)/(np.linalg.norm(a)*np.linalg.norm(b)+1e-30))
    return worst
for preset in ("PERFORMANCE","MIXED"):
  for fast in (True, False):
    t=time.perf_counter(); q=nncf.quantize(m,nncf.Dataset(calls),subset_size=8,preset=getattr(nncf.QuantizationPreset,preset),fast_bias_correction=fast); s=time.perf_counter()-t
    print(preset, "fast" if fast else "full", "%.1f s"%s, "loss %.3g"%cos(core.compile_model(q,"CPU",{"INFERENCE_PRECISION_HINT":"f32"})), flush=True)
