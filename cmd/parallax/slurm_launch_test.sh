#!/usr/bin/env bash
# `parallax launch` in a real SLURM on this machine (docs/run.md#jobs, "Schedulers"):
# Debian's slurmctld and slurmd with munge, started by this test in a private directory
# (its own slurm.conf, state directories, munge key and socket, free ports) and always
# stopped (trap); reported as SKIP where they are missing or cannot start.
#  1. a 2-rank job launched inside `salloc` (--launcher auto: srun, direct launch with
#     PMIx) ends with variables bit-identical to the same job under mpirun; the dry run
#     shows the plan's host bound to the node of SLURM_JOB_NODELIST and the srun line;
#  2. --launcher mpirun inside the allocation: bound to SLURM's node, bit-identical too;
#  3. a rank killed under srun (PARALLAX_TEST_FAIL_AT_STEP) ends the job within 10 s of
#     the kill, exit 3, srun naming the task;
#  4. the script of `parallax launch --sbatch FILE`, submitted with `sbatch --wait`, runs
#     the job to the same variables;
#  5. --restarts under srun: a rank killed at step 15 of 20 (first attempt only) is
#     relaunched from step 10 and ends bit-identical.
#   slurm_launch_test.sh PARALLAX CHECKPOINT_DIFF CLUSTER_YAML
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
cluster=$(realpath "$3")
skip() { echo "SKIP slurm_launch_test: $1"; exit 0; }
for tool in slurmctld slurmd munged srun salloc sbatch scontrol sinfo python3; do
  command -v "$tool" >/dev/null 2>&1 ||
    PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool is not installed (scripts/setup.sh installs SLURM and munge)"
done
export PATH="$PATH:/usr/sbin:/sbin"
[[ $(id -u) -eq 0 ]] || skip "slurmd must run as root to start jobs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Short private paths: munge's and OpenMPI's unix sockets live under them.
dir=$(mktemp -d /tmp/parallax-slurm.XXXXXX)
export TMPDIR=$dir/tmp
mkdir -p "$TMPDIR" "$dir/munge" "$dir/ctld" "$dir/spool" "$dir/log" "$dir/w"
daemons=()
teardown() {
  if [[ -n "${SLURM_CONF:-}" ]]; then  # jobs left by a failed check
    squeue -h -o %i 2>/dev/null | xargs -r scancel --quiet 2>/dev/null
  fi
  for pid in "${daemons[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${daemons[@]}"; do  # up to 5 s each, then for good
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$dir"
}
trap teardown EXIT
started_or_skip() {  # NAME LOG: SKIP with the log's tail when the daemon did not start
  echo "--- $2"; tail -n 15 "$2" 2>/dev/null
  skip "$1 did not start"
}

# munge: its own key and socket.
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$dir/munge/munge.key"
socket=$dir/munge/socket
munged --foreground --force --key-file="$dir/munge/munge.key" --socket="$socket" \
  --pid-file="$dir/munge/pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  >"$dir/log/munged.out" 2>&1 &
daemons+=($!)
for _ in $(seq 1 50); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || started_or_skip munged "$dir/log/munged.log"

# slurm.conf: this machine as the only node, on free ports.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
node=$(hostname -s)
export SLURM_CONF=$dir/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=parallax-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/ctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
daemons+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
daemons+=($!)
state=""
for _ in $(seq 1 150); do  # up to 15 s
  state=$(sinfo -h -N -o %t 2>/dev/null | head -n 1)
  [[ $state == idle ]] && break
  sleep 0.1
done
[[ $state == idle ]] || started_or_skip "SLURM (node state '$state')" "$dir/log/slurmctld.log"
echo "SLURM up: node $node, slurmctld on port $ctld_port, slurmd on $slurmd_port"

cd "$dir/w" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
same() {  # NAME DIFF_ARGS...
  local name=$1
  shift
  if "$diff_tool" "$@" >diff.out 2>&1; then pass "$name"; else cat diff.out; fail "$name"; fi
}
in_allocation() { timeout 120 salloc --quiet -N1 -n2 "$@"; }
run_flags=(--synthetic --seed 5 --steps 20 --log-every 10)

"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster "$cluster" -o job >/dev/null || exit 1
env -u SLURM_CONF timeout 120 "$parallax" launch job/ --launcher mpirun "${run_flags[@]}" \
  --checkpoint-dir ck_mpirun >mpirun.log 2>&1 || { cat mpirun.log; fail "the job under mpirun"; }

