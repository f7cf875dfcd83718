#!/usr/bin/env bash
# `parallax checkpoint ls`: the table and JSON of TensorFlow and safetensors checkpoints,
# how a directory resolves, and the one-line errors of the testdata/bad_checkpoints corpus.
# Prints "checkpoint_cli_test: N passed, M failed, K skipped": TensorFlow's own checkpoints
# ($PARALLAX_SHARED_DIR/testdata/tf-files) are skipped with a SKIP line when missing, a
# failure instead under CI=true or PARALLAX_REQUIRE_DATA=1.
set -u

root="${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-.}"
parallax="$root/cmd/parallax/parallax"
bad="$root/testdata/bad_checkpoints"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
passed=0
failed=0
skipped=0

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# missing_data WHAT WHY: a failure under CI=true or PARALLAX_REQUIRE_DATA=1, else a
# SKIP line (lib/testing/missing_data.sh).
# shellcheck source=../../lib/testing/missing_data.sh
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/lib/testing/missing_data.sh"

# expect CODE CMD...: runs CMD, checks its exit code; stdout/stderr land in $tmp/out|err.
expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -eq $want ]]; then pass; else fail "$* exited $got, want $want: $(head -c 300 "$tmp/err")"; fi
}
expect_stderr_line() {
  local got
  got=$(head -n 1 "$tmp/err")
  if [[ "$got" == "$1" ]]; then pass; else fail "stderr: got '$got', want '$1'"; fi
}
expect_stdout() {
  local got
  got=$(cat "$tmp/out")
  if [[ "$got" == "$1" ]]; then pass; else fail "stdout: got '$got', want '$1'"; fi
}

# The corpus's valid checkpoint: a float scalar and two strings.
expect 0 "$parallax" checkpoint ls "$bad/good"
expect_stdout "tensorflow checkpoint $bad/good
NAME  DTYPE   SHAPE         BYTES
a     float   []                4
s     string  [2]              11
2 tensors, 15 bytes"
# The same through its .index file, and as JSON.
expect 0 "$parallax" checkpoint ls --json "$bad/good.index"
python3 - "$tmp/out" <<'PY' && pass || fail "--json: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "tensorflow" and d["path"].endswith("/good"), d
assert [t["name"] for t in d["tensors"]] == ["a", "s"], d
assert d["tensors"][1] == {"name": "s", "dtype": "string", "shape": [2], "bytes": 11}, d
assert d["total_bytes"] == 15 and d["found"] == "" and d["metadata"] == {}, d
PY

# A directory with a `checkpoint` file names its newest prefix.
mkdir -p "$tmp/train"
cp "$bad/good.index" "$tmp/train/model.ckpt-3.index"
cp "$bad/good.data-00000-of-00001" "$tmp/train/model.ckpt-3.data-00000-of-00001"
printf 'model_checkpoint_path: "model.ckpt-3"\nall_model_checkpoint_paths: "model.ckpt-3"\n' >"$tmp/train/checkpoint"
expect 0 "$parallax" checkpoint ls "$tmp/train"
head -n 1 "$tmp/out" | grep -qx "tensorflow checkpoint $tmp/train/model.ckpt-3 (from $tmp/train/checkpoint)" \
  && pass || fail "directory: $(head -n 1 "$tmp/out")"

# Errors: exit 2, one line.
expect 2 "$parallax" checkpoint ls "$tmp/missing"
expect_stderr_line "parallax: error: $tmp/missing: no such file, directory or checkpoint prefix ($tmp/missing.index does not exist)"
mkdir -p "$tmp/empty_dir"
expect 2 "$parallax" checkpoint ls "$tmp/empty_dir"
expect_stderr_line "parallax: error: $tmp/empty_dir: a directory without a TensorFlow \`checkpoint\` file, SavedModel variables or \`parallax run\` checkpoints (of one process or of a job's ranks)"
expect 2 "$parallax" checkpoint
# Every corrupt index of the corpus (listing reads no tensor data, so only index errors show).
cd "$bad"
for name in empty not_a_table block_crc bad_block_type no_header bad_header zero_shards \
            big_endian newer_version bad_consumer out_of_order bad_entry unknown_dim bad_shard \
            bad_size missing_slice huge_block_handle; do
  want=$(grep "^$name | " expected_errors.txt | sed 's/^[^|]*| //')
  expect 2 "$parallax" checkpoint ls "$name"
  expect_stderr_line "parallax: error: $want"
done
cd - >/dev/null

# TensorFlow's own files, when the shared folder is there.
shared="${PARALLAX_SHARED_DIR:-}/testdata/tf-files"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -d "$shared" ]]; then
  expect 0 "$parallax" checkpoint ls "$shared/tfserving_half_plus_two/export"
  expect_stdout "tensorflow checkpoint $shared/tfserving_half_plus_two/export
NAME        DTYPE  SHAPE         BYTES
Variable    float  []                4
Variable_1  float  []                4
2 tensors, 8 bytes"
  expect 0 "$parallax" checkpoint ls --json "$shared/bert_mrpc"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["tensors"]) == 124 and d["total_bytes"] == 52634144, d["total_bytes"]' "$tmp/out" \
    && pass || fail "bert_mrpc: $(head -c 300 "$tmp/out")"
  expect 0 "$parallax" checkpoint ls "$shared/tfx_taxi_estimator_ckpt"
  grep -q '^global_step  *int64  *\[\]  *8$' "$tmp/out" && pass || fail "taxi: no global_step line"
else
  missing_data "TensorFlow's own checkpoints" "\$PARALLAX_SHARED_DIR/testdata/tf-files is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
fi

echo "checkpoint_cli_test: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
