#!/usr/bin/env bash
# `parallax estimate` (docs/estimate.md): the profile is measured on first use (a line on
# stderr), cached under PARALLAX_CACHE_DIR and read back the next time (no profiling
# line, the same estimate), measured again with a warning when the cached file is corrupt; with 2 ranks per host it is a 2-rank job's (the transform's
# bucket nodes in it, the collectives out); a one-rank estimate is the profiled step (within 1 %); a
# 4-rank job on 2 hosts of 2 has its bucket all-reduce priced, goes hierarchical, sends
# bytes off each host and names a bottleneck, and a slow network is that bottleneck;
# --save-profile / --profile; --device: each node's recorded work at a device file's
# figures (the roofline, checked node by node), a cached profile without work measured
# again; errors: a profile of another graph, a profile at another batch, a version 1
# profile or a bad device file with --device, bad flags (one line, exit 2), a profiling
# run that fails (exit 3); an unwritable cache only warns. How close estimates come to measured steps is bench/estimate_bench.sh's
# to say, not a test's.
#   estimate_test.sh PARALLAX
set -u
parallax=$(realpath "$1")
TMPDIR=$(mktemp -d /tmp/parallax-estimate.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cd "$TMPDIR" || exit 1
export PARALLAX_CACHE_DIR=$TMPDIR/cache
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null || exit 1
"$parallax" models export lenet --batch 8 -o lenet.pb >/dev/null || exit 1
printf 'hosts:\n  - name: localhost\n    cpus: 1\n' >one.yaml
printf 'hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n' >two.yaml
printf 'hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\nnetwork:\n  bandwidth_gbps: 0.001\n' >slow.yaml

json_field() {  # FILE EXPRESSION (python, on `e`)
  python3 -c "import json, sys; e = json.load(open(sys.argv[1])); print($2)" "$1"
}

# --- the profile: measured, cached, read back ------------------------------------------
"$parallax" estimate mlp.pb --cluster one.yaml --threads 1 --profile-steps 12 --json \
  --save-profile saved.json >first.json 2>first.err
rc=$?
if [[ $rc -eq 0 ]] && grep -q "^parallax: estimate: profiling mlp.pb here (12 steps, 1 thread)$" first.err &&
  [[ $(ls cache/profiles/*-bgraph-t1-p1.json 2>/dev/null | wc -l) -eq 1 ]]; then
  pass "first estimate measures the profile and caches it ($(ls cache/profiles))"
else
  cat first.err; fail "first estimate (exit $rc)"
fi
"$parallax" estimate mlp.pb --cluster one.yaml --threads 1 --json >second.json 2>second.err
if [[ $? -eq 0 ]] && ! grep -q "profiling" second.err &&
  [[ $(json_field second.json 'e["profile"].endswith("(cached)")') == True ]] &&
  [[ $(json_field first.json 'e["step_seconds"]') == $(json_field second.json 'e["step_seconds"]') ]]; then
  pass "second estimate reads the cached profile: the same step"
else
  cat second.err second.json; fail "second estimate"
fi
# A cached profile that no longer parses: a warning, measured again, cached again.
cached=$(ls cache/profiles/*-bgraph-t1-p1.json)
echo '{"version": 1' >"$cached"
"$parallax" estimate mlp.pb --cluster one.yaml --threads 1 --profile-steps 8 >remeasured.txt 2>remeasured.err
if [[ $? -eq 0 ]] && grep -q "^parallax: warning: $TMPDIR/$cached: not a profile: .*; measuring the profile again$" remeasured.err &&
  grep -q "^parallax: estimate: profiling mlp.pb here" remeasured.err &&
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$cached"; then
  pass "a corrupt cached profile: a warning naming it, measured and cached again"
else
  cat remeasured.err; fail "a corrupt cached profile"
fi
# One rank: the step is the profiled step (its nodes and overhead), nothing sent.
if python3 - first.json saved.json <<'PY'
import json, sys
e, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
step, profiled = e["step_seconds"] * 1e6, p["step_us"]
assert abs(step / profiled - 1) < 0.01, (step, profiled)
assert e["collectives"] == [] and e["bytes_sent_per_rank_per_step"] == 0, e
assert e["scaling_efficiency"] == 1 and e["ranks"] == 1 and e["batch_per_rank"] == 32, e
assert e["profiled_nodes"] > 0 and e["bottleneck"].startswith("compute ("), e
print(f"one rank: {step:.1f} us estimated, {profiled:.1f} us profiled")
PY
then
  pass "one rank: the estimate is the profiled step"
else
  fail "one rank: the estimate is not the profiled step"
fi

# --- 4 ranks on 2 hosts ------------------------------------------------------------------
"$parallax" estimate mlp.pb --cluster two.yaml --profile saved.json --json >four.json 2>four.err &&
  "$parallax" estimate mlp.pb --cluster two.yaml --profile saved.json >four.txt 2>&1
rc=$?
if [[ $rc -eq 0 ]] && python3 - four.json <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
assert e["ranks"] == 4 and e["hosts"] == 2 and e["allreduce"] == "hierarchical", e
c = e["collectives"]
assert [x["node"] for x in c] == ["parallax/bucket_0/allreduce"], c
assert c[0]["kind"] == "all-reduce" and c[0]["bytes"] > 0 and c[0]["seconds"] > 0, c
assert e["off_host_bytes_per_host_per_step"] == c[0]["bytes"], e  # 2 (H-1)/H of it: all of it
assert 0 < e["scaling_efficiency"] < 1, e
assert abs(e["step_seconds"] - e["compute_seconds"] - e["overhead_seconds"] - e["communication_seconds"]) < 1e-9, e
print(f"4 ranks: {e['step_seconds'] * 1e3:.3f} ms, efficiency {e['scaling_efficiency']:.2f}")
PY
then
  grep -q "^  bottleneck    " four.txt && grep -q "all-reduce .* parallax/bucket_0/allreduce$" four.txt &&
    pass "4 ranks on 2 hosts: the bucket all-reduce priced, hierarchical, text and JSON agree" ||
    { cat four.txt; fail "4 ranks: the text report"; }
else
  cat four.err four.txt; fail "4 ranks on 2 hosts"
fi
"$parallax" estimate mlp.pb --cluster slow.yaml --profile saved.json >slow.txt 2>&1
if grep -q "^  bottleneck    all-reduces and all-gathers over the network between hosts (0 Gb/s)" slow.txt; then
  pass "a 1 Mb/s network is the bottleneck"
else
  cat slow.txt; fail "slow network"
fi

# --- a host of 2 ranks: the profile is of a 2-rank job here ---------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$parallax" estimate mlp.pb --cluster two.yaml --threads 1 --profile-steps 9 --json \
  --save-profile job_profile.json >job.json 2>job.err
rc=$?
if [[ $rc -eq 0 ]] &&
  grep -q "^parallax: estimate: profiling mlp.pb here (9 steps, 1 thread, a job of 2 ranks)$" job.err &&
  python3 - job_profile.json job.json <<'PY'
import json, sys
p, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# The transform's bucket nodes ran in the profiled job; the collective did not count.
assert "parallax/bucket_0/concat" in p["node_us"] and "parallax/bucket_0/split" in p["node_us"], sorted(p["node_us"])
assert "parallax/bucket_0/allreduce" not in p["node_us"], p["node_us"]
assert p["processes"] == 2 and p["steps"] == 2 * 6, p
assert e["profiled_nodes"] > 0 and e["ranks"] == 4, e
print(f"job profile: {len(p['node_us'])} nodes, step {p['step_us']:.1f} us")
PY
then
  pass "2 ranks per host: profiled as a 2-rank job (the bucket's nodes in it, its all-reduce not)"
else
  cat job.err; fail "the job profile (exit $rc)"
fi

# --- a device described by its figures (--device) -----------------------------------------
# The profile records each node's work: the first layer's MatMul is [32, 784] x [784, 64].
if [[ $(json_field saved.json 'int(e["node_work"]["dense/MatMul"]["flops"])') == 3211264 ]]; then
  pass "the profile records each node's work (dense/MatMul: 2 x 32 x 64 x 784 flops)"
else
  json_field saved.json 'e["node_work"].get("dense/MatMul")'; fail "the profile's work"
fi
printf 'name: Test GPU\nflops_per_second: 10e12\nmemory_bytes_per_second: 1e12\nop_overhead_us: 4\nstep_overhead_us: 50\n' >gpu.yaml
printf 'name: Fast GPU\nflops_per_second: 100e12\nmemory_bytes_per_second: 10e12\nop_overhead_us: 4\nstep_overhead_us: 50\n' >fast.yaml
"$parallax" estimate mlp.pb --cluster one.yaml --profile saved.json --device gpu.yaml --json >gpu.json 2>gpu.err &&
  "$parallax" estimate mlp.pb --cluster one.yaml --profile saved.json --device fast.yaml --json >fast.json 2>>gpu.err &&
  "$parallax" estimate mlp.pb --cluster two.yaml --profile saved.json --device gpu.yaml >gpu4.txt 2>>gpu.err
rc=$?
if [[ $rc -eq 0 ]] && python3 - saved.json gpu.json fast.json <<'PY'
import json, sys
p, e, fast = (json.load(open(f)) for f in sys.argv[1:4])
# The roofline, node by node, at the file's figures and the default efficiencies.
expected = 50e-6
for w in p["node_work"].values():
    if w["flops"] > 0 or w["memory_bytes"] > 0:
        expected += (w["runs"] * 4 + max(w["flops"] / (10e12 * 0.7), w["memory_bytes"] / (1e12 * 0.8)) * 1e6) * 1e-6
assert abs(e["step_seconds"] / expected - 1) < 1e-6, (e["step_seconds"], expected)
assert e["device"] == "Test GPU" and e["device_file"] == "gpu.yaml", e
assert abs(e["overhead_seconds"] - 50e-6) < 1e-12, e
assert fast["compute_seconds"] < e["compute_seconds"], (fast["compute_seconds"], e["compute_seconds"])
print(f"device: {e['step_seconds'] * 1e6:.1f} us (roofline {expected * 1e6:.1f} us); ten times faster: "
      f"{fast['step_seconds'] * 1e6:.1f} us")
PY
then
  grep -q "^estimate: mlp.pb on 4 ranks (2 hosts, up to 2 per host), batch 32 per rank, one Test GPU per rank$" gpu4.txt &&
    grep -q "^profile: Test GPU (gpu.yaml): each node's work, measured in saved.json, at the device's figures; " gpu4.txt &&
    pass "--device: each node at the roofline of its work, the device's step overhead" ||
    { cat gpu4.txt; fail "--device: the text report"; }
else
  cat gpu.err; fail "--device (exit $rc)"
fi
# A version 1 profile (no work) cannot be moved onto a device; a cached one is measured again.
python3 - saved.json v1.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["version"] = 1
del p["node_work"]
json.dump(p, open(sys.argv[2], "w"))
PY
cp v1.json "$cached"
"$parallax" estimate mlp.pb --cluster one.yaml --threads 1 --profile-steps 8 --device gpu.yaml >v1.txt 2>v1.err
if [[ $? -eq 0 ]] &&
  grep -q "^parallax: warning: $TMPDIR/$cached: the cached profile records no work per node (an older parallax wrote it); measuring the profile again$" v1.err &&
  [[ $(json_field "$cached" 'e["version"]') == 2 ]]; then
  pass "a cached version 1 profile with --device: a warning, measured again"
else
  cat v1.err; fail "a cached version 1 profile with --device"
fi

# --- errors ------------------------------------------------------------------------------
check_error() {  # NAME EXIT EXPECTED_REGEX ARGS...
  local name=$1 expected_rc=$2 regex=$3
  shift 3
  local output rc
  output=$("$parallax" estimate "$@" 2>&1 >/dev/null)
  rc=$?
  local errors
  errors=$(grep -c "^parallax: error:" <<<"$output")
  if [[ $rc -eq $expected_rc && $errors -eq 1 ]] && grep -qE "$regex" <<<"$output"; then
    pass "$name: exit $rc, one line"
  else
    echo "$output (exit $rc)"; fail "$name"
  fi
}
check_error "a profile of another graph" 2 \
  "^parallax: error: --profile saved.json: measured on another graph file \(fingerprint [0-9a-f]{16}; lenet.pb has [0-9a-f]{16}\)$" \
  lenet.pb --cluster one.yaml --profile saved.json
check_error "a profile at another batch" 2 \
  "^parallax: error: --profile saved.json: measured at batch 32, not --batch 64$" \
  mlp.pb --cluster one.yaml --profile saved.json --batch 64
check_error "--allreduce ring" 2 "^parallax: error: --allreduce: 'ring' is not auto, flat or hierarchical$" \
  mlp.pb --cluster one.yaml --allreduce ring
check_error "no --cluster" 2 "^parallax: error: estimate: --cluster is required$" mlp.pb
check_error "a profile that is not JSON" 2 "^parallax: error: one.yaml: not a profile: " \
  mlp.pb --cluster one.yaml --profile one.yaml
check_error "a version 1 profile with --device" 2 \
  "^parallax: error: v1.json: the profile records no work per node \(a version 1 profile\): measure it again \(estimate without --profile\) to estimate on a device$" \
  mlp.pb --cluster one.yaml --profile v1.json --device gpu.yaml
printf 'name: G\nflops_per_second: 1e12\nmemory_bytes_per_second: fast\n' >bad_gpu.yaml
check_error "a bad device file" 2 \
  "^parallax: error: bad_gpu.yaml:3: memory_bytes_per_second: expected a number, got 'fast'$" \
  mlp.pb --cluster one.yaml --profile saved.json --device bad_gpu.yaml
check_error "a missing device file" 2 "^parallax: error: .*nope.yaml" \
  mlp.pb --cluster one.yaml --profile saved.json --device nope.yaml
check_error "a profiling run that fails" 3 \
  "^parallax: error: profiling mlp.pb: parallax run exited 2: parallax: error: .*batch" \
  mlp.pb --cluster one.yaml --batch 4000000000
output=$(PARALLAX_CACHE_DIR=/proc/nope "$parallax" estimate mlp.pb --cluster one.yaml --threads 1 \
  --profile-steps 8 2>&1)
if [[ $? -eq 0 ]] && grep -q "the profile is not cached" <<<"$output" && grep -q "^  step  " <<<"$output"; then
  pass "an unwritable cache: a warning, and the estimate"
else
  echo "$output"; fail "an unwritable cache"
fi

echo "estimate_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
