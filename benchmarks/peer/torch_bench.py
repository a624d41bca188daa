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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = {"train_step/64": train_step(64), "train_step/256": train_step(256), "inference/1000": inference()}
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    results["sgemm/1024"] = 2 * 1024 ** 3 / timed(lambda: a @ b) * 1e-9
    for name, value in results.items():
        unit = "GFLOP/s" if name.startswith("sgemm") else "samples/s"
        print(json.dumps({"peer": "pytorch-python", "torch": torch.__version__, "name": name,
                          "threads": args.threads, "value": value, "unit": unit}))


if __name__ == "__main__":
    main()
