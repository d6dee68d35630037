"""Serving an optimized model with Ray Serve: N replicas, the artifact loaded once per replica, requests
from several client threads, every output checked, throughput and p50 / p99 latency against the same
model unoptimized, then a clean stop.

    python examples/serve/serve_model.py --model resnet18 --replicas 1 2 --clients 4 --requests 40
    python examples/serve/serve_model.py --quick      # a small MLP, a few requests (what CI runs)

The model is exported (torch.export), optimized by autograph and saved as .pt2; the unoptimized
baseline is the exported program itself, saved and served the same way. Each replica imports autograph
(which registers autograph::execute) and loads the .pt2 once, in its constructor. Batching is left to
Ray (none here: one request, one forward). A replica gets cpus / replicas intra-op threads. On a
multi-machine Ray cluster the same script runs with `ray.init(address="auto")` (--address auto) once
the .pt2 files sit where every node can read them (a shared file system, or --artifacts on each node);
docs/serving.md says how, and how the same artifact is served by Triton instead.
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))  # a checkout without pip install works too


def build_artifacts(model_name: str, out_dir: Path, inductor: bool) -> Tuple[Path, Path, torch.Tensor]:
    """The optimized and the plain exported program as .pt2 files, and an example input."""
    import autograph
    torch.manual_seed(0)
    if model_name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)).eval()
        x = torch.randn(4, 64)
    else:
        import torchvision
        model = getattr(torchvision.models, model_name)().eval()
        x = torch.randn(1, 3, 224, 224)
    ep = torch.export.export(model, (x,), strict=False)
    optimized, report = autograph.optimize(ep, inductor=inductor)
    plain, fast = out_dir / f"{model_name}.pt2", out_dir / f"{model_name}_autograph.pt2"
    torch.export.save(ep, str(plain))
    torch.export.save(optimized, str(fast))
    kept = (report.get("inductor") or {}).get("kept", "aten")
    print(f"optimized {model_name}: kernels from {kept}, {report['stages']} stages, wrote {fast}", flush=True)
    return fast, plain, x


def deployment(path: str, threads: int):
    """The Ray Serve deployment class: one loaded program per replica."""
    from ray import serve

    @serve.deployment
    class Model:
        def __init__(self, artifact: str, intra_op_threads: int):
            import autograph  # noqa: F401 - registers autograph::execute, which the optimized .pt2 calls
            torch.set_num_threads(intra_op_threads)
            self.module = torch.export.load(artifact).module()
            self.pid = os.getpid()

        def __call__(self, x: torch.Tensor) -> Tuple[torch.Tensor, int]:
            with torch.no_grad():
                return self.module(x), self.pid

    return Model


def load_test(handle, x: torch.Tensor, want: torch.Tensor, clients: int, requests: int) -> Dict[str, float]:
    """`clients` threads each send `requests` requests one after another; every output is compared with
    `want` (within 1e-4 of its scale: the optimized program's kernels reorder float32 sums)."""
    latencies: List[float] = []
    replicas, errors = set(), []
    lock = threading.Lock()
    scale = want.abs().max().item()

    def client() -> None:
        for _ in range(requests):
            start = time.perf_counter()
            got, pid = handle.remote(x).result()
            ms = (time.perf_counter() - start) * 1e3
            err = (got - want).abs().max().item()
            with lock:
                latencies.append(ms)
                replicas.add(pid)
                if not err <= 1e-4 * max(scale, 1e-12):
                    errors.append(err)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors or len(latencies) != clients * requests:
        raise RuntimeError(f"{len(errors)} wrong outputs (largest error {max(errors, default=0):.3g}, scale {scale:.3g}), "
                           f"{len(latencies)} of {clients * requests} answered")
    latencies.sort()
    return {"requests": len(latencies), "replicas_answering": len(replicas), "throughput_rps": len(latencies) / wall,
            "p50_ms": statistics.median(latencies), "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet18", help="a torchvision classification model, or mlp")
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--requests", type=int, default=40, help="per client")
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs Ray may use on this machine")
    p.add_argument("--address", default=None, help="an existing Ray cluster (auto); default: a local one")
    p.add_argument("--artifacts", default=None, help="directory for the .pt2 files (default: a temporary one)")
    p.add_argument("--no-inductor", action="store_true", help="autograph's plan on ATen's kernels only (faster optimize)")
    p.add_argument("--programs", nargs="+", default=["unoptimized", "autograph"], choices=["unoptimized", "autograph"])
    p.add_argument("--quick", action="store_true",
                   help="mlp, the optimized program on 2 replicas, 3 clients x 5 requests, no Inductor (what CI runs)")
    p.add_argument("--markdown", default=None, help="also write the table to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.model, args.replicas, args.clients, args.requests, args.no_inductor = "mlp", [2], 3, 5, True
        args.programs = ["autograph"]

    import ray
    from ray import serve
    out_dir = Path(args.artifacts or tempfile.mkdtemp(prefix="autograph-serve-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    fast, plain, x = build_artifacts(args.model, out_dir, inductor=not args.no_inductor)
    with torch.no_grad():
        want = torch.export.load(str(plain)).module()(x)

    # The replicas import autograph as this process did: from the installed package, or from this
    # checkout (its python/ on their path, and the library it found).
    import autograph
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(Path(autograph.__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH")]))}
    if os.environ.get("AUTOGRAPH_LIBRARY"):
        env["AUTOGRAPH_LIBRARY"] = os.environ["AUTOGRAPH_LIBRARY"]
    began = time.perf_counter()
    ray.init(address=args.address, num_cpus=None if args.address else args.cpus, include_dashboard=False,
             log_to_driver=False, ignore_reinit_error=True, runtime_env={"env_vars": env})
    rows = []
    try:
        serve.start(proxy_location="Disabled")  # requests come through handles; no HTTP server needed
        print(f"Ray and Serve started in {time.perf_counter() - began:.1f} s", flush=True)
        for replicas in args.replicas:
            threads = max(1, args.cpus // replicas)
            for name, path in (("unoptimized", plain), ("autograph", fast)):
                if name not in args.programs:
                    continue
                began = time.perf_counter()
                app = deployment(str(path), threads).options(
                    num_replicas=replicas, ray_actor_options={"num_cpus": args.cpus / replicas}).bind(str(path), threads)
                handle = serve.run(app, name=f"{name}-{replicas}", route_prefix=None)
                load_test(handle, x, want, clients=1, requests=2)  # warm-up: every replica loaded
                result = load_test(handle, x, want, args.clients, args.requests)
                serve.delete(f"{name}-{replicas}")
                rows.append({"model": args.model, "program": name, "replicas": replicas, **result})
                print(f"{args.model} {name:11s} replicas {replicas}: {result['throughput_rps']:.1f} req/s, "
                      f"p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms "
                      f"({result['requests']} requests, outputs checked; deployed and run in "
                      f"{time.perf_counter() - began:.1f} s)", flush=True)
    finally:
        serve.shutdown()
        ray.shutdown()
    table = ["| model | program | replicas | req/s | p50 ms | p99 ms | requests |", "|---|---|---:|---:|---:|---:|---:|"]
    table += [f"| {r['model']} | {r['program']} | {r['replicas']} | {r['throughput_rps']:.1f} | {r['p50_ms']:.2f} | "
              f"{r['p99_ms']:.2f} | {r['requests']} |" for r in rows]
    print("\n".join(table))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n")
    print("stopped cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
