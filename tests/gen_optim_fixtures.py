#!/usr/bin/python3
"""Writes tests/fixtures/optim_*.safetensors and sched_*.safetensors with Debian's PyTorch:
5 steps of torch.optim's Adam, AdamW, RMSprop and Adagrad for several option sets, over two
parameter groups (the second at half the learning rate), in float64 and float32; and the
learning rates (and momenta) that torch.optim.lr_scheduler's schedulers set, step by step; and
torch.nn.utils.clip_grad_norm_ / clip_grad_value_ over three gradients (clip_grad.safetensors).
tests/optim/test_optimizers.cpp and test_schedulers.cpp replay the same cases in the same order.

  /usr/bin/python3 tests/gen_optim_fixtures.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_functional_fixtures import OUT, write_safetensors  # noqa: E402

# name -> (optimizer class, option sets); the C++ test lists the same options in this order.
OPTIMIZER_CASES = {
    "adam": (torch.optim.Adam, [dict(lr=0.1), dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
                                dict(lr=0.1, amsgrad=True), dict(lr=0.1, maximize=True)]),
    "adamw": (torch.optim.AdamW, [dict(lr=0.1), dict(lr=0.05, weight_decay=0.1, amsgrad=True)]),
    "rmsprop": (torch.optim.RMSprop, [dict(lr=0.01), dict(lr=0.01, momentum=0.9),
                                      dict(lr=0.01, centered=True, weight_decay=0.1),
                                      dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5)]),
    "adagrad": (torch.optim.Adagrad, [dict(lr=0.1), dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                         initial_accumulator_value=0.5)]),
}


def loss_of(p0, p1, target0, target1, step):
    """What the C++ test computes with ember's autograd: quadratic, steeper each step, plus a cubic."""
    return (((p0 - target0) ** 2) * (1 + step)).sum() + (p1 ** 3).sum() * 0.1 + ((p1 - target1) ** 2).sum()


def optimizer_fixtures():
    for name, (cls, cases) in OPTIMIZER_CASES.items():
        for i, options in enumerate(cases):
            for dtype, suffix in ((torch.float64, ""), (torch.float32, "_f32")):
                torch.manual_seed(10 + i)
                p0 = torch.randn(3, 4, dtype=dtype, requires_grad=True)
                p1 = torch.randn(5, dtype=dtype, requires_grad=True)
                target0, target1 = torch.randn(3, 4, dtype=dtype), torch.randn(5, dtype=dtype)
                tensors = {"p0": p0.detach().clone(), "p1": p1.detach().clone(), "target0": target0,
                           "target1": target1}
                group1 = dict(params=[p1], lr=options["lr"] / 2)
                opt = cls([dict(params=[p0]), group1], **options)
                for step in range(5):
                    opt.zero_grad()
                    loss_of(p0, p1, target0, target1, step).backward()
                    opt.step()
                    tensors[f"step{step}.p0"] = p0.detach().clone()
                    tensors[f"step{step}.p1"] = p1.detach().clone()
                for key, value in opt.state[p0].items():
                    if key != "step":
                        tensors[f"state.0.{key}"] = value.clone()
                write_safetensors(os.path.join(OUT, f"optim_{name}{i}{suffix}.safetensors"), tensors)


def sgd_two_groups():
    p0, p1 = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    return torch.optim.SGD([dict(params=[p0]), dict(params=[p1], lr=0.05)], lr=0.1, momentum=0.9)


def adam_two_groups():
    p0, p1 = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    return torch.optim.Adam([dict(params=[p0]), dict(params=[p1], lr=0.05)], lr=0.1)


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def run_schedule(opt, scheduler, steps, metrics=None):
    """The rates (and momenta) after the constructor and after each step: [steps + 1, groups]."""
    lrs, moms = [[g["lr"] for g in opt.param_groups]], [momenta(opt)]
    for k in range(steps):
        opt.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[k])
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append(momenta(opt))
    return {"lr": torch.tensor(lrs, dtype=torch.float64), "momentum": torch.tensor(moms, dtype=torch.float64)}


