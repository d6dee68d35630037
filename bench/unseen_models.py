"""Models the zoo (models/registry.py) lacks, for the benchmarks' --unseen: what a user would bring.

build(name) returns (eval-mode model, example inputs tuple). Names of ARCHITECTURES are written here from
their published descriptions (audio front ends, recurrent taggers, a transformer encoder, convolutions before recurrent layers: shapes of work
the zoo's vision models and bert_base do not cover); any other name is a torchvision model. Weights are
random (speed does not depend on them) and seeded, inputs too, so every run measures the same model.
"""
from typing import Callable, Dict, Tuple

import torch
import torch.nn.functional as F
from torch import nn

SEED = 0


class Wav2Vec2Features(nn.Module):
    """wav2vec 2.0's convolutional feature encoder (Baevski et al. 2020, the base model's "group" norm
    mode): 7 convolutions of 512 channels without bias, GroupNorm with one group per channel after the
    first, GELU after each. 16 kHz audio in, one 512-wide frame per 20 ms out."""
    KERNELS = (10, 3, 3, 3, 3, 2, 2)
    STRIDES = (5, 2, 2, 2, 2, 2, 2)

    def __init__(self, channels: int = 512):
        super().__init__()
        layers = []
        for i, (k, s) in enumerate(zip(self.KERNELS, self.STRIDES)):
            layers.append(nn.Conv1d(1 if i == 0 else channels, channels, k, stride=s, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(channels, channels))
            layers.append(nn.GELU())
        self.layers = nn.Sequential(*layers)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.layers(audio)


class Wav2Vec2Encoder(nn.Module):
    """wav2vec 2.0's base model (Baevski et al. 2020) up to its first `layers` transformer layers: the
    convolutional feature encoder, LayerNorm and a projection to 768, the convolutional position embedding
    (kernel 128, 16 groups, GELU; the even kernel's extra frame dropped) added, LayerNorm, then post-norm
    transformer layers of 768 (12 heads, a 3072-wide GELU feed-forward). Convolutions over a long signal,
    then attention over few frames: work of two kinds in one graph."""

    def __init__(self, layers: int = 4):
        super().__init__()
        self.features = Wav2Vec2Features()
        self.norm, self.project = nn.LayerNorm(512), nn.Linear(512, 768)
        self.position = nn.Conv1d(768, 768, 128, padding=64, groups=16)
        self.encoder_norm = nn.LayerNorm(768)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        x = self.project(self.norm(self.features(audio).transpose(1, 2)))
        position = F.gelu(self.position(x.transpose(1, 2))[..., :-1]).transpose(1, 2)
        return self.encoder(self.encoder_norm(x + position))


class TemporalBlock(nn.Module):
    """A TCN residual block (Bai et al. 2018): two causal dilated convolutions, each followed by ReLU,
    added to the input (through a 1x1 convolution where the channel counts differ)."""

    def __init__(self, inputs: int, channels: int, dilation: int, kernel: int = 3):
        super().__init__()
        self.pad = (kernel - 1) * dilation  # on the left only: no output sees the future
        self.conv1 = nn.Conv1d(inputs, channels, kernel, dilation=dilation)
        self.conv2 = nn.Conv1d(channels, channels, kernel, dilation=dilation)
        self.skip = nn.Conv1d(inputs, channels, 1) if inputs != channels else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv1(F.pad(x, (self.pad, 0))))
        y = F.relu(self.conv2(F.pad(y, (self.pad, 0))))
        return F.relu(y + self.skip(x))


class TCNAudio(nn.Module):
    """6 residual blocks of 128 channels, dilations 1, 2, 4, ..., 32, and a 1x1 convolution head back to
    the input's 64 channels (e.g. a frame-wise predictor over 64 mel bands)."""

    def __init__(self, inputs: int = 64, channels: int = 128, blocks: int = 6):
        super().__init__()
        self.blocks = nn.Sequential(*[TemporalBlock(inputs if i == 0 else channels, channels, 2 ** i)
                                      for i in range(blocks)])
        self.head = nn.Conv1d(channels, inputs, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


class LSTMTagger(nn.Module):
    """A sequence tagger: token embeddings, a 2-layer LSTM, one tag score vector per token."""

    def __init__(self, vocab: int = 10000, embed: int = 256, hidden: int = 512, tags: int = 50):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.lstm(self.embed(tokens))[0])


class GRUSpeech(nn.Module):
    """An acoustic model: 80 filterbank features per frame, a 2-layer bidirectional GRU, 40 phone scores
    per frame."""

    def __init__(self, features: int = 80, hidden: int = 384, phones: int = 40):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, phones)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.out(self.gru(frames)[0])


