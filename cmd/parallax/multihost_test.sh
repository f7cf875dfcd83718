#!/usr/bin/env bash
# Real multi-host jobs on one machine: hosts are Linux network namespaces
# (testing/netns_cluster.sh; 3 of them here), OpenMPI starts its daemons in them through
# an rsh agent instead of ssh, ranks of one host talk through shared memory and hosts
# through TCP over veth links. Skipped (SKIP, exit 0) where namespaces cannot be made
# (not root, no `ip`). The job: the zoo embedding model ([100000, 128] table, Adagrad),
# --strategy hybrid (the table on parameter servers, the dense layer all-reduced), planned
# on a cluster spec that names hosts 0 and 1 by their namespace addresses, 4 ranks as 2
# hosts of 2, batch 32 per rank. Checks:
#  1. the ranks see 2 hosts of 2 (pushes aggregated per host for real), and 220 steps on
#     2 hosts train to the variables of 4 ranks on one host (max relative difference
#     <= 1e-6, the job checkpoints reassembled);
#  2. bytes crossing each host's link per step (its veth counters, tx and rx; a 20-step
#     run subtracted from a 220-step run removes start-up, the initial row scatter and
#     MPI's control traffic; less each packet's headers) match the transform's
#     prediction for traffic that leaves a host within 5 % (the prediction is per rank;
#     how it becomes per host is below);
#  2b. the zoo mlp's all-reduce, planned hierarchical by the transform, puts within 5 % of
#     the plan's off_host_bytes_per_step on each host's link, under 3/4 of the flat
#     all-reduce's measured bytes, and trains as flat does (1e-5);
#  3. the same job planned on role names and started by `parallax launch --hostfile` with
#     hosts 2 and 1 runs its ranks there (by their links' bytes) and trains bit-identical
#     to the job planned on the addresses;
#  4. a whole host killed mid-job (every process in its namespace, MPI daemon included)
#     under `parallax launch` ends the job within 10 s with launch's exit status 3 and a
#     line naming the host, and no rank is left on the other host;
#  5. a host lost for good (killed and its namespace removed, so the agent cannot reach
#     it) under `parallax launch --restarts 1 --min-ranks 2`: launch finds it gone,
#     re-plans the job on host 0 alone (2 ranks, the global batch kept: 64 per rank),
#     resumes from the newest complete checkpoint and trains to the variables of an
#     uninterrupted 4-rank run within 1e-6.
#   multihost_test.sh PARALLAX CHECKPOINT_DIFF NETNS_CLUSTER_SH
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
helper=$(realpath "$3")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-multihost.XXXXXX)
export TMPDIR
# shellcheck source=testing/netns_cluster.sh
source "$helper"
# The cluster is removed however the test ends (a trapped signal exits through EXIT).
trap 'netns_cluster_down; rm -rf "$TMPDIR"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
cd "$TMPDIR" || exit 1
start=$(date +%s)
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Time bounds are scaled by PARALLAX_TEST_SLOWDOWN (set by the sanitizer build, .bazelrc).
slowdown=${PARALLAX_TEST_SLOWDOWN:-1}

if ! netns_cluster_up 3; then
  echo "SKIP multihost_test: network namespaces cannot be made here: $NETNS_SKIP_REASON"
  exit 0
fi
echo "cluster: ${NETNS_NAMES[*]} at ${NETNS_ADDRS[*]} (switch $NETNS_PREFIX-sw)"

"$parallax" models export embedding --batch 0 -o emb.pb >/dev/null || exit 1
printf 'hosts:\n  - name: %s\n    cpus: 2\n  - name: %s\n    cpus: 2\n' \
  "${NETNS_ADDRS[0]}" "${NETNS_ADDRS[1]}" >two_hosts.yaml
printf 'hosts:\n  - name: localhost\n    cpus: 4\n' >one_host.yaml
"$parallax" transform emb.pb --cluster two_hosts.yaml --strategy hybrid -o job2 >/dev/null ||
  exit 1
"$parallax" transform emb.pb --cluster one_host.yaml --strategy hybrid -o job1 >/dev/null ||
  exit 1
grep -A1 'name: "embeddings"$' job2/plan.yaml | grep -q 'method: ps' ||
  { cat job2/plan.yaml; fail "hybrid: the embedding table is not on parameter servers"; }

