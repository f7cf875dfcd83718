#!/usr/bin/env bash
# Measured searches (docs/transform.md#measured-searches): `transform --search` probes
# partition counts of the embedding model's parameter-server table, and `--bucket-mb
# auto` bucket limits, with short runs of the job through `parallax launch`, keeps the
# fastest, and records what it measured in plan.yaml, --json and the report; the job it
# writes runs. On 2 hosts (daemons started through an rsh agent, ranks over TCP) the
# probes run on both hosts and the candidates start at the hosts' count. Bad flags and a
# failing probe: one line, exit 2 or 3, no job directory.
#   search_test.sh PARALLAX
set -u
parallax=$(realpath "$1")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-search.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cd "$TMPDIR" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

"$parallax" models export embedding --vocab 20000 --dim 16 --seq 8 --batch 32 -o emb.pb \
  >/dev/null || exit 1
"$parallax" models export mlp -o mlp.pb >/dev/null || exit 1
printf 'hosts:\n  - name: localhost\n    cpus: 4\n' >four.yaml

# check_search JSON KEY BUDGET: the plan's search KEY (partition_search, bucket_search)
# is consistent: the chosen value is the fastest probe's, every probed value a
# candidate, each probe once, within the budget (plus one probe, which may start just
# inside it), and the plan has the chosen value: every parameter-server variable (the
# table and its slot) that many partitions, or bucket_bytes.
check_search() {
  python3 - "$@" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
key, budget = sys.argv[2], float(sys.argv[3])
value = {"partition_search": "partitions", "bucket_search": "bucket_bytes"}[key]
s = plan[key]
assert s is not None, "no " + key
probes = s["probes"]
assert probes, "no probes"
values = [p[value] for p in probes]
assert len(set(values)) == len(values), f"a value probed twice: {values}"
assert all(v in s["candidates"] for v in values), f"{values} not all in {s['candidates']}"
best = min(probes, key=lambda p: (p["step_seconds"], p[value]))
assert s["chosen"] == best[value], f"chosen {s['chosen']}, fastest {best}"
assert all(p["step_seconds"] > 0 for p in probes), probes
longest = s["used_seconds"] / len(probes)
assert s["used_seconds"] <= budget + 2 * longest, f"used {s['used_seconds']} of {budget}"
if key == "partition_search":
    ps = [v for v in plan["variables"] if v["method"] == "ps"]
    assert len(ps) == 2, [v["name"] for v in ps]
    for v in ps:
        assert len(v["partitions"]) == s["chosen"], (v["name"], len(v["partitions"]), s["chosen"])
else:
    assert plan["bucket_bytes"] == s["chosen"], (plan["bucket_bytes"], s["chosen"])
    assert s["candidates"][0] == 0, s["candidates"]
print(f"{key}: chosen {s['chosen']} of probes {values} in {s['used_seconds']:.1f} s")
PY
}

# --- 1. one host, 4 ranks -------------------------------------------------------------------
if "$parallax" transform emb.pb --cluster four.yaml -o job --search --bucket-mb auto \
  --search-budget 60 --search-steps 8 --json >plan.json 2>search.log; then
  check_search plan.json partition_search 60 &&
    pass "4 ranks: the fastest partition count chosen, within the budget" ||
    fail "4 ranks: the partition search's record"
  check_search plan.json bucket_search 60 &&
    pass "4 ranks: the fastest bucket limit chosen, within the budget" ||
    fail "4 ranks: the bucket search's record"
  grep -q '^partition_search:' job/plan.yaml && grep -q '^partition search: ' job/report.txt &&
    grep -q '^bucket_search:' job/plan.yaml && grep -q '^bucket search: ' job/report.txt &&
    pass "plan.yaml and report.txt show the searches" || fail "plan.yaml/report.txt"
  grep -qx 'parallax: search: probing no buckets (8 steps)' search.log &&
    pass "the bucket search starts from no buckets" || fail "the bucket search's first probe"
  grep -qx 'parallax: search: probing 1 partitions (8 steps)' search.log &&
    grep -Eq '^parallax: search: 1 partitions: [0-9.]+ ms per step$' search.log &&
    pass "the probes are shown on stderr" || { cat search.log; fail "the probes' lines"; }
  leftover=$(ls "$TMPDIR" | grep '^parallax-search\.' || true)
  [[ -z "$leftover" ]] && pass "the probes' scratch directories are removed" || fail "left: $leftover"
  if timeout 120 "$parallax" launch job/ --synthetic --steps 3 >run.log 2>&1; then
    pass "the searched job runs"
  else
    cat run.log; fail "the searched job runs"
  fi
