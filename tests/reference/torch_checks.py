"""torch itself, as attnwalk reproduces it: its random streams (rng), the text of repr() (torch_repr)
and the order of torch.sum's additions (torch_sum)."""
import torch
import torch.nn as nn

from .common import BUILTIN, bits, tensor_json


def rng_sequences():
    seqs = []
    for seed in [0, 1, 123, 789, 2**32 + 5]:
        for kind, n in [("rand", 20), ("randn", 6), ("randn", 15), ("randn", 16), ("randn", 17), ("randn", 100), ("linear", 5), ("bernoulli", 40)]:
            torch.manual_seed(seed)
            if kind == "rand":
                t = torch.rand(n)
            elif kind == "randn":
                t = torch.randn(n)
            elif kind == "linear":
                lin = nn.Linear(n, 3)
                t = torch.cat([lin.weight.detach().flatten(), lin.bias.detach()])
            else:
                t = torch.empty(n).bernoulli_(0.7)
            seqs.append({"seed": seed, "kind": kind, "n": n, "bits": bits(t)})
        # values after thousands of draws
        torch.manual_seed(seed)
        torch.rand(5000)
        seqs.append({"seed": seed, "kind": "rand_after_5000", "n": 8, "bits": bits(torch.rand(8))})
        # the normal cache carries over between calls
        torch.manual_seed(seed)
        t = torch.cat([torch.randn(3), torch.randn(3), torch.randn(5)])
        seqs.append({"seed": seed, "kind": "randn_3_3_5", "n": 11, "bits": bits(t)})
    return seqs


def torch_repr_cases():
    """repr() of float32 tensors: the text --format torch must reproduce character for character."""
    g = torch.Generator().manual_seed(5)
    x = torch.tensor(BUILTIN)
    w = torch.softmax(x @ x.T, dim=-1)
    masked = (x @ x.T).masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1), -torch.inf)
    tensors = [
        w, x, w[1], w.sum(dim=-1), (x @ x.T)[1, 2],        # the textbook's shapes
        torch.ones(6, 6), torch.zeros(3), torch.tensor([2.0, -3.0, 0.0]),        # integer mode
        torch.tensor([1.0, 2.0e9]), torch.tensor([1.0, 1.0e-5]), torch.tensor([0.5, 12345.678]),  # scientific
        masked, torch.tensor([float("nan"), 1.5, -float("inf")]), torch.tensor([float("nan"), 1.0]),
        torch.randn(2, 3, 4, generator=g), torch.randn(1, 2, 3, 2, generator=g) * 100,
        torch.randn(40, generator=g),                    # wraps at 80 columns
        torch.rand(40, 40, generator=g),                 # summarised (over 1000 elements)
        torch.randn(3, 400, generator=g) * 1000,         # summarised, scientific
        torch.randn(1001, generator=g),
        -torch.rand(5, 5, generator=g),
        torch.tensor(3.0), torch.tensor(-0.000123),
    ]
    return [dict(tensor_json(t), repr=repr(t)) for t in tensors]


def torch_sum_cases():
    """torch.sum of float32 rows of many lengths: the order of additions (tests/ops/test_rows.cpp)."""
    cases = []
    g = torch.Generator().manual_seed(5)
    for n in list(range(1, 41)) + [63, 64, 65, 100, 127, 128, 129, 257, 1000, 4097]:
        for kind in ("softmax", "randn", "scores"):
            x = torch.randn(n, generator=g)
            if kind == "softmax":
                x = torch.softmax(x, 0)
            elif kind == "scores":
                x = x * 10 + 3
            cases.append({"n": n, "kind": kind, "row": bits(x), "sum": bits(x.sum())[0],
                          "sum_dim": bits(x.unsqueeze(0).repeat(2, 1).sum(dim=-1)[1])[0]})
    return cases
