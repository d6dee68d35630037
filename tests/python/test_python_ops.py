"""The extension from Python: torch.ops.load_library and the autograph ops."""
import pytest
import torch

import autograph


class TwoBranches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 8, 1)

    def forward(self, x):
        return torch.relu(self.a(x)) + torch.sigmoid(self.b(x))


def test_inspect_scripted_module():
    stats = autograph.inspect(torch.jit.script(TwoBranches().eval()), [torch.randn(1, 3, 16, 16)])
    assert stats["ops_by_kind"] == {"compute": 2, "memory": 3}
    assert stats["width"] == 2
    assert stats["critical_path_ops"] == 3
    conv3x3 = 2 * 8 * 16 * 16 * 3 * 9
    conv1x1 = 2 * 8 * 16 * 16 * 3
    assert stats["ops_by_type"]["aten::conv2d"] == 2
    assert stats["flops"] >= conv3x3 + conv1x1


def test_op_is_registered_under_the_autograph_namespace():
    autograph.load_library()
    assert hasattr(torch.ops.autograph, "inspect")


def test_bad_path_raises_value_error():
    with pytest.raises(ValueError, match="no such file"):
        autograph.inspect("/nonexistent.pt", [])
