#!/usr/bin/python3
"""Writes tests/fixtures/tensor_ops_*.safetensors: inputs, outputs and gradients computed by
PyTorch for clamp (scalar and tensor bounds), var, std and masked_fill at the shapes models use
them.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_tensor_ops_fixtures.py
The C++ test (tests/nn/test_tensor_ops.cpp) reads these files; it does not need PyTorch.
Each file holds the input x, the output y, the upstream gradient dy and the input gradient dx;
masked_fill's files add the mask (uint8) and, when the fill value is a tensor, v and dv; clamp's
with tensor bounds add lo and hi and their gradients dlo and dhi.
"""
import os

import torch

from gen_functional_fixtures import OUT, grads_of, write_safetensors


def save(name, tensors):
    write_safetensors(os.path.join(OUT, f"tensor_ops_{name}.safetensors"), tensors)


def unary_case(name, x, fn):
    y = fn(x)
    dy, (dx,) = grads_of(y, [x])
    save(name, {"x": x, "y": y, "dy": dy, "dx": dx})


def main():
    torch.manual_seed(23)
    # clamp of pre-activations (ReLU6-style bounds) with some elements exactly on a bound, where
    # PyTorch's gradient still passes.
    x = (torch.randn(16, 64) * 2).requires_grad_()
    with torch.no_grad():
        x[0, :4] = torch.tensor([-1.0, 1.5, -1.0, 1.5])
    unary_case("clamp_both", x, lambda t: torch.clamp(t, -1.0, 1.5))
    unary_case("clamp_min", x, lambda t: torch.clamp(t, min=0.25))
    unary_case("clamp_max", x, lambda t: torch.clamp(t, max=-0.5))
    unary_case("clamp_inverted", x, lambda t: torch.clamp(t, 1.0, -1.0))  # min > max: max everywhere
    x64 = torch.randn(7, 13, dtype=torch.float64, requires_grad=True)
    unary_case("clamp_f64", x64, lambda t: torch.clamp(t, -0.3, 0.4))
    # var / std as batch statistics ([N, C, H, W] over N, H, W), per row, and over everything.
    x = (torch.randn(8, 16, 5, 5) * 3 + 1).requires_grad_()
    unary_case("var_nhw", x, lambda t: torch.var(t, dim=[0, 2, 3], unbiased=True))
    unary_case("var_nhw_biased_keepdim", x, lambda t: torch.var(t, dim=[0, 2, 3], unbiased=False, keepdim=True))
    x = torch.randn(24, 65, requires_grad=True)
    unary_case("std_rows", x, lambda t: torch.std(t, dim=-1, unbiased=True))
    unary_case("std_rows_biased_keepdim", x, lambda t: torch.std(t, dim=1, unbiased=False, keepdim=True))
    unary_case("var_all", x, lambda t: torch.var(t))
    unary_case("std_all_f64", x64, lambda t: torch.std(t))

    # masked_fill: a causal attention mask [T, T] broadcast over [B, heads, T, T], and a mask the
    # size of the input with a fill value that carries a gradient.
    scores = torch.randn(2, 2, 16, 16, requires_grad=True)
    causal = torch.triu(torch.ones(16, 16, dtype=torch.bool), diagonal=1)
    y = scores.masked_fill(causal, -1e4)
    dy, (dx,) = grads_of(y, [scores])
    save("masked_fill_causal", {"x": scores, "mask": causal.to(torch.uint8), "y": y, "dy": dy, "dx": dx})
    x = torch.randn(33, 17, requires_grad=True)
    mask = torch.rand(33, 17) < 0.3
    v = torch.tensor(0.75, requires_grad=True)
    y = x.masked_fill(mask, v)
    dy, (dx, dv) = grads_of(y, [x, v])
    save("masked_fill_tensor_value", {"x": x, "mask": mask.to(torch.uint8), "v": v, "y": y, "dy": dy, "dx": dx,
                                      "dv": dv})

    # clamp with tensor bounds: a per-column lower bound and a per-row upper bound (broadcast), a
    # few ties, a row whose upper bound is below every lower bound, min == max; one bound alone.
    xt = (torch.randn(16, 64) * 2).requires_grad_()
    lo = (torch.randn(64) - 1).requires_grad_()
    hi = (torch.randn(16, 1) + 1).requires_grad_()
    with torch.no_grad():
        xt[0, :3] = lo[:3]
        hi[1] = -2.0
        lo[5], hi[3], xt[3, 5] = 0.5, 0.5, -1.0  # x < min == max: no gradient anywhere (PyTorch's rule)
    y = torch.clamp(xt, lo, hi)
    dy, (dx, dlo, dhi) = grads_of(y, [xt, lo, hi])
    save("clamp_tensors", {"x": xt, "lo": lo, "hi": hi, "y": y, "dy": dy, "dx": dx, "dlo": dlo, "dhi": dhi})
    y = torch.clamp(xt, max=hi)
    dy, (dx, dhi) = grads_of(y, [xt, hi])
    save("clamp_tensor_max", {"x": xt, "hi": hi, "y": y, "dy": dy, "dx": dx, "dhi": dhi})


if __name__ == "__main__":
    main()
