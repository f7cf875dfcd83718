#!/usr/bin/env bash
# summarize_tests.py over hand-written build event files: Catch2 cases are counted from
# the logs (each SKIP line a skipped case, not a passed one), a script test without a
# Catch2 summary counts as one (skipped when it printed SKIP and no PASS; else passed, and
# each SKIP line one skipped item), a failed target as a failure, and the closing line
# `tests: N passed, M failed, K skipped` says so, K = 0 included.
#   summarize_tests_test.sh SUMMARIZE_TESTS_PY
set -u
summarize=$(realpath "$1")
work=$(mktemp -d /tmp/parallax-summarize.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

log() {  # NAME TEXT: a test.log
  printf '%s\n' "$2" >"$1.log"
}
event() {  # LABEL STATUS LOG: a configured test target and its summary
  printf '{"id":{"targetConfigured":{"label":"%s"}},' "$1"
  printf '"configured":{"targetKind":"sh_test rule"}}\n'
  printf '{"id":{"testSummary":{"label":"%s"}},' "$1"
  printf '"testSummary":{"overallStatus":"%s","passed":[{"uri":"file://%s"}]}}\n' \
    "$2" "$work/$3.log"
}
check() {  # NAME EXPECTED_LAST_LINE EXPECTED_STATUS BEP
  local out rc
  out=$(python3 "$summarize" "$4")
  rc=$?
  if [[ "$(tail -n 1 <<<"$out")" == "$2" && $rc -eq $3 ]]; then
    pass "$1"
  else
    echo "$out"; fail "$1: exit $rc, expected '$2' and exit $3"
  fi
}

log catch2 "All tests passed (12 assertions in 3 test cases)"
log script_passed "PASS a case"$'\n'"PASS another case"$'\n'"2 passed, 0 failed"
log script "PASS a case"$'\n'"SKIP another case"$'\n'"1 passed, 0 failed"
log skipped "SKIP multihost_test: network namespaces cannot be made here: not root"
log broken "FAIL a case"
log catch2_skips "SKIP reads a checkpoint: missing test data: \$PARALLAX_SHARED_DIR/testdata/tf-files"
printf '%s\n' "SKIP a graph: missing test data: x" \
  "All tests passed (9 assertions in 4 test cases)" >>catch2_skips.log
log catch2_failed_skips "SKIP one: missing test data: x"$'\n'"SKIP two: missing test data: y"
printf '%s\n' "test cases: 3 | 1 passed | 2 failed" >>catch2_failed_skips.log
log script_skips "SKIP the real graphs: missing test data: x"$'\n'"SKIP Fashion-MNIST: y"
{ event //a:catch2_test PASSED catch2; event //a:script_test PASSED script_passed; } >no_skips.json
check "no skips: the closing line says 0 skipped" "tests: 4 passed, 0 failed, 0 skipped" 0 \
  no_skips.json
{ event //a:catch2_test PASSED catch2; event //a:script_test PASSED script; } >script_skip.json
check "a script test's SKIP line beside PASS lines is one skipped item" \
  "tests: 4 passed, 0 failed, 1 skipped" 0 script_skip.json
{ event //a:catch2_test PASSED catch2; event //a:script_test PASSED script_passed
  event //a:skipped_test PASSED skipped; } >one_skip.json
check "a test that only skipped counts as skipped" "tests: 4 passed, 0 failed, 1 skipped" 0 \
  one_skip.json
{ event //a:skipped_test PASSED script_skips; } >script_only_skips.json
check "a script test with SKIP lines and no PASS is one skipped test" \
  "tests: 0 passed, 0 failed, 1 skipped" 0 script_only_skips.json
{ event //a:skipped_test PASSED skipped; event //a:broken_test FAILED broken; } >failed.json
check "a failed test still fails the summary" "tests: 0 passed, 1 failed, 1 skipped" 1 failed.json
{ event //a:catch2_test PASSED catch2_skips; } >catch2_skips.json
check "Catch2: each SKIP line is a skipped case, not a passed one" \
  "tests: 2 passed, 0 failed, 2 skipped" 0 catch2_skips.json
{ event //a:catch2_test FAILED catch2_failed_skips; } >catch2_failed_skips.json
check "Catch2: skipped cases never take the passed count below 0" \
  "tests: 0 passed, 2 failed, 2 skipped" 1 catch2_failed_skips.json

echo "$passed passed, $failed failed"
(( failed == 0 ))
