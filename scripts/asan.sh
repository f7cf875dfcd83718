#!/usr/bin/env bash
# Runs the tests under AddressSanitizer + UndefinedBehaviorSanitizer:
# `scripts/asan.sh [bazel test flags as --name=value] [targets]` (default: every package).
#
# It is scripts/test.sh (setup, shared data, the closing `tests: N passed, M failed,
# K skipped` line) with --config=asan (.bazelrc): instrumented binaries, sanitizer options
# for every test and MPI rank, time bounds scaled by PARALLAX_TEST_SLOWDOWN. The build
# runs in its own Bazel output base, PARALLAX_ASAN_OUTPUT_BASE (default
# ~/.cache/parallax-asan), so it neither replaces the normal build's outputs nor waits on
# its server (the config makes no bazel-* links: those in the checkout stay the normal
# build's).
# The first finding aborts the test with the sanitizer's report in its log.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
output_base=${PARALLAX_ASAN_OUTPUT_BASE:-$HOME/.cache/parallax-asan}

flags=()
targets=()
while (($#)); do
  case $1 in
    --) shift; targets+=("$@"); break ;;
    -*) flags+=("$1") ;;
    *) targets+=("$1") ;;
  esac
  shift
done
# By default every package. Not `//...`: the checkout's bazel-* links point into the
# normal build's output base (bazel-<name> at its execroot, a mirror of the workspace),
# and only the server that made them skips them; here //... would find every package
# twice. So: the root package and each top-level folder (not a link) that holds one.
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(//:all)
  for dir in "$repo"/*/; do
    dir=${dir%/}
    if [[ ! -L "$dir" && -n $(find "$dir" \( -name BUILD -o -name BUILD.bazel \) -print -quit) ]]; then
      targets+=("//${dir##*/}/...")
    fi
  done
fi

PARALLAX_BAZEL_STARTUP="--output_base=$output_base" \
  exec "$repo/scripts/test.sh" --config=asan "${flags[@]}" -- "${targets[@]}"
