#!/usr/bin/env bash
# Graphs that read their own data, as a job under mpirun (docs/pipelines.md):
#  1. lib/runtime/testdata/tfdata_softmax.pbtxt (an in-graph tf.data pipeline) on 2 ranks
#     with 47 records and one epoch: rank 0's shard has 24 records (3 batches of 8),
#     rank 1's 23 (2 batches); the ranks agree to stop after step 2 and exit 0;
#  2. the same graph with an Assert that fails once global_step reaches 5: the job ends
#     with exit status 3 naming the node and the assertion, and the newest checkpoint
#     (step 4, written every 2 steps) stays intact; no later one is written.
#   pipeline_job_test.sh PARALLAX MAKE_TF_DATA GRAPH CLUSTER_YAML
set -u
parallax=$(realpath "$1")
make_tf_data=$(realpath "$2")
graph=$(realpath "$3")
cluster=$(realpath "$4")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-pipeline.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
launch() { timeout 120 "$parallax" launch "$@" -- --mca btl self,vader; }

"$make_tf_data" softmax-examples train.tfrecord 47 || exit 1

# --- 1. uneven shards end together ------------------------------------------------------
"$parallax" transform "$graph" --cluster "$cluster" -o job >/dev/null || exit 1
out=$(launch job --hostfile job/hostfile --input-dir "$work" --feed epochs=1 --log-every 1 -v 2>&1)
rc=$?
echo "$out" | grep -v '^\[20' | tail -n 12
if [[ $rc -eq 0 ]]; then pass "uneven shards: exit 0"; else fail "uneven shards: exit status $rc"; fi
for r in 0 1; do
  if grep -q "\[1,$r\]<stderr>:parallax: info: .*the input pipeline ended after step 2" <<<"$out"; then
    pass "rank $r stopped after step 2"
  else
    fail "rank $r did not stop after step 2"
  fi
done
if grep -q "trained steps 0 -> 2 (batch 8)" <<<"$out"; then pass "rank 0 trained 2 steps"; else fail "rank 0's summary"; fi
# Rank 0 reports every rank's peak resident memory (gathered at the end); no other rank does.
if [[ $(grep -c 'peak memory' <<<"$out") -eq 1 ]] &&
  grep -Eq '^\[1,0\]<stdout>:peak memory \(resident\) per rank: [0-9.]+ MiB, [0-9.]+ MiB$' <<<"$out"; then
  pass "rank 0 reports both ranks' peak memory"
else
  fail "peak memory per rank: $(grep 'peak memory' <<<"$out")"
fi

# --- 2. a failing Assert ends the job; the newest checkpoint stays ------------------------
{
  cat "$graph"
  cat <<'PBTXT'
node { name: "check/limit" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
       attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 5 } } } }
node { name: "check/step" op: "Identity" input: "global_step" attr { key: "T" value { type: DT_INT64 } } }
node { name: "check/ok" op: "Less" input: "check/step" input: "check/limit" attr { key: "T" value { type: DT_INT64 } } }
node { name: "check/message" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
       attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { } string_val: "global_step reached the limit" } } } }
node { name: "check" op: "Assert" input: "check/ok" input: "check/message"
       attr { key: "T" value { list { type: DT_STRING } } } attr { key: "summarize" value { i: 3 } } }
node { name: "checked_train" op: "NoOp" input: "^GradientDescent" input: "^check" }
PBTXT
} > checked.pbtxt
"$parallax" transform checked.pbtxt --cluster "$cluster" -o checked_job >/dev/null || exit 1
out=$(launch checked_job --hostfile checked_job/hostfile --input-dir "$work" --train-op checked_train \
      --steps 20 --checkpoint-dir ck --checkpoint-every 2 2>&1)
rc=$?
echo "$out" | grep -v '^\[20' | tail -n 6
if [[ $rc -eq 3 ]]; then pass "failing Assert: exit 3"; else fail "failing Assert: exit status $rc, expected 3"; fi
if grep -q "node 'check' (Assert): assertion failed: \[global_step reached the limit\]" <<<"$out"; then
  pass "the error names the node and the assertion"
else
  fail "the error does not name the Assert"
fi
for r in 0 1; do
  newest=$(ls ck/rank-$r 2>/dev/null | grep -v tmp | sort -t- -k2 -n | tail -n 1)
  if [[ $newest == checkpoint-4.safetensors ]] && "$parallax" checkpoint ls "ck/rank-$r/$newest" >/dev/null; then
    pass "rank $r: the newest checkpoint is step 4 and reads"
  else
    fail "rank $r: newest checkpoint '$newest' (expected checkpoint-4.safetensors, readable)"
  fi
done

echo "pipeline_job_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
