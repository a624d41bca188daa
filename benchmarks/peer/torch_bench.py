#!/usr/bin/python3
"""The peer side of ember-bench: the same cases in PyTorch, printed as JSON lines
{"name": ..., "threads": ..., "value": ..., "unit": ...}. Run with Debian's python3-torch.

  /usr/bin/python3 benchmarks/peer/torch_bench.py --threads 2 --repeats 3
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 10, 5), nn.Conv2d(10, 20, 5)
        self.fc = nn.Linear(320, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        return self.fc(x.flatten(1))


def timed(fn, min_time=0.5):
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        n += 1
    return (time.perf_counter() - start) / n


def train_step(batch):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    x, target = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), target).backward()
        opt.step()
    return batch / timed(step)


def inference():
    model = Net().eval()
    x = torch.randn(1000, 1, 28, 28)
    with torch.no_grad():
        return 1000 / timed(lambda: model(x))


def op_cases():
    """The op cases of benchmarks/bench_cpu_ops.cpp, as microseconds per call."""
    cases = {}
    for i, (n, c, h, k, r) in enumerate([(64, 1, 28, 10, 5), (64, 10, 12, 20, 5)]):
        x, w, b = torch.randn(n, c, h, h), torch.randn(k, c, r, r), torch.randn(k)
        cases[f"conv2d/{i}/forward"] = lambda x=x, w=w, b=b: F.conv2d(x, w, b)
        xg = x.clone().requires_grad_()
        dy = torch.randn_like(F.conv2d(x, w, b))
        cases[f"conv2d/{i}/input_grad"] = lambda xg=xg, w=w, b=b, dy=dy: F.conv2d(xg, w, b).backward(dy)
        wg = w.clone().requires_grad_()
        cases[f"conv2d/{i}/weight_grad"] = lambda x=x, wg=wg, b=b, dy=dy: F.conv2d(x, wg, b).backward(dy)
    for i, shape in enumerate([(64, 10, 24, 24), (64, 20, 8, 8)]):
        x = torch.randn(*shape)
        cases[f"max_pool2d/{i}/forward"] = lambda x=x: F.max_pool2d(x, 2)
        xg = x.clone().requires_grad_()
        dy = torch.randn_like(F.max_pool2d(x, 2))
        cases[f"max_pool2d/{i}/backward"] = lambda xg=xg, dy=dy: F.max_pool2d(xg, 2).backward(dy)
    x = torch.randn(64, 10, 12, 12)
    cases["relu"] = lambda: F.relu(x)
    xl, wl, bl = (torch.randn(64, 320, requires_grad=True), torch.randn(10, 320, requires_grad=True),
                  torch.randn(10, requires_grad=True))
    dyl = torch.randn(64, 10)
    cases["linear/train"] = lambda: F.linear(xl, wl, bl).backward(dyl)
    logits, target = torch.randn(64, 10, requires_grad=True), torch.arange(64) // 7
    cases["cross_entropy/train"] = lambda: F.cross_entropy(logits, target).backward()
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--no-ops", action="store_true", help="only the end-to-end cases")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {"train_step/64": train_step(64), "train_step/256": train_step(256), "inference/1000": inference()}
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    results["sgemm/1024"] = 2 * 1024 ** 3 / timed(lambda: a @ b) * 1e-9
    if not args.no_ops:
        for name, fn in op_cases().items():
            results[name] = timed(fn, args.min_time / 4) * 1e6
    for name, value in results.items():
        unit = "GFLOP/s" if name.startswith("sgemm") else "samples/s" if "/" in name and name.split("/")[0] in (
            "train_step", "inference") else "us"
        print(json.dumps({"peer": "pytorch-python", "torch": torch.__version__, "name": name,
                          "threads": args.threads, "value": value, "unit": unit}))


if __name__ == "__main__":
    main()
