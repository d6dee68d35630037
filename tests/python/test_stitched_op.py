"""autograph::stitched on the CPU: each stitched pattern equals the same computation with ATen ops,
on random shapes with broadcasting, non-contiguous inputs and odd sizes, and rows longer than one
tile; a bad program or bad inputs give one ValueError naming what is wrong.

Tolerances: elementwise programs evaluate the same float operations in the same order as ATen,
with ATen's vector functions (Sleef's exp, tanh, ...) on full values and libm's on row values (a
few ulp apart), so 1e-6 relative plus 1e-6 absolute. Reductions sum in double here and in a different order in ATen: relative error
~ float eps * sqrt(cols) on ATen's side, so 1e-5 relative for rows up to 10^5 columns."""
import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import autograph


def stitched(inputs, program):
    autograph.load_library()
    return torch.ops.autograph.stitched(inputs, program)


def close(actual, expected, rtol=1e-6, atol=1e-6):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def test_elementwise_chain_with_broadcast_and_scalars():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 7)
    bias = torch.randn(7)
    scale = torch.randn(5, 1)
    (out,) = stitched([x, bias, scale], "reduce 0; in 0; in 1; add 0 1; in 2; mul 2 3; const 0.5; sub 4 5; "
                                         "relu 6; tanh 7; out 8")
    close(out, torch.tanh(torch.relu((x + bias) * scale - 0.5)))


@pytest.mark.parametrize("op,ref", [
    ("neg", torch.neg), ("exp", torch.exp), ("log", lambda t: torch.log(t.abs() + 0.1)), ("sqrt", None),
    ("rsqrt", None), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid), ("relu", torch.relu),
    ("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")), ("abs", torch.abs),
    ("reciprocal", torch.reciprocal), ("erf", torch.erf)])
def test_each_unary_op(op, ref):
    torch.manual_seed(1)
    x = torch.randn(4, 33)
    if op in ("sqrt", "rsqrt"):
        x = x.abs() + 0.1
        ref = torch.sqrt if op == "sqrt" else torch.rsqrt
    if op == "log":
        (out,) = stitched([x.abs() + 0.1], "reduce 0; in 0; log 0; out 1")
        close(out, torch.log(x.abs() + 0.1))
        return
    (out,) = stitched([x], f"reduce 0; in 0; {op} 0; out 1")
    close(out, ref(x))


@pytest.mark.parametrize("op,ref", [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
                                    ("max", torch.maximum), ("min", torch.minimum), ("pow", None)])
def test_each_binary_op_full_and_row_operands(op, ref):
    torch.manual_seed(2)
    a, b = torch.randn(6, 9), torch.randn(6, 9)
    if op == "pow":
        a, ref = a.abs() + 0.5, torch.pow
    (ab, ac, ca) = stitched([a, b], f"reduce 0; in 0; in 1; {op} 0 1; const 1.5; {op} 0 3; {op} 3 0; "
                                    "out 2; out 4; out 5")
    close(ab, ref(a, b))
    close(ac, ref(a, torch.tensor(1.5)))
    close(ca, ref(torch.tensor(1.5), a))


def test_non_contiguous_and_expanded_inputs():
    torch.manual_seed(3)
    x = torch.randn(8, 6, 10).transpose(0, 2)           # [10, 6, 8], strides permuted
    y = torch.randn(10, 1, 16)[:, :, ::2]               # broadcast along dim 1, stride 2 in the last
    z = torch.randn(8).expand(10, 6, 8)                  # stride 0
    (out,) = stitched([x, y, z], "reduce 0; in 0; in 1; mul 0 1; in 2; add 2 3; out 4")
    close(out, x * y + z)
    assert out.is_contiguous() and out.shape == (10, 6, 8)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 5, 768), (4, 1000), (2, 20000)])
def test_softmax_of_scaled_scores(shape):
    torch.manual_seed(4)
    x = torch.randn(*shape) * 3
    program = "reduce 1; in 0; const 8; div 0 1; rowmax 2; sub 2 3; exp 4; rowsum 5; div 5 6; out 7"
    (out,) = stitched([x], program)
    close(out, torch.softmax(x / 8, dim=-1), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 128, 768), (3, 5, 31), (2, 9000)])
