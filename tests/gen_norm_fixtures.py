#!/usr/bin/python3
"""Writes tests/fixtures/norm_*.safetensors: BatchNorm1d / BatchNorm2d trained a few steps by
PyTorch (outputs, gradients of input, weight and bias, running statistics and num_batches_tracked
after each step, then one evaluation-mode output), and a BatchNorm2d state_dict with non-trivial
statistics together with its evaluation output; LayerNorm over the last one or two dims (outputs
and the gradients of input, weight and bias), affine or not, float32 and float64.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_norm_fixtures.py
The C++ tests (tests/nn/test_batch_norm.cpp) read these files; they do not need PyTorch.
"""
import os

import torch

from gen_functional_fixtures import OUT, grads_of, write_safetensors


def train_case(name, layer, shape, steps=3):
    """`steps` training steps on fresh inputs (no optimizer: the parameters stay), then eval()."""
    if layer.affine:
        with torch.no_grad():
            layer.weight.copy_(1 + 0.2 * torch.randn_like(layer.weight))
            layer.bias.copy_(0.3 * torch.randn_like(layer.bias))
    momentum = -1.0 if layer.momentum is None else layer.momentum
    tensors = {"options": torch.tensor([momentum, float(layer.affine), float(layer.track_running_stats)],
                                       dtype=torch.float64)}
    if layer.affine:
        tensors["weight"] = layer.weight.detach().clone()
        tensors["bias"] = layer.bias.detach().clone()
    layer.train()
    for step in range(steps):
        # A common offset and scale per step, so that the running statistics move.
        x = (1.5 * torch.randn(*shape) + 0.5 * (step + 1)).requires_grad_()
        y = layer(x)
        inputs = [x] + ([layer.weight, layer.bias] if layer.affine else [])
        dy, grads = grads_of(y, inputs)
        p = f"step{step}_"
        tensors.update({p + "x": x, p + "y": y, p + "dy": dy, p + "dx": grads[0]})
        if layer.affine:
            tensors.update({p + "dweight": grads[1], p + "dbias": grads[2]})
        if layer.track_running_stats:
            tensors.update({p + "running_mean": layer.running_mean.clone(),
                            p + "running_var": layer.running_var.clone(),
                            p + "num_batches_tracked": layer.num_batches_tracked.clone()})
    layer.eval()
    x = torch.randn(*shape) + 0.7
    tensors.update({"eval_x": x, "eval_y": layer(x)})
    write_safetensors(os.path.join(OUT, f"norm_{name}.safetensors"), tensors)


def state_case():
    """A BatchNorm2d whose state_dict (all five entries) ember loads, and its eval output."""
    layer = torch.nn.BatchNorm2d(16)
    with torch.no_grad():
        layer.weight.copy_(1 + 0.3 * torch.randn(16))
        layer.bias.copy_(0.5 * torch.randn(16))
        layer.running_mean.copy_(torch.randn(16))
        layer.running_var.copy_(0.5 + torch.rand(16))
        layer.num_batches_tracked.fill_(7)
    write_safetensors(os.path.join(OUT, "norm_bn2d_state.safetensors"), layer.state_dict())
    layer.eval()
    x = torch.randn(2, 16, 3, 4)
    write_safetensors(os.path.join(OUT, "norm_bn2d_state_io.safetensors"), {"x": x, "y": layer(x)})


def layer_norm_case(name, layer, shape, dtype=torch.float32):
    """One forward and backward of LayerNorm on an input with a common offset per row."""
    layer = layer.to(dtype)
    if layer.elementwise_affine:
        with torch.no_grad():
            layer.weight.copy_(1 + 0.2 * torch.randn_like(layer.weight))
            layer.bias.copy_(0.3 * torch.randn_like(layer.bias))
    x = (2.0 * torch.randn(*shape, dtype=dtype) + torch.randn(*shape[:-1], 1, dtype=dtype)).requires_grad_()
    y = layer(x)
    inputs = [x] + ([layer.weight, layer.bias] if layer.elementwise_affine else [])
    dy, grads = grads_of(y, inputs)
    tensors = {"options": torch.tensor([layer.eps, float(layer.elementwise_affine)], dtype=torch.float64),
               "normalized_shape": torch.tensor(layer.normalized_shape, dtype=torch.int64),
               "x": x, "y": y, "dy": dy, "dx": grads[0]}
    if layer.elementwise_affine:
        tensors.update({"weight": layer.weight, "bias": layer.bias, "dweight": grads[1], "dbias": grads[2]})
    write_safetensors(os.path.join(OUT, f"norm_{name}.safetensors"), tensors)


def main():
    torch.manual_seed(17)
    shape2d = (4, 16, 4, 5)
    train_case("bn2d_momentum", torch.nn.BatchNorm2d(16), shape2d)
    train_case("bn2d_cumulative", torch.nn.BatchNorm2d(16, momentum=None), shape2d)
    train_case("bn2d_momentum_noaffine", torch.nn.BatchNorm2d(16, affine=False), shape2d)
    train_case("bn2d_cumulative_noaffine", torch.nn.BatchNorm2d(16, momentum=None, affine=False), shape2d)
    train_case("bn2d_untracked", torch.nn.BatchNorm2d(16, momentum=0.3, track_running_stats=False), shape2d, steps=1)
    train_case("bn1d_2d", torch.nn.BatchNorm1d(8, eps=1e-3, momentum=0.2), (16, 8))
    train_case("bn1d_3d", torch.nn.BatchNorm1d(8), (4, 8, 7))
    state_case()
    # A transformer's [batch, tokens, features], a ConvNeXt-style norm over the last two dims, no
    # affine with a larger eps, and float64.
    layer_norm_case("ln_tokens", torch.nn.LayerNorm(96), (4, 16, 96))
    layer_norm_case("ln_last2", torch.nn.LayerNorm([5, 7]), (3, 6, 5, 7))
    layer_norm_case("ln_noaffine", torch.nn.LayerNorm(33, eps=1e-3, elementwise_affine=False), (7, 33))
    layer_norm_case("ln_f64", torch.nn.LayerNorm(10), (9, 10), torch.float64)


if __name__ == "__main__":
    main()
