#!/usr/bin/env bash
# On ember's emulated GPUs (EMBER_CUDA=EMULATED): ember-mnist trains one epoch on a slice of
# mnist-10k on the CPU, with --device cuda and with --gpus 2, from the same seed. The loss of every
# step agrees with the CPU's within float tolerance, and each run reaches the CPU's accuracy
# (>= 75%). Finds the data as mnist_e2e.sh does (mnist_data.sh); skips (77) without it.
#   mnist_emulated.sh BINARY SOURCE_DIR              one process: cpu, cuda, --gpus 2
#   mnist_emulated.sh BINARY SOURCE_DIR MPIRUN...    `MPIRUN... BINARY --distributed`, two ranks:
#                                                    MPI on the CPU against NCCL (emulated) on cuda
set -euo pipefail
binary=$1 source_dir=$2
shift 2
launcher=("$@")
source "$(dirname "$0")/mnist_data.sh"
find_mnist "$source_dir" || { echo "mnist_emulated: $mnist_missing: skipping"; exit 77; }
data=$mnist
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags=(--data "$data" --epochs 1 --limit-train 640 --limit-test 500 --batch-size 32 --lr 0.05 --momentum 0.9 --seed 1)

accuracy() { sed -n 's/^final: .*test accuracy \([0-9.]*\)%.*/\1/p' "$1"; }

if [[ ${#launcher[@]} -gt 0 ]]; then
  flags+=(--distributed --threads 1)
  runs=(cpu cuda)
else
  runs=(cpu cuda gpus2)
fi
for run in "${runs[@]}"; do
  case $run in
    cpu) device=(--device cpu) ;;
    cuda) device=(--device cuda) ;;
    gpus2) device=(--gpus 2) ;;
  esac
  "${launcher[@]}" "$binary" "${flags[@]}" "${device[@]}" --log "$dir/$run.csv" | tee "$dir/$run.out"
  [[ -n $(accuracy "$dir/$run.out") ]] || { echo "mnist_emulated: $run printed no final line"; exit 1; }
done

status=0
for run in "${runs[@]:1}"; do
  # Step losses (column 3 of the rows with a step) side by side with the CPU's.
  if ! paste -d, "$dir/cpu.csv" "$dir/$run.csv" | awk -F, -v run="$run" '
      NR > 1 && $2 != "" {
        steps++
        diff = $3 - $8; if (diff < 0) diff = -diff
        scale = $3 < 0 ? -$3 : $3; if (scale < 1) scale = 1
        if (diff > 1e-4 * scale) { printf "mnist_emulated: %s step %s loss %s, cpu %s\n", run, $2, $8, $3; bad++ }
      }
      END {
        if (steps == 0) { print "mnist_emulated: no step losses logged"; exit 1 }
        printf "mnist_emulated: %s: %d step losses within 1e-4 of the CPU'"'"'s\n", run, steps - bad
        exit bad > 0
      }'; then
    status=1
  fi
  cpu=$(accuracy "$dir/cpu.out") gpu=$(accuracy "$dir/$run.out")
  if awk -v c="$cpu" -v g="$gpu" 'BEGIN { d = g - c; if (d < 0) d = -d; exit !(g >= 75 && d <= 1.5) }'; then
    echo "mnist_emulated: $run test accuracy $gpu%, cpu $cpu%"
  else
    echo "mnist_emulated: $run test accuracy $gpu%, cpu $cpu%: below 75% or more than 1.5 points apart"
    status=1
  fi
done
exit $status
