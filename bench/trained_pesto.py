"""The PESTO pitch estimator (Riou et al., 2023), as pesto-pitch 2.0.1 runs it with its "mir-1k_g7" weights:
a constant-Q transform of the waveform (one harmonic, 251 bins of a third of a semitone from 27.5 Hz,
variable-Q gamma 7, Hann-windowed kernels, 10 ms hop, as a strided 1-d convolution over the reflected
signal), its log magnitude per frame, a voicing classifier on the frame's energies, then the encoder on
the cropped 219 bins: a layer norm, three residual convolutions of 39 bins, four 1x1 convolutions, each
with leaky ReLU, a Toeplitz linear layer (one 1-d convolution) and a softmax over 384 pitch bins, rolled
by the checkpoint's calibration shift (read off its buffer with `.item()`, as the package does). The
architecture is written here from the paper and checked against the checkpoint's names and shapes as it
loads; the weights are read from the wheel (trained_models)."""
import io
import math
import pickle
import types
from typing import Any, Dict, List, Tuple

import torch
from torch import nn
from torch.nn import functional as F

# The checkpoint's own settings (its "hparams" and "hcqt_params"), which it keeps as omegaconf objects.
SAMPLE_RATE, HOP_MS = 16000, 10.0
FMIN, BINS_PER_SEMITONE, BINS, GAMMA = 27.5, 3, 251, 7
CHANNELS, KERNEL, INPUT_BINS, OUTPUT_BINS, SLOPE = [40, 30, 30, 10, 3], 39, 219, 384, 0.3
CROP = 16  # pitch_shift's max_steps: the bins cut off either side


