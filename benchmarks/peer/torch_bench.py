#!/usr/bin/python3
"""The Python PyTorch peer of ember-bench: the same cases, printed as JSON lines
{"peer": "pytorch-python", "torch": ..., "name": ..., "threads": ..., "device": ..., "value": ..., "unit": ...}.
Case names match ember-bench's "<op>/<case>" so scripts/bench.py can pair them.

  /usr/bin/python3 benchmarks/peer/torch_bench.py --threads 2 --min-time 0.5     # Debian's torch, CPU
  python3 benchmarks/peer/torch_bench.py --device cuda                           # a GPU machine's torch
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


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet8():
    """ember-fashion's network (examples/models/blocks.h): 77,754 parameters."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         BasicBlock(16, 16), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


class Bench:
    def __init__(self, device, min_time):
        self.device, self.min_time = torch.device(device), min_time

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def timed(self, fn, min_time=None):
        """Seconds per call: one warm-up call, then as many as fit in min_time (device synchronised)."""
        min_time = self.min_time if min_time is None else min_time
        fn()
        self.sync()
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            self.sync()
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                return elapsed / n

    def backward_only(self, forward, dy, min_time):
        """Seconds per backward() alone, the forward run outside the timed part (as ember-bench)."""
        total, n = 0.0, 0
        while total < min_time or n < 2:
            y = forward()
            self.sync()
            t0 = time.perf_counter()
            y.backward(dy)
            self.sync()
            total += time.perf_counter() - t0
            n += 1
        return total / n

    def randn(self, *shape, **kw):
        return torch.randn(*shape, device=self.device, **kw)