def test_residual_add_then_layer_norm(shape):
    torch.manual_seed(5)
    x, r = torch.randn(*shape), torch.randn(*shape)
    w, b = torch.randn(shape[-1]), torch.randn(shape[-1])
    program = ("reduce 1; in 0; in 1; add 0 1; rowmean 2; sub 2 3; mul 4 4; rowmean 5; const 1e-12; add 6 7; "
               "rsqrt 8; mul 4 9; in 2; mul 10 11; in 3; add 12 13; out 14; out 2")
    out, s = stitched([x, r, w, b], program)
    close(out, F.layer_norm(x + r, (shape[-1],), w, b, eps=1e-12), rtol=1e-5, atol=1e-5)
    close(s, x + r)


def test_mean_over_two_trailing_dims_row_outputs():
    torch.manual_seed(6)
    x = torch.randn(2, 3, 7, 9)
    mean_keep, mx, mn = stitched([x], "reduce 2; in 0; rowmean 0; rowmax 0; rowmin 0; "
                                      "outrow 1 keepdim; outrow 2; outrow 3")
    close(mean_keep, x.mean(dim=(2, 3), keepdim=True), rtol=1e-5)
    close(mx, x.amax(dim=(2, 3)))
    close(mn, x.amin(dim=(2, 3)))


def test_long_rows_recompute_across_tiles():
    # 50,000 columns: several tiles per row; the values after the reductions are recomputed.
    torch.manual_seed(7)
    x = torch.randn(3, 50000)
    program = ("reduce 1; in 0; rowmax 0; sub 0 1; exp 2; rowsum 3; log 4; sub 2 5; rowmin 6; sub 6 7; "
               "out 6; outrow 7; out 8")
    logp, low, shifted = stitched([x], program)
    ref = torch.log_softmax(x, dim=-1)
    close(logp, ref, rtol=1e-5, atol=1e-5)
    close(low, ref.amin(dim=-1), rtol=1e-5, atol=1e-5)
    close(shifted, ref - ref.amin(dim=-1, keepdim=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float16, 2e-3), (torch.bfloat16, 1e-2)])
def test_other_floating_dtypes(dtype, tol):
    # Half and bfloat16 compute in float and round once at the store (ATen rounds after each op on
    # the reference side, hence the tolerance of a few units of the output format).
    torch.manual_seed(8)
    x = torch.randn(4, 100).to(dtype)
    (out,) = stitched([x], "reduce 1; in 0; rowmax 0; sub 0 1; exp 2; rowsum 3; div 3 4; out 5")
    assert out.dtype == dtype
    close(out.double(), torch.softmax(x.double(), dim=-1), rtol=tol, atol=tol)


def test_nan_propagates_like_torch():
    x = torch.tensor([[1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]])
    mx, relu, maxed = stitched([x], "reduce 1; in 0; rowmax 0; relu 0; const 2; max 0 3; outrow 1; out 2; out 4")
    torch.testing.assert_close(mx, x.amax(dim=-1), rtol=0, atol=0, equal_nan=True)
    assert torch.isnan(relu[0, 1]) and torch.isnan(maxed[0, 1])


def test_empty_domain():
    x = torch.randn(0, 5)
    (out, s) = stitched([x], "reduce 1; in 0; exp 0; rowsum 0; out 1; outrow 2")
    assert out.shape == (0, 5) and s.shape == (0,)


