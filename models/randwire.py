"""RandWire-WS (Xie, Kirillov, Girshick, He: "Exploring Randomly Wired Neural Networks for Image
Recognition", ICCV 2019), Table 1 layouts.

Small regime (the exported `randwire`, C = 78):
    conv1  3x3 conv C/2, stride 2, BN, ReLU            112x112
    conv2  3x3 conv C,   stride 2, BN                   56x56
    conv3  random wiring stage, N nodes, C channels     28x28
    conv4  random wiring stage, N nodes, 2C channels    14x14
    conv5  random wiring stage, N nodes, 4C channels     7x7
    classifier: ReLU, 1x1 conv 1280, BN, ReLU, global average pool, 1000-d fc
Regular regime (kept for comparison, e.g. C = 154 as in IOS's `randwire_large`): conv2 is a
random stage with N/2 nodes and C channels, conv3..conv5 have 2C, 4C, 8C channels.

Each random stage is a Watts-Strogatz graph WS(N, K, P) (N = 32, K = 4, P = 0.75), generated with
Python's `random.Random(seed)` following networkx's `watts_strogatz_graph` (ring lattice, then
each clockwise edge rewired with probability P, no self loops or duplicate edges), made a DAG
by directing every edge from the lower to the higher node index. A node aggregates its inputs
by a weighted sum with positive weights sigmoid(w_i), then applies ReLU - 3x3 separable conv - BN.
Nodes without predecessors read the stage input with stride 2; the stage output is the
unweighted average of the nodes without successors.
"""
import random
from typing import List, Sequence, Tuple

import torch
from torch import nn


def watts_strogatz(n: int, k: int, p: float, seed: int) -> List[Tuple[int, int]]:
    """Undirected WS graph as a sorted list of (u, v) with u < v."""
    rng = random.Random(seed)
    adj = [set() for _ in range(n)]
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            adj[u].add(v)
            adj[v].add(u)
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            if rng.random() < p:
                w = rng.randrange(n)
                skip = False
                while w == u or w in adj[u]:
                    if len(adj[u]) >= n - 1:
                        skip = True
                        break
                    w = rng.randrange(n)
                if skip or v not in adj[u]:
                    continue
                adj[u].discard(v)
                adj[v].discard(u)
                adj[u].add(w)
                adj[w].add(u)
    return sorted((min(u, v), max(u, v)) for u in range(n) for v in adj[u] if u < v)


class SepConvBN(nn.Module):
    """ReLU - depthwise 3x3 - pointwise 1x1 - BN (the node transformation)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.relu = nn.ReLU()
        self.depthwise = nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.pointwise(self.depthwise(self.relu(x))))


class Node(nn.Module):
    def __init__(self, in_degree: int, cin: int, cout: int, stride: int):
        super().__init__()
        self.in_degree = in_degree
        if in_degree > 1:
            # Aggregation weights; random (not zeros) so that the weighted sum is not uniform.
            self.agg_weight = nn.Parameter(torch.randn(in_degree))
        self.op = SepConvBN(cin, cout, stride)

    def forward(self, inputs: List[torch.Tensor]) -> torch.Tensor:
        if self.in_degree == 1:
            x = inputs[0]
        else:
            w = torch.sigmoid(self.agg_weight)
            x = inputs[0] * w[0]
            for i in range(1, self.in_degree):
                x = x + inputs[i] * w[i]
        return self.op(x)


class RandomStage(nn.Module):
    def __init__(self, cin: int, cout: int, n: int, k: int, p: float, seed: int):
        super().__init__()
        self.edges = watts_strogatz(n, k, p, seed)
        preds: List[List[int]] = [[] for _ in range(n)]
        has_succ = [False] * n
        for u, v in self.edges:
            preds[v].append(u)
            has_succ[u] = True
        self.preds = preds
        self.outputs = [i for i in range(n) if not has_succ[i]]
        self.nodes = nn.ModuleList(
            Node(max(1, len(preds[i])), cout if preds[i] else cin, cout, 1 if preds[i] else 2)
            for i in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        results: List[torch.Tensor] = []
        for i, node in enumerate(self.nodes):
            ins = [results[j] for j in self.preds[i]] if self.preds[i] else [x]
            results.append(node(ins))
        out = results[self.outputs[0]]
        for j in self.outputs[1:]:
            out = out + results[j]
        if len(self.outputs) > 1:
            out = out * (1.0 / len(self.outputs))
        return out


class RandWire(nn.Module):
    def __init__(self, channels: int = 78, regime: str = "small", nodes: int = 32, k: int = 4,
                 p: float = 0.75, seed: int = 0, num_classes: int = 1000):
        super().__init__()
        c = channels
        self.conv1 = nn.Sequential(nn.Conv2d(3, c // 2, 3, stride=2, padding=1, bias=False),
                                   nn.BatchNorm2d(c // 2))
        if regime == "small":
            self.conv2 = nn.Sequential(nn.ReLU(), nn.Conv2d(c // 2, c, 3, stride=2, padding=1, bias=False),
                                       nn.BatchNorm2d(c))
            stages = [(c, c, nodes), (c, 2 * c, nodes), (2 * c, 4 * c, nodes)]
        elif regime == "regular":
            self.conv2 = RandomStage(c // 2, c, nodes // 2, k, p, seed)
            stages = [(c, 2 * c, nodes), (2 * c, 4 * c, nodes), (4 * c, 8 * c, nodes)]
        else:
            raise ValueError(f"unknown regime {regime!r}")
        self.conv3 = RandomStage(*stages[0], k, p, seed + 1)
        self.conv4 = RandomStage(*stages[1], k, p, seed + 2)
        self.conv5 = RandomStage(*stages[2], k, p, seed + 3)
        cl = stages[2][1]
        self.classifier = nn.Sequential(nn.ReLU(), nn.Conv2d(cl, 1280, 1, bias=False), nn.BatchNorm2d(1280),
                                        nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(1280, num_classes)

    def graphs(self) -> Sequence[List[Tuple[int, int]]]:
        return [m.edges for m in (self.conv2, self.conv3, self.conv4, self.conv5) if isinstance(m, RandomStage)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = self.conv2(x)
        x = self.conv5(self.conv4(self.conv3(x)))
        return self.fc(torch.flatten(self.classifier(x), 1))


def randwire_ws_small(seed: int = 0) -> RandWire:
    """RandWire-WS(N=32, K=4, P=0.75), small regime, C = 78."""
    return RandWire(channels=78, regime="small", nodes=32, k=4, p=0.75, seed=seed)
