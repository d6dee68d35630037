import sys, time, os, tempfile, runpy
sys.path.insert(0, "bench")
import torch, numpy as np
import trained_models
name = sys.argv[1]
model, example, more = trained_models.build(name, 9)
d = tempfile.mkdtemp()
m = os.path.join(d, "m.onnx")
torch.onnx.export(model.eval(), example, m, dynamo=True, external_data=False)
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process
import onnxruntime as ort, onnx
p = os.path.join(d, "p.onnx"); quant_pre_process(m, p)
names=[i.name for i in ort.InferenceSession(p).get_inputs()]
calls=[[x.numpy() for x in c] for c in more[:8]]
judged=[dict(zip(names,[x.numpy() for x in example]))]+[dict(zip(names,c)) for c in calls]
class R(CalibrationDataReader):
    def __init__(s): s.it=iter([dict(zip(names,c)) for c in calls])
    def get_next(s): return next(s.it,None)
q=os.path.join(d,"q.onnx"); rng=os.path.join(d,"r.json")
T0=time.perf_counter()
def quant(ex):
    t=time.perf_counter()
    quantize_static(p,q,R(),quant_format=QuantFormat.QDQ,per_channel=True,activation_type=QuantType.QUInt8,weight_type=QuantType.QInt8,calibrate_method=CalibrationMethod.MinMax,nodes_to_exclude=list(ex),calibration_cache_path=rng, extra_options={"QDQDisableWeightAdjustForInt32Bias": True})
    print("%6.1f quantize %s %.2f"%(time.perf_counter()-T0, list(ex), time.perf_counter()-t), flush=True)
    return q
mod = runpy.run_path("python/autograph/export/compilers/onnxruntime_quantize.py")
g = mod["_aimed"].__globals__
orig = g["_session"]
def sess(x):
    t=time.perf_counter(); s=orig(x); print("%6.1f session %s %.2f"%(time.perf_counter()-T0, "bytes" if isinstance(x,bytes) else "path", time.perf_counter()-t), flush=True); return s
g["_session"]=sess
t=time.perf_counter()
mod["_aimed"](p, quant, judged, {"measure":"cosine","bound":float(sys.argv[2]) if len(sys.argv)>2 else 0.001,"library":os.environ["AUTOGRAPH_LIBRARY"]})
print("aimed", time.perf_counter()-t)
