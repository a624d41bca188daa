#!/usr/bin/python3
"""Writes tests/fixtures/block_*.safetensors with Debian's PyTorch: the two blocks of
docs/models.md (a ResNet BasicBlock and a MobileNet-style inverted residual), each with its
weights and BatchNorm statistics, an input, the training-mode output and gradients, the running
statistics after that step, and the eval-mode output. tests/nn/test_model_blocks.cpp builds the
same blocks in ember (examples/models/blocks.h), loads the weights and compares.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_block_fixtures.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_functional_fixtures import OUT, write_safetensors  # noqa: E402


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a shortcut (a 1x1 convolution where the shape changes)."""

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class InvertedResidual(nn.Module):
    """MobileNetV2's block with SiLU: 1x1 expansion, 3x3 depthwise, 1x1 projection, residual."""

    def __init__(self, in_channels, out_channels, stride=1, expansion=4):
        super().__init__()
        hidden = in_channels * expansion
        self.expand = nn.Conv2d(in_channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.residual = stride == 1 and in_channels == out_channels

    def forward(self, x):
        out = F.silu(self.bn1(self.expand(x)))
        out = F.silu(self.bn2(self.depthwise(out)))
        out = self.bn3(self.project(out))
        return x + out if self.residual else out


def randomize_batch_norms(block):
    """Non-trivial affine parameters and running statistics, so that loading them matters."""
    for m in block.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 2.0)
                m.num_batches_tracked.fill_(3)


def block_case(name, block, x_shape):
    randomize_batch_norms(block)
    tensors = {f"state.{k}": v.clone() for k, v in block.state_dict().items()}
    x = torch.randn(*x_shape, requires_grad=True)
    block.train()
    y = block(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    tensors.update(x=x, y_train=y, dy=dy, dx=x.grad)
    tensors.update({f"grad.{k}": p.grad for k, p in block.named_parameters()})
    tensors.update({f"after.{k}": b.clone() for k, b in block.named_buffers()})
    block.eval()
    with torch.no_grad():
        tensors["y_eval"] = block(x)
    write_safetensors(os.path.join(OUT, f"block_{name}.safetensors"), tensors)


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    block_case("basic_same", BasicBlock(8, 8), (3, 8, 10, 9))
    block_case("basic_down", BasicBlock(8, 16, stride=2), (3, 8, 10, 9))
    block_case("inverted_residual", InvertedResidual(8, 8), (3, 8, 10, 9))
    block_case("inverted_residual_down", InvertedResidual(8, 12, stride=2), (3, 8, 10, 9))


if __name__ == "__main__":
    main()
