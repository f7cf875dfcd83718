#!/usr/bin/env bash
# summarize_tests.py over hand-written build event files: Catch2 cases are counted from
# the logs, a script test without a Catch2 summary counts as one (skipped when it printed
# SKIP and no PASS), a failed target as a failure, and the closing line says so.
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
log script "PASS a case"$'\n'"SKIP another case"$'\n'"1 passed, 0 failed"
log skipped "SKIP multihost_test: network namespaces cannot be made here: not root"
log broken "FAIL a case"
{ event //a:catch2_test PASSED catch2; event //a:script_test PASSED script; } >no_skips.json
check "no skips: the closing line is unchanged" "tests: 4 passed, 0 failed" 0 no_skips.json
{ event //a:catch2_test PASSED catch2; event //a:script_test PASSED script
  event //a:skipped_test PASSED skipped; } >one_skip.json
check "a test that only skipped counts as skipped" "tests: 4 passed, 0 failed, 1 skipped" 0 \
  one_skip.json
{ event //a:skipped_test PASSED skipped; event //a:broken_test FAILED broken; } >failed.json
check "a failed test still fails the summary" "tests: 0 passed, 1 failed, 1 skipped" 1 failed.json

echo "$passed passed, $failed failed"
(( failed == 0 ))
