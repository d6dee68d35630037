"""A BERT in the packaging of Hugging Face's BertModel, written with plain torch: forward takes
(input_ids, attention_mask, token_type_ids) and returns a dict {"last_hidden_state", "pooler_output"},
as a traced transformers model does (its ModelOutput becomes a dict under torch.jit.trace(...,
strict=False)). The padding mask is applied as HF applies it: (1 - mask) * large negative, added to
the attention scores. Small by default, for tests and examples; `HfStyleBert(hidden=768, layers=12,
heads=12, intermediate=3072)` is BERT-base.
"""
import math
from typing import Dict

import torch
from torch import nn


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask_bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).flatten(2)
        a = self.attention_norm(self.attention_output(context) + x)
        return self.output_norm(self.output(nn.functional.gelu(self.intermediate(a))) + a)


class HfStyleBert(nn.Module):
    def __init__(self, vocab_size: int = 1000, hidden: int = 64, layers: int = 2, heads: int = 4,
                 intermediate: int = 256, max_positions: int = 128, type_vocab: int = 2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(_Layer(hidden, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.vocab_size = vocab_size

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> Dict[str, torch.Tensor]:
        positions = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) + \
            self.token_type_embeddings(token_type_ids)
        x = self.embedding_norm(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return {"last_hidden_state": x, "pooler_output": torch.tanh(self.pooler(x[:, 0]))}


def example_inputs(batch: int = 1, length: int = 16, vocab_size: int = 1000, seed: int = 0):
    """(input_ids, attention_mask, token_type_ids), the last quarter of each sequence padding."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.int64)
    mask[:, length - length // 4:] = 0
    types = torch.zeros(batch, length, dtype=torch.int64)
    types[:, length // 2:] = 1
    return ids, mask, types


def traced(seed: int = 0, **config) -> torch.jit.ScriptModule:
    """The model traced as a user traces a transformers model (strict=False: it returns a dict)."""
    torch.manual_seed(seed)
    model = HfStyleBert(**config).eval()
    with torch.no_grad():
        return torch.jit.trace(model, example_inputs(vocab_size=model.vocab_size), strict=False)