def cqt_kernels(sample_rate: int, fmin: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """The constant-Q kernels (real parts, then negated imaginary parts: 2 x BINS filters of one width, a
    power of two) and the square roots of their lengths, as nnAudio's CQT1992v2 makes them."""
    per_octave = 12 * BINS_PER_SEMITONE
    q = 1.0 / (2 ** (1 / per_octave) - 1)
    freqs = fmin * 2.0 ** (torch.arange(BINS, dtype=torch.float64) / per_octave)
    alpha = 2.0 ** (1.0 / per_octave) - 1.0
    lengths = torch.ceil(q * sample_rate / (freqs + GAMMA / alpha))
    width = int(2 ** math.ceil(math.log2(int(lengths.max()))))
    kernels = torch.zeros(BINS, width, dtype=torch.complex64)
    for k in range(BINS):
        n = int(lengths[k])
        start = math.ceil(width / 2 - n / 2) - (1 if n % 2 == 1 else 0)
        window = torch.hann_window(n, periodic=True, dtype=torch.float64)
        t = torch.arange(math.floor(-n / 2), math.floor(n / 2), dtype=torch.float64)
        sig = window * torch.exp(1j * 2 * math.pi * freqs[k] * t / sample_rate) / n
        kernels[k, start:start + n] = (sig / sig.abs().sum()).to(torch.complex64)
    weight = torch.cat((kernels.real, -kernels.imag)).unsqueeze(1)
    return weight, lengths.float().sqrt().unsqueeze(-1)


class ConstantQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.hop = int(HOP_MS * SAMPLE_RATE / 1000 + 0.5)
        fmin = FMIN / 2 ** ((BINS_PER_SEMITONE - 1) / (24 * BINS_PER_SEMITONE))  # bins centred on the notes
        weight, sqrt_lengths = cqt_kernels(SAMPLE_RATE, fmin)
        self.register_buffer("kernels", weight, persistent=False)  # computed, as the package does: not in the checkpoint
        self.register_buffer("sqrt_lengths", sqrt_lengths, persistent=False)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        """(batch, samples) -> the complex CQT as (batch, 1 harmonic, BINS, frames, 2)."""
        pad = self.kernels.shape[-1] // 2
        x = F.pad(audio[:, None, :], (pad, pad), mode="reflect")
        cqt = F.conv1d(x, self.kernels, stride=self.hop).view(x.size(0), 2, BINS, -1) * self.sqrt_lengths
        return torch.stack([cqt.permute(0, 2, 3, 1)], dim=1)  # the harmonics stacked (a copy), as the package does


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layernorm = nn.LayerNorm([1, INPUT_BINS])
        self.conv1 = nn.Sequential(nn.Conv1d(1, CHANNELS[0], KERNEL, padding=KERNEL // 2), nn.LeakyReLU(SLOPE))
        self.prefilt_layers = nn.ModuleList(
            nn.Sequential(nn.Conv1d(CHANNELS[0], CHANNELS[0], KERNEL, padding=KERNEL // 2), nn.LeakyReLU(SLOPE))
            for _ in range(2))
        layers: List[nn.Module] = []
        for i in range(len(CHANNELS) - 1):
            layers += [nn.Conv1d(CHANNELS[i], CHANNELS[i + 1], 1), nn.LeakyReLU(SLOPE), nn.Dropout(0.2)]
        self.conv_layers = nn.Sequential(*layers)
        # A Toeplitz linear layer: one filter slid over the flattened channels.
        self.fc = nn.Conv1d(1, 1, INPUT_BINS * CHANNELS[-1] + OUTPUT_BINS - 1, padding=OUTPUT_BINS - 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(self.layernorm(x))
        for layer in self.prefilt_layers:
            x = layer(x) + x
        x = self.conv_layers(x).flatten(1)
        return torch.softmax(self.fc(x.unsqueeze(-2)).squeeze(-2), dim=-1)


class Confidence(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 1, 39, stride=3)
        self.linear = nn.Linear(72, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flatness = x.log().mean(dim=-1, keepdim=True).exp() / x.mean(dim=-1, keepdim=True).clip(min=1e-8)
        x = F.relu(self.conv(x.unsqueeze(1)).squeeze(1))
        return torch.sigmoid(self.linear(torch.cat((x, flatness), dim=-1))).squeeze(-1)


class Pesto(nn.Module):
    """Waveforms (batch, samples at 16 kHz) -> the pitch distribution of each 10-ms frame (batch, frames,
    384 bins of a third of a semitone) and each frame's voicing confidence (batch, frames)."""

    def __init__(self):
        super().__init__()
        self.cqt = ConstantQ()
        self.encoder = Encoder()
        self.confidence = Confidence()
        self.register_buffer("shift", torch.zeros(()))

    def forward(self, audio: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        batch = audio.size(0)
        x = torch.view_as_complex(self.cqt(audio)).permute(0, 3, 1, 2)
        x = x.abs().clamp(min=torch.finfo(torch.float32).eps).log10().mul(20).flatten(0, 1)
        x = x.mul(math.log(10) / 10)  # in place in the package: the encoder reads it scaled too
        energy = x.exp().squeeze(1)
        confidence = self.confidence(energy)
        activations = self.encoder(x[..., CROP:-CROP]).view(batch, -1, OUTPUT_BINS)
        shift = round(self.shift.item() * BINS_PER_SEMITONE)  # the checkpoint's calibration, read at run time
        return activations.roll(-shift, -1), confidence.view(batch, -1)


class _Absent:
    """What the checkpoint's omegaconf objects load as: nothing (their settings are written above)."""

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def __setstate__(self, state: Any) -> None:
        pass


_PLAIN = {"builtins": {"set", "frozenset", "slice", "complex", "bytearray", "int", "float", "str", "list", "dict",
                       "tuple", "bool"},
          "collections": {"OrderedDict"}, "_codecs": {"encode"}}


class _Checkpoint(pickle.Unpickler):
    """A Lightning checkpoint's tensors and plain values; any other class or function it names (its
    hyperparameters' omegaconf classes, or anything that would run code) loads as _Absent."""

    def find_class(self, module: str, name: str) -> Any:
        tensor_part = module.startswith("torch") and (name.startswith("_rebuild_") or name.endswith("Storage")
                                                      or name in ("Size", "device", "dtype"))
        dtype = module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)
        if tensor_part or dtype or name in _PLAIN.get(module, ()):
            return super().find_class(module, name)
        return _Absent


def state_dict(checkpoint: bytes) -> Dict[str, torch.Tensor]:
    """The model's state dict in pesto-pitch's checkpoint (its names are Pesto's)."""
    pickle_module = types.SimpleNamespace(Unpickler=_Checkpoint, __name__="pickle")
    loaded = torch.load(io.BytesIO(checkpoint), map_location="cpu", weights_only=False, pickle_module=pickle_module)
    return dict(loaded["state_dict"])


__all__ = ["Pesto", "state_dict", "SAMPLE_RATE"]
