#!/usr/bin/python3
"""Writes tests/fixtures/conv_transpose_*.safetensors: ConvTranspose2d layers as decoders use them
(a stride-2 upsampling with output_padding, DCGAN's 4x4 stride-2 kernel without bias), with
groups and unequal kernel, stride and padding, with dilation and an output_padding not smaller
than the stride, and in float64: the layer's weight and bias, the input x, the output y, the
upstream gradient dy and the gradients dx, dweight and dbias.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_conv_transpose_fixtures.py
The C++ test (tests/nn/test_conv_transpose.cpp) reads these files; it does not need PyTorch.
"options" holds stride (h, w), padding (h, w), output_padding (h, w), groups, dilation (h, w)
and whether there is a bias, as float64.
"""
import os

import torch

from gen_functional_fixtures import OUT, grads_of, pair, write_safetensors


def case(name, in_channels, out_channels, kernel, shape, dtype=torch.float32, stride=1, padding=0,
         output_padding=0, groups=1, dilation=1, bias=True):
    layer = torch.nn.ConvTranspose2d(in_channels, out_channels, kernel, stride=stride, padding=padding,
                                     output_padding=output_padding, groups=groups, dilation=dilation,
                                     bias=bias).to(dtype)
    x = torch.randn(*shape, dtype=dtype, requires_grad=True)
    y = layer(x)
    params = [layer.weight] + ([layer.bias] if bias else [])
    dy, grads = grads_of(y, [x] + params)
    options = [*pair(stride), *pair(padding), *pair(output_padding), groups, *pair(dilation), float(bias)]
    tensors = {"options": torch.tensor(options, dtype=torch.float64), "weight": layer.weight, "x": x, "y": y,
               "dy": dy, "dx": grads[0], "dweight": grads[1]}
    if bias:
        tensors.update({"bias": layer.bias, "dbias": grads[2]})
    write_safetensors(os.path.join(OUT, f"conv_transpose_{name}.safetensors"), tensors)


def main():
    torch.manual_seed(37)
    case("upsample_s2", 16, 8, 3, (4, 16, 7, 7), stride=2, padding=1, output_padding=1)
    case("dcgan_k4", 8, 4, 4, (2, 8, 5, 5), stride=2, padding=1, bias=False)
    case("groups", 6, 4, (3, 2), (3, 6, 5, 4), stride=(1, 2), padding=(1, 0), groups=2)
    case("dilated_output_padding", 3, 5, 3, (2, 3, 6, 5), padding=2, dilation=2, output_padding=1)
    case("f64", 3, 2, 2, (2, 3, 4, 4), dtype=torch.float64, stride=2)


if __name__ == "__main__":
    main()
