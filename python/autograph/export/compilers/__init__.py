"""The compilers of the export path's candidates, each behind the same few calls (compilers/base.py):
Inductor (AOTInductor packages, inductor.py) and OpenVINO (openvino.py)."""
