#!/usr/bin/env bash
# Timelines (docs/timeline.md): `parallax run --timeline FILE` and `launch --timeline DIR`
# write Chrome trace-event JSON that passes the format's schema (checked here by an
# independent reader, Python's json), with a span per op, every collective with its
# bytes, and step spans; in a 2-rank MLP job the all-reduces run on their own thread and
# overlap backprop's MatMuls; `parallax trace summary` reads them back and reports the
# overlap. Bad paths and files
# get one line and exit 2.
#   timeline_test.sh PARALLAX CLUSTER_YAML
set -u
parallax=$(realpath "$1")
cluster=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-timeline.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cd "$TMPDIR" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# schema FILE STEPS RANK WORLD: the trace-event rules for what a timeline writes, and what
# it must hold: STEPS step spans, one op span per kernel, collectives with bytes when
# WORLD > 1 (every rank all-reduces the MLP's 6 gradients each step).
schema() {
  python3 - "$@" <<'PY'
import json, sys
path, steps, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
doc = json.load(open(path))
events = doc["traceEvents"]
assert isinstance(events, list) and events, "no events"
spans = []
for i, e in enumerate(events):
    where = f"{path}: event {i}"
    assert isinstance(e.get("name"), str), where + ": name"
    assert e.get("ph") in ("X", "M"), where + ": ph"
    assert e.get("pid") == rank, where + ": pid"
    assert isinstance(e.get("args"), dict), where + ": args"
    if e["ph"] == "X":
        assert isinstance(e.get("cat"), str), where + ": cat"
        assert isinstance(e.get("ts"), (int, float)), where + ": ts"
        assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, where + ": dur"
        assert isinstance(e.get("tid"), int) and e["tid"] >= 1, where + ": tid"
        spans.append(e)
step_spans = [s for s in spans if s["cat"] == "step"]
assert [s["args"]["step"] for s in step_spans] == list(range(1, steps + 1)), "step spans"
ops = [s for s in spans if s["cat"] == "op"]
assert any(s["args"]["op"] == "MatMul" for s in ops), "no MatMul span"
# Spans of one thread nest: every op of a step lies inside it.
for s in step_spans:
    inside = [o for o in spans if o["tid"] == s["tid"] and s["ts"] <= o["ts"] < s["ts"] + s["dur"]]
    assert all(o["ts"] + o["dur"] <= s["ts"] + s["dur"] + 1 for o in inside), "not nested"
collectives = [s for s in spans if s["cat"] == "collective" and s["ts"] >= step_spans[0]["ts"]]
if world > 1:
    reduces = [c for c in collectives if c["args"].get("op") == "CollectiveReduceV2"]
    assert len(reduces) == 6 * steps, f"{len(reduces)} all-reduces in {steps} steps"
    assert all(c["args"]["bytes"] > 0 and c["args"]["sent"] > 0 for c in reduces), "bytes"
    # Overlap: the all-reduces run on a communication thread while backprop's MatMuls go on.
    matmuls = [o for o in ops if o["args"]["op"] == "MatMul"]
    assert all(c["tid"] != matmuls[0]["tid"] for c in reduces), "all-reduces on the main thread"
    overlapping = [c for c in reduces if any(m["ts"] < c["ts"] + c["dur"] and c["ts"] < m["ts"] + m["dur"]
                                             for m in matmuls)]
    assert overlapping, "no all-reduce overlaps a MatMul"
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {f"rank {rank} of {world}"}, names
else:
    assert not collectives, "collectives in a one-process run"
    # docs/timeline.md: 67 spans per MLP step, about 160 bytes of file per span.
    second = step_spans[1]
    per_step = [o for o in spans if second["ts"] <= o["ts"] < second["ts"] + second["dur"]]
    assert len(per_step) == 67, f"{len(per_step)} spans in step 2"
    size = len(open(path).read())
    assert 120 <= size / len(spans) <= 200, f"{size / len(spans)} bytes per span"
PY
}

