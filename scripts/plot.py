"""scripts/plot: training curves from the sample programs' --log CSV files (see scripts/plot)."""
import argparse
import csv
import os
import sys


def read_log(path):
    """Per epoch: mean training loss, test loss, test accuracy (the CSV's per-step and per-epoch rows)."""
    train, test_loss, accuracy = {}, {}, {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or not {"epoch", "step", "loss", "accuracy"} <= set(reader.fieldnames):
            sys.exit(f"scripts/plot: {path} is not a --log file (expected the columns epoch,step,loss,accuracy,...)")
        for row in reader:
            epoch = int(row["epoch"])
            if row["step"]:
                train.setdefault(epoch, []).append(float(row["loss"]))
            else:
                test_loss[epoch], accuracy[epoch] = float(row["loss"]), float(row["accuracy"])
    if not accuracy:
        sys.exit(f"scripts/plot: {path} holds no finished epoch")
    return ({e: sum(v) / len(v) for e, v in sorted(train.items())}, dict(sorted(test_loss.items())),
            dict(sorted(accuracy.items())))


def main():
    parser = argparse.ArgumentParser(description="training loss and test accuracy per epoch, several runs overlaid")
    parser.add_argument("logs", nargs="+", help="CSV files written by --log")
    parser.add_argument("--labels", default=None, help="comma-separated, one per file (default: the file names)")
    parser.add_argument("--title", default=None)
    parser.add_argument("-o", "--output", required=True, help="the PNG to write")
    args = parser.parse_args()
    labels = args.labels.split(",") if args.labels else [os.path.splitext(os.path.basename(p))[0] for p in args.logs]
    if len(labels) != len(args.logs):
        sys.exit(f"scripts/plot: {len(labels)} labels for {len(args.logs)} files")
    try:
        import matplotlib
    except ImportError:
        sys.exit("scripts/plot: needs matplotlib: apt-get install -y python3-matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for path, label in zip(args.logs, labels):
        train, test_loss, accuracy = read_log(path)
        line, = left.plot(list(train), list(train.values()), marker="o", label=f"{label}: train")
        left.plot(list(test_loss), list(test_loss.values()), marker="s", linestyle="--", color=line.get_color(),
                  label=f"{label}: test")
        right.plot(list(accuracy), list(accuracy.values()), marker="o", color=line.get_color(), label=label)
        right.annotate(f"{accuracy[max(accuracy)]:.2f}%", (max(accuracy), accuracy[max(accuracy)]),
                       textcoords="offset points", xytext=(4, -12), fontsize=8)
    left.set(xlabel="epoch", ylabel="cross-entropy loss", title="loss (train: mean over the epoch)")
    right.set(xlabel="epoch", ylabel="test accuracy (%)", title="test accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.xaxis.get_major_locator().set_params(integer=True)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"scripts/plot: wrote {args.output}")


if __name__ == "__main__":
    main()