def end_to_end(b):
    out = {}
    for batch in (64, 256):
        torch.manual_seed(0)
        model = Net().to(b.device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
        x, target = b.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,), device=b.device)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), target).backward()
            opt.step()
        out[f"train_step/{batch}"] = (batch / b.timed(step), "samples/s")
    model = Net().to(b.device).eval()
    x = b.randn(1000, 1, 28, 28)
    with torch.no_grad():
        out["inference/1000"] = (1000 / b.timed(lambda: model(x)), "samples/s")
    torch.manual_seed(0)
    model = resnet8().to(b.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
    x, target = b.randn(128, 1, 28, 28), torch.randint(0, 10, (128,), device=b.device)

    def resnet8_step():
        opt.zero_grad()
        F.cross_entropy(model(x), target).backward()
        opt.step()
    out["resnet8_train_step/128"] = (128 / b.timed(resnet8_step), "samples/s")
    model.eval()
    x = b.randn(1000, 1, 28, 28)
    with torch.no_grad():
        out["resnet8_inference/1000"] = (1000 / b.timed(lambda: model(x)), "samples/s")
    for n in (1024, 4096) if b.device.type == "cuda" else (1024,):
        a, c = b.randn(n, n), b.randn(n, n)
        out[f"sgemm/{n}"] = (2 * n ** 3 / b.timed(lambda: a @ c) * 1e-9, "GFLOP/s")
    return out


def op_cases(b):
    """The op cases of benchmarks/bench_ops.cpp, as microseconds per call."""
    t = b.min_time / 4
    out = {}
    for name, (n, c, h, k, r) in {"conv1": (64, 1, 28, 10, 5), "conv2": (64, 10, 12, 20, 5)}.items():
        x, w, bias = b.randn(n, c, h, h), b.randn(k, c, r, r), b.randn(k)
        out[f"conv2d/{name}/forward"] = b.timed(lambda: F.conv2d(x, w, bias), t)
        dy = torch.randn_like(F.conv2d(x, w, bias))
        xg = x.clone().requires_grad_()

        def fwd_x():
            xg.grad = None
            return F.conv2d(xg, w, bias)
        out[f"conv2d/{name}/input_grad"] = b.backward_only(fwd_x, dy, t)
        wg, bg = w.clone().requires_grad_(), bias.clone().requires_grad_()

        def fwd_w():
            wg.grad, bg.grad = None, None
            return F.conv2d(x, wg, bg)
        out[f"conv2d/{name}/weight_grad"] = b.backward_only(fwd_w, dy, t)
    # conv2d with groups, strides and 1x1 kernels (benchmarks/bench_ops_conv_groups.cpp).
    grouped_cases = {"depthwise": (32, 144, 28, 144, 3, 1, 1, 144),
                     "depthwise_s2": (32, 144, 56, 144, 3, 2, 1, 144),
                     "grouped": (32, 64, 28, 64, 3, 1, 1, 4),
                     "resnet8_stem": (128, 1, 28, 16, 3, 1, 1, 1),
                     "resnet8_c16": (128, 16, 28, 16, 3, 1, 1, 1),
                     "resnet8_c32_s2": (128, 16, 28, 32, 3, 2, 1, 1),
                     "resnet8_c32": (128, 32, 14, 32, 3, 1, 1, 1),
                     "resnet8_c32_1x1_s2": (128, 16, 28, 32, 1, 2, 0, 1),
                     "resnet8_c64_s2": (128, 32, 14, 64, 3, 2, 1, 1),
                     "resnet8_c64": (128, 64, 7, 64, 3, 1, 1, 1),
                     "resnet8_c64_1x1_s2": (128, 32, 14, 64, 1, 2, 0, 1)}
    for name, (n, c, h, k, r, stride, padding, groups) in grouped_cases.items():
        x, w, bias = b.randn(n, c, h, h), b.randn(k, c // groups, r, r), b.randn(k)

        def conv(xi, wi, bi, stride=stride, padding=padding, groups=groups):
            return F.conv2d(xi, wi, bi, stride=stride, padding=padding, groups=groups)
        out[f"conv2d/{name}/forward"] = b.timed(lambda: conv(x, w, bias), t)
        dy = torch.randn_like(conv(x, w, bias))
        xg = x.clone().requires_grad_()

        def fwd_x():
            xg.grad = None
            return conv(xg, w, bias)
        out[f"conv2d/{name}/input_grad"] = b.backward_only(fwd_x, dy, t)
        wg, bg = w.clone().requires_grad_(), bias.clone().requires_grad_()

        def fwd_w():
            wg.grad, bg.grad = None, None
            return conv(x, wg, bg)
        out[f"conv2d/{name}/weight_grad"] = b.backward_only(fwd_w, dy, t)
    for name, shape in {"pool1": (64, 10, 24, 24), "pool2": (64, 20, 8, 8)}.items():
        x = b.randn(*shape)
        out[f"max_pool2d/{name}/forward"] = b.timed(lambda: F.max_pool2d(x, 2), t)
        xg = x.clone().requires_grad_()
        dy = torch.randn_like(F.max_pool2d(x, 2))

        def fwd_pool():
            xg.grad = None
            return F.max_pool2d(xg, 2)
        out[f"max_pool2d/{name}/backward"] = b.backward_only(fwd_pool, dy, t)
    x = b.randn(64, 10, 12, 12)
    out["relu/act1/forward"] = b.timed(lambda: F.relu(x), t)
    xl, wl, bl = (b.randn(64, 320, requires_grad=True), b.randn(10, 320, requires_grad=True),
                  b.randn(10, requires_grad=True))
    dyl = b.randn(64, 10)
    with torch.no_grad():
        out["linear/fc/forward"] = b.timed(lambda: F.linear(xl, wl, bl), t)

    def linear_train():
        xl.grad, wl.grad, bl.grad = None, None, None
        F.linear(xl, wl, bl).backward(dyl)
    out["linear/fc/train"] = b.timed(linear_train, t)
    logits, target = b.randn(64, 10, requires_grad=True), torch.arange(64, device=b.device) // 7

    def ce_train():
        logits.grad = None
        F.cross_entropy(logits, target).backward()
    out["cross_entropy/64x10/train"] = b.timed(ce_train, t)
    ca, cb = b.randn(32, 64, 28, 28), b.randn(32, 64, 28, 28)
    out["cat/resnet/forward"] = b.timed(lambda: torch.cat([ca, cb], 1), t)
    cag, cbg = ca.clone().requires_grad_(), cb.clone().requires_grad_()
    cdy = b.randn(32, 128, 28, 28)

    def fwd_cat():
        cag.grad, cbg.grad = None, None
        return torch.cat([cag, cbg], 1)
    out["cat/resnet/backward"] = b.backward_only(fwd_cat, cdy, t)
    # The cases of benchmarks/bench_ops_tensor.cpp: clamp, var, masked_fill, dropout2d.
    xc, dyc = b.randn(32, 144, 28, 28) * 4, b.randn(32, 144, 28, 28)
    out["clamp/relu6_mobilenet/forward"] = b.timed(lambda: torch.clamp(xc, 0.0, 6.0), t)
    xcg = xc.clone().requires_grad_()

    def fwd_clamp():
        xcg.grad = None
        return torch.clamp(xcg, 0.0, 6.0)
    out["clamp/relu6_mobilenet/backward"] = b.backward_only(fwd_clamp, dyc, t)
    xv = b.randn(32, 64, 28, 28)
    out["var/resnet_nhw/forward"] = b.timed(lambda: torch.var(xv, dim=[0, 2, 3]), t)
    xm = b.randn(32, 8, 128, 128)
    causal = torch.triu(torch.ones(128, 128, dtype=torch.bool, device=b.device), diagonal=1)
    out["masked_fill/causal_attention/forward"] = b.timed(lambda: xm.masked_fill(causal, -1e4), t)
    out["dropout2d/resnet/forward"] = b.timed(lambda: F.dropout2d(xv, 0.2, True), t)
    # LayerNorm, as benchmarks/bench_ops_layer_norm.cpp: the forward without a graph, backward alone.
    for name, shape in {"tokens_d512": (32, 128, 512), "convnext_d96": (32, 3136, 96)}.items():
        ln = torch.nn.LayerNorm(shape[-1]).to(b.device)
        xl, dyl = b.randn(*shape), b.randn(*shape)
        with torch.no_grad():
            out[f"layer_norm/{name}/forward"] = b.timed(lambda: ln(xl), t)
        xlg = xl.clone().requires_grad_()

        def fwd_ln():
            xlg.grad = None
            ln.zero_grad()
            return ln(xlg)
        out[f"layer_norm/{name}/backward"] = b.backward_only(fwd_ln, dyl, t)
    # The cases of benchmarks/bench_ops_index.cpp: embedding, index_select, gather.
    table = b.randn(10000, 256)
    ids = torch.randint(0, 10000, (32, 128), device=b.device)
    out["embedding/tokens/forward"] = b.timed(lambda: F.embedding(ids, table), t)
    tableg, dye = table.clone().requires_grad_(), b.randn(32, 128, 256)

    def fwd_embedding():
        tableg.grad = None
        return F.embedding(ids, tableg)
    out["embedding/tokens/backward"] = b.backward_only(fwd_embedding, dye, t)
    even = torch.arange(0, 64, 2, device=b.device)
    out["index_select/resnet_channels/forward"] = b.timed(lambda: torch.index_select(xv, 1, even), t)
    logits, target_ids = b.randn(1024, 1000), torch.randint(0, 1000, (1024, 1), device=b.device)
    out["gather/target_logits/forward"] = b.timed(lambda: torch.gather(logits, 1, target_ids), t)
    # ConvTranspose2d, as benchmarks/bench_ops_conv_transpose.cpp: forward without a graph, backward alone.
    for name, (shape, out_channels, kernel, padding) in {"unet_up": ((32, 64, 14, 14), 32, 2, 0),
                                                          "dcgan": ((64, 128, 8, 8), 64, 4, 1)}.items():
        up = nn.ConvTranspose2d(shape[1], out_channels, kernel, stride=2, padding=padding).to(b.device)
        xu = b.randn(*shape)
        with torch.no_grad():
            out[f"conv_transpose2d/{name}/forward"] = b.timed(lambda: up(xu), t)
            dyu = torch.randn_like(up(xu))
        xug = xu.clone().requires_grad_()

        def fwd_up():
            xug.grad = None
            up.zero_grad()
            return up(xug)
        out[f"conv_transpose2d/{name}/backward"] = b.backward_only(fwd_up, dyu, t)
    activations = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu,
                   "hardswish": F.hardswish}
    for shape_name, shape in {"act": (128, 16, 28, 28), "act_mobilenet": (32, 144, 28, 28)}.items():
        x, dy = b.randn(*shape), b.randn(*shape)
        xg = x.clone().requires_grad_()
        for op_name, op in activations.items():
            out[f"{op_name}/{shape_name}/forward"] = b.timed(lambda: op(x), t)

            def fwd_act():
                xg.grad = None
                return op(xg)
            out[f"{op_name}/{shape_name}/backward"] = b.backward_only(fwd_act, dy, t)
    for name, shape in {"128x1000": (128, 1000), "32x64x28x28": (32, 64, 28, 28)}.items():
        xs, dys = b.randn(*shape), b.randn(*shape)
        out[f"softmax/{name}/forward"] = b.timed(lambda: F.softmax(xs, 1), t)
        xsg = xs.clone().requires_grad_()

        def fwd_softmax():
            xsg.grad = None
            return F.softmax(xsg, 1)
        out[f"softmax/{name}/backward"] = b.backward_only(fwd_softmax, dys, t)
    logits_s = b.randn(128, 10, requires_grad=True)
    target_s = torch.arange(128, device=b.device) // 13
    weight_s = torch.arange(10, device=b.device, dtype=torch.float32) / 10 + 0.5

    def ce_smooth_train():
        logits_s.grad = None
        F.cross_entropy(logits_s, target_s, weight=weight_s, label_smoothing=0.1).backward()
    out["cross_entropy/128x10_smooth/train"] = b.timed(ce_smooth_train, t)
    # BatchNorm2d, as ember-bench's batch_norm2d cases: forwards without a graph, backward alone.
    for name, shape in {"resnet8_c16": (128, 16, 28, 28), "resnet8_c64": (128, 64, 7, 7),
                        "resnet_56": (32, 64, 56, 56)}.items():
        bn = torch.nn.BatchNorm2d(shape[1]).to(b.device)
        x, dy = b.randn(*shape), b.randn(*shape)
        with torch.no_grad():
            out[f"batch_norm2d/{name}/train_forward"] = b.timed(lambda: bn(x), t)
        xg = x.clone().requires_grad_()

        def fwd_bn():
            xg.grad, bn.weight.grad, bn.bias.grad = None, None, None
            return bn(xg)
        out[f"batch_norm2d/{name}/backward"] = b.backward_only(fwd_bn, dy, t)
        bn.eval()
        with torch.no_grad():
            out[f"batch_norm2d/{name}/eval_forward"] = b.timed(lambda: bn(x), t)
    # The pooling cases of benchmarks/bench_ops_pool.cpp.
    pools = {"avg_pool2d/3x3s2": ((32, 64, 56, 56), lambda v: F.avg_pool2d(v, 3, 2, 1)),
             "adaptive_avg_pool2d/global": ((128, 64, 7, 7), lambda v: F.adaptive_avg_pool2d(v, 1)),
             "adaptive_avg_pool2d/global_large": ((32, 512, 7, 7), lambda v: F.adaptive_avg_pool2d(v, 1))}
    for name, (shape, op) in pools.items():
        x = b.randn(*shape)
        out[f"{name}/forward"] = b.timed(lambda: op(x), t)
        xg = x.clone().requires_grad_()
        dy = torch.randn_like(op(x))

        def fwd_op():
            xg.grad = None
            return op(xg)
        out[f"{name}/backward"] = b.backward_only(fwd_op, dy, t)
    return {name: (seconds * 1e6, "us") for name, seconds in out.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--no-ops", action="store_true", help="only the end-to-end cases")
    parser.add_argument("--quick", action="store_true", help="0.05 s per case (scripts/gpu-check)")
    parser.add_argument("--json", default=None, help="also write the JSON lines to this file")
    args = parser.parse_args()
    if args.quick:
        args.min_time = 0.05
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_bench.py: --device cuda but torch.cuda.is_available() is False")
    b = Bench(args.device, args.min_time)
    results = end_to_end(b)
    if not args.no_ops:
        results.update(op_cases(b))
    lines = [json.dumps({"peer": "pytorch-python", "torch": torch.__version__, "name": name,
                         "threads": args.threads, "device": args.device, "value": value, "unit": unit})
             for name, (value, unit) in results.items()]
    print("\n".join(lines), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
