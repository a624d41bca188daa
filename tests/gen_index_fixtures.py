#!/usr/bin/python3
"""Writes tests/fixtures/index_*.safetensors: inputs, outputs and gradients computed by PyTorch
for index_select, gather, embedding (with padding_idx) and one_hot, with repeated indices so
that the gradients sum.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_index_fixtures.py
The C++ test (tests/nn/test_index.cpp) reads these files; it does not need PyTorch.
Each file holds the input x (or the embedding weight), the int64 index, the output y, the
upstream gradient dy and the input gradient dx (one_hot: the classes and y alone).
"""
import os

import torch
import torch.nn.functional as F

from gen_functional_fixtures import OUT, grads_of, write_safetensors


def save(name, tensors):
    write_safetensors(os.path.join(OUT, f"index_{name}.safetensors"), tensors)


def indexed_case(name, x, index, fn):
    y = fn(x, index)
    dy, (dx,) = grads_of(y, [x])
    save(name, {"x": x, "index": index, "y": y, "dy": dy, "dx": dx})


def main():
    torch.manual_seed(29)
    # index_select: channels of a feature map picked (and repeated) along dim 1, rows of a
    # float64 matrix, and the last dim.
    x = torch.randn(6, 5, 4, 3, requires_grad=True)
    indexed_case("select_dim1", x, torch.tensor([3, 0, 3, 4, 3]), lambda t, i: torch.index_select(t, 1, i))
    x64 = torch.randn(9, 7, dtype=torch.float64, requires_grad=True)
    indexed_case("select_rows_f64", x64, torch.tensor([8, 1, 1, 0, 5]), lambda t, i: t.index_select(0, i))
    indexed_case("select_last", x, torch.tensor([2, 2, 0]), lambda t, i: torch.index_select(t, -1, i))
    # gather: the target class's logit per row (as a loss picks it), and a 3-D gather along
    # dim 0 with an index smaller than the input outside dim 0.
    logits = torch.randn(16, 10, requires_grad=True)
    indexed_case("gather_classes", logits, torch.randint(0, 10, (16, 1)), lambda t, i: torch.gather(t, 1, i))
    x3 = torch.randn(5, 6, 7, requires_grad=True)
    indexed_case("gather_dim0", x3, torch.randint(0, 5, (8, 4, 7)), lambda t, i: torch.gather(t, 0, i))
    # embedding: token ids [batch, tokens] with padding (id 0) and repeats.
    weight = torch.randn(20, 8, requires_grad=True)
    ids = torch.randint(0, 20, (4, 9))
    ids[:, -2:] = 0
    indexed_case("embedding_padding", weight, ids, lambda w, i: F.embedding(i, w, padding_idx=0))
    indexed_case("embedding", weight, ids, lambda w, i: F.embedding(i, w))
    classes = torch.tensor([[0, 3, 1], [4, 4, 2]])
    save("one_hot", {"classes": classes, "y": F.one_hot(classes), "y7": F.one_hot(classes, 7)})


if __name__ == "__main__":
    main()
