#!/usr/bin/python3
"""Writes tests/fixtures/functional_*.safetensors: inputs, outputs and gradients computed by
PyTorch for each layer of the tutorial network at its real shapes (batch 64), a few odd
configurations, and one full forward + backward of the network.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_functional_fixtures.py
The C++ tests (tests/nn/test_functional_pytorch.cpp) read these files; they do not need PyTorch.
"""
import json
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.uint8: "U8"}


def write_safetensors(path, tensors):
    """The safetensors layout by hand: 8-byte header length, JSON header, raw little-endian data."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def grads_of(out, inputs):
    """Backward of sum(out * upstream) for a random upstream; returns upstream and the grads."""
    upstream = torch.randn_like(out)
    grads = torch.autograd.grad(out, inputs, upstream)
    return upstream, grads


def pair(v):
    """An int or an (h, w) tuple, as PyTorch takes kernel_size, stride, padding and dilation, as (h, w)."""
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_case(name, x_shape, w_shape, stride=1, padding=0, dilation=1, bias=True):
    x = torch.randn(*x_shape, requires_grad=True)
    w = torch.randn(*w_shape, requires_grad=True)
    b = torch.randn(w_shape[0], requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)
    inputs = [x, w] + ([b] if bias else [])
    dy, grads = grads_of(y, inputs)
    tensors = {"x": x, "w": w, "y": y, "dy": dy, "dx": grads[0], "dw": grads[1],
               "options": torch.tensor([*pair(stride), *pair(padding), *pair(dilation), int(bias)])}
    if bias:
        tensors.update(b=b, db=grads[2])
    write_safetensors(os.path.join(OUT, f"functional_{name}.safetensors"), tensors)


def pool_case(name, x_shape, kernel, stride, padding):
    x = torch.randn(*x_shape, requires_grad=True)
    y = F.max_pool2d(x, kernel, stride, padding)
    dy, (dx,) = grads_of(y, [x])
    write_safetensors(os.path.join(OUT, f"functional_{name}.safetensors"),
                      {"x": x, "y": y, "dy": dy, "dx": dx,
                       "options": torch.tensor([*pair(kernel), *pair(stride), *pair(padding)])})


def simple_case(name, fn, x):
    x = x.clone().requires_grad_(True)
    y = fn(x)
    dy, (dx,) = grads_of(y, [x])
    write_safetensors(os.path.join(OUT, f"functional_{name}.safetensors"), {"x": x, "y": y, "dy": dy, "dx": dx})


def linear_case(name, x_shape, out_features):
    x = torch.randn(*x_shape, requires_grad=True)
    w = torch.randn(out_features, x_shape[-1], requires_grad=True)
    b = torch.randn(out_features, requires_grad=True)
    y = F.linear(x, w, b)
    dy, (dx, dw, db) = grads_of(y, [x, w, b])
    write_safetensors(os.path.join(OUT, f"functional_{name}.safetensors"),
                      {"x": x, "w": w, "b": b, "y": y, "dy": dy, "dx": dx, "dw": dw, "db": db})


def cross_entropy_case(name, rows, classes):
    logits = torch.randn(rows, classes, requires_grad=True) * 3
    logits.retain_grad()
    target = torch.randint(0, classes, (rows,))
    loss = F.cross_entropy(logits, target)
    loss.backward()
    losses = F.cross_entropy(logits.detach(), target, reduction="none")
    write_safetensors(os.path.join(OUT, f"functional_{name}.safetensors"),
                      {"logits": logits, "target": target, "loss": loss.reshape(1),
                       "losses": losses, "dlogits": logits.grad})


def network_case():
    """The tutorial network: fixed weights and inputs, the loss and every parameter gradient."""
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 10, 5), torch.nn.MaxPool2d(2), torch.nn.ReLU(),
        torch.nn.Conv2d(10, 20, 5), torch.nn.MaxPool2d(2), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(320, 10))
    x = torch.randn(64, 1, 28, 28)
    target = torch.randint(0, 10, (64,))
    loss = F.cross_entropy(net(x), target)
    loss.backward()
    names = {"0": "conv1", "3": "conv2", "7": "fc"}
    tensors = {"x": x, "target": target, "loss": loss.detach().reshape(1)}
    for key, p in net.named_parameters():
        layer, kind = key.split(".")
        tensors[f"{names[layer]}.{kind}"] = p
        tensors[f"grad.{names[layer]}.{kind}"] = p.grad
    write_safetensors(os.path.join(OUT, "functional_tutorial_network.safetensors"), tensors)


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    # The tutorial network's layers at their real shapes (batch 64).
    conv_case("conv1", (64, 1, 28, 28), (10, 1, 5, 5))
    conv_case("conv2", (64, 10, 12, 12), (20, 10, 5, 5))
    pool_case("pool1", (64, 10, 24, 24), 2, 2, 0)
    pool_case("pool2", (64, 20, 8, 8), 2, 2, 0)
    simple_case("relu", F.relu, torch.randn(64, 10, 12, 12))
    linear_case("fc", (64, 320), 10)
    cross_entropy_case("cross_entropy", 64, 10)
    simple_case("log_softmax", lambda t: F.log_softmax(t, dim=1), torch.randn(17, 10) * 4)
    # Odd configurations: stride, padding, dilation, non-square images, odd channel counts, batch 1.
    conv_case("conv_odd", (3, 3, 11, 8), (5, 3, 3, 2), stride=2, padding=1, dilation=2)
    conv_case("conv_batch1_nobias", (1, 7, 9, 13), (3, 7, 4, 4), stride=1, padding=2, bias=False)
    conv_case("conv_stride3", (2, 2, 10, 10), (4, 2, 3, 3), stride=3, padding=0)
    pool_case("pool_odd", (2, 3, 9, 8), 3, 2, 1)
    linear_case("fc_odd", (5, 3, 7), 4)
    network_case()
    # Non-square kernels, strides, paddings and dilations, each as an (h, w) pair (drawn after the
    # cases above, so their values do not change). conv_3x1 is the layer of issue 16's example:
    # Conv2d(4, 4, (3, 1), stride=(2, 1), padding=(1, 0)).
    conv_case("conv_3x1", (2, 4, 9, 7), (4, 4, 3, 1), stride=(2, 1), padding=(1, 0))
    conv_case("conv_rect_dilated", (2, 3, 10, 12), (5, 3, 2, 3), stride=(1, 2), padding=(2, 1), dilation=(2, 1))
    conv_case("conv_rect_nobias", (1, 2, 8, 11), (3, 2, 1, 4), stride=(3, 1), padding=(0, 2), dilation=(1, 3),
              bias=False)
    pool_case("pool_rect", (2, 3, 9, 10), (3, 2), (2, 1), (1, 0))
    pool_case("pool_rect_wide", (1, 2, 7, 11), (2, 4), (1, 3), (1, 2))


if __name__ == "__main__":
    main()
