# Missing test data in shell tests, as lib/testing/testdata.h decides it for Catch2 tests:
# data from outside the repository (the shared folder, Fashion-MNIST) that is not there
# fails the test under CI=true or PARALLAX_REQUIRE_DATA=1, and is a skip otherwise (a
# line `SKIP WHAT: ...`, which scripts/summarize_tests.py counts as skipped, not passed).
# Sourced by tests: `source "$TEST_SRCDIR/$TEST_WORKSPACE/lib/testing/missing_data.sh"`.
#
#  test_data_required_by    prints what makes missing data a failure ("CI=true",
#                           "PARALLAX_REQUIRE_DATA=1"); nothing when it is a skip.
#  missing_data WHAT WHY    WHAT cannot run because WHY (which data, how to get it):
#                           the test's `fail` under a requirement, else the SKIP line
#                           (and `skipped` counted up, for tests that count).

test_data_required_by() {
  if [[ "${CI:-}" == "true" ]]; then
    echo "CI=true"
  elif [[ "${PARALLAX_REQUIRE_DATA:-}" == "1" ]]; then
    echo "PARALLAX_REQUIRE_DATA=1"
  fi
}

missing_data() {
  local required_by
  required_by=$(test_data_required_by)
  if [[ -n $required_by ]]; then
    fail "$1: missing test data: $2; $required_by requires it"
  else
    echo "SKIP $1: missing test data: $2"
    skipped=$((${skipped:-0} + 1))
  fi
}