class DeepSpeech2(nn.Module):
    """DeepSpeech 2 (Amodei et al. 2016), its English model's shape: two 2-D convolutions over a 161-bin
    spectrogram (41x11 and 21x11 kernels, batch norm, clipped ReLU), three bidirectional GRU layers, a
    character score vector per frame. Convolutions and recurrent layers in one graph."""

    def __init__(self, bins: int = 161, hidden: int = 512, layers: int = 3, characters: int = 29):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 32, (41, 11), (2, 2), (20, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
                                  nn.Conv2d(32, 32, (21, 11), (2, 1), (10, 5)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20))
        rows = ((bins + 1) // 2 + 1) // 2
        self.rnn = nn.GRU(32 * rows, hidden, num_layers=layers, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, characters)

    def forward(self, spectrogram: torch.Tensor) -> torch.Tensor:
        y = self.conv(spectrogram)
        return self.out(self.rnn(y.flatten(1, 2).transpose(1, 2))[0])


class CRNN(nn.Module):
    """CRNN for scene text recognition (Shi, Bai and Yao 2015): seven VGG-style convolutions over a 32-pixel
    high grey image (batch norm after the 5th, 6th and 7th), two bidirectional LSTM layers of 256 over
    the image's columns, a character score vector per column."""

    def __init__(self, characters: int = 37, hidden: int = 256):
        super().__init__()

        def conv(cin: int, cout: int, kernel: int = 3, norm: bool = False, padding: int = 1):
            return [nn.Conv2d(cin, cout, kernel, padding=padding)] + ([nn.BatchNorm2d(cout)] if norm else []) + [nn.ReLU()]
        self.features = nn.Sequential(
            *conv(1, 64), nn.MaxPool2d(2), *conv(64, 128), nn.MaxPool2d(2),
            *conv(128, 256), *conv(256, 256), nn.MaxPool2d((2, 1)),
            *conv(256, 512, norm=True), *conv(512, 512, norm=True), nn.MaxPool2d((2, 1)),
            *conv(512, 512, 2, norm=True, padding=0))
        self.rnn = nn.LSTM(512, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, characters)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        columns = self.features(image).squeeze(2).transpose(1, 2)  # (batch, width, 512)
        return self.out(self.rnn(columns)[0])


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(SEED))


def _wav2vec2_features():
    return Wav2Vec2Features(), (_randn(1, 1, 16000),)  # one second of 16 kHz audio


def _wav2vec2_encoder():
    return Wav2Vec2Encoder(), (_randn(1, 1, 16000),)  # one second of 16 kHz audio: 49 frames


def _tcn_audio():
    return TCNAudio(), (_randn(1, 64, 8000),)


def _lstm_tagger():
    return LSTMTagger(), (torch.randint(0, 10000, (1, 128), generator=torch.Generator().manual_seed(SEED)),)


def _gru_speech():
    return GRUSpeech(), (_randn(1, 200, 80),)


def _deepspeech2():
    return DeepSpeech2(), (_randn(1, 1, 161, 300),)  # three seconds of 10 ms frames


def _crnn():
    return CRNN(), (_randn(1, 1, 32, 100),)  # the paper's input: 32x100, 24 columns after the convolutions


def _transformer_encoder():
    layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
    # enable_nested_tensor only matters with a padding mask, which this input has none of
    return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False), (_randn(1, 128, 512),)


ARCHITECTURES: Dict[str, Callable[[], Tuple[nn.Module, Tuple[torch.Tensor, ...]]]] = {
    "wav2vec2_features": _wav2vec2_features,
    "wav2vec2_encoder": _wav2vec2_encoder,
    "tcn_audio": _tcn_audio,
    "lstm_tagger": _lstm_tagger,
    "gru_speech": _gru_speech,
    "transformer_encoder": _transformer_encoder,
    "deepspeech2": _deepspeech2,
    "crnn": _crnn,
}


def torchvision_model(name: str):
    """A torchvision model, random weights, and its input (batch 1, 3x224x224)."""
    import torchvision
    extra = {"googlenet": {"aux_logits": False, "init_weights": True}}.get(name, {})
    model = torchvision.models.get_model(name, weights=None, **extra).eval()
    return model, (_randn(1, 3, 224, 224),)


def build(name: str):
    """(eval-mode model, example inputs) for `name`: one of ARCHITECTURES, else a torchvision model."""
    torch.manual_seed(SEED)
    if name in ARCHITECTURES:
        model, inputs = ARCHITECTURES[name]()
        return model.eval(), inputs
    return torchvision_model(name)