# mpirun runs on host 0, so every address it and its daemons use is in the cluster. The
# all-reduce is OpenMPI's ring (algorithm 4), the one the cost model prices (OpenMPI's
# own choice varies with the message size and its version).
ring=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)
mpirun2=(netns_run 0 timeout 120 mpirun -np 4 --hostfile job2/hostfile "${NETNS_MPIRUN_FLAGS[@]}"
         "${ring[@]}")
flags=(--synthetic --seed 3 --no-shuffle --batch 32)
short=20
long=220

# --- 1. 2 hosts train as 4 ranks on one host ------------------------------------------
timeout 120 mpirun -np 4 --oversubscribe --mca btl self,vader "$parallax" run job1/ "${flags[@]}" \
  --log-every 10 --steps $long --checkpoint-dir one >one.log 2>&1 ||
  { cat one.log; fail "4 ranks on one host"; }

# Each run is measured by every host's link counters before and after it.
declare -A link  # link[RUN,HOST] = "tx_bytes rx_bytes tx_packets rx_packets" of the run
measure() {  # NAME COMMAND...: runs COMMAND, fills link[NAME,*]; COMMAND's status
  local name=$1 h rc
  shift
  local before=()
  for h in "${!NETNS_NAMES[@]}"; do before[h]=$(netns_link_counters "$h"); done
  "$@"
  rc=$?
  for h in "${!NETNS_NAMES[@]}"; do
    link[$name,$h]=$(paste -d' ' <(tr ' ' '\n' <<<"${before[h]}") \
                                 <(netns_link_counters "$h" | tr ' ' '\n') |
                     awk '{printf "%d ", $2 - $1}')
  done
  return $rc
}
run_on_two_hosts() {  # NAME STEPS
  measure "$1" "${mpirun2[@]}" "$parallax" -v run job2/ "${flags[@]}" --log-every 10 \
    --steps "$2" --checkpoint-dir "$1" >"$1.log" 2>&1 || { cat "$1.log"; return 1; }
}
run_on_two_hosts short $short || fail "2 hosts, $short steps"
run_on_two_hosts long $long || fail "2 hosts, $long steps"

if [[ $(grep -c "(mpi, local rank [01]/2)" long.log) -eq 4 ]]; then
  pass "the 4 ranks see 2 hosts of 2"
else
  grep "local rank" long.log; fail "the ranks do not see 2 hosts of 2"
fi
echo "== 4 ranks on 2 hosts vs 4 ranks on one host, after $long steps"
if "$diff_tool" --tolerance 1e-6 "one@$long" "long@$long"; then
  pass "2 hosts (pushes aggregated per host) == one host (1e-6)"
else
  fail "2 hosts != one host"
fi

