"""How autograph drives Inductor's C++ toolchain (python/autograph/inductor_toolchain.py): the C++
runtime linked by its shared name, the vector-ISA check kept per machine instead of per process, and the
fake tensors' error logs dropped from a thread while it compiles for autograph."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from autograph.export.compilers import toolchain as inductor_toolchain

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
    return env


def test_a_compiler_that_links_the_runtime_statically_still_makes_a_shared_link(tmp_path):
    """The GPU image's compiler linked libstdc++ into the package, which crashed on load. Here a
    compiler that adds -static-libstdc++ stands for it: Inductor's own settings make a wrapper without
    NEEDED libstdc++.so.6 (the premise), autograph's settings make one with it."""
    cxx = tmp_path / "static-gxx"
    cxx.write_text('#!/bin/sh\ncase " $* " in *" -shared "*) exec g++ "$@" -static-libstdc++ ;; esac\nexec g++ "$@"\n')
    cxx.chmod(cxx.stat().st_mode | stat.S_IEXEC)
    script = f"""
import json, subprocess, sys, zipfile, torch
from autograph.export.compilers.toolchain import aoti_configs, compile_package
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
ep = torch.export.export(model, (torch.randn(2, 4),))
needed = {{}}
for name, configs in (("inductor", {{}}), ("autograph", aoti_configs(freezing=False))):
    path = compile_package(ep, {str(tmp_path)!r} + "/" + name + ".pt2", configs)
    with zipfile.ZipFile(path) as z:
        (so,) = [n for n in z.namelist() if n.endswith(".so")]
        lib = z.extract(so, {str(tmp_path)!r} + "/" + name)
    dynamic = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    needed[name] = "libstdc++.so.6" in dynamic
print(json.dumps(needed))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env=_env(CXX=str(cxx), AUTOGRAPH_CACHE_DIR=str(tmp_path / "cache"),
                                  TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor")))
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"inductor": False, "autograph": True}


def test_the_vector_isa_checks_run_once_per_machine(tmp_path):
    """A first process asks Inductor (and records each answer); a new one builds and loads no test
    program at all, yet picks the same ISAs, with the same extra flags (avx512_bf16 adds one)."""
    script = """
import json, sys, torch
from torch._inductor import cpu_vec_isa
if sys.argv[1] == "again":
    def no_check(self, code):
        raise AssertionError("the ISA check ran again")
    cpu_vec_isa.VecISA.check_build = no_check
from autograph.export.compilers.toolchain import vec_isa_checks_remembered
own = cpu_vec_isa.VecISA.check_build
with vec_isa_checks_remembered(), vec_isa_checks_remembered():  # nested: one patch
    isa = cpu_vec_isa.valid_vec_isa_list()
assert cpu_vec_isa.VecISA.check_build is own  # given back: the user's torch.compile is not patched
print(json.dumps([[str(i), i.build_arch_flags()] for i in isa]))
"""
    runs = [subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True, timeout=300,
                           env=_env(AUTOGRAPH_CACHE_DIR=str(tmp_path)))
            for which in ("first", "again")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    first, again = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first and again == first
    answers = json.loads((tmp_path / "vec-isa-checks.json").read_text())
    assert len(answers) >= len(first) and all(isinstance(v, bool) for v in answers.values())


def test_a_damaged_record_of_answers_is_asked_again_and_rewritten(tmp_path, monkeypatch):
    from torch._inductor import cpu_vec_isa
    record = tmp_path / "vec-isa-checks.json"
    record.write_text("{not json")
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(tmp_path))
    asked = []
    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", lambda self, code: asked.append(code) or False)
    isa = cpu_vec_isa.VecAVX2()
    with inductor_toolchain.vec_isa_checks_remembered():
        assert cpu_vec_isa.VecISA.check_build(isa, "int main() {}") is False
        assert cpu_vec_isa.VecISA.check_build(isa, "int main() {}") is False
    assert len(asked) == 1  # the second answer came from the rewritten record
    assert list(json.loads(record.read_text()).values()) == [False]


def test_an_unwritable_cache_keeps_the_answers_of_this_process_only(tmp_path, monkeypatch):
    from torch._inductor import cpu_vec_isa
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("AUTOGRAPH_CACHE_DIR", str(blocked / "cache"))  # under a file: cannot be made
    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", lambda self, code: True)
    with inductor_toolchain.vec_isa_checks_remembered():
        assert cpu_vec_isa.VecISA.check_build(cpu_vec_isa.VecAVX2(), "int main() {}") is True


def test_fake_tensor_errors_are_quiet_only_in_the_compiling_thread_and_only_while_it_compiles():
    import logging
    import threading
    from autograph.export.compilers.toolchain import fake_tensor_errors_quiet
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    seen = []

    class Kept(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())
    handler = Kept()
    logger.addHandler(handler)
    try:
        with fake_tensor_errors_quiet():
            with fake_tensor_errors_quiet():  # nested: still quiet after the inner one leaves
                pass
            logger.error("inside")
            other = threading.Thread(target=lambda: logger.error("another thread"))
            other.start()
            other.join()
        logger.error("after")
    finally:
        logger.removeHandler(handler)
    assert seen == ["another thread", "after"]