def scheduler_fixtures():
    # OneCycleLR runs total_steps - 1 steps: the total_steps-th step() comes after the last batch,
    # where PyTorch extrapolates past the final rate (to a negative one under linear annealing).
    S = torch.optim.lr_scheduler
    cases = []
    o = sgd_two_groups(); cases.append(("step", run_schedule(o, S.StepLR(o, step_size=3, gamma=0.5), 10)))
    o = sgd_two_groups(); cases.append(("multistep", run_schedule(o, S.MultiStepLR(o, [2, 5, 6], gamma=0.3), 10)))
    o = sgd_two_groups(); cases.append(("exponential", run_schedule(o, S.ExponentialLR(o, 0.9), 10)))
    o = sgd_two_groups(); cases.append(("linear", run_schedule(o, S.LinearLR(o, start_factor=0.25, total_iters=4), 8)))
    o = sgd_two_groups(); cases.append(("cosine", run_schedule(o, S.CosineAnnealingLR(o, T_max=7, eta_min=0.001), 20)))
    o = sgd_two_groups(); cases.append(("onecycle_cos", run_schedule(o, S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20), 19)))
    o = adam_two_groups()
    cases.append(("onecycle_linear_adam", run_schedule(o, S.OneCycleLR(
        o, max_lr=0.3, total_steps=16, pct_start=0.25, anneal_strategy="linear", three_phase=True,
        base_momentum=0.8, max_momentum=0.9, div_factor=10, final_div_factor=100), 15)))
    o = sgd_two_groups()
    warmup, cosine = S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=6)
    cases.append(("sequential", run_schedule(o, S.SequentialLR(o, [warmup, cosine], milestones=[3]), 12)))
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.89, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6]
    o = sgd_two_groups()
    plateau = S.ReduceLROnPlateau(o, factor=0.5, patience=2, threshold=0.01, cooldown=1, min_lr=[0.01, 0.02])
    cases.append(("plateau_min", dict(run_schedule(o, plateau, len(metrics), metrics),
                                      metrics=torch.tensor(metrics, dtype=torch.float64))))
    accuracy = [50, 60, 61, 61.5, 61.5, 61.5, 70, 70, 70, 70, 70, 70]
    o = sgd_two_groups()
    plateau = S.ReduceLROnPlateau(o, mode="max", factor=0.1, patience=1, threshold=1.0, threshold_mode="abs")
    cases.append(("plateau_max_abs", dict(run_schedule(o, plateau, len(accuracy), accuracy),
                                          metrics=torch.tensor(accuracy, dtype=torch.float64))))
    for name, tensors in cases:
        write_safetensors(os.path.join(OUT, f"sched_{name}.safetensors"), tensors)


def clip_fixtures():
    """clip_grad_norm_ for several norm types and max norms over three gradients, and clip_grad_value_."""
    torch.manual_seed(5)
    grads = [torch.randn(4, 3, dtype=torch.float64) * 2, torch.randn(7, dtype=torch.float64),
             torch.randn(2, 2, 2, dtype=torch.float64) * 0.1]
    tensors = {f"grad{k}": g for k, g in enumerate(grads)}
    for case, (max_norm, norm_type) in enumerate([(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf")),
                                                   (2.0, 3.0)]):
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
        tensors[f"case{case}.total"] = total.reshape(1)
        for k, p in enumerate(params):
            tensors[f"case{case}.grad{k}"] = p.grad
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_value_(params, 0.7)
    for k, p in enumerate(params):
        tensors[f"value.grad{k}"] = p.grad
    write_safetensors(os.path.join(OUT, "clip_grad.safetensors"), tensors)


if __name__ == "__main__":
    optimizer_fixtures()
    scheduler_fixtures()
    clip_fixtures()
