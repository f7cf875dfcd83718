#!/usr/bin/env bash
# The README's main job, as users run it: scripts/run_example.sh (with the parallax built
# for the test, PARALLAX_BIN) exports the MLP, transforms it for 2 local ranks and trains
# 5 epochs of Fashion-MNIST; the README says "about 85 % test accuracy after 5 epochs":
# the accuracy it prints must be within [0.84, 0.87].
#   run_example_test.sh PARALLAX RUN_EXAMPLE_SH
set -u
parallax=$(realpath "$1")
script=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-example-test.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
# shellcheck source=../lib/testing/missing_data.sh
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/lib/testing/missing_data.sh"
if [[ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  fail() { echo "FAIL $1"; exit 1; }
  missing_data "the README's example" "/usr/share/datasets/fashion-mnist is missing (scripts/setup.sh installs dataset-fashion-mnist)"
  exit 0
fi
PARALLAX_BIN=$parallax PARALLAX_EXAMPLE_DIR=$TMPDIR/example timeout 600 "$script" >example.log 2>&1
rc=$?
accuracy=$(grep -Eo 'accuracy [0-9.]+' example.log | tail -n 1 | awk '{print $2}')
echo "run_example.sh: exit $rc, test accuracy ${accuracy:-none} (README: about 85 %)"
if [[ $rc -eq 0 && -n $accuracy ]] && awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.84 && a <= 0.87) }'; then
  echo "PASS the README's example reaches about 85 % ($accuracy)"
else
  tail -n 30 example.log
  echo "FAIL the README's example: exit $rc, accuracy ${accuracy:-none}"
  exit 1
fi
