#!/usr/bin/python3
"""Writes tests/fixtures/module_*.safetensors and sgd_*.safetensors with Debian's PyTorch:
the tutorial network's weights, an input batch and its logits; and 5 steps of torch.optim.SGD
for several option sets. With --check-ember FILE it instead loads a safetensors file written by
ember (ember::save) into the PyTorch model, as proof that PyTorch reads our checkpoints.

  /usr/bin/python3 tests/gen_module_fixtures.py
  /usr/bin/python3 tests/gen_module_fixtures.py --check-ember /tmp/ember_written.safetensors \
      /tmp/ember_written_io.safetensors
"""
import json
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_functional_fixtures import OUT, write_safetensors  # noqa: E402

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "U8": torch.uint8, "BOOL": torch.bool}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 10, 5), nn.Conv2d(10, 20, 5)
        self.fc = nn.Linear(320, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        return self.fc(x.flatten(1))


def read_safetensors(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[entry["dtype"]]) if end > begin else torch.empty(0)
        out[name] = t.reshape(entry["shape"]).clone()
    return out


# The SGD option sets the C++ test replays, in this order.
SGD_CASES = [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.1),
             dict(lr=0.02, momentum=0.5, weight_decay=0.01), dict(lr=0.05, momentum=0.9, nesterov=True)]


def sgd_fixtures():
    torch.manual_seed(1)
    p0, target = torch.randn(3, 4), torch.randn(3, 4)
    for i, options in enumerate(SGD_CASES):
        p = p0.clone().requires_grad_()
        opt = torch.optim.SGD([p], **options)
        tensors = {"p0": p0, "target": target}
        for step in range(5):
            opt.zero_grad()
            # loss = sum((p - target)^2 * (1 + step)): a gradient that changes every step
            (((p - target) ** 2) * (1 + step)).sum().backward()
            opt.step()
            tensors[f"step{step}"] = p.detach().clone()
        write_safetensors(os.path.join(OUT, f"sgd_case{i}.safetensors"), tensors)


def check_ember(weights, io=None):
    """Loads ember's checkpoint into the PyTorch model (strict: every key, every shape); given the
    input and logits ember computed with it (tests/nn/test_module.cpp writes both), also checks
    that PyTorch computes the same logits."""
    model = Net()
    model.load_state_dict(read_safetensors(weights))
    print(f"PyTorch loaded {weights}: {sum(p.numel() for p in model.parameters())} parameters")
    if io is None:
        return
    tensors = read_safetensors(io)
    with torch.no_grad():
        logits = model(tensors["x"])
    err = ((logits - tensors["logits"]).abs().max() / tensors["logits"].abs().max()).item()
    print(f"PyTorch's logits on ember's input vs ember's logits ({io}): max rel err {err:.3g}")
    if not err < 1e-4:
        sys.exit(f"mismatch: {err} >= 1e-4")


def main():
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--check-ember":
        check_ember(*sys.argv[2:])
        return
    torch.manual_seed(0)
    model = Net()
    write_safetensors(os.path.join(OUT, "module_tutorial_weights.safetensors"), model.state_dict())
    x = torch.randn(8, 1, 28, 28)
    write_safetensors(os.path.join(OUT, "module_tutorial_io.safetensors"), {"x": x, "logits": model(x)})
    sgd_fixtures()


if __name__ == "__main__":
    main()
