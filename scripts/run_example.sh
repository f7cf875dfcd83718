#!/usr/bin/env bash
# The main job, end to end, on this machine: installs what is missing, builds the
# `parallax` CLI and runs it on an example single-device training graph.
#
# Today Parallax loads, verifies and analyses graphs (`parallax inspect`); `transform`
# and `launch` join this script as they land (see the open issues).
#   scripts/run_example.sh [GRAPH]      default: lib/analysis/testdata/sparse_momentum.pbtxt
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
graph=${1:-lib/analysis/testdata/sparse_momentum.pbtxt}

scripts/setup.sh
bazel build -c opt //cmd/parallax >/dev/null 2>&1 || bazel build -c opt //cmd/parallax
parallax=bazel-bin/cmd/parallax/parallax

echo "== parallax inspect $graph"
"$parallax" inspect "$graph"
echo
echo "== parallax inspect --format json $graph (first lines)"
"$parallax" inspect --format json "$graph" | head -n 20