@pytest.mark.parametrize("program,inputs,message", [
    ("in 0; out 0", 1, "must start with 'reduce k;'"),
    ("reduce 0; in 0; frobnicate 0; out 1", 1, "unknown op 'frobnicate'"),
    ("reduce 0; in 0; add 0; out 1", 1, "'add' takes 2 operand(s)"),
    ("reduce 0; in 0; exp 3; out 1", 1, "argument 3 is not an earlier value"),
    ("reduce 0; in 0; rowsum 0; outrow 1", 1, "reductions need a header 'reduce k'"),
    ("reduce 1; in 0; rowsum 0; rowsum 1; outrow 2", 1, "already a row value"),
    ("reduce 0; in 1; out 0", 2, "input 0 is never read"),
    ("reduce 0; in 0; exp 0", 1, "no 'out' or 'outrow'"),
    ("reduce 1; in 0; rowsum 0; out 1", 1, "row value (use outrow)"),
    ("reduce 0; in 0; in 1; add 0 1; out 2", 1, "reads 2 tensor input(s), 1 were given"),
    ("reduce 3; in 0; rowsum 0; outrow 1", 1, "reduces the last 3 dims"),
])
def test_bad_programs_are_rejected(program, inputs, message):
    with pytest.raises(ValueError, match=".*" + __import__("re").escape(message)):
        stitched([torch.randn(2, 3) for _ in range(inputs)], program)


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="floating tensors only"):
        stitched([torch.ones(2, 3, dtype=torch.int64)], "reduce 0; in 0; exp 0; out 1")
    with pytest.raises(ValueError, match="one dtype"):
        stitched([torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64)], "reduce 0; in 0; in 1; add 0 1; out 2")
    with pytest.raises(ValueError):
        stitched([torch.ones(2, 3), torch.ones(4, 3)], "reduce 0; in 0; in 1; add 0 1; out 2")


def test_program_text_survives_scripting_and_saving(tmp_path):
    autograph.load_library()

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.ops.autograph.stitched([x], "reduce 1; in 0; rowmax 0; sub 0 1; exp 2; rowsum 3; "
                                                     "div 3 4; out 5")[0]

    m = torch.jit.script(M())
    m.save(str(tmp_path / "m.pt"))
    loaded = torch.jit.load(str(tmp_path / "m.pt"))
    x = torch.randn(3, 11)
    close(loaded(x), torch.softmax(x, dim=-1), rtol=1e-5)
    assert math.isfinite(loaded(x).sum().item())


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_short_rows_several_to_a_tile_with_per_channel_operands(layout):
    # 7x7 maps: 49 columns a row, packed whole into tiles; the per-channel scale and shift are one
    # element a row (broadcast along the columns). channels_last rows are not adjacent in memory
    # (gathered); exp(scale) is a full output whose value is constant along each row.
    torch.manual_seed(9)
    x = torch.randn(2, 300, 7, 7)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    scale, shift = torch.randn(300, 1, 1), torch.randn(300, 1, 1)
    out, e = stitched([x, scale, shift], "reduce 0; in 0; in 1; mul 0 1; in 2; add 2 3; relu 4; exp 1; "
                                         "out 5; out 6")
    close(out, torch.relu(x * scale + shift))
    close(e, torch.exp(scale).expand(2, 300, 7, 7))


CAPABILITY_SCRIPT = r"""
import sys, torch
sys.path.insert(0, sys.argv[1])
import autograph
autograph.load_library()
print(torch.ops.autograph.stitched_cpu_capability())
torch.manual_seed(0)
x, y = torch.randn(3, 37, 5, 11), torch.randn(37, 1, 1)
(a,) = torch.ops.autograph.stitched([x, y], "reduce 0; in 0; in 1; add 0 1; gelu 2; tanh 3; sigmoid 4; out 5")
torch.testing.assert_close(a, torch.sigmoid(torch.tanh(torch.nn.functional.gelu(x + y))), rtol=1e-6, atol=1e-6)
(b,) = torch.ops.autograph.stitched([x], "reduce 1; in 0; rowmax 0; sub 0 1; exp 2; rowsum 3; div 3 4; out 5")
torch.testing.assert_close(b, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
"""


def test_kernel_follows_atens_cpu_capability():
    # The AVX2 build where ATen runs AVX2 or AVX-512 kernels; ATEN_CPU_CAPABILITY=default selects the
    # portable build in both, and it computes the same.
    autograph.load_library()
    aten = torch.backends.cpu.get_cpu_capability()
    want = "AVX2" if aten in ("AVX2", "AVX512") else "DEFAULT"
    assert torch.ops.autograph.stitched_cpu_capability() == want
    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(autograph.__file__)))  # the package's parent
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    done = subprocess.run([sys.executable, "-c", CAPABILITY_SCRIPT, python_dir], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "DEFAULT"
