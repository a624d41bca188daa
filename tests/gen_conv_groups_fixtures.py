#!/usr/bin/python3
"""Writes tests/fixtures/conv_groups_*.safetensors: PyTorch's F.conv2d with groups (issue 17),
forward and every gradient, for the grouped and the depthwise kernels: groups 2 and 3 with odd
channel counts, depthwise 3x3 at stride 1 and 2 with padding 1 on a MobileNet-like block (kept
small so the files stay small), depthwise with channel multiplier 2, a dilated depthwise 5x5,
batch 1.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_conv_groups_fixtures.py
The C++ test (tests/nn/test_conv_groups.cpp) reads these files; it does not need PyTorch.
"""
import os

import torch
import torch.nn.functional as F

from gen_functional_fixtures import OUT, grads_of, pair, write_safetensors


def case(name, x_shape, w_shape, groups, stride=1, padding=0, dilation=1, bias=True):
    x = torch.randn(*x_shape, requires_grad=True)
    w = torch.randn(*w_shape, requires_grad=True)
    b = torch.randn(w_shape[0], requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    inputs = [x, w] + ([b] if bias else [])
    dy, grads = grads_of(y, inputs)
    tensors = {"x": x, "w": w, "y": y, "dy": dy, "dx": grads[0], "dw": grads[1],
               # [stride h, w, padding h, w, dilation h, w, bias, groups]
               "options": torch.tensor([*pair(stride), *pair(padding), *pair(dilation), int(bias), groups])}
    if bias:
        tensors["b"] = b
        tensors["db"] = grads[2]
    write_safetensors(os.path.join(OUT, f"conv_groups_{name}.safetensors"), tensors)


def main():
    torch.manual_seed(17)
    # General grouped: odd channels per group, padding, stride, a non-square kernel.
    case("g2", (2, 6, 9, 11), (10, 3, 3, 3), groups=2, padding=1)
    case("g3_odd", (3, 9, 10, 8), (15, 3, 3, 2), groups=3, stride=(2, 1), padding=(1, 0), dilation=(1, 2))
    # Depthwise 3x3, padding 1, stride 1 and 2 (the MobileNet blocks, fewer channels and pixels).
    case("dw_s1", (2, 16, 14, 14), (16, 1, 3, 3), groups=16, padding=1)
    case("dw_s2", (2, 16, 14, 13), (16, 1, 3, 3), groups=16, stride=2, padding=1)
    # Depthwise with channel multiplier 2 (out = 2 * in), no bias.
    case("dw_mult2", (2, 5, 9, 10), (10, 1, 3, 3), groups=5, padding=1, bias=False)
    # Depthwise 5x5 with dilation 2, padding 4, batch 1.
    case("dw5_dilated_batch1", (1, 7, 13, 12), (7, 1, 5, 5), groups=7, padding=4, dilation=2)


if __name__ == "__main__":
    main()
