#!/usr/bin/env bash
# `parallax launch`: the plan's hosts bound at launch, and --restarts (docs/run.md#jobs):
#  1. one host: a 2-rank job planned on host 'node1' runs bound to localhost from -H,
#     --hostfile, SLURM_JOB_NODELIST (+ SLURM_TASKS_PER_NODE) and PBS_NODEFILE, with the
#     job's own hostfile deleted; every run's variables are bit-identical to the same job
#     planned on localhost (whose hostfile is deleted too: launch needs only plan.yaml);
#  2. two and three hosts: plans on hosts a, b (, c) run bound to hosts named px-a, px-b
#     (-H) and px-node1..3 (a SLURM node list with bracket ranges), which mpirun reaches
#     through an rsh agent that logs the host it is asked for and starts the daemon here:
#     mpirun really starts one daemon per bound name, and the variables match the same
#     ranks on one host within 1e-6 (a rank alone on its host runs more threads, which
#     sum in another order);
#  3. bad allocations and flags: one line naming the source and host, exit 2;
#  4. --sbatch writes the batch script (slurm_launch_test submits one to a real SLURM);
#  5. --restarts: a rank killed at step 25 of 40 (the test hook, first attempt only) is
#     relaunched once from step 20 and ends bit-identical to an uninterrupted run; a job
#     that keeps failing is relaunched K times, then fails with exit 3;
#  6. --restarts on fewer hosts: a 2-host job (px-a, px-b through the agent) whose rank on
#     px-b fails at step 25 while px-b stops answering (the agent refuses it as ssh would):
#     launch probes the hosts, re-plans the job on px-a alone (JOB/restart-1, --min-ranks
#     1), resumes from step 20 with the global batch kept (64 on one rank) and ends within
#     1e-6 of an uninterrupted 2-rank run; with a spare host (px-c) the same plan runs on
#     px-a and px-c instead, bit-identical; without --min-ranks it stops at once, exit 3,
#     naming the lost host, as it does for a job without cluster.yaml (nothing to re-plan
#     from); bad --min-ranks values are refused.
#   launch_test.sh PARALLAX CHECKPOINT_DIFF CLUSTER_YAML
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
cluster=$(realpath "$3")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-launch.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
# launch NAME ARGS...: `parallax launch ARGS`, output in NAME.log; FAIL when it fails.
launch() {
  local name=$1
  shift
  timeout 120 "$parallax" launch "$@" >"$name.log" 2>&1 || { tail -n 20 "$name.log"; fail "$name: exit $?"; }
}
same() {  # NAME DIFF_ARGS...: checkpoint_diff DIFF_ARGS passes
  local name=$1
  shift
  if "$diff_tool" "$@" >"$name.diff" 2>&1; then pass "$name"; else cat "$name.diff"; fail "$name"; fi
}
run_flags=(--synthetic --seed 3 --steps 10 --log-every 5)

"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster "$cluster" -o ref >/dev/null || exit 1
printf 'hosts:\n  - name: node1\n    cpus: 2\n' >node1.yaml
"$parallax" transform mlp.pb --cluster node1.yaml -o job >/dev/null || exit 1
# launch reads the hosts from the plan, the flags or the scheduler, never the job's hostfile
# (which launch.sh uses).
rm ref/hostfile job/hostfile

# --- 1. one host, from every source -------------------------------------------------------
launch ref ref/ "${run_flags[@]}" --checkpoint-dir ck_ref
"$parallax" launch job/ -H localhost:2 --dry-run >dry.out 2>&1
if grep -qx "#   host 0 (node1) -> localhost: ranks 0-1 (2 of 2 slots)" dry.out; then
  pass "the dry run shows the binding"
else
  cat dry.out; fail "the dry run's binding"
fi
launch h job/ -H localhost:2 "${run_flags[@]}" --checkpoint-dir ck_h
same "-H localhost:2: node1 bound to localhost, bit-identical" --exact ck_ref ck_h
printf 'localhost slots=4   # more room than needed\n' >hosts.txt
launch hostfile job/ --hostfile hosts.txt "${run_flags[@]}" --checkpoint-dir ck_hostfile
same "--hostfile: bound to localhost, bit-identical" --exact ck_ref ck_hostfile
SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=2 \
  launch slurm job/ --launcher mpirun "${run_flags[@]}" --checkpoint-dir ck_slurm
