"""autograph::merged_conv2d from Python: several convolutions of one input as one kernel, equal to
separate F.conv2d calls up to summation order; a ValueError naming the convolution that does not fit."""
import pytest
import torch
import torch.nn.functional as F

import autograph


def merged(x, weights, biases, stride, paddings, dilation):
    autograph.load_library()
    flat = [p for pad in paddings for p in pad]
    return torch.ops.autograph.merged_conv2d(x, weights, biases, stride, flat, dilation)


# 1x1, 3x3, 5x5, 1x7 and 7x1 with and without bias: one padding offset (k // 2 per dimension).
SPECS = [(4, 1, 1, True), (3, 3, 3, False), (6, 5, 5, True), (2, 1, 7, False), (3, 7, 1, True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2)])
def test_equals_separate_convolutions(dtype, batch, stride, dilation):
    torch.manual_seed(0)
    x = torch.randn(batch, 5, 13, 11, dtype=dtype)
    weights = [torch.randn(o, 5, kh, kw, dtype=dtype) for o, kh, kw, _ in SPECS]
    biases = [torch.randn(o, dtype=dtype) if has_bias else None for o, _, _, has_bias in SPECS]
    paddings = [[dilation * (kh // 2), dilation * (kw // 2)] for _, kh, kw, _ in SPECS]
    outs = merged(x, weights, biases, [stride, stride], paddings, [dilation, dilation])
    assert len(outs) == len(SPECS)
    # The zero taps add exact zeros; only the order of the sums may differ. Two orders of a sum of
    # L products differ by at most 2 * L * eps * sum|x_i * w_i| (L = C_in * kh * kw + 1 for the bias).
    eps = torch.finfo(dtype).eps
    for out, w, b, p in zip(outs, weights, biases, paddings):
        want = F.conv2d(x, w, b, stride, p, dilation)
        assert out.shape == want.shape
        magnitude = F.conv2d(x.abs(), w.abs(), None if b is None else b.abs(), stride, p, dilation)
        reduction = w.shape[1] * w.shape[2] * w.shape[3] + 1
        assert ((out - want).abs() <= 2 * reduction * eps * magnitude).all()


def test_outputs_are_channel_slices_of_one_tensor():
    x = torch.randn(2, 3, 8, 8)
    outs = merged(x, [torch.randn(4, 3, 3, 3), torch.randn(5, 3, 1, 1)], [None, None], [1, 1],
                  [[1, 1], [0, 0]], [1, 1])
    assert [o.shape[1] for o in outs] == [4, 5]
    assert outs[0].untyped_storage().data_ptr() == outs[1].untyped_storage().data_ptr()


def test_incompatible_convolutions_raise_value_error_with_the_reason():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ValueError, match="conv 1 has 4 in-channels, conv 0 has 3"):
        merged(x, [torch.randn(2, 3, 3, 3), torch.randn(2, 4, 1, 1)], [None, None], [1, 1], [[1, 1], [0, 0]], [1, 1])
    with pytest.raises(ValueError, match="conv 1 .*would change its output"):
        merged(x, [torch.randn(2, 3, 3, 3), torch.randn(2, 3, 1, 1)], [None, None], [1, 1], [[1, 1], [1, 1]], [1, 1])
    with pytest.raises(ValueError, match="2 per convolution"):
        torch.ops.autograph.merged_conv2d(x, [torch.randn(2, 3, 3, 3)], [None], [1, 1], [1], [1, 1])
