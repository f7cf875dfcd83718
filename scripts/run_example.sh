#!/usr/bin/env bash
# The main job, end to end, on this machine: installs what is missing, builds Parallax,
# exports the zoo MLP, analyses it, transforms it for 2 local ranks, launches the job
# with mpirun on Fashion-MNIST and prints the test accuracy. Everything it writes stays
# in ${PARALLAX_EXAMPLE_DIR:-/tmp/parallax-example} for you to look at.
#
# PARALLAX_BIN=PATH runs a parallax already built instead of installing and building
# (//scripts:run_example_test runs this script that way and checks the README's
# accuracy).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${PARALLAX_EXAMPLE_DIR:-/tmp/parallax-example}
data=/usr/share/datasets/fashion-mnist

if [[ -n "${PARALLAX_BIN:-}" ]]; then
  parallax=$PARALLAX_BIN
else
  scripts/setup.sh
  bazel build -c opt //cmd/parallax >/dev/null 2>&1 || bazel build -c opt //cmd/parallax
  parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
fi
mkdir -p "$out"

echo "== parallax models export mlp"
"$parallax" models export mlp --lr 0.1 -o "$out/mlp.pb" --force

echo "== parallax inspect"
"$parallax" inspect "$out/mlp.pb" | sed -n '1,8p'

echo "== parallax transform (2 CPU ranks on this machine)"
"$parallax" transform "$out/mlp.pb" --cluster configs/local-2cpu.yaml -o "$out/job" --force

echo "== parallax launch: 2 ranks on Fashion-MNIST, 5 epochs, then the test set"
"$parallax" launch "$out/job" --dry-run
"$parallax" launch "$out/job" \
  --feed "x=$data/train-images-idx3-ubyte.gz" --feed "y=$data/train-labels-idx1-ubyte.gz" \
  --eval-feed "x=$data/t10k-images-idx3-ubyte.gz" --eval-feed "y=$data/t10k-labels-idx1-ubyte.gz" \
  --epochs 5 --log-every 100 --metrics "$out/metrics.jsonl" --checkpoint-dir "$out/checkpoints"
echo "outputs: $out (mlp.pb, job/, metrics.jsonl, checkpoints/)"
