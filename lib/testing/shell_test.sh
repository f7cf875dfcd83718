# The prelude of the shell tests: a scratch directory as TMPDIR and working directory,
# removed on exit; mpirun allowed as root; pass/fail counters and the summary line.
# Sourced by tests after they have read their arguments (paths are relative to the
# directory bazel started them in):
#   source "$TEST_SRCDIR/$TEST_WORKSPACE/lib/testing/shell_test.sh"
#   shell_test_begin NAME     makes /tmp/parallax-NAME.XXXXXX, cds into it
#   pass WHAT / fail WHAT     prints "PASS WHAT" / "FAIL WHAT" and counts it
#   shell_test_end            prints "NAME: P passed, F failed"; returns non-zero on a failure
# Tests run with `set -u`; this file sets it too.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
passed=0
failed=0
shell_test_name=""

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

shell_test_begin() {
  shell_test_name=$1
  TMPDIR=$(mktemp -d "/tmp/parallax-$1.XXXXXX") || exit 1
  export TMPDIR
  trap 'rm -rf "$TMPDIR"' EXIT
  cd "$TMPDIR" || exit 1
}

shell_test_end() {
  echo "$shell_test_name: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
