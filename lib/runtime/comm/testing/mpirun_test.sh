#!/usr/bin/env bash
# Runs a multi-process test binary under mpirun on this machine, once per rank count:
#   mpirun_test.sh BINARY NP [NP...]
# The binary prints "np=N: P passed, F failed" (testing/mpi_test_report.h); this script
# adds the runs up and ends with "P passed, F failed". A run that exits non-zero, prints
# no result line or takes longer than MPIRUN_TEST_TIMEOUT_S (default 120) counts as one
# failure more.
set -u
binary=$1
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI keeps its session directory (with unix sockets, whose paths must stay short)
# under TMPDIR: a short private one, not Bazel's long TEST_TMPDIR.
TMPDIR=$(mktemp -d /tmp/parallax-mpi.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
passed=0
failed=0
for np in "$@"; do
  echo "== mpirun -np $np $binary"
  output=$(timeout "${MPIRUN_TEST_TIMEOUT_S:-120}" mpirun -np "$np" --oversubscribe \
             --mca btl self,vader "$binary" 2>&1)
  rc=$?
  echo "$output"
  line=$(grep -E "^np=$np: [0-9]+ passed, [0-9]+ failed$" <<<"$output" | tail -n 1)
  if [[ -z "$line" ]]; then
    echo "mpirun_test.sh: np=$np: no result line (exit status $rc)"
    failed=$((failed + 1))
    continue
  fi
  p=$(sed -E 's/^np=[0-9]+: ([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
  passed=$((passed + p))
  failed=$((failed + f))
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "mpirun_test.sh: np=$np: exit status $rc"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
