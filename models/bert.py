"""BERT-base encoder (Devlin, Chang, Lee, Toutanova: "BERT: Pre-training of Deep Bidirectional
Transformers for Language Understanding", NAACL 2019), written out operator by operator in the
layout of the reference implementation (google-research/bert modeling.py, and HuggingFace's
BertModel): 12 layers, hidden 768, 12 heads of 64, intermediate 3072, exact (erf) GELU,
LayerNorm eps 1e-12, vocabulary 30522, 512 positions, 2 token types.

Written with nn.Linear / nn.LayerNorm / matmul / softmax / GELU on purpose: PyTorch's
TransformerEncoderLayer and MultiheadAttention take a fused "fast path" in eval mode
(aten::_transformer_encoder_layer_fwd, _native_multi_head_attention) that hides the operators the
optimizer wants to see.

Inference-only simplifications: one input (token ids); token types are all 0 and there is no
padding mask (every position attends to every position), dropout is left out. The model returns
the last hidden state [B, T, 768]; the pooler (a 768x768 linear + tanh on [CLS], 0.59M
parameters) is not built, so no parameter is unused.
"""
import math

import torch
from torch import nn


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size: int, hidden: int, max_positions: int, type_vocab: int):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_positions).unsqueeze(0))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_len = input_ids.size(1)
        positions = self.position_ids[:, :seq_len]
        token_types = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_types))
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.sqrt_d = math.sqrt(self.head_dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t = x.size(0), x.size(1)
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)   # [B, H, T, D]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self._split(self.query(x))
        k = self._split(self.key(x))
        v = self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / self.sqrt_d         # [B, H, T, T]
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3)                    # [B, T, H, D]
        return ctx.reshape(x.size(0), x.size(1), self.heads * self.head_dim)


class BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.gelu = nn.GELU()
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.attention_norm(self.attention_output(self.attention(x)) + x)
        h = self.output(self.gelu(self.intermediate(a)))
        return self.output_norm(h + a)


class BertEncoderModel(nn.Module):
    def __init__(self, vocab_size: int = 30522, hidden: int = 768, layers: int = 12, heads: int = 12,
                 intermediate: int = 3072, max_positions: int = 512, type_vocab: int = 2):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, hidden, max_positions, type_vocab)
        self.encoder = nn.ModuleList(BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.init_weights()

    def init_weights(self) -> None:
        """BERT's initializer: N(0, 0.02) weights. Biases get N(0, 0.02) too instead of zeros, so
        that bias handling in rewritten graphs is exercised numerically."""
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.weight.normal_(0.0, 0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.normal_(0.0, 0.02)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embeddings(input_ids)
        for layer in self.encoder:
            x = layer(x)
        return x


def bert_base() -> BertEncoderModel:
    return BertEncoderModel()