# --- 2. bytes crossing each host's link per step vs the prediction --------------------
# plan.yaml's bytes_per_step is what one rank sends per step (docs/strategy.md). What
# leaves a host per step, with N ranks in hosts of L (ranks of a host numbered together):
#  - all-reduce: the plan's allreduce.off_host_bytes_per_step (the dense layer goes
#    hierarchical here: 2 (H-1)/H of its bytes leave each host);
#  - ps: a rank's figure is its traffic to the N-1 other ranks, N-L of them elsewhere,
#    and the host has L such ranks: L (N-L)/(N-1) times one rank's figure (per-host
#    aggregation only sums rows that two ranks of a host push alike: rare here, 512 of
#    100000 rows per rank).
# Both directions carry the same: each host sends to the other what it receives.
# The prediction counts payload; the link also carries each packet's Ethernet, IPv4 and
# TCP headers (14 + 20 + 32 bytes with TCP timestamps, Linux's default), which depend on
# how the kernel packs the stream (more packets on a loaded machine). The payload is the
# link's bytes less 66 per packet; both are printed, the payload is compared.
off_host_bytes() {  # PLAN_YAML: the all-reduces' bytes leaving each host per step
  awk '/^  off_host_bytes_per_step: / { print $2 }' "$1"
}
# Per step between runs SHORT and LONG (LONG_STEPS - SHORT_STEPS steps apart), host H's
# link in direction DIR (tx|rx): "bytes packets payload ratio-to-PREDICTED".
link_per_step() {  # SHORT LONG STEPS H DIR PREDICTED
  local column
  column=$([[ $5 == tx ]] && echo 1 || echo 2)
  awk -v a="${link[$1,$4]:-0 0 0 0}" -v b="${link[$2,$4]:-0 0 0 0}" -v c="$column" \
    -v steps="$3" -v predicted="$6" 'BEGIN {
      split(a, short_run, " "); split(b, long_run, " ")
      bytes = (long_run[c] - short_run[c]) / steps
      packets = (long_run[c + 2] - short_run[c + 2]) / steps
      payload = bytes - 66 * packets
      printf "%.0f %.1f %.0f %.4f\n", bytes, packets, payload, payload / predicted }'
}
read -r ps_bytes < <(awk '
  /^  - name: /      { method = "" }
  /^    method: /    { method = $2 }
  /^    bytes_per_step: / { if (method == "ps") p += $2 }
  END { print p + 0 }' job2/plan.yaml)
allreduce_bytes=$(off_host_bytes job2/plan.yaml)
ranks=4
per_host=2
predicted=$(awk -v a="$allreduce_bytes" -v p="$ps_bytes" -v n=$ranks -v l=$per_host \
  'BEGIN { printf "%.0f", a + p * l * (n - l) / (n - 1) }')
echo "== bytes per step crossing each host's link, steps $short -> $long (predicted" \
  "$predicted: all-reduce $allreduce_bytes + ps $ps_bytes x $per_host x" \
  "$((ranks - per_host))/$((ranks - 1)))"
for h in 0 1; do
  for dir in tx rx; do
    read -r link_bytes packets payload ratio < <(link_per_step short long $((long - short)) \
      "$h" "$dir" "$predicted")
    echo "   host $h ${NETNS_ADDRS[h]} $dir: $link_bytes bytes/step in $packets packets/step," \
      "$payload of them payload: ${ratio}x the prediction"
    if awk -v r="$ratio" 'BEGIN { exit !(r >= 0.95 && r <= 1.05) }'; then
      pass "host $h $dir payload per step within 5 % of the prediction (${ratio}x)"
    else
      fail "host $h $dir payload per step: ${ratio}x the prediction"
    fi
  done
done

# --- 2b. hierarchical vs flat all-reduce, bytes per link -------------------------------
# The zoo mlp (2.6 MiB of gradients, all-reduced) on the 2 hosts of 2: the transform
# plans hierarchical by itself; the same job with --allreduce flat. Hierarchical's
# payload per step on each host's link is within 5 % of the plan's off_host_bytes_per_step
# (2 (H-1)/H of the gradients: once the gradients' bytes for 2 hosts), under 3/4 of
# flat's measured payload, and the two train to the same variables (1e-5; the bits
# differ: each host adds its own ranks first). Flat's figure is printed beside the
# model's (2 L (N-L)/N of the gradients, each rank's share to each other host's rank).
"$parallax" models export mlp --batch 0 -o mlp.pb >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster two_hosts.yaml -o mlp_h >/dev/null &&
  "$parallax" transform mlp.pb --cluster two_hosts.yaml --allreduce flat -o mlp_f >/dev/null ||
  exit 1
grep -q '^  algorithm: "hierarchical"' mlp_h/plan.yaml ||
  fail "the transform did not choose hierarchical for 2 hosts of 2"
mlp_short=10
mlp_long=60
for algorithm in h f; do
  for steps in $mlp_short $mlp_long; do
    measure "mlp_${algorithm}_$steps" netns_run 0 timeout 120 mpirun -np 4 --hostfile \
      mlp_h/hostfile "${NETNS_MPIRUN_FLAGS[@]}" "$parallax" run "mlp_$algorithm/" "${flags[@]}" \
      --log-every 10 --steps $steps --checkpoint-dir "mlp_${algorithm}_$steps" \
      >"mlp_${algorithm}_$steps.log" 2>&1 ||
      { cat "mlp_${algorithm}_$steps.log"; fail "mlp $algorithm, $steps steps"; }
  done
done
h_predicted=$(off_host_bytes mlp_h/plan.yaml)
f_model=$(off_host_bytes mlp_f/plan.yaml)
echo "== mlp all-reduce payload per step on each host's link, steps $mlp_short -> $mlp_long" \
  "(hierarchical predicted $h_predicted; flat modelled $f_model)"
for h in 0 1; do
  for dir in tx rx; do
    read -r _ _ h_payload h_ratio < <(link_per_step "mlp_h_$mlp_short" "mlp_h_$mlp_long" \
      $((mlp_long - mlp_short)) "$h" "$dir" "$h_predicted")
    read -r _ _ f_payload f_ratio < <(link_per_step "mlp_f_$mlp_short" "mlp_f_$mlp_long" \
      $((mlp_long - mlp_short)) "$h" "$dir" "$f_model")
    echo "   host $h $dir: hierarchical $h_payload (${h_ratio}x predicted), flat $f_payload" \
      "(${f_ratio}x modelled)"
    if awk -v r="$h_ratio" -v h="$h_payload" -v f="$f_payload" \
      'BEGIN { exit !(r >= 0.95 && r <= 1.05 && h < 0.75 * f) }'; then
      pass "host $h $dir: hierarchical within 5 % of the prediction (${h_ratio}x), under 3/4 of flat"
    else
      fail "host $h $dir: hierarchical ${h_ratio}x the prediction, $h_payload vs flat $f_payload"
    fi
  done
done
if "$diff_tool" --tolerance 1e-5 "mlp_h_$mlp_long@$mlp_long" "mlp_f_$mlp_long@$mlp_long"; then
  pass "mlp on 2 hosts: hierarchical == flat (1e-5)"
else
  fail "mlp on 2 hosts: hierarchical != flat"
fi

# --- 3. hosts bound at launch ---------------------------------------------------------
# A job planned on role names (role-a, role-b: no such machines) launched with a hostfile
# of namespace addresses in another order: role-a's ranks 0-1 run on host 2, role-b's on
# host 1, while launch and mpirun run on host 0. The ranks are where the hostfile says
# (the initial row scatter, tens of MB from rank 0, leaves host 2; host 0's link carries
# only the daemons' control messages) and train as the job planned on the addresses.
printf 'hosts:\n  - name: role-a\n    cpus: 2\n  - name: role-b\n    cpus: 2\n' >roles.yaml
"$parallax" transform emb.pb --cluster roles.yaml --strategy hybrid -o roles_job >/dev/null ||
  exit 1
printf '%s slots=2\n%s slots=2\n' "${NETNS_ADDRS[2]}" "${NETNS_ADDRS[1]}" >allocation
measure bound netns_run 0 timeout 120 "$parallax" launch roles_job/ --hostfile allocation \
  "${flags[@]}" --log-every 10 --steps $short --checkpoint-dir bound \
  -- "${NETNS_MPIRUN_FLAGS[@]}" "${ring[@]}" >bound.log 2>&1
rc=$?
read -r bound_tx0 _ < <(echo "${link[bound,0]:-0}")
read -r bound_tx1 _ < <(echo "${link[bound,1]:-0}")
read -r bound_tx2 _ < <(echo "${link[bound,2]:-0}")
echo "== role-a, role-b bound to ${NETNS_ADDRS[2]}, ${NETNS_ADDRS[1]}: exit $rc; bytes sent" \
  "by host 0 (launch) $bound_tx0, host 1 $bound_tx1, host 2 $bound_tx2"
if [[ $rc -eq 0 ]] && (( bound_tx2 > 10000000 && bound_tx1 > 1000000 &&
                         bound_tx0 < 1000000 )); then
  pass "launch --hostfile runs the plan's roles on the hosts given"
else
  tail -n 20 bound.log; fail "launch --hostfile: exit $rc, or the ranks ran elsewhere"
fi
echo "== job planned on roles, bound at launch vs planned on the addresses, after $short steps"
if "$diff_tool" --exact "short@$short" "bound@$short"; then
  pass "a job bound at launch trains as the job planned on its hosts (bit-identical)"
else
  fail "a job bound at launch differs from the job planned on its hosts"
fi

# --- 4. a whole host killed mid-job ---------------------------------------------------
# Through `parallax launch`, as a user runs it: the job fails with launch's exit status 3.
netns_run 0 timeout 120 "$parallax" launch job2/ "${flags[@]}" --steps 100000 --log-every 50 \
  -- "${NETNS_MPIRUN_FLAGS[@]}" >kill.log 2>&1 &
job_pid=$!
for _ in $(seq 1 600); do  # until the job has trained 100 steps (60 s at most)
  grep -q 'step 100/' kill.log && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.1
done
if grep -q 'step 100/' kill.log; then
  killed_at=$(now_ms)
  netns_kill_host 1
  wait "$job_pid"
  rc=$?
  elapsed=$(( $(now_ms) - killed_at ))
  # mpirun SIGKILLs the ranks it leaves; one may take a moment to be gone.
  for _ in $(seq 1 20); do
    left=$(ip netns pids "${NETNS_NAMES[0]}" | wc -l)
    (( left == 0 )) && break
    sleep 0.1
  done
  # OpenMPI names the lost daemon's host: "Remote daemon: [[J,0],1] on node ADDR".
  host_re="(node|host):? +(${NETNS_ADDRS[1]//./\\.}|${NETNS_NAMES[1]})( |$)"
  named=$(grep -E -m 1 "$host_re" kill.log)
  echo "== host 1 killed after step 100: exit status $rc after $elapsed ms; '$named';" \
    "processes left on host 0: $left"
  if [[ $rc -eq 3 && $elapsed -le 10000*slowdown && -n $named && $left -eq 0 ]] &&
     grep -q "^parallax: error: job2/: the job failed: mpirun exited with status" kill.log; then
    pass "a killed host ends the job within 10 s ($elapsed ms), naming it"
  else
    grep -v '^step' kill.log | tail -n 20
    fail "a killed host: exit $rc after $elapsed ms, naming line '$named', $left left"
  fi
else
  cat kill.log | tail -n 20
  kill "$job_pid" 2>/dev/null
  wait "$job_pid"
  fail "the job to kill a host of never reached step 100"
fi

# --- 5. a host lost for good: the job goes on, re-planned on the host left ----------------
lost_steps=160
timeout 120 mpirun -np 4 --oversubscribe --mca btl self,vader "$parallax" run job1/ "${flags[@]}" \
  --log-every 10 --steps $lost_steps --checkpoint-dir one_lost >one_lost.log 2>&1 ||
  { cat one_lost.log; fail "4 ranks on one host, $lost_steps steps"; }
netns_run 0 timeout 180 "$parallax" launch job2/ "${flags[@]}" --steps $lost_steps --log-every 10 \
  --checkpoint-dir lost --checkpoint-every 20 --restarts 1 --min-ranks 2 \
  -- "${NETNS_MPIRUN_FLAGS[@]}" "${ring[@]}" >lost.log 2>&1 &
job_pid=$!
for _ in $(seq 1 600); do  # until every rank has written step 40 (60 s at most)
  [[ -e lost/rank-3/checkpoint-40.safetensors ]] && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -e lost/rank-3/checkpoint-40.safetensors ]]; then
  netns_remove_host 1
  wait "$job_pid"
  rc=$?
  grep '^parallax: warning: restart' lost.log
  resumed=$(grep -o -m 1 'resumed from lost/rank-0/checkpoint-[0-9]*.safetensors (step [0-9]*)' lost.log)
  echo "== host 1 removed after step 40: exit $rc; $resumed"
  if [[ $rc -eq 0 && -n $resumed ]] &&
     grep -q "^parallax: warning: restart 1: host ${NETNS_ADDRS[1]} does not answer: " lost.log &&
     grep -q "^parallax: warning: restart 1: re-planned on 2 ranks (1 host) in .*/job2/restart-1; the global batch stays 128 (64 per rank on 2 ranks)$" lost.log; then
    pass "a host lost for good: re-planned on the host left and relaunched ($resumed)"
  else
    grep -v 'step [0-9]*/' lost.log | tail -n 30; fail "a host lost for good: exit $rc"
  fi
  echo "== 4 ranks on 2 hosts, then 2 ranks x 64 on host 0, vs 4 ranks x 32 on one host"
  if "$diff_tool" --tolerance 1e-6 "one_lost@$lost_steps" "lost@$lost_steps"; then
    pass "a job that lost a host trains on as the uninterrupted one (1e-6)"
  else
    fail "a job that lost a host differs from the uninterrupted one"
  fi
else
  tail -n 20 lost.log
  kill "$job_pid" 2>/dev/null
  wait "$job_pid"
  fail "the job to lose a host never wrote step 40"
fi

echo "$passed passed, $failed failed, $(( $(date +%s) - start )) s"
(( failed == 0 ))
