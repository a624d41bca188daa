#!/usr/bin/python3
"""Writes tests/fixtures/shape_*.safetensors: inputs, outputs and gradients computed by PyTorch
for cat, stack, split and chunk at a few shapes (negative dims, dtype promotion, uneven splits).

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_shape_fixtures.py
The C++ test (tests/nn/test_shape_pytorch.cpp) reads these files; it does not need PyTorch.
Each file holds inputs x0, x1, ..., outputs y0, y1, ..., the upstream gradients dy0, dy1, ...
and the input gradients dx0, dx1, ...
"""
import os

import torch

from gen_functional_fixtures import OUT, grads_of, write_safetensors


def save(name, xs, ys):
    """Backward of sum(y_i * dy_i) over every output, with random dy_i."""
    upstream = [torch.randn_like(y) for y in ys]
    grads = torch.autograd.grad(ys, xs, upstream)
    tensors = {}
    for i, (x, g) in enumerate(zip(xs, grads)):
        tensors[f"x{i}"], tensors[f"dx{i}"] = x, g
    for i, (y, dy) in enumerate(zip(ys, upstream)):
        tensors[f"y{i}"], tensors[f"dy{i}"] = y, dy
    write_safetensors(os.path.join(OUT, f"shape_{name}.safetensors"), tensors)


def leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, requires_grad=True)


def main():
    torch.manual_seed(17)
    # cat of three [N, C_i, H, W] feature maps along channels, as a DenseNet / U-Net skip does.
    xs = [leaf(2, 3, 4, 5), leaf(2, 5, 4, 5), leaf(2, 1, 4, 5)]
    save("cat_dim1", xs, [torch.cat(xs, 1)])
    xs = [leaf(3, 2), leaf(3, 4)]
    save("cat_neg", xs, [torch.cat(xs, -1)])
    # float32 and float64 give float64; each gradient comes back in its input's dtype.
    xs = [leaf(2, 3), leaf(1, 3, dtype=torch.float64)]
    save("cat_promote", xs, [torch.cat(xs, 0)])
    xs = [leaf(2, 3), leaf(2, 3), leaf(2, 3)]
    save("stack_dim1", xs, [torch.stack(xs, 1)])
    xs = [leaf(4, 3), leaf(4, 3)]
    save("stack_neg", xs, [torch.stack(xs, -1)])
    x = leaf(7, 4)
    save("split_sizes", [x], list(torch.split(x, [2, 4, 1], 0)))
    x = leaf(4, 7)
    save("split_size", [x], list(torch.split(x, 3, 1)))
    x = leaf(5, 6)
    save("chunk", [x], list(torch.chunk(x, 4, -1)))


if __name__ == "__main__":
    main()
