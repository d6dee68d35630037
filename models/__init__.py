"""Model zoo for autograph: architecture definitions and the TorchScript exporter.

`models/export.py` writes `NAME.pt` + `NAME.json` for every model in `registry.MODELS`.
"""
