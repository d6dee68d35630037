"""NASNet-A (Zoph, Vasudevan, Shlens, Le: "Learning Transferable Architectures for Scalable Image
Recognition", CVPR 2018), written after the layout of the widely used PyTorch port in Cadene's
`pretrainedmodels` (nasnet.py / nasnet_mobile.py), which mirrors TensorFlow-Slim's nasnet.py.

Two configurations are exported:

* NASNet-A Large  (6 @ 4032): stem 96 filters, N = 6 cells per stack, input 331x331.
* NASNet-A Mobile (4 @ 1056): stem 32 filters, N = 4 cells per stack, input 224x224.

"N @ P" means N normal cells per stack (the first of each stack is the "first" cell that
reduces the skip input with a factorized reduction) and P = 24 * filters penultimate channels.

TensorFlow's SAME padding of stride-2 ops on even-sized inputs is reproduced as Cadene does:
zero-pad one row/column at the top-left, run the op with symmetric padding, crop the first
row/column ("shifted" branches below). Which reductions need it follows from the input size
(Large: only reduction cell 0, at 42x42; Mobile: stem cell 1 and both reductions), exactly
where Cadene's definitions use it.

Deviations from the Cadene modules: dropout before the classifier is left out (inference only),
`.contiguous()` after crops is left out (value-identical), and the module tree is built by a loop
(cell names cell_0 .. cell_{3N-1}, reduction_cell_0/1) instead of 18 hand-written attributes.
"""
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import nn

_BN_EPS = 1e-3


def _bn(c: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c, eps=_BN_EPS, momentum=0.1, affine=True)


