#!/usr/bin/env bash
# Builds everything and runs every test: `scripts/test.sh [bazel test args...]`.
#
# Installs missing Debian packages first (scripts/setup.sh), points the tests at the
# shared test data beside the checkout, runs `bazel test //...` (or the targets/flags
# given), and ends with one line `tests: N passed, M failed, K skipped` counting Catch2
# test cases (a test target without a Catch2 summary, or one that failed to build, counts
# as one). Skipped are the Catch2 cases and script tests that printed a `SKIP` line: their
# data is missing (the shared folder, Fashion-MNIST) or the machine cannot run them (no
# network namespaces, no SLURM); scripts/summarize_tests.py has the exact rules.
# Exits non-zero when anything failed or did not build.
#
# Environment: PARALLAX_SHARED_DIR overrides the shared folder (default ../shared beside
# the checkout; tests that need it skip with a SKIP line when it is absent). CI=true, or
# PARALLAX_REQUIRE_DATA=1, makes missing test data a failure instead of a skip (Bazel
# passes both to the tests, .bazelrc); CI=true also makes the log plain and short and
# stops the Bazel server at the end. PARALLAX_BAZEL_STARTUP holds Bazel startup options
# (space-separated), e.g. the separate --output_base of scripts/asan.sh.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

scripts/setup.sh

if [[ -z "${PARALLAX_SHARED_DIR:-}" ]]; then
  if [[ -d "$repo/../shared" ]]; then
    PARALLAX_SHARED_DIR=$(cd "$repo/../shared" && pwd)
    export PARALLAX_SHARED_DIR
  else
    echo "test.sh: no shared folder beside the checkout; tests that need it will skip (fail under CI=true)"
  fi
fi

read -r -a bazel <<< "bazel ${PARALLAX_BAZEL_STARTUP:-}"

work=$(mktemp -d "${TMPDIR:-/tmp}/parallax-test.XXXXXX")
cleanup() {
  rm -rf "$work"
  if [[ "${CI:-}" == "true" ]]; then "${bazel[@]}" shutdown >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

flags=(
  --keep_going                 # report every failing target, not just the first
  --test_output=errors         # print the log of failing tests only
  --build_event_json_file="$work/bep.json"
)
if [[ "${CI:-}" == "true" ]]; then
  flags+=(--curses=no --color=no --show_progress_rate_limit=30)
fi

args=("$@")
if [[ ${#args[@]} -eq 0 ]]; then args=(//...); fi

set +e
"${bazel[@]}" test "${flags[@]}" "${args[@]}" </dev/null
bazel_rc=$?
set -e

# The summary counts failures from the build events; Bazel's exit code (0 passed,
# 3 tests failed, 4 no test targets, else the build failed) is the last word.
summary_rc=0
python3 scripts/summarize_tests.py "$work/bep.json" "$bazel_rc" || summary_rc=$?
if [[ $bazel_rc -ne 0 || $summary_rc -ne 0 ]]; then
  exit 1
fi
