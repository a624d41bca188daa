"""Interleaved A/B comparison of two ember-bench binaries (see scripts/bench-ab)."""
import argparse
import json
import statistics
import subprocess

DEFAULT_FILTER = r"^(train_step/(64|256)|inference/1000|conv2d/conv[12]|max_pool2d/pool1|relu/act1|linear/fc|cross_entropy|sgd/tutorial)/.*cpu:t[12]"


def run(build, pattern, min_time):
    out = subprocess.run([f"{build}/benchmarks/ember-bench", f"--benchmark_filter={pattern}",
                          f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    # Cases that could not run here (a CUDA target without a GPU) report an error and a time of 0.
    return {b["name"]: b["real_time"] for b in json.loads(out)["benchmarks"]
            if b.get("run_type") != "aggregate" and not b.get("error_occurred")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_a")
    parser.add_argument("build_b")
    parser.add_argument("--filter", default=DEFAULT_FILTER)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args()
    ratios = {}
    for r in range(args.rounds):
        # Alternate which build goes first, so that neither always runs on a warmer machine.
        order = [args.build_a, args.build_b] if r % 2 == 0 else [args.build_b, args.build_a]
        times = {build: run(build, args.filter, args.min_time) for build in order}
        for name, a in times[args.build_a].items():
            if name in times[args.build_b]:
                ratios.setdefault(name, []).append(times[args.build_b][name] / a)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    print(f"\n| case | B / A (median of {args.rounds}) | min | max |\n| --- | --- | --- | --- |")
    for name, values in ratios.items():
        case = name.replace("/manual_time", "")
        print(f"| {case} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |")
    print(f"\nA = {args.build_a}, B = {args.build_b}")


if __name__ == "__main__":
    main()
