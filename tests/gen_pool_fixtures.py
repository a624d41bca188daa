#!/usr/bin/python3
"""Writes tests/fixtures/pool_*.safetensors: input, output, upstream gradient and input gradient
computed by PyTorch for avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and max_pool2d with
ceil_mode and dilation, at a ResNet-style shape and at odd ones.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_pool_fixtures.py
The C++ test (tests/nn/test_pool.cpp) reads these files; it does not need PyTorch.
Each file's "options" tensor is [op, kernel h, w, stride h, w, padding h, w, dilation h, w,
ceil_mode, count_include_pad, divisor_override (0: none), output h, w] with op 0 max_pool2d,
1 avg_pool2d, 2 adaptive_avg_pool2d, 3 adaptive_max_pool2d (unused fields 0).
"""
import os

import torch
import torch.nn.functional as F

from gen_functional_fixtures import OUT, grads_of, pair, write_safetensors


def write(name, x, y, op, kernel=0, stride=0, padding=0, dilation=0, ceil_mode=False, count_include_pad=False,
          divisor_override=None, output_size=0):
    dy, (dx,) = grads_of(y, [x])
    options = [op, *pair(kernel), *pair(stride), *pair(padding), *pair(dilation), int(ceil_mode),
               int(count_include_pad), divisor_override or 0, *pair(output_size)]
    write_safetensors(os.path.join(OUT, f"pool_{name}.safetensors"),
                      {"x": x, "y": y, "dy": dy, "dx": dx, "options": torch.tensor(options)})


def avg_case(name, shape, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    x = torch.randn(*shape, requires_grad=True)
    stride = kernel if stride is None else stride
    y = F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    write(name, x, y, 1, kernel, stride, padding, 1, ceil_mode, count_include_pad, divisor_override)


def max_case(name, shape, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    x = torch.randn(*shape, requires_grad=True)
    stride = kernel if stride is None else stride
    y = F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
    write(name, x, y, 0, kernel, stride, padding, dilation, ceil_mode)


def adaptive_case(name, shape, output_size, op):
    x = torch.randn(*shape, requires_grad=True)
    y = (F.adaptive_avg_pool2d if op == 2 else F.adaptive_max_pool2d)(x, output_size)
    write(name, x, y, op, output_size=output_size)


def main():
    torch.manual_seed(17)
    os.makedirs(OUT, exist_ok=True)
    avg_case("avg_resnet", (4, 16, 14, 14), 3, 2, 1)
    avg_case("avg_ceil_exclude_pad", (2, 3, 9, 11), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    avg_case("avg_ceil_include_pad", (2, 3, 10, 7), 3, 2, 1, ceil_mode=True)
    avg_case("avg_divisor", (2, 3, 8, 9), (3, 2), (2, 3), (1, 1), divisor_override=5)
    avg_case("avg_rect_exclude_pad", (1, 2, 11, 6), (2, 4), (3, 1), (1, 2), count_include_pad=False)
    avg_case("avg_3d_batch1", (3, 7, 9), 2)
    adaptive_case("adaptive_avg_global", (4, 32, 7, 7), 1, 2)
    adaptive_case("adaptive_avg_3x3", (2, 3, 7, 10), 3, 2)
    adaptive_case("adaptive_avg_5x4", (2, 3, 11, 9), (5, 4), 2)
    adaptive_case("adaptive_max_global", (2, 8, 7, 7), 1, 3)
    adaptive_case("adaptive_max_3x3", (2, 3, 7, 10), 3, 3)
    adaptive_case("adaptive_max_5x4", (2, 3, 11, 9), (5, 4), 3)
    max_case("max_ceil", (2, 3, 9, 11), 3, 2, 1, ceil_mode=True)
    max_case("max_ceil_resnet", (4, 16, 14, 14), 3, 2, 0, ceil_mode=True)
    max_case("max_dilated", (2, 3, 13, 12), 3, 2, 1, dilation=2)
    max_case("max_dilated_rect_ceil", (1, 4, 10, 15), (2, 3), (3, 2), (1, 1), (3, 2), ceil_mode=True)


if __name__ == "__main__":
    main()
