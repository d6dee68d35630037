"""RNNTC-SRU: RNN text classifier built from Simple Recurrent Units (Lei, Zhang, Wang, Dai, Artzi:
"Simple Recurrent Units for Highly Parallelizable Recurrence", EMNLP 2018; arXiv 1709.02755),
in the shape MetaFlow (Jia et al., SysML 2019) and AutoGraph benchmark as "RNNTC".

SRU cell, per time step t (x_t of width d_in, state c of width d):
    x~_t = W x_t                        (no bias)
    f_t  = sigmoid(W_f x_t + b_f)        forget gate
    r_t  = sigmoid(W_r x_t + b_r)        reset (highway) gate
    c_t  = f_t * c_{t-1} + (1 - f_t) * x~_t          (c_{-1} = 0, so c_0 = (1 - f_0) * x~_0)
    h_t  = r_t * tanh(c_t) + (1 - r_t) * x_t          (x_t through a bias-free projection
                                                        when d_in != d)
The three products W x_t, W_f x_t, W_r x_t only read x_t; the recurrence is element-wise. The
graph keeps them as three separate linears per time step, as MetaFlow's RNNTC graph does
(`code/sru.h`): merging them (per step, and across steps) is left to the optimizer.

Configuration: MetaFlow's RNNTC_SRU graph (sequence length 20, one SRU layer, width 1024).
Unrolled, it is about 280 small kernels; at a few microseconds each that is consistent with the
1.5 ms AutoGraph reports for RNNTC-SRU under the JIT (two layers would double it). Token ids
[1, 20] -> embedding (vocabulary 10000, width 1024) -> SRU layers (hidden 1024; `num_layers` = 1
by default, stacking supported) -> mean of the last layer's h_t over time -> linear classifier
(2 classes, binary sentiment as in the SRU paper's MR/SST tasks).
Mean pooling keeps every time step's output live, so dead-code elimination cannot drop any
h_t. The recurrence is unrolled in Python over the fixed sequence length, so tracing records
every step.
"""
from typing import List, Optional

import torch
from torch import nn


class SRUCell(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.w = nn.Linear(input_size, hidden_size, bias=False)
        self.w_f = nn.Linear(input_size, hidden_size)
        self.w_r = nn.Linear(input_size, hidden_size)
        self.w_h: Optional[nn.Linear] = None
        if input_size != hidden_size:
            self.w_h = nn.Linear(input_size, hidden_size, bias=False)

    def forward(self, xs: List[torch.Tensor]) -> List[torch.Tensor]:
        hs: List[torch.Tensor] = []
        c: Optional[torch.Tensor] = None
        for x in xs:
            x_tilde = self.w(x)
            f = torch.sigmoid(self.w_f(x))
            r = torch.sigmoid(self.w_r(x))
            if c is None:
                c = (1.0 - f) * x_tilde
            else:
                c = f * c + (1.0 - f) * x_tilde
            highway = x if self.w_h is None else self.w_h(x)
            hs.append(r * torch.tanh(c) + (1.0 - r) * highway)
        return hs


class RNNTCSRU(nn.Module):
    def __init__(self, vocab_size: int = 10000, embed_size: int = 1024, hidden_size: int = 1024,
                 num_layers: int = 1, seq_len: int = 20, num_classes: int = 2):
        super().__init__()
        self.seq_len = seq_len
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.layers = nn.ModuleList(
            SRUCell(embed_size if i == 0 else hidden_size, hidden_size) for i in range(num_layers))
        self.classifier = nn.Linear(hidden_size, num_classes)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        e = self.embedding(input_ids)                     # [B, T, E]
        xs = [e[:, t] for t in range(self.seq_len)]       # T x [B, E]
        for layer in self.layers:
            xs = layer(xs)
        pooled = torch.stack(xs, 1).mean(1)               # [B, H]
        return self.classifier(pooled)


def rnntc_sru() -> RNNTCSRU:
    return RNNTCSRU()