"$parallax" models export mlp --batch 32 -o mlp.pb >/dev/null || exit 1

# One process: a file.
if "$parallax" run mlp.pb --synthetic --steps 4 --threads 1 --timeline one.json >run.log 2>&1 &&
  schema one.json 4 0 1; then
  pass "run --timeline FILE: a trace-event file with 4 steps"
else
  cat run.log
  fail "run --timeline FILE"
fi
"$parallax" trace summary one.json --top 3 >summary.txt 2>&1
if grep -Eq '^parallax run +4 ' summary.txt && grep -q '^top 3 ops' summary.txt &&
  grep -q '^MatMul ' summary.txt; then
  pass "trace summary: the process's 4 steps and the top ops"
else
  cat summary.txt
  fail "trace summary of one file"
fi

# A job of 2 ranks: a directory, one file per rank.
# One all-reduce per gradient (no buckets), so that each step has the MLP's 6; the
# default batch (256), so that backprop's MatMuls last long enough to overlap.
"$parallax" models export mlp -o mlp256.pb >/dev/null || exit 1
"$parallax" transform mlp256.pb --cluster "$cluster" --bucket-mb 0 -o job >/dev/null || exit 1
if timeout 300 "$parallax" launch job --synthetic --steps 10 --overlap --timeline traces >launch.log 2>&1 &&
  schema traces/rank-0.trace.json 10 0 2 && schema traces/rank-1.trace.json 10 1 2; then
  pass "launch --timeline DIR: rank-0 and rank-1 trace files, all-reduces with bytes"
else
  cat launch.log
  ls traces
  fail "launch --timeline DIR"
fi
"$parallax" trace summary traces/rank-0.trace.json traces/rank-1.trace.json --format json \
  >summary.json 2>&1
if python3 - summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s["processes"]
assert [x["name"] for x in p] == ["rank 0 of 2", "rank 1 of 2"], p
for x in p:
    assert x["steps"] == 10
    assert x["communication_ms"] > 0 and x["compute_ms"] > 0
    assert 0 < x["overlap"] <= 1, x
    assert x["exposed_communication_ms"] <= x["communication_ms"] + 1e-9
    # The MLP's gradients: 669,706 floats all-reduced per step (and a loss now and then).
    assert 2678824 <= x["collective_bytes_per_step"] <= 2678824 + 8, x
assert any(o["op"] == "CollectiveReduceV2" for o in s["ops"]), s["ops"]
PY
then
  pass "trace summary --format json: both ranks, communication, overlap above 0"
else
  cat summary.json
  fail "trace summary of a job"
fi

# expect_error NAME WANT_LINE COMMAND...: exit 2 and exactly this one line on stderr.
expect_error() {
  local name=$1 want=$2
  shift 2
  "$@" >err.out 2>err.txt
  local rc=$?
  if [[ $rc -eq 2 && "$(cat err.txt)" == "$want" ]]; then
    pass "$name"
  else
    echo "exit $rc, stderr:"
    cat err.txt
    fail "$name"
  fi
}
expect_error "--timeline in a missing directory" \
  "parallax: error: --timeline nowhere/t.json: no directory nowhere" \
  "$parallax" run mlp.pb --synthetic --steps 1 --timeline nowhere/t.json
mkdir adir
expect_error "--timeline naming a directory outside a job" \
  "parallax: error: --timeline adir: is a directory (a file is written outside a job)" \
  "$parallax" run mlp.pb --synthetic --steps 1 --timeline adir
expect_error "trace summary of a missing file" \
  "parallax: error: missing.json: no such file" \
  "$parallax" trace summary missing.json
echo '{"traceEvents": [{"name": "x", "ph": "X", "pid": 0, "tid": 1, "ts": 1}]}' >bad.json
expect_error "trace summary of an X event without dur" \
  "parallax: error: bad.json: event 0 ('x'): a \"X\" event needs a number ts and dur" \
  "$parallax" trace summary bad.json

echo "timeline_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