# --- 1. srun inside an allocation --------------------------------------------------------
in_allocation "$parallax" launch job/ --dry-run >dry.out 2>&1
want_binding="#   host 0 (localhost) -> $node: ranks 0-1 (2 of 2 slots)"
if grep -qx "# hosts from SLURM_JOB_NODELIST, bound in order (plan host -> host: ranks)" dry.out &&
   grep -qx -- "$want_binding" dry.out &&
   grep -q -- "^srun --mpi=pmix --nodes=1 --ntasks=2 --ntasks-per-node=2 --distribution=block --nodelist=$node " dry.out; then
  pass "the dry run in an allocation: bound to $node, srun"
else
  cat dry.out; fail "the dry run in an allocation"
fi
in_allocation "$parallax" launch job/ "${run_flags[@]}" --checkpoint-dir ck_srun >srun.log 2>&1 ||
  { cat srun.log; fail "the job under srun"; }
grep '^0: trained' srun.log
same "srun == mpirun (bit-identical)" --exact ck_mpirun ck_srun

# --- 2. mpirun inside the allocation ----------------------------------------------------------
in_allocation "$parallax" launch job/ --launcher mpirun "${run_flags[@]}" --checkpoint-dir ck_in \
  >in.log 2>&1 || { cat in.log; fail "mpirun inside the allocation"; }
same "mpirun inside the allocation == mpirun (bit-identical)" --exact ck_mpirun ck_in

# --- 3. a rank killed under srun -----------------------------------------------------------------
start=$(now_ms)
PARALLAX_TEST_FAIL_AT_STEP=1:50 in_allocation "$parallax" launch job/ --synthetic --steps 100000 \
  --log-every 1000 >killed.log 2>&1
rc=$?
end=$(now_ms)
killed_at=$(grep -Eo 'PARALLAX_TEST_FAIL_AT_STEP: .* at unix ms [0-9]+' killed.log | grep -Eo '[0-9]+$' | head -n 1)
elapsed=$(( end - ${killed_at:-$start} ))
echo "== a rank killed under srun: exit $rc, the job ended $elapsed ms after the kill"
tail -n 8 killed.log
if [[ $rc -eq 3 && -n $killed_at ]] && (( elapsed <= 10000 )) &&
   grep -q "srun: error: $node: task 1: Killed" killed.log &&
   grep -q "^parallax: error: job/: the job failed: srun exited with status" killed.log; then
  pass "a killed rank ends the srun job: exit 3 within 10 s ($elapsed ms), task 1 named"
else
  fail "a killed rank under srun"
fi

# --- 4. --sbatch ---------------------------------------------------------------------------------
"$parallax" launch job/ --sbatch job.sbatch "${run_flags[@]}" --checkpoint-dir ck_sbatch \
  >sbatch_write.log 2>&1 || { cat sbatch_write.log; fail "--sbatch"; }
timeout 120 sbatch --wait --quiet --output="$PWD/sbatch.log" job.sbatch
rc=$?
if [[ $rc -eq 0 ]]; then
  same "an --sbatch script run by sbatch --wait == mpirun (bit-identical)" --exact ck_mpirun ck_sbatch
else
  cat job.sbatch sbatch.log; fail "sbatch --wait: exit $rc"
fi

# --- 5. --restarts under srun ----------------------------------------------------------------------
PARALLAX_TEST_FAIL_AT_STEP=1:15 in_allocation "$parallax" launch job/ "${run_flags[@]}" \
  --checkpoint-every 10 --checkpoint-dir ck_restart --restarts 1 >restart.log 2>&1
rc=$?
grep '^parallax: warning: restart' restart.log
if [[ $rc -eq 0 ]] &&
   grep -q '^parallax: warning: restart 1 of 1: the job failed (srun exited with status [0-9]*); relaunching from the newest complete checkpoint, step 10 in ck_restart$' restart.log; then
  same "--restarts under srun: killed at 15, relaunched from 10 == mpirun (bit-identical)" \
    --exact ck_mpirun ck_restart@20
else
  tail -n 30 restart.log; fail "--restarts under srun: exit $rc"
fi

echo "$passed passed, $failed failed"
(( failed == 0 ))
