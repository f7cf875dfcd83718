#!/usr/bin/env bash
# Faults in a running 2-rank job (the zoo mlp, widths 64, all-reduced; docs/run.md#jobs,
# "Failures"), each checked and printed with its figures: how long the job took to end
# after the fault (detection), the training steps lost (from the last step trained to
# the step resumed from) and the bytes lost (0: the checkpoint resumed from reads back
# and continues bit-identical to an uninterrupted run).
#  1. a rank killed (SIGKILL) before a random step: `parallax launch` exits 3 within
#     10 s, mpirun names the rank;
#  2. a rank stopped (SIGSTOP), (a) before a random step with the default heartbeat: the
#     next rank names it and the job ends within 30 s, exit 3, while the waiting rank
#     uses well under a core (its CPU time over 5 s, from /proc: < 0.1, measured 0.02 to
#     0.04; a rank polling MPI uses 1); (b) from outside
#     at a random moment, also inside a transfer (heartbeat timeout 5 s, CPU over 3 s):
#     the same, and the stopped rank, continued by mpirun's kill, accuses nobody;
#  3. a checkpoint write that fails half-way (a size-limited tmpfs, mounted here: SKIP
#     when mounting is impossible): one line naming the file, exit 3, no temporary file
#     left, the previous checkpoint intact and resumable; one process (no launcher) on a
#     full disk exits 3 too (the run failed; it is not bad input);
#  4. a corrupt newest checkpoint (a flipped byte on rank 0; then a truncated file on
#     rank 1): --resume warns naming the file and resumes from the step before; rank
#     files that read back whole but come from different runs: after the resume the ranks
#     compare their replicated variables, and the rank that differs names one (exit 3);
#  5. a data file missing on rank 1 only (rank 1 runs in its own mount namespace with an
#     empty directory over the data: SKIP when unshare or mount is impossible): one line
#     naming the rank and the file, exit 3, within 10 s;
#  6. edges of --resume: the newest complete step is judged by each step's own job size
#     (a 3-rank job's incomplete step above a 2-rank job's complete one); a rank without
#     any checkpoint file while the other has files is an error naming the rank and its
#     directory, also with --resume=if-exists (which used to start from the init op).
# The ranks and steps of 1 and 2 are random per run; PARALLAX_FAULT_SEED=N repeats a run.
# About 70 s on 2 idle cores.
#   fault_test.sh PARALLAX CHECKPOINT_DIFF CLUSTER_YAML
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
cluster=$(realpath "$3")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-fault.XXXXXX)
export TMPDIR
work=$TMPDIR/w
cleanup() {
  mountpoint -q "$work/small" 2>/dev/null && umount "$work/small"
  rm -rf "$TMPDIR"
}
trap cleanup EXIT
mkdir -p "$work" && cd "$work" || exit 1
seed=${PARALLAX_FAULT_SEED:-$(( $(date +%s%N) / 1000 % 1000000 ))}
RANDOM=$seed
echo "fault_test: seed $seed (PARALLAX_FAULT_SEED=$seed repeats these faults)"
passed=0
failed=0
skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "SKIP $1"; skipped=$((skipped + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Time bounds are scaled by PARALLAX_TEST_SLOWDOWN (set by the sanitizer build, .bazelrc).
slowdown=${PARALLAX_TEST_SLOWDOWN:-1}
ticks_per_s=$(getconf CLK_TCK)

"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster "$cluster" -o job >/dev/null || exit 1
flags=(--synthetic --seed 7 --log-every 1000)
every=20
# The uninterrupted run every recovery is compared with: a checkpoint every 20 steps, all
# kept.
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 300 --checkpoint-dir ref \
  --checkpoint-every "$every" --keep-checkpoints 0 >ref.log 2>&1 ||
  { cat ref.log; echo "FAIL the uninterrupted reference run"; exit 1; }

# The time the test hook printed for its fault (unix ms), from a log.
hook_ms() { grep -Eo 'PARALLAX_TEST_FAIL_AT_STEP: .* at unix ms [0-9]+' "$1" | grep -Eo '[0-9]+$' | head -n 1; }
# The pid of rank R of the job whose ranks write to checkpoint directory DIR.
rank_pid() {  # DIR R
  local pid
  for pid in $(pgrep -f -- "--checkpoint-dir $1( |$)"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return
    fi
  done
}
# CPU time (user + system) of a process in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
# Waits until FILE has a line matching REGEX (60 s at most).
wait_for_line() {  # FILE REGEX
  for _ in $(seq 1 600); do
    grep -Eq "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# Resumes the job in DIR after a fault during step LAST+1 (LAST: the last step trained):
# it must resume from the newest complete checkpoint, step EXPECTED, and step EXPECTED+20
# must be bit-identical to the uninterrupted run's. Prints the steps and bytes lost.
check_recovery() {  # NAME DIR LAST EXPECTED
  local name=$1 dir=$2 last=$3 expected=$4
  local target=$((expected + every))
  timeout 120 "$parallax" launch job/ "${flags[@]}" --steps "$target" --checkpoint-dir "$dir" \
    --checkpoint-every "$every" --resume >"$dir.resume.log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]] &&
     grep -q "resumed from $dir/rank-0/checkpoint-$expected.safetensors (step $expected)" \
       "$dir.resume.log" &&
     "$diff_tool" --exact "ref@$target" "$dir@$target" >"$dir.diff.log" 2>&1; then
    echo "   figure: $name: steps lost $((last - expected)) (trained to step $last, resumed" \
         "from step $expected), bytes lost 0 (step $target bit-identical to the" \
         "uninterrupted run)"
    pass "$name: resumed from step $expected, bit-identical at step $target"
  else
    grep -v '<stdout>' "$dir.resume.log" | tail -n 8
    cat "$dir.diff.log" 2>/dev/null | tail -n 3
    fail "$name: the resume (exit $rc) did not continue from step $expected bit-identically"
  fi
}

# --- 1. a rank killed before a random step ----------------------------------------------
rank=$((RANDOM % 2))
step=$((30 + RANDOM % 200))
start=$(now_ms)
PARALLAX_TEST_FAIL_AT_STEP=$rank:$step timeout 120 "$parallax" launch job/ "${flags[@]}" \
  --steps 100000 --checkpoint-dir kill --checkpoint-every "$every" >kill.log 2>&1
rc=$?
killed_at=$(hook_ms kill.log)
elapsed=$(( $(now_ms) - ${killed_at:-$start} ))
echo "== 1. rank $rank killed before step $step: exit $rc, $elapsed ms after the kill"
echo "   figure: killed rank: the job ended $elapsed ms after the kill"
if [[ $rc -eq 3 && -n "$killed_at" && $elapsed -le 10000*slowdown ]] &&
   grep -Eq "process rank $rank .*(signal 9|Killed)" kill.log; then
  pass "a rank killed: exit 3 within 10 s, rank $rank named"
else
  grep -v '<stdout>' kill.log | tail -n 12
  fail "a rank killed (rank $rank, step $step)"
fi
check_recovery "killed rank" kill $((step - 1)) $(( (step - 1) / every * every ))

# --- 2. a rank stopped --------------------------------------------------------------------
# The waiting rank's CPU time, in cores, over SECONDS from START_S after the stop (before
# the heartbeat ends the job); "none" when it is not there for the whole window.
waiting_cpu() {  # DIR WAITING_RANK STOP_MS START_S SECONDS
  local pid a b
  pid=$(rank_pid "$1" "$2")
  sleep "$(awk -v t="$(( $3 + $4 * 1000 - $(now_ms) ))" 'BEGIN {print (t > 0 ? t / 1000 : 0)}')"
  a=$(cpu_ticks "$pid")
  sleep "$5"
  b=$(cpu_ticks "$pid")
  if [[ -z "$pid" || ! -e /proc/$pid ]]; then echo none; return; fi
  awk -v d="$((b - a))" -v hz="$ticks_per_s" -v s="$5" 'BEGIN {printf "%.3f", d / hz / s}'
}
# (a) SIGSTOP before a random step (test hook), the default heartbeat (20 s).
rank=$((RANDOM % 2))
step=$((30 + RANDOM % 200))
start=$(now_ms)
PARALLAX_TEST_FAIL_AT_STEP=$rank:$step:stop timeout 120 "$parallax" launch job/ "${flags[@]}" \
  --steps 100000 --checkpoint-dir "$work/stop" --checkpoint-every "$every" >stop.log 2>&1 &
launch_pid=$!
cpu=none
if wait_for_line stop.log 'stopping this rank before step'; then
  cpu=$(waiting_cpu "$work/stop" $((1 - rank)) "$(hook_ms stop.log)" 2 5)
fi
wait "$launch_pid"
rc=$?
stopped_at=$(hook_ms stop.log)
elapsed=$(( $(now_ms) - ${stopped_at:-$start} ))
left=$(pgrep -f -- "--checkpoint-dir $work/stop( |$)" | wc -l)
echo "== 2a. rank $rank stopped before step $step: exit $rc, $elapsed ms after the stop;" \
     "the waiting rank used $cpu of a core"
echo "   figure: stopped rank: the job ended $elapsed ms after the stop (heartbeat timeout" \
     "20 s); the waiting rank used $cpu of a core meanwhile"
if [[ $rc -eq 3 && -n "$stopped_at" && $elapsed -le 30000*slowdown && $left -eq 0 ]] &&
   grep -q "parallax: error: rank $((1 - rank)): no heartbeat from rank $rank for 2[0-9]\.[0-9] s (PARALLAX_HEARTBEAT_TIMEOUT_S=20): it is stopped (SIGSTOP, a debugger) or frozen" stop.log &&
   [[ $cpu != none ]] && awk -v c="$cpu" 'BEGIN {exit !(c + 0 < 0.1)}'; then
  pass "a rank stopped: the heartbeat names it, exit 3 within 30 s, the waiting rank idle"
else
  grep -v '<stdout>' stop.log | tail -n 12
  fail "a rank stopped (rank $rank, step $step; $left processes left)"
fi
check_recovery "stopped rank" stop $((step - 1)) $(( (step - 1) / every * every ))

# (b) SIGSTOP from outside at a random moment of training (inside a transfer as likely as
# not), heartbeat timeout 5 s.
rank=$((RANDOM % 2))
PARALLAX_HEARTBEAT_TIMEOUT_S=5 timeout 120 "$parallax" launch job/ "${flags[@]}" \
  --steps 1000000 --checkpoint-dir "$work/xstop" --checkpoint-every 1000 >xstop.log 2>&1 &
launch_pid=$!
cpu=none
stopped_at=
if wait_for_line xstop.log 'training steps 0 ->'; then
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  pid=$(rank_pid "$work/xstop" "$rank")
  if [[ -n "$pid" ]]; then
    kill -STOP "$pid"
    stopped_at=$(now_ms)
    cpu=$(waiting_cpu "$work/xstop" $((1 - rank)) "$stopped_at" 1 3)
  fi
fi
wait "$launch_pid"
rc=$?
elapsed=$(( $(now_ms) - ${stopped_at:-0} ))
left=$(pgrep -f -- "--checkpoint-dir $work/xstop( |$)" | wc -l)
echo "== 2b. rank $rank stopped from outside: exit $rc, $elapsed ms after the stop; the" \
     "waiting rank used $cpu of a core"
echo "   figure: rank stopped from outside: the job ended $elapsed ms after the stop" \
     "(heartbeat timeout 5 s); the waiting rank used $cpu of a core meanwhile"
if [[ $rc -eq 3 && -n "$stopped_at" && $elapsed -le 10000*slowdown && $left -eq 0 ]] &&
   grep -q "parallax: error: rank $((1 - rank)): no heartbeat from rank $rank for [5-9]\.[0-9] s" xstop.log &&
   ! grep -q "no heartbeat from rank $((1 - rank))" xstop.log &&
   [[ $cpu != none ]] && awk -v c="$cpu" 'BEGIN {exit !(c + 0 < 0.1)}'; then
  pass "a rank stopped from outside: named, exit 3 within 10 s, the waiting rank idle"
else
  grep -v '<stdout>' xstop.log | tail -n 12
  fail "a rank stopped from outside (rank $rank; $left processes left)"
fi

# --- 3. a checkpoint write that fails half-way --------------------------------------------
# Rank 0's directory on a tmpfs of 2.5 of its files (rank 1's, linked to the disk, cannot
# take the space first): steps 20 and 40 fit, the write of step 60 runs out of space
# half-way.
file_bytes=$(stat -c %s ref/rank-0/checkpoint-20.safetensors)
mkdir -p small rank1_disk
if mount -t tmpfs -o "size=$(( (file_bytes * 5 / 2 + 4095) / 4096 * 4096 ))" tmpfs small \
     2>mount.err; then
  mkdir -p small/ck
  ln -s "$work/rank1_disk" small/ck/rank-1
  start=$(now_ms)
  timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 100000 --checkpoint-dir small/ck \
    --checkpoint-every "$every" >disk.log 2>&1
  rc=$?
  elapsed=$(( $(now_ms) - start ))
  errors=$(grep -Ec '^(\[1,[0-9]+\]<stderr>:)?parallax: error: rank' disk.log)
  line=$(grep -E '^(\[1,[0-9]+\]<stderr>:)?parallax: error: rank' disk.log | head -n 1)
  # The failed write's own temporary file (rank 0's) is removed. Rank 1 is ended by the
  # abort, possibly in the middle of its own write: its temporary file may stay until the
  # rank's next checkpoint removes it (resume ignores it), so it is not counted.
  leftovers=$(ls small/ck/rank-0 | grep -c '\.tmp')
  echo "== 3. disk full while writing step 60: exit $rc after $elapsed ms: $line"
  echo "   figure: checkpoint write failed: the job ended $elapsed ms after it started" \
       "(step 60's write failed on rank 0); $leftovers temporary files left"
  if [[ $rc -eq 3 && $errors -eq 1 && $leftovers -eq 0 ]] &&
     [[ "$line" == *"parallax: error: rank 0: small/ck/rank-0/checkpoint-60.safetensors: write failed: No space left on device" ]] &&
     "$parallax" checkpoint ls small/ck/rank-0/checkpoint-40.safetensors >/dev/null 2>&1; then
    pass "a checkpoint write failing half-way: one line naming the file, exit 3, step 40 intact"
  else
    grep -v '<stdout>' disk.log | tail -n 12
    fail "a checkpoint write failing half-way"
  fi
  cp -rL small/ck disk
  umount small
  check_recovery "checkpoint write failed" disk 60 40
  # One process, no launcher, on the same small disk: the run failed (exit 3), which is
  # not bad input (exit 2).
  mount -t tmpfs -o "size=$(( (file_bytes * 3 / 2 + 4095) / 4096 * 4096 ))" tmpfs small
  timeout 120 "$parallax" run mlp.pb "${flags[@]}" --steps 100000 --checkpoint-dir small/one \
    --checkpoint-every "$every" >one_disk.log 2>&1
  rc=$?
  line=$(grep '^parallax: error:' one_disk.log)
  umount small
  echo "== 3b. one process, disk full while writing step 40: exit $rc: $line"
  if [[ $rc -eq 3 && "$line" == "parallax: error: small/one/checkpoint-40.safetensors: write failed: No space left on device" ]]; then
    pass "one process on a full disk: one line naming the file, exit 3"
  else
    tail -n 5 one_disk.log; fail "one process on a full disk (exit $rc)"
  fi
else
  skip "a checkpoint write failing half-way: cannot mount a tmpfs here ($(head -n 1 mount.err))"
fi

# --- 4. a corrupt newest checkpoint --------------------------------------------------------
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 100 --checkpoint-dir bad \
  --checkpoint-every "$every" >bad.log 2>&1 || { cat bad.log; fail "run with checkpoints"; }
# One bit of rank 0's step 100 flipped (the file's last byte is a tensor's).
python3 -c "
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(-1, 2); b = f.read(1); f.seek(-1, 2); f.write(bytes([b[0] ^ 0x10]))
" bad/rank-0/checkpoint-100.safetensors
check_recovery "corrupt newest checkpoint (a flipped bit)" bad 100 80
if grep -q "rank 0: bad/rank-0/checkpoint-100.safetensors: corrupt: tensor '[^']*': its CRC-32C is [0-9a-f]*, the header says '[0-9a-f]*' (bytes changed after the file was written); skipping step 100" bad.resume.log; then
  pass "the corrupt checkpoint is named in a warning"
else
  grep -v '<stdout>' bad.resume.log | tail -n 5
  fail "no warning names the corrupt checkpoint"
fi
# Rank 1's newest (step 100, written by the resume) cut in half.
truncate -s $(( $(stat -c %s bad/rank-1/checkpoint-100.safetensors) / 2 )) \
  bad/rank-1/checkpoint-100.safetensors
mv bad.resume.log bad.resume1.log
check_recovery "corrupt newest checkpoint (truncated)" bad 100 80
if grep -q "rank 1: bad/rank-1/checkpoint-100.safetensors: .*; skipping step 100" bad.resume.log; then
  pass "the truncated checkpoint is named in a warning"
else
  grep -v '<stdout>' bad.resume.log | tail -n 5
  fail "no warning names the truncated checkpoint"
fi

# Files that each read back whole but disagree: every rank wrote its own copy of every
# variable (--checkpoint-every-rank), and rank 1's step-40 file is replaced by the one of
# another run (another seed). No checksum can see it; after the resume the ranks compare
# their replicated variables and rank 1 names the first that differs from rank 0's.
for run in mixed other; do
  seed_flag=(--seed 7)
  [[ $run == other ]] && seed_flag=(--seed 8)
  timeout 120 "$parallax" launch job/ --synthetic "${seed_flag[@]}" --log-every 1000 --steps 40 \
    --checkpoint-dir "$run" --checkpoint-every-rank >"$run.log" 2>&1 ||
    { cat "$run.log"; fail "every-rank checkpoints ($run)"; }
done
cp other/rank-1/checkpoint-40.safetensors mixed/rank-1/checkpoint-40.safetensors
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 60 --checkpoint-dir mixed --resume \
  >mixed.resume.log 2>&1
rc=$?
line=$(grep -E -m 1 '^(\[1,[0-9]+\]<stderr>:)?parallax: error: rank 1:' mixed.resume.log)
echo "== 4b. rank 1's checkpoint from another run: exit $rc: $line"
if [[ $rc -eq 3 && "$line" == *"parallax: error: rank 1: mixed/rank-1/checkpoint-40.safetensors: after the resume variable '"*"' on rank 1 differs from rank 0's copy (fingerprint "*"): the ranks' checkpoint files disagree" ]]; then
  pass "replicated variables that disagree after a resume: rank 1 names one, exit 3"
else
  grep -v '<stdout>' mixed.resume.log | tail -n 6
  fail "replicated variables that disagree after a resume (exit $rc)"
fi

# --- 5. a data file missing on one rank -----------------------------------------------------
# 512 examples of 28x28 bytes and their labels, as IDX files (Fashion-MNIST's format).
mkdir -p data empty
python3 -c "
import struct, random
random.seed(1)
n = 512
with open('data/images.idx', 'wb') as f:
    f.write(struct.pack('>IIII', 0x803, n, 28, 28)); f.write(bytes(random.randrange(256) for _ in range(n * 784)))
with open('data/labels.idx', 'wb') as f:
    f.write(struct.pack('>II', 0x801, n)); f.write(bytes(random.randrange(10) for _ in range(n)))
"
# Rank 1 runs in its own mount namespace, where an empty directory covers data/.
cat >hide_data.sh <<'EOF'
#!/bin/sh
# hide_data.sh EMPTY DATA COMMAND...: COMMAND, but rank 1 sees EMPTY at DATA.
empty=$1 data=$2
shift 2
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
  exec unshare -m sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$empty" "$data" "$@"
fi
exec "$@"
EOF
chmod +x hide_data.sh
if unshare -m sh -c "mount --bind '$work/empty' '$work/data' && test ! -e '$work/data/images.idx'" \
     2>unshare.err; then
  start=$(now_ms)
  timeout 120 mpirun -np 2 --mca btl self,vader ./hide_data.sh "$work/empty" "$work/data" \
    "$parallax" run job/ --feed "x=$work/data/images.idx" --feed "y=$work/data/labels.idx" \
    --steps 100000 --log-every 1000 >data.log 2>&1
  rc=$?
  elapsed=$(( $(now_ms) - start ))
  errors=$(grep -c '^parallax: error: rank' data.log)
  line=$(grep '^parallax: error: rank' data.log | head -n 1)
  echo "== 5. data missing on rank 1: exit $rc after $elapsed ms: $line"
  echo "   figure: data file missing: the job ended $elapsed ms after it started, before" \
       "step 1 (steps lost 0, bytes lost 0: nothing was trained or written)"
  if [[ $rc -eq 3 && $errors -eq 1 && $elapsed -le 10000*slowdown &&
        "$line" == "parallax: error: rank 1: $work/data/images.idx: "* ]]; then
    pass "a data file missing on one rank: one line naming rank 1 and the file, exit 3"
  else
    tail -n 12 data.log
    fail "a data file missing on one rank"
  fi
else
  skip "a data file missing on one rank: no private mount namespace here ($(head -n 1 unshare.err))"
fi

# --- 6. edges of --resume -----------------------------------------------------------------
# (a) A 2-rank job writes steps 20 and 40; a 3-rank job resumes from 40 (re-sliced) and
# writes 60, which rank 2 then loses: step 60 is incomplete for its 3 ranks, step 40 is
# complete for its 2, so a 3-rank resume re-slices step 40 again.
sed 's/cpus: 2 .*/cpus: 3/' "$cluster" >three.yaml
"$parallax" transform mlp.pb --cluster three.yaml -o job3 >/dev/null || exit 1
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 40 --checkpoint-dir mixed \
  --checkpoint-every "$every" >mixed1.log 2>&1 || { cat mixed1.log; fail "2-rank run"; }
timeout 120 "$parallax" launch job3/ "${flags[@]}" --steps 60 --checkpoint-dir mixed \
  --checkpoint-every "$every" --resume >mixed2.log 2>&1 || { cat mixed2.log; fail "3-rank run"; }
rm mixed/rank-2/checkpoint-60.safetensors
timeout 120 "$parallax" launch job3/ "${flags[@]}" --steps 80 --checkpoint-dir mixed \
  --checkpoint-every "$every" --resume >mixed3.log 2>&1
rc=$?
if [[ $rc -eq 0 ]] && grep -q "resumed from mixed/rank-0/checkpoint-40.safetensors (step 40)" mixed3.log &&
   grep -q "mixed/rank-0/checkpoint-40.safetensors: [0-9]* examples of epoch 0 were read by 2 ranks; 3 ranks continue" mixed3.log &&
   grep -q "step 60 is incomplete (mixed/rank-2/checkpoint-60.safetensors is missing)" mixed3.log; then
  pass "each step judged by its own job size: the 2-rank step 40 under the 3-rank step 60"
else
  grep -v '<stdout>' mixed3.log | tail -n 8
  fail "resume over steps of two job sizes (exit $rc)"
fi
# (b) A rank whose checkpoints are gone while the other's remain: an error naming it
# (rank 1: no step is complete; rank 0: the others' files are not resumed from silently).
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 40 --checkpoint-dir lost \
  --checkpoint-every "$every" >lost1.log 2>&1 || { cat lost1.log; fail "run with checkpoints"; }
cp -r lost lost0
rm -r lost/rank-1 lost0/rank-0
for resume in --resume --resume=if-exists; do
  timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 60 --checkpoint-dir lost \
    "$resume" >lost2.log 2>&1
  rc=$?
  if [[ $rc -eq 3 ]] && grep -q "parallax: error: rank [01]: lost: no checkpoint step is on every one of the 2 ranks that wrote it (lost/rank-1/checkpoint-40.safetensors is missing)" lost2.log &&
     ! grep -q "<stdout>:step " lost2.log; then
    pass "$resume: rank 1's checkpoints gone: an error naming its file, not a fresh start"
  else
    grep -v '<stdout>' lost2.log | tail -n 6
    fail "$resume with rank 1's checkpoints gone (exit $rc)"
  fi
done
timeout 120 "$parallax" launch job/ "${flags[@]}" --steps 60 --checkpoint-dir lost0 \
  --resume=if-exists >lost3.log 2>&1
rc=$?
if [[ $rc -eq 3 ]] && grep -q "parallax: error: rank [01]: lost0/rank-0: rank 0 has no checkpoint to resume from, but rank 1 has 2 in lost0/rank-1: a job resumes from a step that every rank wrote" lost3.log &&
   ! grep -q "<stdout>:step " lost3.log; then
  pass "--resume=if-exists: rank 0's checkpoints gone: an error naming rank 0, not a fresh start"
else
  grep -v '<stdout>' lost3.log | tail -n 6
  fail "--resume=if-exists with rank 0's checkpoints gone (exit $rc)"
fi

echo "$passed passed, $failed failed, $skipped skipped"
(( failed == 0 ))
