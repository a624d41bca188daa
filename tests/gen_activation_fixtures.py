#!/usr/bin/python3
"""Writes tests/fixtures/activation_*.safetensors: input, output, upstream gradient and input
gradient computed by PyTorch for each activation (F.sigmoid, tanh, gelu both forms, silu,
leaky_relu, elu, hardswish) and the tensor ops torch.erf / tanh / sigmoid, in float32, at a
conv-feature-map shape, with inputs that reach large |x| (up to 100) and the kinks (0, +-3).

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_activation_fixtures.py
The C++ test (tests/nn/test_activation.cpp) reads these files; it does not need PyTorch.
"""
import os

import torch
import torch.nn.functional as F

from gen_functional_fixtures import OUT, grads_of, write_safetensors

# Values every input contains: large |x| (exp overflow and underflow, saturation), tiny |x|, the
# kinks of relu-like ops (0) and of hardswish (+-3).
SPECIAL = [-100.0, -50.0, -20.0, -10.0, -6.0, -4.0, -3.0, -1e-3, 0.0, 1e-3, 3.0, 4.0, 6.0, 10.0, 20.0, 50.0, 100.0]


def activation_input(*shape):
    x = torch.randn(*shape) * 3
    flat = x.view(-1)
    flat[: len(SPECIAL)] = torch.tensor(SPECIAL)
    return x.requires_grad_()


def case(name, fn, shape=(2, 8, 14, 14)):
    x = activation_input(*shape)
    y = fn(x)
    dy, (dx,) = grads_of(y, [x])
    write_safetensors(os.path.join(OUT, f"activation_{name}.safetensors"), {"x": x, "y": y, "dy": dy, "dx": dx})


def main():
    torch.manual_seed(17)
    os.makedirs(OUT, exist_ok=True)
    case("sigmoid", torch.sigmoid)
    case("tanh", torch.tanh)
    case("gelu", F.gelu)
    case("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"))
    case("silu", F.silu)
    case("leaky_relu", F.leaky_relu)
    case("hardswish", F.hardswish)
    case("elu", F.elu)
    # Non-default parameters, at a smaller odd shape.
    case("leaky_relu_slope0.2", lambda t: F.leaky_relu(t, 0.2), (3, 5, 7))
    case("elu_alpha0.5", lambda t: F.elu(t, alpha=0.5), (3, 5, 7))
    # The tensor ops (ember::erf, tanh, sigmoid in core), odd shape.
    case("erf", torch.erf, (5, 7, 9))


if __name__ == "__main__":
    main()
