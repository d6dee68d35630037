"""Does an AOTInductor CUDA package load and run in a process of its own, and with autograph's library
loaded first? (scripts/gpu_quick_check.sh's `aoti` part: the export path segfaulted inside the
package's wrapper on the H200 image, bench/results/gpu-2026-11-26-h200/README.md.)
With --autograph-configs the package is compiled with the Inductor settings autograph compiles its
own packages with (python/autograph/inductor_parts.py's aoti_configs: the C++ runtime linked shared).
Usage: python scripts/gpu_aoti_probe.py compile DIR [--autograph-configs] | load DIR [--with-autograph]"""
import sys
from pathlib import Path

import torch


def main() -> int:
    what, folder = sys.argv[1], Path(sys.argv[2])
    package = folder / "probe.pt2"
    if what == "compile":
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).cuda().eval()
        ep = torch.export.export(model, (torch.randn(1, 3, 16, 16, device="cuda"),))
        configs = {}
        if "--autograph-configs" in sys.argv:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
            from autograph.inductor_parts import aoti_configs
            configs = aoti_configs(freezing=False)
        print("inductor configs:", configs)
        torch._inductor.aoti_compile_and_package(ep, package_path=str(package), inductor_configs=configs)
        torch.save(model.state_dict(), folder / "probe_weights.pt")
        print("compiled", package)
        # How the wrapper links the C++ runtime: a static libstdc++ in a dlopen'ed library has facet
        # ids of its own, a suspect for a crash inside std::regex's use of the locale.
        import subprocess
        import zipfile
        with zipfile.ZipFile(package) as z:
            for name in z.namelist():
                if name.endswith(".so"):
                    so = Path(z.extract(name, folder / "unpacked"))
                    print(so.name, subprocess.run(["ldd", str(so)], capture_output=True, text=True).stdout)
                    needed = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True).stdout
                    print("NEEDED:", [x.split("[")[-1].rstrip("]") for x in needed.splitlines() if "NEEDED" in x])
                    symbols = subprocess.run(["nm", "-DC", "--defined-only", str(so)], capture_output=True,
                                             text=True).stdout.splitlines()
                    print(f"{so.name}: {len(symbols)} defined dynamic symbols, "
                          f"{sum('locale' in x for x in symbols)} of them locale's, "
                          f"{sum('codecvt' in x for x in symbols)} codecvt's")
        return 0
    if "--with-autograph" in sys.argv:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
        import autograph
        autograph.load_library()
        print("autograph loaded from", autograph.library_path(), flush=True)
    runner = torch._inductor.aoti_load_package(str(package))
    x = torch.randn(1, 3, 16, 16, device="cuda")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU()).cuda().eval()
    model.load_state_dict(torch.load(folder / "probe_weights.pt"))
    with torch.no_grad():
        err = (runner(x) - model(x)).abs().max().item()
    print(f"loaded and ran: max abs err {err:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
