"""Models the precision tests of both paths share."""
import torch


class Cancelling(torch.nn.Module):
    """Two linears of nearly the same weights, subtracted, beside a passthrough: computed in bfloat16 the
    difference is lost in their rounding. Where the linears' input is small and the passthrough large (the
    example) that error is small beside the output's scale; the other way round (the calibration input)
    it is of the output's own order. `width`: the linears' (wide enough, with enough rows, to be
    compute-bound on a CPU's roofline, as the TorchScript path lowers only such products)."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.a = torch.nn.Linear(width, width, bias=False)
        self.b = torch.nn.Linear(width, width, bias=False)
        with torch.no_grad():
            self.b.weight.copy_(self.a.weight + 1e-4 * torch.randn_like(self.a.weight))

    def forward(self, x, passthrough):
        return self.a(x) - self.b(x) + passthrough


class Classifier(torch.nn.Module):
    """Two linears and a ReLU over 32 features, 10 classes; class 3 leads every other by a margin (50) that
    no rounding of bfloat16 or INT8 closes: computed lower, its top-1 answers never change while its
    logits move."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Linear(32, 64)
        self.head = torch.nn.Linear(64, 10)
        with torch.no_grad():
            self.head.bias[3] += 50.0

    def forward(self, x):
        return self.head(torch.relu(self.features(x)))