class SeparableConv2d(nn.Module):
    """Depthwise k x k conv followed by pointwise 1 x 1 conv, no bias."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, padding: int):
        super().__init__()
        self.depthwise_conv2d = nn.Conv2d(cin, cin, kernel, stride=stride, padding=padding,
                                          groups=cin, bias=False)
        self.pointwise_conv2d = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise_conv2d(self.depthwise_conv2d(x))


class BranchSeparables(nn.Module):
    """ReLU - SepConv(k, stride) - BN - ReLU - SepConv(k, 1) - BN.

    stem=True: the first separable conv already maps cin -> cout (Cadene's BranchSeparablesStem);
    otherwise it keeps cin channels. shifted=True: top-left pad + crop around the first
    separable conv (Cadene's BranchSeparablesReduction / name='specific').
    """

    def __init__(self, cin: int, cout: int, kernel: int, stride: int,
                 stem: bool = False, shifted: bool = False):
        super().__init__()
        mid = cout if stem else cin
        pad = kernel // 2
        self.shifted = shifted
        self.relu = nn.ReLU()
        self.separable_1 = SeparableConv2d(cin, mid, kernel, stride, pad)
        self.bn_sep_1 = _bn(mid)
        self.relu1 = nn.ReLU()
        self.separable_2 = SeparableConv2d(mid, cout, kernel, 1, pad)
        self.bn_sep_2 = _bn(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        if self.shifted:
            x = F.pad(x, (1, 0, 1, 0))
            x = self.separable_1(x)
            x = x[:, :, 1:, 1:]
        else:
            x = self.separable_1(x)
        x = self.bn_sep_1(x)
        x = self.relu1(x)
        x = self.separable_2(x)
        return self.bn_sep_2(x)


class Pool(nn.Module):
    """3x3 max or average pool (average excludes implicit padding), optionally shifted."""

    def __init__(self, kind: str, stride: int, shifted: bool = False):
        super().__init__()
        self.shifted = shifted
        if kind == "max":
            self.pool = nn.MaxPool2d(3, stride=stride, padding=1)
        else:
            self.pool = nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.shifted:
            x = F.pad(x, (1, 0, 1, 0))
            x = self.pool(x)
            return x[:, :, 1:, 1:]
        return self.pool(x)


class ReLUConvBN(nn.Module):
    """ReLU - 1x1 conv - BN: adapts a cell input to the cell's width."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn = _bn(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(self.relu(x)))


class FactorizedReduction(nn.Module):
    """Halves the resolution of a skip input: ReLU, then two stride-2 1x1 paths (the second one
    shifted by one pixel), concatenated, BN. Output has cout channels (cout/2 per path)."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.relu = nn.ReLU()
        self.path_1_avgpool = nn.AvgPool2d(1, stride=2, count_include_pad=False)
        self.path_1_conv = nn.Conv2d(cin, cout // 2, 1, bias=False)
        self.path_2_avgpool = nn.AvgPool2d(1, stride=2, count_include_pad=False)
        self.path_2_conv = nn.Conv2d(cin, cout // 2, 1, bias=False)
        self.final_path_bn = _bn(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        p1 = self.path_1_conv(self.path_1_avgpool(x))
        p2 = F.pad(x, (0, 1, 0, 1))[:, :, 1:, 1:]
        p2 = self.path_2_conv(self.path_2_avgpool(p2))
        return self.final_path_bn(torch.cat([p1, p2], 1))


class CellStem0(nn.Module):
    def __init__(self, stem_filters: int, nf: int):
        super().__init__()
        self.conv_1x1 = ReLUConvBN(stem_filters, nf)
        self.comb_iter_0_left = BranchSeparables(nf, nf, 5, 2)
        self.comb_iter_0_right = BranchSeparables(stem_filters, nf, 7, 2, stem=True)
        self.comb_iter_1_left = Pool("max", 2)
        self.comb_iter_1_right = BranchSeparables(stem_filters, nf, 7, 2, stem=True)
        self.comb_iter_2_left = Pool("avg", 2)
        self.comb_iter_2_right = BranchSeparables(stem_filters, nf, 5, 2, stem=True)
        self.comb_iter_3_right = Pool("avg", 1)
        self.comb_iter_4_left = BranchSeparables(nf, nf, 3, 1)
        self.comb_iter_4_right = Pool("max", 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.conv_1x1(x)
        c0 = self.comb_iter_0_left(x1) + self.comb_iter_0_right(x)
        c1 = self.comb_iter_1_left(x1) + self.comb_iter_1_right(x)
        c2 = self.comb_iter_2_left(x1) + self.comb_iter_2_right(x)
        c3 = self.comb_iter_3_right(c0) + c1
        c4 = self.comb_iter_4_left(c0) + self.comb_iter_4_right(x1)
        return torch.cat([c1, c2, c3, c4], 1)


class ReductionCell(nn.Module):
    """Reduction cell (also used, with a factorized-reduction right input, as stem cell 1)."""

    def __init__(self, left: nn.Module, right: nn.Module, c: int, shifted: bool):
        super().__init__()
        # x_left comes from the previous-previous output, x_right from the previous output.
        self.conv_prev_1x1 = left
        self.conv_1x1 = right
        s = shifted
        self.comb_iter_0_left = BranchSeparables(c, c, 5, 2, shifted=s)
        self.comb_iter_0_right = BranchSeparables(c, c, 7, 2, shifted=s)
        self.comb_iter_1_left = Pool("max", 2, shifted=s)
        self.comb_iter_1_right = BranchSeparables(c, c, 7, 2, shifted=s)
        self.comb_iter_2_left = Pool("avg", 2, shifted=s)
        self.comb_iter_2_right = BranchSeparables(c, c, 5, 2, shifted=s)
        self.comb_iter_3_right = Pool("avg", 1)
        self.comb_iter_4_left = BranchSeparables(c, c, 3, 1, shifted=s)
        self.comb_iter_4_right = Pool("max", 2, shifted=s)

    def forward(self, x: torch.Tensor, x_prev: torch.Tensor) -> torch.Tensor:
        x_left = self.conv_prev_1x1(x_prev)
        x_right = self.conv_1x1(x)
        c0 = self.comb_iter_0_left(x_right) + self.comb_iter_0_right(x_left)
        c1 = self.comb_iter_1_left(x_right) + self.comb_iter_1_right(x_left)
        c2 = self.comb_iter_2_left(x_right) + self.comb_iter_2_right(x_left)
        c3 = self.comb_iter_3_right(c0) + c1
        c4 = self.comb_iter_4_left(c0) + self.comb_iter_4_right(x_right)
        return torch.cat([c1, c2, c3, c4], 1)


class CellStem1(ReductionCell):
    """Stem cell 1: reduction-cell wiring with x = stem-0 output (through a 1x1 ReLU-conv-BN;
    feeds the pools and one 5x5 branch) and x_prev = stem conv output (through a factorized
    reduction; feeds two 7x7 branches and one 5x5 branch), as in the reference."""

    def __init__(self, stem_filters: int, nf: int, shifted: bool):
        super().__init__(FactorizedReduction(stem_filters, nf), ReLUConvBN(2 * nf, nf), nf, shifted)

    def forward(self, x_conv0: torch.Tensor, x_stem_0: torch.Tensor) -> torch.Tensor:
        # Same wiring as ReductionCell.forward with x = x_stem_0 and x_prev = x_conv0.
        return super().forward(x_stem_0, x_conv0)


class NormalCell(nn.Module):
    """Normal cell; first=True makes it the first cell of a stack, whose skip input has twice
    the resolution and goes through a factorized reduction instead of a 1x1 conv."""

    def __init__(self, in_left: int, out_left: int, in_right: int, out_right: int, first: bool):
        super().__init__()
        if first:
            self.conv_prev_1x1 = FactorizedReduction(in_left, 2 * out_left)
            cl = 2 * out_left
        else:
            self.conv_prev_1x1 = ReLUConvBN(in_left, out_left)
            cl = out_left
        cr = out_right
        assert cl == cr, "NASNet-A normal cells add left and right branches: widths must agree"
        self.conv_1x1 = ReLUConvBN(in_right, cr)
        self.comb_iter_0_left = BranchSeparables(cr, cr, 5, 1)
        self.comb_iter_0_right = BranchSeparables(cl, cl, 3, 1)
        self.comb_iter_1_left = BranchSeparables(cl, cl, 5, 1)
        self.comb_iter_1_right = BranchSeparables(cl, cl, 3, 1)
        self.comb_iter_2_left = Pool("avg", 1)
        self.comb_iter_3_left = Pool("avg", 1)
        self.comb_iter_3_right = Pool("avg", 1)
        self.comb_iter_4_left = BranchSeparables(cr, cr, 3, 1)

    def forward(self, x: torch.Tensor, x_prev: torch.Tensor) -> torch.Tensor:
        x_left = self.conv_prev_1x1(x_prev)
        x_right = self.conv_1x1(x)
        c0 = self.comb_iter_0_left(x_right) + self.comb_iter_0_right(x_left)
        c1 = self.comb_iter_1_left(x_left) + self.comb_iter_1_right(x_left)
        c2 = self.comb_iter_2_left(x_right) + x_left
        c3 = self.comb_iter_3_left(x_left) + self.comb_iter_3_right(x_left)
        c4 = self.comb_iter_4_left(x_right) + x_right
        return torch.cat([x_left, c0, c1, c2, c3, c4], 1)


def _reduce(size: int, shifted: bool) -> int:
    """Spatial size after a stride-2 op with 'same'-style padding (k = 3, 5 or 7)."""
    return size // 2 if shifted else (size - 1) // 2 + 1


class NASNetA(nn.Module):
    def __init__(self, stem_filters: int, penultimate_filters: int, cells_per_stack: int,
                 input_size: int, num_classes: int = 1000, filters_multiplier: int = 2):
        super().__init__()
        assert filters_multiplier == 2
        f = penultimate_filters // 24
        self.conv0 = nn.Sequential()
        self.conv0.add_module("conv", nn.Conv2d(3, stem_filters, 3, stride=2, padding=0, bias=False))
        self.conv0.add_module("bn", _bn(stem_filters))
        size = (input_size - 3) // 2 + 1          # after conv0
        self.cell_stem_0 = CellStem0(stem_filters, f // 4)
        size = _reduce(size, False)               # stem 0 input is odd for both configurations
        shifted = size % 2 == 0
        self.cell_stem_1 = CellStem1(stem_filters, f // 2, shifted)
        size = _reduce(size, shifted)

        # Channels of the previous-previous (cp) and previous (cc) outputs.
        cp, cc = 4 * (f // 4), 4 * (f // 2)
        self._order: List[Tuple[str, str]] = []   # (kind, attribute name) in execution order
        cell_index = 0
        for stack in range(3):
            m = f * 2 ** stack
            if stack > 0:
                shifted = size % 2 == 0
                name = f"reduction_cell_{stack - 1}"
                self.add_module(name, ReductionCell(ReLUConvBN(cp, m), ReLUConvBN(cc, m), m, shifted))
                self._order.append(("reduction", name))
                size = _reduce(size, shifted)
                cc = 4 * m                        # cp stays: the first cell reuses the reduction's skip
            for i in range(cells_per_stack):
                name = f"cell_{cell_index}"
                cell_index += 1
                first = i == 0
                out_left = m // 2 if first else m
                self.add_module(name, NormalCell(cp, out_left, cc, m, first))
                self._order.append(("normal", name))
                cp, cc = cc, 6 * m
        self.final_size = size
        self.relu = nn.ReLU()
        self.avg_pool = nn.AvgPool2d(size, stride=1, padding=0)
        self.last_linear = nn.Linear(cc, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x_conv0 = self.conv0(x)
        x_stem_0 = self.cell_stem_0(x_conv0)
        x_stem_1 = self.cell_stem_1(x_conv0, x_stem_0)
        prev, cur = x_stem_0, x_stem_1
        for kind, name in self._order:
            cell = getattr(self, name)
            if kind == "reduction":
                # The first cell after a reduction takes the reduction's own skip input.
                cur = cell(cur, prev)
            else:
                prev, cur = cur, cell(cur, prev)
        return cur

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avg_pool(self.relu(x))
        return self.last_linear(torch.flatten(x, 1))


def nasnet_a_large(num_classes: int = 1000) -> NASNetA:
    """NASNet-A Large 6 @ 4032, 331x331 input."""
    return NASNetA(stem_filters=96, penultimate_filters=4032, cells_per_stack=6,
                   input_size=331, num_classes=num_classes)


def nasnet_a_mobile(num_classes: int = 1000) -> NASNetA:
    """NASNet-A Mobile 4 @ 1056, 224x224 input."""
    return NASNetA(stem_filters=32, penultimate_filters=1056, cells_per_stack=4,
                   input_size=224, num_classes=num_classes)
