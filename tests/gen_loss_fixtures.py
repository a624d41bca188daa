#!/usr/bin/python3
"""Writes tests/fixtures/loss_*.safetensors: PyTorch's softmax and log_softmax over several dims
of 3-D and 4-D inputs, and its cross_entropy and nll_loss with class weights, ignore_index hits,
label smoothing and all three together, for every reduction, on [N, C] and per-pixel
[N, C, H, W] inputs; forward and gradients.

Run with Debian's PyTorch:  /usr/bin/python3 tests/gen_loss_fixtures.py
The C++ test (tests/nn/test_loss.cpp) reads these files; it does not need PyTorch.
"""
import os

import torch
import torch.nn.functional as F

from gen_functional_fixtures import grads_of, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # ember's Reduction spelled as the test reads it


def dim_key(d):
    return f"m{-d}" if d < 0 else str(d)


def softmax_case(name, fn, shape, dims):
    x = torch.randn(*shape, dtype=torch.float64) * 3
    tensors = {"x": x}
    for d in dims:
        xd = x.clone().requires_grad_(True)
        y = fn(xd, dim=d)
        dy, (dx,) = grads_of(y, [xd])
        tensors.update({f"y_{dim_key(d)}": y, f"dy_{dim_key(d)}": dy, f"dx_{dim_key(d)}": dx})
    write_safetensors(os.path.join(OUT, f"loss_{name}.safetensors"), tensors)


def class_case(name, op, shape, weight=False, ignore_index=-100, ignore_hits=0, label_smoothing=0.0):
    """op 'ce' (cross_entropy on logits) or 'nll' (nll_loss on log-probabilities); one file per
    reduction. Targets: random labels, the first `ignore_hits` rows set to ignore_index."""
    n, c = shape[0], shape[1]
    scores = torch.randn(*shape, dtype=torch.float64) * 2
    if op == "nll":
        scores = F.log_softmax(scores, dim=1)
    target = torch.randint(0, c, (n, *shape[2:]))
    flat = target.view(-1)
    hits = torch.randperm(flat.numel())[:ignore_hits]
    flat[hits] = ignore_index
    w = torch.rand(c, dtype=torch.float64) + 0.25 if weight else None
    for reduction, code in REDUCTIONS.items():
        x = scores.clone().requires_grad_(True)
        if op == "ce":
            loss = F.cross_entropy(x, target, weight=w, ignore_index=ignore_index, reduction=reduction,
                                   label_smoothing=label_smoothing)
        else:
            loss = F.nll_loss(x, target, weight=w, ignore_index=ignore_index, reduction=reduction)
        upstream, (dx,) = grads_of(loss, [x])
        tensors = {"input": x, "target": target, "loss": loss.reshape(-1) if loss.dim() == 0 else loss,
                   "upstream": upstream, "dinput": dx,
                   "config": torch.tensor([float(ignore_index), label_smoothing, float(code), float(weight)],
                                          dtype=torch.float64)}
        if w is not None:
            tensors["weight"] = w
        write_safetensors(os.path.join(OUT, f"loss_{name}_{reduction}.safetensors"), tensors)


def pointwise_case(name, fn, x, target, reductions=REDUCTIONS, **tensors):
    """An element-wise loss fn(x, target, reduction=...) with extra tensor arguments, one file per
    reduction: its value and the input's gradient."""
    for reduction in reductions:
        xg = x.clone().requires_grad_(True)
        loss = fn(xg, target, reduction=reduction, **tensors)
        upstream, (dx,) = grads_of(loss, [xg])
        out = {"input": xg, "target": target, "loss": loss.reshape(-1) if loss.dim() == 0 else loss,
               "upstream": upstream, "dinput": dx}
        out.update({k: v for k, v in tensors.items() if isinstance(v, torch.Tensor)})
        write_safetensors(os.path.join(OUT, f"loss_{name}_{reduction}.safetensors"), out)


def main():
    torch.manual_seed(17)
    os.makedirs(OUT, exist_ok=True)
    softmax_case("softmax_3d", F.softmax, (3, 4, 5), (0, 1, -1))
    softmax_case("softmax_4d", F.softmax, (2, 3, 4, 5), (0, 1, 2, -1))
    softmax_case("log_softmax_3d", F.log_softmax, (3, 4, 5), (0, 1, -1))
    softmax_case("log_softmax_4d", F.log_softmax, (2, 3, 4, 5), (0, 1, 2, -1))
    class_case("ce_plain", "ce", (16, 7))
    class_case("ce_weight", "ce", (16, 7), weight=True)
    class_case("ce_ignore", "ce", (16, 7), ignore_index=3, ignore_hits=4)
    class_case("ce_ignore_default", "ce", (16, 7), ignore_hits=3)
    class_case("ce_smooth", "ce", (16, 7), label_smoothing=0.1)
    class_case("ce_all", "ce", (16, 7), weight=True, ignore_index=2, ignore_hits=5, label_smoothing=0.1)
    class_case("ce_pixel", "ce", (2, 5, 3, 4), weight=True, ignore_index=1, ignore_hits=4, label_smoothing=0.2)
    class_case("nll_all", "nll", (16, 7), weight=True, ignore_index=0, ignore_hits=3)
    class_case("nll_pixel", "nll", (2, 5, 3, 4), weight=True, ignore_hits=4)
    # The element-wise losses (drawn after the cases above, so their values do not change).
    f64 = torch.float64
    x, t = torch.randn(4, 5, dtype=f64) * 2, torch.randn(4, 5, dtype=f64) * 2
    pointwise_case("l1", F.l1_loss, x, t)
    pointwise_case("smooth_l1", F.smooth_l1_loss, x, t, beta=0.7)
    pointwise_case("huber", F.huber_loss, x, t, delta=1.5)
    p, y = torch.rand(4, 5, dtype=f64) * 0.9 + 0.05, torch.rand(4, 5, dtype=f64)
    pointwise_case("bce", F.binary_cross_entropy, p, y, weight=torch.rand(5, dtype=f64) + 0.5)
    pointwise_case("bce_logits", F.binary_cross_entropy_with_logits, x * 2, y, weight=torch.rand(5, dtype=f64) + 0.5,
                   pos_weight=torch.rand(5, dtype=f64) * 3)
    logp = F.log_softmax(torch.randn(4, 5, dtype=f64), dim=1)
    q = F.softmax(torch.randn(4, 5, dtype=f64), dim=1)
    q[0, 1] = 0.0  # a zero target: xlogy's 0
    pointwise_case("kl_div", F.kl_div, logp, q)
    pointwise_case("kl_div_log_target", F.kl_div, logp, torch.log(q + 0.01), log_target=True)
    pointwise_case("kl_div", F.kl_div, logp, q, reductions=("batchmean",))
    pointwise_case("kl_div_log_target", F.kl_div, logp, torch.log(q + 0.01), reductions=("batchmean",), log_target=True)


if __name__ == "__main__":
    main()
