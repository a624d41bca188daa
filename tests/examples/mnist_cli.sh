#!/usr/bin/env bash
# ember-mnist on command lines that cannot run, or that ask for nothing: each must end with the
# exit code it documents (2: the command line, 1: the run, 0: done) and one message that names
# the flag, what was expected and what came, with the "ember-mnist: " prefix once.
# Runs on tiny data sets it writes itself (64 images cut from MNIST), so it takes seconds even
# under AddressSanitizer; the cases that need MNIST are skipped when mnist_data.sh finds none.
set -euo pipefail
binary=$1 source_dir=$2
source "$(dirname "$0")/mnist_data.sh"
find_mnist "$source_dir" || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 tried=0

# expect CODE TEXT ARGS...: ember-mnist ARGS exits with CODE and prints TEXT (fixed string).
expect() {
  local code=$1 text=$2
  shift 2
  tried=$((tried + 1))
  local rc=0
  "$binary" "$@" >"$work/out" 2>&1 || rc=$?
  if [[ $rc != "$code" ]] || ! grep -qF -- "$text" "$work/out" || grep -q "ember-mnist: ember-mnist:" "$work/out" ||
     grep -qi "nan%" "$work/out"; then
    echo "FAIL: ember-mnist $* -> exit $rc (expected $code and \"$text\"); output:"
    sed 's/^/  | /' "$work/out" | tail -n 8
    failures=$((failures + 1))
  else
    echo "ok:   ember-mnist $* -> exit $rc: $(grep -F -- "$text" "$work/out" | head -n 1)"
  fi
}

# Ranges and parse errors: exit 2 before anything is read.
expect 2 "--batch-size must be at least 1, got 0" --batch-size 0
expect 2 "--test-batch-size must be at least 1, got 0" --test-batch-size 0
expect 2 "--epochs must be at least 1, got 0" --epochs 0
expect 2 "--epochs must be at least 1, got -3" --epochs -3
expect 2 "--lr must be a finite number >= 0, got -1" --lr -1
expect 2 "--lr must be a finite number >= 0, got nan" --lr nan
expect 2 "--momentum must be a finite number >= 0, got -0.5" --momentum -0.5
expect 2 "--threads must be at least 0 (0: all cores), got -1" --threads -1
expect 2 "--workers must be at least 0, got -2" --workers -2
expect 2 "--gpus must be at least 0, got -1" --gpus -1
expect 2 "--batch-size = abc" --batch-size abc
expect 2 "--epochs = 99999999999" --epochs 99999999999
expect 2 "not expected: --bogus" --bogus
expect 0 "--batch-size" --help

# --data: a missing folder and a file where a folder belongs.
expect 2 "--data $work/none: no such folder" --data "$work/none"
touch "$work/file"
expect 2 "--data $work/file is a file, not a folder" --data "$work/file"

# An empty data set (IDX count 0) is an error, never "-nan%".
header() { printf "$(printf '\\x%02x' "$@")"; }  # bytes given as numbers
mkdir "$work/empty"
for split in train t10k; do
  header 0 0 8 3 0 0 0 0 0 0 0 28 0 0 0 28 >"$work/empty/$split-images-idx3-ubyte"
  header 0 0 8 1 0 0 0 0 >"$work/empty/$split-labels-idx1-ubyte"
done
expect 1 "--data $work/empty: the training set is empty (its IDX files have a count of 0)" --data "$work/empty"

if [[ ! -d $mnist ]]; then
  echo "mnist_cli: $mnist_missing: the cases that train were not run"
else
  # 64 training and 64 test images cut from MNIST: one step per epoch.
  mkdir "$work/tiny"
  # first BYTES FILE SKIP: BYTES bytes of the gzipped FILE after its SKIP-byte header (head closes
  # the pipe early, which pipefail would count as a failure).
  first() { (set +o pipefail; gzip -dc "$2" | tail -c +$(($3 + 1)) | head -c "$1"); }
  for split in train t10k; do
    { header 0 0 8 3 0 0 0 64 0 0 0 28 0 0 0 28; first $((64 * 784)) "$mnist/$split-images-idx3-ubyte.gz" 16; } \
      >"$work/tiny/$split-images-idx3-ubyte"
    { header 0 0 8 1 0 0 0 64; first 64 "$mnist/$split-labels-idx1-ubyte.gz" 8; } >"$work/tiny/$split-labels-idx1-ubyte"
  done
  tiny=(--data "$work/tiny" --workers 0)
  # The test set alone empty.
  cp "$work/tiny/"train-* "$work/empty/"
  expect 1 "the test set is empty" --data "$work/empty"

  # --save and --log that cannot be written stop the run before the first epoch.
  expect 2 "--save $work/none/ckpt: the folder $work/none does not exist" "${tiny[@]}" --save "$work/none/ckpt"
  expect 2 "--log $work is a folder" "${tiny[@]}" --log "$work"
  expect 2 "--save /proc/ckpt: cannot write in the folder /proc" "${tiny[@]}" --save /proc/ckpt
  grep -q "^epoch" "$work/out" && { echo "FAIL: --save /proc/ckpt trained before failing"; failures=$((failures + 1)); }

  # --threads above the core count: a warning, and the run goes on with the core count.
  expect 0 "warning: --threads 100000 is more than the" "${tiny[@]}" --epochs 1 --threads 100000

  # A resume at or past --epochs: nothing to train, the checkpoint's own test accuracy.
  expect 0 "final: 2 epochs" "${tiny[@]}" --epochs 2 --save "$work/ckpt"
  trained=$(sed -n 's/^final: .*test accuracy \([0-9.]*%\).*/\1/p' "$work/out")
  expect 0 "nothing left to train" "${tiny[@]}" --epochs 1 --resume "$work/ckpt"
  expect 0 "test accuracy $trained" "${tiny[@]}" --epochs 2 --resume "$work/ckpt"
  expect 2 "--resume $work/none: no such file" "${tiny[@]}" --resume "$work/none"
  expect 1 "--resume: read_safetensors: $work/file" "${tiny[@]}" --resume "$work/file"
fi

echo "mnist_cli: $((tried - failures)) of $tried command lines gave the expected exit code and message"
[[ $failures == 0 ]]
