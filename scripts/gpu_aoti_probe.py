"""Does an AOTInductor CUDA package load and run in a process of its own, and with autograph's library
loaded first? (scripts/gpu_quick_check.sh's `aoti` part: the export path segfaulted inside the
package's wrapper on the H200 image, bench/results/gpu-2026-11-26-h200/README.md.)
With --autograph-configs the package is compiled as autograph compiles its own
(python/autograph/inductor_toolchain.py: the C++ runtime linked shared, the vector-ISA answers kept);
--with-autograph loads it after autograph, with those answers.
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
        if "--autograph-configs" in sys.argv:  # and its vector-ISA answers recorded for later loads
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
            from autograph.export.compilers.toolchain import aoti_configs, compile_package
            configs = aoti_configs(freezing=False)
            print("inductor configs:", configs)
            compile_package(ep, str(package), configs)
        else:
            torch._inductor.aoti_compile_and_package(ep, package_path=str(package))
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
        from autograph.export.compilers.toolchain import vec_isa_checks_remembered
        autograph.load_library()
        vec_isa_checks_remembered().__enter__()  # for the rest of this process
        print("autograph loaded from", autograph.library_path(), flush=True)
    # aoti_load_package asks Inductor for the CPU's vector ISA first (get_device_information), which
    # builds and loads a test program per ISA in fresh Pythons: timed on its own, so that a slow check
    # is not taken for a stuck load (it was, on the H100: bench/results/gpu-2026-11-26-h100).
    import time
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list
    start = time.perf_counter()
    isa = valid_vec_isa_list()
    print(f"Inductor's vector-ISA check: {time.perf_counter() - start:.1f} s ({', '.join(map(str, isa))})", flush=True)
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
