#!/usr/bin/env bash
# A rank that fails must end the whole job within seconds, never hang it, with a message
# that names the rank (DESIGN §6). Runs mpi_communicator_mpitest --fail=MODE with 3 ranks:
#   abort: the last rank calls Communicator::Abort    -> its error line, exit status 3
#   exit:  the last rank exits with status 1           -> mpirun names the process
#   exit0: the last rank exits 0 without MPI_Finalize  -> mpirun names the process
#   hang:  the last rank sleeps outside collectives     -> the others' watchdogs (2 s
#          timeout) name it as missing and abort, exit status 3
#   stop:  the last rank stops itself (SIGSTOP)          -> the next rank (0) misses its
#          heartbeat (2 s timeout; the collective timeout is 60 s here) and names it, exit 3
# Each mode must exit non-zero within 10 s (mpirun itself is killed after 30 s) and print the expected text. (OpenMPI's own
# notices are not checked where they are ours to print: mpirun sometimes drops its
# MPI_ABORT banner when several ranks abort at once.)
#   mpi_failure_test.sh BINARY
set -u
binary=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI keeps its session directory (with unix sockets, whose paths must stay short)
# under TMPDIR: a short private one, not Bazel's long TEST_TMPDIR.
TMPDIR=$(mktemp -d /tmp/parallax-mpi.XXXXXX)
export TMPDIR
trap 'reap_ranks; rm -rf "$TMPDIR"' EXIT
export PARALLAX_COLLECTIVE_TIMEOUT_S=2 PARALLAX_HEARTBEAT_TIMEOUT_S=20
export PARALLAX_HEARTBEAT_INTERVAL_S=0.5
passed=0
failed=0
# Time bounds are scaled by PARALLAX_TEST_SLOWDOWN (set by the sanitizer build, .bazelrc).
slowdown=${PARALLAX_TEST_SLOWDOWN:-1}

# Continue and kill any rank a timed-out mpirun left behind (a stopped one stays forever).
reap_ranks() {
  pkill -CONT -f "^$binary --fail=" 2>/dev/null
  pkill -KILL -f "^$binary --fail=" 2>/dev/null
  return 0
}

check() {  # check MODE EXPECTED_REGEX [EXIT_STATUS]
  local mode=$1 expected=$2 status=${3:-}
  local start end output rc elapsed attempt
  for attempt in 1 2; do
    start=$(date +%s%N)
    # Output to a file, not $(...): a rank mpirun failed to kill would hold the pipe open.
    timeout -k 5 30 mpirun -np 3 --oversubscribe --mca btl self,vader \
      -x PARALLAX_COLLECTIVE_TIMEOUT_S -x PARALLAX_HEARTBEAT_TIMEOUT_S \
      -x PARALLAX_HEARTBEAT_INTERVAL_S "$binary" "--fail=$mode" >"$TMPDIR/output" 2>&1
    rc=$?
    end=$(date +%s%N)
    output=$(<"$TMPDIR/output")
    elapsed=$(( (end - start) / 1000000 ))
    echo "== --fail=$mode: exit status $rc after ${elapsed} ms"
    echo "$output"
    reap_ranks
    # OpenMPI 4.1's mpirun has been seen (once, on a loaded CI machine) to hang for good
    # in its kill sequence for a stopped rank after rank 0 had printed its line and
    # aborted; its own SIGTERM then did not end it. One retry for that case only; a
    # second hang fails.
    if [[ $mode == stop && ( $rc -eq 124 || $rc -eq 137 ) && $attempt -eq 1 ]]; then
      echo "-- mpirun hung after a stopped rank (OpenMPI's kill sequence); retrying once"
      continue
    fi
    break
  done
  local ok=1
  if [[ $rc -eq 0 || $rc -eq 124 ]]; then
    echo "FAIL --fail=$mode: exit status $rc (expected a failure, not 0 or a timeout)"
    ok=0
  fi
  if [[ -n "$status" && $rc -ne $status ]]; then
    echo "FAIL --fail=$mode: exit status $rc, expected $status"
    ok=0
  fi
  if (( elapsed > 10000 * slowdown )); then
    echo "FAIL --fail=$mode: took ${elapsed} ms (limit 10 s)"
    ok=0
  fi
  if ! grep -Eq "$expected" <<<"$output"; then
    echo "FAIL --fail=$mode: the output does not match /$expected/"
    ok=0
  fi
  # (A stopped rank is continued by mpirun's kill sequence, SIGCONT then SIGTERM, and may
  # complete the collective with a rank whose watchdog is aborting: not checked for it.)
  if [[ $mode != stop ]] && grep -q "the second all-reduce returned" <<<"$output"; then
    echo "FAIL --fail=$mode: a rank went on past the failed collective"
    ok=0
  fi
  if (( ok )); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

check abort '^parallax: error: rank 2: injected failure$' 3
check exit 'Process name: \[\[[0-9]+,[0-9]+\],2\]'
check exit0 'process rank 2 with PID'
check hang "^parallax: error: rank [01]: collective #2 \(all-reduce; the failure test's second all-reduce\) timed out after 2 s: missing rank 2 \(busy outside collectives, 1 finished\); ranks 0, 1 waiting in it$" 3
# Any failure status: rank 0 aborts with 3, but mpirun's kill sequence continues the
# stopped rank (SIGCONT), which may die first of its peers' abort (a segfault in the
# shared-memory transport, 139) and give mpirun its status. `parallax launch` reports
# any failure as 3; the heartbeat's line is what is checked here.
PARALLAX_COLLECTIVE_TIMEOUT_S=60 PARALLAX_HEARTBEAT_TIMEOUT_S=2 \
  check stop "^parallax: error: rank 0: no heartbeat from rank 2 for 2\.[0-9] s \(PARALLAX_HEARTBEAT_TIMEOUT_S=2\): it is stopped \(SIGSTOP, a debugger\) or frozen, or its host or the network to it is down; this rank is waiting in collective #2 \(all-reduce; the failure test's second all-reduce\) for [0-9.]+ s$" ""
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
