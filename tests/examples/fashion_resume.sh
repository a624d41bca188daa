#!/usr/bin/env bash
# ember-fashion's --save / --resume: a short run on a slice of Fashion-MNIST, and the same run
# stopped after its first epoch (--stop-after 1, as a killed run) and resumed: the final
# checkpoints (model, optimizer, schedule, generator) must be the same bytes. For SGD with
# Nesterov and cosine annealing (the default recipe) and for AdamW. Skips (77) without the data.
set -euo pipefail
binary=$1
data=${EMBER_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
if [[ ! -f $data/train-images-idx3-ubyte.gz && ! -f $data/train-images-idx3-ubyte ]]; then
  echo "fashion_resume: skipped: no Fashion-MNIST in $data (apt-get install dataset-fashion-mnist)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--data "$data" --limit-train 128 --limit-test 64 --batch-size 32 --epochs 2 --threads 1 --seed 3)
for optimizer in sgd adamw; do
  "$binary" "${common[@]}" --optimizer "$optimizer" --save "$work/whole.ckpt" > "$work/whole.out"
  "$binary" "${common[@]}" --optimizer "$optimizer" --save "$work/parts.ckpt" --stop-after 1 > "$work/first.out"
  grep -q "stopped after epoch 1 of 2" "$work/first.out"
  "$binary" "${common[@]}" --optimizer "$optimizer" --save "$work/parts.ckpt" --resume "$work/parts.ckpt" \
    > "$work/second.out"
  grep -q "resumed from $work/parts.ckpt after epoch 1" "$work/second.out"
  if ! cmp "$work/whole.ckpt" "$work/parts.ckpt"; then
    echo "fashion_resume: --optimizer $optimizer: the resumed run's checkpoint differs from the uninterrupted one"
    tail -n 3 "$work/whole.out" "$work/second.out"
    exit 1
  fi
  echo "ok: --optimizer $optimizer: resumed run identical ($(tail -n 1 "$work/whole.out"))"
done