same "SLURM_JOB_NODELIST: bound to localhost, bit-identical" --exact ck_ref ck_slurm
printf 'localhost\nlocalhost\n' >pbs_nodes
PBS_NODEFILE=$PWD/pbs_nodes launch pbs job/ "${run_flags[@]}" --checkpoint-dir ck_pbs
same "PBS_NODEFILE: bound to localhost, bit-identical" --exact ck_ref ck_pbs
# No temporary hostfile is left behind.
leftover=$(ls "$TMPDIR" | grep '^parallax-hosts\.' || true)
[[ -z "$leftover" ]] && pass "the temporary hostfiles are removed" || fail "left: $leftover"

# --- 2. two and three hosts ----------------------------------------------------------------
# The rsh agent mpirun uses instead of ssh: logs the host, runs the daemon here, in a
# session directory of its own (daemons of one job sharing one race to create it).
printf '#!/bin/sh\necho "$1" >>%s/agent.log\nmkdir -p "$TMPDIR/$1" && export TMPDIR="$TMPDIR/$1" || exit 1\nshift\nexec sh -c "$*"\n' \
  "$PWD" >agent
chmod +x agent
# Each "host" is a daemon of its own, so the ranks talk over TCP (loopback). rtc ^hwloc:
# several daemons writing hwloc's shared topology on one machine can crash one.
agent_args=(--mca plm_rsh_agent "$PWD/agent" --mca rtc ^hwloc --mca btl self,tcp
            --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
printf 'hosts:\n  - name: a\n    cpus: 1\n  - name: b\n    cpus: 1\n' >two.yaml
printf 'hosts:\n  - name: a\n    cpus: 1\n  - name: b\n    cpus: 1\n  - name: c\n    cpus: 1\n' >three.yaml
printf 'hosts:\n  - name: localhost\n    cpus: 3\n' >local3.yaml
"$parallax" transform mlp.pb --cluster two.yaml -o job2 >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster three.yaml -o job3 >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster local3.yaml -o ref3 >/dev/null || exit 1
rm -f agent.log
launch two_hosts job2/ -H px-a,px-b "${run_flags[@]}" --checkpoint-dir ck_two -- "${agent_args[@]}"
[[ "$(sort agent.log | tr '\n' ' ')" == "px-a px-b " ]] && pass "2 hosts: mpirun started px-a and px-b" ||
  fail "2 hosts: the agent was asked for: $(cat agent.log)"
same "2 hosts bound from -H == 2 ranks on one host (1e-6)" --tolerance 1e-6 ck_ref ck_two
rm -f agent.log
SLURM_JOB_NODELIST='px-node[1-3]' SLURM_TASKS_PER_NODE='1(x3)' \
  launch three_hosts job3/ --launcher mpirun "${run_flags[@]}" --checkpoint-dir ck_three \
  -- "${agent_args[@]}"
[[ "$(sort agent.log | tr '\n' ' ')" == "px-node1 px-node2 px-node3 " ]] &&
  pass "3 hosts: mpirun started px-node1, px-node2 and px-node3" ||
  fail "3 hosts: the agent was asked for: $(cat agent.log)"
timeout 120 mpirun -np 3 --oversubscribe --mca btl self,vader "$parallax" run ref3/ \
  "${run_flags[@]}" --checkpoint-dir ck_ref3 >ref3.log 2>&1 || { cat ref3.log; fail "3 ranks, one host"; }
same "3 hosts bound from SLURM_JOB_NODELIST == 3 ranks on one host (1e-6)" --tolerance 1e-6 \
  ck_ref3 ck_three

# --- 3. bad allocations and flags ------------------------------------------------------------
refused() {  # NAME EXPECTED_LINE ENV... -- LAUNCH_ARGS...
  local name=$1 line=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$parallax" launch "$@" >refused.out 2>refused.err
  local rc=$?
  if [[ $rc -eq 2 && "$(cat refused.err)" == "$line" ]]; then
    pass "refused: $name"
  else
    cat refused.err; fail "refused: $name (exit $rc)"
  fi
}
refused "too few slots from SLURM" \
  "parallax: error: SLURM_JOB_NODELIST: host 'localhost' has 1 slot but plan host 0 (node1) has 2 ranks" \
  SLURM_JOB_NODELIST=localhost SLURM_TASKS_PER_NODE=1 -- job/ --launcher mpirun --dry-run
refused "too few hosts from PBS" \
  "parallax: error: PBS_NODEFILE=$PWD/pbs_nodes: 1 host (localhost) for the plan's 2 hosts; give as many hosts, or transform the job for 1 host" \
  PBS_NODEFILE="$PWD/pbs_nodes" -- job2/ --dry-run
refused "a bad SLURM node list" \
  "parallax: error: SLURM_JOB_NODELIST: 'node[3-1]': range 3-1 runs backwards" \
  SLURM_JOB_NODELIST='node[3-1]' SLURM_TASKS_PER_NODE=2 -- job/ --launcher mpirun --dry-run
refused "srun outside SLURM" \
  "parallax: error: --launcher srun: not inside a SLURM allocation (SLURM_JOB_NODELIST is not set); run \`parallax launch\` under salloc or sbatch (--sbatch writes a batch script)" \
  -u SLURM_JOB_NODELIST -- job/ --launcher srun --dry-run
refused "srun with -H" \
  "parallax: error: -H: --launcher srun runs the ranks on the nodes of the SLURM allocation (SLURM_JOB_NODELIST); --hostfile and -H are for --launcher mpirun" \
  -- job/ --launcher srun -H localhost:2 --dry-run
refused "an unknown launcher" "parallax: error: --launcher pbsdsh: expected mpirun, srun or auto" \
  -- job/ --launcher pbsdsh --dry-run
refused "--restarts without --checkpoint-dir" \
  "parallax: error: --restarts 2: a relaunch resumes from the newest complete checkpoint; pass --checkpoint-dir DIR among the run flags" \
  -- job/ --restarts 2 --synthetic --steps 3

# --- 4. --sbatch ------------------------------------------------------------------------------
"$parallax" launch job/ --sbatch job.sbatch --restarts 1 --synthetic --steps 5 \
  --checkpoint-dir ck -- --partition=debug >sbatch.out 2>&1 || { cat sbatch.out; fail "--sbatch"; }
want_exec="exec $parallax launch $PWD/job --launcher srun --restarts 1 --synthetic --steps 5 --checkpoint-dir ck -- --partition=debug"
if grep -qx '#SBATCH --nodes=1' job.sbatch && grep -qx '#SBATCH --ntasks-per-node=2' job.sbatch &&
   grep -qx "#SBATCH --chdir=$PWD" job.sbatch && grep -qx '#SBATCH --job-name=parallax-job' job.sbatch &&
   [[ "$(tail -n 1 job.sbatch)" == "$want_exec" ]] && sh -n job.sbatch &&
   [[ "$(cat sbatch.out)" == "job.sbatch: a batch script for 2 ranks; submit it with \`sbatch job.sbatch\`" ]]; then
  pass "--sbatch writes the plan's shape and the launch line"
else
  cat job.sbatch sbatch.out; fail "--sbatch script"
fi

# --- 5. --restarts ----------------------------------------------------------------------------
restart_flags=(--synthetic --seed 7 --steps 40 --log-every 10 --checkpoint-every 10)
launch straight ref/ "${restart_flags[@]}" --checkpoint-dir ck_straight
PARALLAX_TEST_FAIL_AT_STEP=1:25 launch restarted ref/ "${restart_flags[@]}" \
  --checkpoint-dir ck_restarted --restarts 2
grep '^parallax: warning: restart' restarted.log
if [[ $(grep -c '^parallax: warning: restart' restarted.log) -eq 1 ]] &&
   grep -q '^parallax: warning: restart 1 of 2: the job failed (mpirun exited with status [0-9]*); relaunching from the newest complete checkpoint, step 20 in ck_restarted$' restarted.log &&
   grep -q 'resumed from ck_restarted/rank-0/checkpoint-20.safetensors (step 20)' restarted.log; then
  pass "--restarts: one line, relaunched from step 20"
else
  tail -n 30 restarted.log; fail "--restarts: the restart line"
fi
same "--restarts: killed at step 25 and relaunched == uninterrupted (bit-identical)" --exact \
  ck_straight@40 ck_restarted@40
# A job that keeps failing (an mpirun that always fails) is relaunched K times, then fails.
mkdir -p fakebin
printf '#!/bin/sh\necho "rank 1 failed" >&2\nexit 1\n' >fakebin/mpirun
chmod +x fakebin/mpirun
PATH="$PWD/fakebin:$PATH" "$parallax" launch ref/ --synthetic --steps 3 --checkpoint-dir ck_never \
  --restarts 2 >never.out 2>never.err
rc=$?
if [[ $rc -eq 3 && $(grep -c '^parallax: warning: restart [12] of 2: the job failed (mpirun exited with status 1); relaunching from the init op (ck_never has no complete checkpoint yet)$' never.err) -eq 2 ]] &&
   [[ "$(tail -n 1 never.err)" == "parallax: error: ref/: the job failed after 2 restarts: mpirun exited with status 1 (the failing rank's error is above)" ]]; then
  pass "--restarts 2: relaunched twice, then exit 3"
else
  cat never.err; fail "--restarts of a job that keeps failing (exit $rc)"
fi

# --- 6. --restarts on fewer hosts -------------------------------------------------------------
# An agent under which px-b answers once (the job's start) and then is down, as ssh says.
cat >agent_down <<'AGENT'
#!/bin/sh
if [ "$1" = px-b ] && grep -qx px-b "$AGENT_LOG" 2>/dev/null; then
  echo "ssh: connect to host px-b port 22: Connection refused" >&2
  exit 255
fi
echo "$1" >>"$AGENT_LOG"
mkdir -p "$TMPDIR/$1" && export TMPDIR="$TMPDIR/$1" || exit 1
shift
exec sh -c "$*"
AGENT
chmod +x agent_down
down_args=(--mca plm_rsh_agent "$PWD/agent_down" "${agent_args[@]:3}")
"$parallax" models export mlp --widths 64 --batch 0 -o mlp_open.pb >/dev/null || exit 1
"$parallax" transform mlp_open.pb --cluster two.yaml -o open2 >/dev/null || exit 1
"$parallax" transform mlp_open.pb --cluster "$cluster" -o open_ref >/dev/null || exit 1
shrink_flags=(--synthetic --seed 7 --batch 32 --steps 40 --log-every 10 --checkpoint-every 10)
launch open_ref open_ref/ "${shrink_flags[@]}" --checkpoint-dir ck_open_ref
rm -f down.log
AGENT_LOG=$PWD/down.log PARALLAX_TEST_FAIL_AT_STEP=1:25 launch shrunk open2/ -H px-a,px-b \
  "${shrink_flags[@]}" --checkpoint-dir ck_shrunk --restarts 1 --min-ranks 1 -- "${down_args[@]}"
grep '^parallax: warning: restart' shrunk.log
if grep -qx 'parallax: warning: restart 1: host px-b does not answer: the probe ended with exit status 255: ssh: connect to host px-b port 22: Connection refused' shrunk.log &&
   grep -qx "parallax: warning: restart 1: re-planned on 1 rank (1 host) in $PWD/open2/restart-1; the global batch stays 64 (64 per rank on 1 rank)" shrunk.log &&
   grep -q 'resumed from ck_shrunk/rank-0/checkpoint-20.safetensors (step 20)' shrunk.log &&
   [[ $(grep -c '^  - {rank: ' open2/restart-1/plan.yaml) -eq 1 ]] &&
   [[ ! -e open2/restart-1/rank-1.pb && "$(sort down.log | tr '\n' ' ')" == "px-a px-a px-a px-b " ]]; then
  pass "--min-ranks 1: px-b lost, re-planned on px-a, relaunched from step 20 with batch 64"
else
  tail -n 30 shrunk.log; cat down.log; fail "--min-ranks: the relaunch on fewer hosts"
fi
same "min-ranks: 2 ranks to step 25, 1 rank x 64 from step 20 == 2 ranks x 32 (1e-6)" \
  --tolerance 1e-6 ck_open_ref@40 ck_shrunk@40
# With a spare host in the allocation, px-c takes px-b's place: the same plan, no re-plan.
launch spare_ref open2/ -H px-a,px-b "${shrink_flags[@]}" --checkpoint-dir ck_spare_ref \
  -- "${agent_args[@]}"
rm -f down.log
AGENT_LOG=$PWD/down.log PARALLAX_TEST_FAIL_AT_STEP=1:25 launch spare open2/ -H px-a,px-b,px-c \
  "${shrink_flags[@]}" --checkpoint-dir ck_spare --restarts 1 -- "${down_args[@]}"
if grep -qx 'parallax: warning: restart 1: host px-b does not answer: the probe ended with exit status 255: ssh: connect to host px-b port 22: Connection refused' spare.log &&
   ! grep -q 're-planned' spare.log && [[ ! -e open2/restart-2 ]] &&
   [[ "$(sort down.log | tr '\n' ' ')" == "px-a px-a px-a px-b px-c " ]]; then
  pass "a spare host takes the lost one's place: the same plan on px-a and px-c"
else
  tail -n 30 spare.log; cat down.log; fail "a spare host in place of the lost one"
fi
same "spare host: relaunched on px-a, px-c == uninterrupted on px-a, px-b (bit-identical)" \
  --exact ck_spare_ref@40 ck_spare@40
rm -f down.log
AGENT_LOG=$PWD/down.log PARALLAX_TEST_FAIL_AT_STEP=1:5 timeout 120 "$parallax" launch open2/ \
  -H px-a,px-b "${shrink_flags[@]}" --checkpoint-dir ck_stopped --restarts 1 -- "${down_args[@]}" \
  >stopped.out 2>stopped.err
rc=$?
if [[ $rc -eq 3 && "$(tail -n 1 stopped.err)" == "parallax: error: open2/: the job failed and cannot be relaunched: hosts lost: px-b; the 1 rank the hosts left can run is fewer than --min-ranks 2 (--min-ranks M lets it go on with fewer ranks)" ]]; then
  pass "a lost host without --min-ranks: no relaunch, exit 3, the host named"
else
  tail -n 5 stopped.err; fail "a lost host without --min-ranks (exit $rc)"
fi
# A job written before transform kept cluster.yaml cannot be re-planned: exit 3, one line.
cp -r open2 old2 && rm -r old2/cluster.yaml old2/restart-1
rm -f down.log
AGENT_LOG=$PWD/down.log PARALLAX_TEST_FAIL_AT_STEP=1:5 timeout 120 "$parallax" launch old2/ \
  -H px-a,px-b "${shrink_flags[@]}" --checkpoint-dir ck_old --restarts 1 --min-ranks 1 \
  -- "${down_args[@]}" >old.out 2>old.err
rc=$?
if [[ $rc -eq 3 && "$(tail -n 1 old.err)" == "parallax: error: old2/: the job failed and cannot be relaunched: $PWD/old2/cluster.yaml: missing, so the job cannot be re-planned on fewer hosts (jobs written by an earlier parallax transform lack it: transform the graph again)" && ! -e old2/restart-1 ]]; then
  pass "a job without cluster.yaml: not re-planned, exit 3, the file named"
else
  tail -n 5 old.err; fail "a job without cluster.yaml (exit $rc)"
fi
refused "--min-ranks without --restarts" \
  "parallax: error: --min-ranks 1: it says how far a relaunch may shrink the job; pass --restarts K too" \
  -- open2/ --min-ranks 1 --synthetic --dry-run
refused "--min-ranks above the job's ranks" \
  "parallax: error: --min-ranks 3: expected 1 .. 2, the job's ranks" \
  -- open2/ --restarts 1 --min-ranks 3 --checkpoint-dir ck --synthetic --dry-run
refused "--min-ranks under srun" \
  "parallax: error: --min-ranks 1: a relaunch on fewer hosts needs --launcher mpirun (SLURM ends a job whose node fails)" \
  SLURM_JOB_ID=1 SLURM_JOB_NODELIST=localhost -- open2/ --restarts 1 --min-ranks 1 \
  --checkpoint-dir ck --synthetic --dry-run

echo "$passed passed, $failed failed"
(( failed == 0 ))
