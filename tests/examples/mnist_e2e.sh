#!/usr/bin/env bash
# End to end: ember-mnist trains 1 epoch on mnist-10k and must reach >= 80% test accuracy.
# Finds the data through $EMBER_MNIST_DIR, ../shared/data/mnist-10k or data/mnist (mnist_data.sh);
# skips (77) without it.
set -euo pipefail
binary=$1 source_dir=$2
source "$(dirname "$0")/mnist_data.sh"
find_mnist "$source_dir" || { echo "mnist_e2e: $mnist_missing: skipping"; exit 77; }
data=$mnist
log=$(mktemp)
trap 'rm -f "$log" "$log.csv" "$log.ckpt"' EXIT
shift 2  # the rest are extra flags for ember-mnist (--device cuda)
"$binary" "$@" --data "$data" --epochs 1 --lr 0.01 --momentum 0.5 --seed 1 --log "$log.csv" --save "$log.ckpt" | tee "$log"
accuracy=$(sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$log")
[[ -n $accuracy ]] || { echo "mnist_e2e: no final line in the output"; exit 1; }
[[ -s $log.csv && -s $log.ckpt ]] || { echo "mnist_e2e: --log or --save wrote nothing"; exit 1; }
if awk -v a="$accuracy" 'BEGIN { exit !(a >= 80) }'; then
  echo "mnist_e2e: test accuracy $accuracy% >= 80%"
else
  echo "mnist_e2e: test accuracy $accuracy% is below 80%"
  exit 1
fi
