# Sourced by the MNIST test scripts (mnist_e2e.sh, mnist_emulated.sh, mnist_cli.sh): where the
# MNIST IDX files are. find_mnist SOURCE_DIR sets `mnist` to the first of
#   1. $EMBER_MNIST_DIR, when set (used even if missing: the caller asked for that folder);
#   2. ../shared/data/mnist-10k beside the repository;
#   3. data/mnist in the repository, where the README's `bash scripts/mnist` fetches it;
# the order scripts/mnist uses, so a test trains on the data that command trained on. It returns
# 1 when that folder does not exist, with `mnist_missing` saying where it looked and what to do.
find_mnist() {
  local source_dir=$1 candidate
  if [[ -n ${EMBER_MNIST_DIR:-} ]]; then
    mnist=$EMBER_MNIST_DIR
  else
    mnist=$source_dir/data/mnist
    for candidate in "$source_dir/../shared/data/mnist-10k" "$source_dir/data/mnist"; do
      [[ -d $candidate ]] && { mnist=$candidate; break; }
    done
  fi
  [[ -d $mnist ]] && return 0
  if [[ -n ${EMBER_MNIST_DIR:-} ]]; then
    mnist_missing="no MNIST data at EMBER_MNIST_DIR=$mnist"
  else
    mnist_missing="no MNIST data in $source_dir/../shared/data/mnist-10k or $source_dir/data/mnist"
    mnist_missing+=" (set EMBER_MNIST_DIR, or run bash scripts/mnist, which fetches it into data/mnist)"
  fi
  return 1
}