else
  cat search.log; fail "transform --search on 4 ranks"
fi

# --- 2. two hosts ----------------------------------------------------------------------------
printf '#!/bin/sh\necho "$1" >>%s/agent.log\nmkdir -p "$TMPDIR/$1" && export TMPDIR="$TMPDIR/$1" || exit 1\nshift\nexec sh -c "$*"\n' \
  "$PWD" >agent
chmod +x agent
printf 'hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n' >two.yaml
launch_words="-H px-a:2,px-b:2 -- --mca plm_rsh_agent $PWD/agent --mca rtc ^hwloc --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
if "$parallax" transform emb.pb --cluster two.yaml -o job2 --search --search-budget 60 \
  --search-steps 8 --search-launch "$launch_words" --json >plan2.json 2>search2.log; then
  check_search plan2.json partition_search 60 && pass "2 hosts: the fastest probe chosen, within the budget" ||
    fail "2 hosts: the search's record"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["partition_search"]; assert s["candidates"][0] == 2, s' \
    plan2.json && pass "2 hosts: the candidates start at 2 (one partition per host)" ||
    fail "2 hosts: the candidates"
  [[ "$(sort -u agent.log | tr '\n' ' ')" == "px-a px-b " ]] &&
    pass "2 hosts: the probes ran on px-a and px-b" || fail "2 hosts: agent log $(cat agent.log)"
else
  cat search2.log; fail "transform --search on 2 hosts"
fi

# --- 3. errors ---------------------------------------------------------------------------------
expect() {  # NAME RC ERROR_LINE_REGEX CMD... (a search shows its probes on stderr first)
  local name=$1 rc=$2 line=$3
  shift 3
  "$@" >out.txt 2>err.txt
  local got=$?
  if [[ $got -eq $rc ]] && grep -Eq "$line" err.txt && [[ ! -e bad_job ]]; then
    pass "$name"
  else
    echo "rc $got"; cat err.txt; fail "$name"
  fi
}
expect "--search-budget without a search" 2 \
  "^parallax: error: --search-budget, --search-steps and --search-launch need --search or --bucket-mb auto$" \
  "$parallax" transform emb.pb --cluster four.yaml -o bad_job --search-budget 10
expect "--bucket-mb that is neither a size nor auto" 2 \
  "^parallax: error: --bucket-mb: 'fast' is not a size in MiB \(0 to 1048576\) or auto$" \
  "$parallax" transform emb.pb --cluster four.yaml -o bad_job --bucket-mb fast
printf 'hosts:\n  - name: localhost\n    cpus: 1\n' >one.yaml
expect "--bucket-mb auto on one rank" 2 \
  "^parallax: error: --bucket-mb auto: the job has one rank, which all-reduces nothing$" \
  "$parallax" transform mlp.pb --cluster one.yaml -o bad_job --bucket-mb auto
expect "--bucket-mb auto with no two gradients to bucket" 2 \
  "^parallax: error: --bucket-mb auto: no two gradients of .*mlp.pb can share a bucket \(nothing to tune\)$" \
  "$parallax" transform mlp.pb --cluster four.yaml -o bad_job --strategy ps --bucket-mb auto
expect "--search-steps below 4" 2 "search-steps" \
  "$parallax" transform emb.pb --cluster four.yaml -o bad_job --search --search-steps 2
expect "--search on a model without parameter servers" 2 \
  "^parallax: error: transform --search: no variable of mlp.pb is on parameter servers" \
  "$parallax" transform mlp.pb --cluster four.yaml -o bad_job --search
expect "a probe that fails names the count and the launch's last line" 3 \
  "^parallax: error: probe of 1 partitions: parallax launch exited 2: .*nope" \
  "$parallax" transform emb.pb --cluster four.yaml -o bad_job --search \
  --search-launch "--feed ids=nope.npy"

echo "search_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
