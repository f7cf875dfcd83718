#!/usr/bin/env bash
# End-to-end tests of the `parallax` binary: exit codes, one-line errors, output formats.
# Prints a Catch2-like closing line "cli_test: N passed, M failed".
set -u

root="${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-.}"
parallax="$root/cmd/parallax/parallax"
bad="$root/testdata/bad"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# expect CODE CMD...: runs CMD, checks its exit code; stdout/stderr land in $tmp/out|err.
expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -eq $want ]]; then pass; else fail "$* exited $got, want $want: $(head -c 300 "$tmp/err")"; fi
}

expect_stderr_line() {
  local want=$1
  local got
  got=$(head -n 1 "$tmp/err")
  if [[ "$got" == "$want" ]]; then pass; else fail "stderr: got '$got', want '$want'"; fi
}

expect 0 "$parallax" --version
grep -qx 'parallax 0.1.0' "$tmp/out" && pass || fail "--version printed '$(cat "$tmp/out")'"
expect 0 "$parallax" --help
grep -q 'inspect' "$tmp/out" && pass || fail "--help does not list inspect"
expect 0 "$parallax" inspect --help
expect 2 "$parallax"
expect 2 "$parallax" inspect
expect 2 "$parallax" inspect --format xml "$bad/empty.pb"
expect 2 "$parallax" frobnicate
expect 2 "$parallax" inspect "$tmp/missing.pb"
expect_stderr_line "parallax: error: $tmp/missing.pb: no such file"

# Logs (-v) go to stderr; stdout stays the command's output.
example="$root/lib/analysis/testdata/sparse_momentum.pbtxt"
expect 0 "$parallax" -v inspect --format json "$example"
python3 -m json.tool "$tmp/out" >/dev/null && pass || fail "-v output on stdout is not pure JSON"
grep -q '^parallax: info: loaded' "$tmp/err" && pass || fail "-v printed no info log on stderr"
expect 0 "$parallax" inspect "$example"
[[ ! -s "$tmp/err" ]] && pass || fail "inspect without -v wrote to stderr: $(cat "$tmp/err")"
grep -q 'emb .*sparse .*SparseApplyMomentum after Unique/UnsortedSegmentSum' "$tmp/out" \
  && pass || fail "the table does not show emb's sparse update"
expect 0 "$parallax" inspect --format dot "$example"
head -n 1 "$tmp/out" | grep -q '^digraph parallax {' && pass || fail "--format dot is not a digraph"

# Every malformed input: exit 2 and its exact one-line error.
cd "$bad"
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  file=${line%% | *}
  message=${line#* | }
  expect 2 "$parallax" inspect "$file"
  expect_stderr_line "parallax: error: $message"
  [[ ! -s "$tmp/out" ]] && pass || fail "$file: printed output on stdout despite the error"
done < expected_errors.txt

# Real graphs: every format works and JSON parses.
shared="${PARALLAX_SHARED_DIR:-}/testdata/tf"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -d "$shared" ]]; then
  for graph in "$shared"/*.pb "$shared"/*.pbtxt; do
    for format in table json dot; do
      expect 0 "$parallax" inspect --format "$format" "$graph"
    done
    "$parallax" inspect --format json "$graph" | python3 -m json.tool >/dev/null \
      && pass || fail "$graph: --format json is not valid JSON"
  done
  "$parallax" inspect --format json "$shared/bigdl_lenet_rmsprop_train.pbtxt" > "$tmp/lenet.json"
  python3 - "$tmp/lenet.json" <<'PY' && pass || fail "lenet JSON does not report 8 trainable variables with 16 slots"
import json, sys
report = json.load(open(sys.argv[1]))
roles = [v["role"] for v in report["variables"]]
assert roles.count("trainable") == 8, roles
assert roles.count("slot") == 16, roles
assert all(u["type"] == "ApplyRMSProp" for v in report["variables"] for u in v["updates"])
assert any(v["name"] == "global_step" and v["role"] == "state" for v in report["variables"])
PY
else
  echo "skipped the real-graph cases: PARALLAX_SHARED_DIR/testdata/tf is absent"
fi

echo "cli_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
