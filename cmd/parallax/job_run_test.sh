#!/usr/bin/env bash
# `parallax run JOB_DIR` as the ranks of a job under mpirun (docs/run.md#jobs):
#  1. failures: a rank SIGKILLed mid-run under mpirun (test hook
#     PARALLAX_TEST_FAIL_AT_STEP=R:S) ends the job within 10 s naming the rank (through
#     `parallax launch`, exit 3, with the steps and bytes lost: fault_test); a rank that
#     fails with an error (R:S:error) prints `parallax: error: rank R: ...`, exit 3; the
#     job's directory run by hand without mpirun is refused as bad input, exit 2;
#     SIGINT / SIGTERM to `parallax launch` stop every rank within 10 s, exit 130 / 143
#     with one line, and the newest checkpoint reads back; a GPU plan is refused by
#     launch (exit 2, before mpirun) and by its ranks, and trains with --cpu-fallback;
#     launch's pre-flight refuses a mistyped run flag, missing feed and eval-feed files and
#     --resume without a checkpoint in one line, exit 2, before mpirun;
#  2. job checkpoints: 2 ranks, 40 steps == 20 steps + --resume to 40, every variable of
#     every rank's file bit-identical (all-reduce and parameter-server jobs); a step
#     missing on one rank is skipped on resume; PS files name their row ranges; a PS
#     job's checkpoint resumed on 1 and 3 ranks restores the 2-rank variables bit for
#     bit (reassembled, re-sliced) and continues like one process (5e-7; measured 1.7e-7
#     and 1.2e-7); an all-reduce job's too (2 ranks x 32 for 10 steps + 1 rank x 64 to
#     20 == 1 x 64 x 20, 2e-6; measured 6.5e-7); PS pushes aggregated per host (4 ranks
#     as 2 fake hosts) == one host (3e-7) == one process (5e-7; measured 9.7e-8, 1.9e-7);
#  3. equivalence: the zoo mlp (open batch, SGD lr 0.1) trained 10 steps in one process
#     with --batch 64 and as a 2-rank all-reduce job with --batch 32 on the same synthetic
#     data in file order ends with the same variables (max relative difference <= 3e-6;
#     measured 1.1e-6).
#   job_run_test.sh PARALLAX CHECKPOINT_DIFF CLUSTER_YAML
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
cluster=$(realpath "$3")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-job.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
mpirun=(timeout 120 mpirun -np 2 --mca btl self,vader)
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Time bounds are scaled by PARALLAX_TEST_SLOWDOWN (set by the sanitizer build, .bazelrc).
slowdown=${PARALLAX_TEST_SLOWDOWN:-1}

"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null || exit 1
"$parallax" transform mlp.pb --cluster "$cluster" -o job >/dev/null || exit 1

# --- 1. failures -----------------------------------------------------------------------
# 100000 steps take minutes: only an abort ends these runs within the 10 s checked (from
# the moment of the failure).
check_failure() {  # NAME EXPECTED_REGEX EXIT_STATUS|any COMMAND...
  local name=$1 expected=$2 status=$3
  shift 3
  local start rc elapsed output failed_at
  start=$(now_ms)
  output=$("$@" 2>&1)
  rc=$?
  # From the injected failure (the hook prints its time) to the end of the job; from the
  # start where nothing was injected.
  failed_at=$(grep -Eo 'PARALLAX_TEST_FAIL_AT_STEP: .* at unix ms [0-9]+' <<<"$output" |
              grep -Eo '[0-9]+$' | head -n 1)
  elapsed=$(( $(now_ms) - ${failed_at:-$start} ))
  echo "== $name: exit status $rc, $elapsed ms after the failure (or the start)"
  echo "$output" | tail -n 15
  local ok=1
  if [[ $rc -eq 0 || $rc -eq 124 ]]; then echo "   exit status $rc"; ok=0; fi
  if [[ $status != any && $rc -ne $status ]]; then echo "   expected exit status $status"; ok=0; fi
  if (( elapsed > 10000*slowdown )); then echo "   took $elapsed ms (limit 10 s)"; ok=0; fi
  if ! grep -Eq "$expected" <<<"$output"; then echo "   no line matches /$expected/"; ok=0; fi
  if (( ok )); then pass "$name"; else fail "$name"; fi
}
run_flags=(--synthetic --steps 100000 --log-every 50)
check_failure "rank 1 killed (mpirun)" "process rank 1 .*(signal 9|Killed)|rank 1.*killed" any \
  env PARALLAX_TEST_FAIL_AT_STEP=1:100 "${mpirun[@]}" "$parallax" run job/ "${run_flags[@]}"
check_failure "rank 1 error (mpirun)" \
  "^parallax: error: rank 1: .*PARALLAX_TEST_FAIL_AT_STEP: injected failure before step 100" 3 \
  env PARALLAX_TEST_FAIL_AT_STEP=1:100:error "${mpirun[@]}" "$parallax" run job/ "${run_flags[@]}"
check_failure "wrong world size" "^parallax: error: .*the plan has 2 ranks but this job has 1" 2 \
  "$parallax" run job/ --synthetic --steps 1

# Ctrl-C and SIGTERM to `parallax launch` (started in the background, where a shell sets
# SIGINT to be ignored: launch catches it anyway): mpirun and every rank stop within
# seconds, the exit status is 130 / 143 with one line, the newest checkpoint is complete.
for sig in INT TERM; do
  rm -rf "sig_$sig" && mkdir "sig_$sig"
  "$parallax" launch job/ --synthetic --steps 100000 --log-every 1000 \
    --checkpoint-dir "sig_$sig/ck" --checkpoint-every 20 >"sig_$sig/out" 2>"sig_$sig/err" &
  launch_pid=$!
  for _ in $(seq 1 300); do  # until a checkpoint is there (30 s at most)
    ls "sig_$sig/ck/rank-1" 2>/dev/null | grep -q '^checkpoint-[0-9]*\.safetensors$' && break
    sleep 0.1
  done
  start=$(now_ms)
  kill -"$sig" "$launch_pid"
  wait "$launch_pid"
  rc=$?
  elapsed=$(( $(now_ms) - start ))
  want=$([[ $sig == INT ]] && echo 130 || echo 143)
  first=$(head -n 1 "sig_$sig/err")
  ranks_left=$(pgrep -f -- "--checkpoint-dir sig_$sig/ck" | wc -l)
  # A rank stopped while writing leaves its temporary file (resume ignores those).
  newest=$(ls "sig_$sig/ck/rank-0" | grep -v '\.tmp' | sort -t- -k2 -n | tail -n 1)
  echo "== SIG$sig to launch: exit $rc after $elapsed ms; '$first'; newest $newest; ranks left $ranks_left"
  # One line: the stopped ranks' teardown noise (OpenMPI's "Read -1, expected ...") is not
  # passed on after the signal.
  if [[ $rc -eq $want && $elapsed -lt 10000*slowdown && $ranks_left -eq 0 &&
        $(wc -l < "sig_$sig/err") -eq 1 &&
        "$first" == "parallax: error: job/: interrupted by SIG$sig: the job was stopped"* ]] &&
     "$parallax" checkpoint ls "sig_$sig/ck/rank-0/$newest" >/dev/null 2>&1; then
    pass "SIG$sig stops the job: exit $want, one line, a readable checkpoint"
  else
    cat "sig_$sig/err" | tail -n 5
    fail "SIG$sig to launch"
  fi
done

# Pre-flight: launch checks the run flags, the data and the checkpoint directory once,
# before mpirun starts (exit 2, one line; a rank's failure would be exit 3).
preflight() {  # NAME EXPECTED_LINE RUN_FLAGS...
  local name=$1 line=$2
  shift 2
  "$parallax" launch job/ "$@" >pre.out 2>pre.err
  local rc=$?
  if [[ $rc -eq 2 && "$(head -n 1 pre.err)" == "$line" && $(wc -l < pre.err) -eq 1 ]]; then
    pass "launch pre-flight: $name"
  else
    cat pre.err | head -n 5; fail "launch pre-flight: $name (exit $rc)"
  fi
}
preflight "a mistyped flag" \
  "parallax: error: '--stepz': not a flag of \`parallax run\` (the flags launch passes on to every rank; see \`parallax run --help\`)" \
  --synthetic --stepz 3
preflight "a missing feed file" "parallax: error: missing.npy: no such file" \
  --feed x=missing.npy --synthetic --steps 3
preflight "a missing eval feed file" "parallax: error: missing_eval.npy: no such file" \
  --synthetic --steps 3 --eval-feed x=missing_eval.npy
preflight "--resume without a checkpoint" \
  "parallax: error: --resume: no checkpoint in no_ck/rank-0 to resume from; pass --resume=if-exists to start from the init op when there is none" \
  --synthetic --steps 3 --checkpoint-dir no_ck --resume

# A plan that puts ranks on GPUs, on a machine without a usable GPU (this test's: a build
# without CUDA, or no GPU): launch refuses it before mpirun (exit 2), and so does every
# rank started by hand; --cpu-fallback trains on the CPU, warned in the log and in every
# metrics line.
no_gpu="(this parallax was built without CUDA \(build it with --config=cuda: docs/gpu.md\)|no usable GPU: [^;]*)"
printf 'hosts:\n  - name: localhost\n    gpus: [0, 1]\n' > gpu.yaml
"$parallax" transform mlp.pb --cluster gpu.yaml -o gpu_job >/dev/null || exit 1
"$parallax" launch gpu_job/ --synthetic --steps 2 >gpu.out 2>gpu.err
rc=$?
if [[ $rc -eq 2 ]] && head -n 1 gpu.err | grep -Eqx "parallax: error: gpu_job/: the plan places rank 0 on GPU 0 of host localhost, but $no_gpu; transform for CPU ranks \(hosts with \`cpus: N\` in the cluster spec\), or pass --cpu-fallback to train this plan on CPUs"; then
  pass "launch refuses a GPU plan before mpirun"
else
  cat gpu.err; fail "launch of a GPU plan: exit $rc"
fi
"${mpirun[@]}" "$parallax" run gpu_job/ --synthetic --steps 2 >gpu_ranks.log 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -Eq "^parallax: error: rank [01]: gpu_job/: the plan places rank [01] on GPU [01] of host localhost, but $no_gpu;" gpu_ranks.log &&
  pass "ranks of a GPU plan refuse to train on the CPU" || { cat gpu_ranks.log; fail "GPU plan ranks: exit $rc"; }
"$parallax" launch gpu_job/ --synthetic --steps 4 --log-every 2 --cpu-fallback --metrics gpu.jsonl \
  >fallback.out 2>fallback.err
rc=$?
if [[ $rc -eq 0 ]] && grep -Eq "rank 0: --cpu-fallback: the plan places this rank on GPU 0 of host localhost, but $no_gpu; it trains on the CPU" fallback.err &&
   [[ $(grep -c '"cpu_fallback_from":"GPU 0 of host localhost"' gpu.jsonl) -eq 2 ]]; then
  pass "--cpu-fallback trains a GPU plan on the CPU, warned in the log and the metrics"
else
  cat fallback.err gpu.jsonl; fail "--cpu-fallback: exit $rc"
fi

# --- 2. job checkpoints: 40 steps == 20 + resume to 40 ----------------------------------
ck_flags=(--synthetic --seed 7 --log-every 5)
"${mpirun[@]}" "$parallax" run job/ "${ck_flags[@]}" --steps 40 --checkpoint-dir straight \
  >straight.log 2>&1 || { cat straight.log; fail "uninterrupted 2-rank run"; }
"${mpirun[@]}" "$parallax" run job/ "${ck_flags[@]}" --steps 20 --checkpoint-dir resumed \
  --metrics resumed.jsonl >first.log 2>&1 || { cat first.log; fail "first half"; }
"${mpirun[@]}" "$parallax" run job/ "${ck_flags[@]}" --steps 40 --checkpoint-dir resumed \
  --resume --metrics resumed.jsonl >second.log 2>&1 || { cat second.log; fail "resumed half"; }
# Every rank is given the same --metrics file; rank 0 alone writes it (the resume appends):
# one line per report, steps 5, 10, ..., 40.
if [[ "$(grep -o '^{"step":[0-9]*' resumed.jsonl | tr -d '{"step:' | tr '\n' ' ')" == \
      "5 10 15 20 25 30 35 40 " ]]; then
  pass "job metrics: rank 0's lines only, appended on resume"
else
  cat resumed.jsonl
  fail "job metrics: expected one line per report, steps 5..40"
fi
grep -q "resumed from resumed/rank-0/checkpoint-20.safetensors (step 20)" second.log ||
  { cat second.log; fail "the resume does not say it restored step 20"; }
for r in 0 1; do
  if "$diff_tool" --exact "straight/rank-$r/checkpoint-40.safetensors" \
       "resumed/rank-$r/checkpoint-40.safetensors"; then
    pass "rank $r: 40 steps == 20 + resume to 40 (bit-identical)"
  else
    fail "rank $r: 40 steps != 20 + resume to 40"
  fi
done
# A rank that died while the others wrote step 40 leaves it on rank 0 only: the job
# resumes from step 30, the newest step on every rank, and still ends bit-identical.
"${mpirun[@]}" "$parallax" run job/ "${ck_flags[@]}" --steps 40 --checkpoint-dir partial \
  --checkpoint-every 10 >partial.log 2>&1 || { cat partial.log; fail "run with checkpoints"; }
rm partial/rank-1/checkpoint-40.safetensors
"${mpirun[@]}" "$parallax" run job/ "${ck_flags[@]}" --steps 40 --checkpoint-dir partial \
  --resume >partial2.log 2>&1 || { cat partial2.log; fail "resume from a partial checkpoint"; }
if grep -q "resumed from partial/rank-0/checkpoint-30.safetensors (step 30)" partial2.log &&
   "$diff_tool" --exact straight/rank-1/checkpoint-40.safetensors \
     partial/rank-1/checkpoint-40.safetensors >/dev/null; then
  pass "resume skips a step missing on one rank (step 30, then bit-identical at 40)"
else
  cat partial2.log
  fail "resume from a partial job checkpoint"
fi
# Parameter servers: each rank's file holds the rows it owns, named in the metadata, and
# 20 steps == 10 + resume to 20 on both ranks.
"$parallax" models export embedding --vocab 1000 --dim 16 --seq 4 --batch 32 -o emb.pb \
  >/dev/null || exit 1
"$parallax" transform emb.pb --cluster "$cluster" --strategy ps -o ps_job >/dev/null || exit 1
ps_flags=(--synthetic --seed 3 --log-every 5)
"${mpirun[@]}" "$parallax" run ps_job/ "${ps_flags[@]}" --steps 20 --checkpoint-dir ps_a \
  >ps_a.log 2>&1 || { cat ps_a.log; fail "PS run"; }
"${mpirun[@]}" "$parallax" run ps_job/ "${ps_flags[@]}" --steps 10 --checkpoint-dir ps_b \
  >ps_b.log 2>&1 || { cat ps_b.log; fail "PS first half"; }
"${mpirun[@]}" "$parallax" run ps_job/ "${ps_flags[@]}" --steps 20 --checkpoint-dir ps_b \
  --resume >ps_c.log 2>&1 || { cat ps_c.log; fail "PS resumed half"; }
for r in 0 1; do
  if "$diff_tool" --exact "ps_a/rank-$r/checkpoint-20.safetensors" \
       "ps_b/rank-$r/checkpoint-20.safetensors" >/dev/null; then
    pass "PS rank $r: 20 steps == 10 + resume to 20 (bit-identical)"
  else
    fail "PS rank $r: 20 steps != 10 + resume to 20"
  fi
done
rows=$(head -c 4096 ps_a/rank-1/checkpoint-20.safetensors |
       grep -a -o '"rows:embeddings/parallax/local":"[^"]*"')
if [[ $rows == '"rows:embeddings/parallax/local":"500-1000"' ]]; then
  pass "PS rank 1's file names its rows (500-1000)"
else
  fail "PS rank 1's file: rows metadata '$rows', expected 500-1000"
fi

# Another rank count with parameter servers: the embedding model (momentum, --strategy
# ps: the table, the dense layer and their slots partitioned) trained on 2 ranks x 24 for
# 10 steps, then resumed on 1 rank x 48 and on 3 ranks x 16 (the same global batch; each
# job transformed for its own rank count, so other partitions and owners). Every rank of
# the new job reassembles the variables from both old files and takes its rows: the
# restored variables (written by the test hook PARALLAX_TEST_SAVE_RESTORED) reassembled
# are bit-identical to the 2-rank step 10, and step 20 matches one process x 48 for 20
# steps within 5e-7.
sed 's/cpus: 2 .*/cpus: 1/' "$cluster" >one.yaml
sed 's/cpus: 2 .*/cpus: 3/' "$cluster" >three.yaml
"$parallax" models export embedding --vocab 1000 --dim 16 --seq 4 --batch 0 --optimizer momentum \
  -o emb_open.pb >/dev/null || exit 1
"$parallax" transform emb_open.pb --cluster "$cluster" --strategy ps -o ps_open2 >/dev/null ||
  exit 1
rs_flags=(--synthetic --no-shuffle --seed 3 --log-every 5)
"${mpirun[@]}" "$parallax" run ps_open2/ "${rs_flags[@]}" --batch 24 --steps 10 \
  --checkpoint-dir rs2 >rs2.log 2>&1 || { cat rs2.log; fail "PS 2 ranks x 24, 10 steps"; }
"$parallax" run emb_open.pb "${rs_flags[@]}" --batch 48 --steps 20 --checkpoint-dir rs_single \
  --checkpoint-every 10 --keep-checkpoints 0 \
  >rs_single.log 2>&1 || { cat rs_single.log; fail "one process x 48, 20 steps"; }
for n in 1 3; do
  if (( n == 1 )); then yaml=one.yaml; else yaml=three.yaml; fi
  "$parallax" transform emb_open.pb --cluster "$yaml" --strategy ps -o "ps_open$n" >/dev/null ||
    exit 1
  cp -r rs2 "rs$n"
  launcher=(timeout 120 mpirun -np "$n" --oversubscribe --mca btl self,vader)
  if (( n == 1 )); then launcher=(timeout 120); fi
  PARALLAX_TEST_SAVE_RESTORED="restored$n" "${launcher[@]}" "$parallax" run "ps_open$n/" \
    "${rs_flags[@]}" --batch $((48 / n)) --steps 20 --checkpoint-dir "rs$n" --resume \
    >"rs$n.log" 2>&1 || { cat "rs$n.log"; fail "PS resumed on $n ranks"; }
  echo "== PS: 2-rank step 10 vs the variables restored on $n ranks (reassembled)"
  if grep -q "resumed from rs$n/rank-0/checkpoint-10.safetensors (step 10)" "rs$n.log" &&
     "$diff_tool" --exact rs2@10 "restored$n"; then
    pass "PS 2-rank checkpoint restored on $n ranks (bit-identical after reassembly)"
  else
    fail "PS 2-rank checkpoint restored on $n ranks"
  fi
  echo "== PS: one process x 48 for 20 steps vs 2 x 24 for 10 + $n x $((48 / n)) to 20"
  if "$diff_tool" --tolerance 5e-7 rs_single/checkpoint-20.safetensors "rs$n@20"; then
    pass "PS 2 ranks then $n ranks == one process (5e-7)"
  else
    fail "PS 2 ranks then $n ranks != one process"
  fi
done
# Per-host push aggregation (docs/comm.md): 4 ranks x 12 as 2 hosts of 2 (test hook
# PARALLAX_TEST_RANKS_PER_HOST=2) == 4 ranks on one host == one process x 48, 10 steps.
# Fake hosts run wherever mpirun does; multihost_test covers the real case, hosts as
# network namespaces with TCP between them (skipped where namespaces cannot be made).
sed 's/cpus: 2 .*/cpus: 4/' "$cluster" >four.yaml
"$parallax" transform emb_open.pb --cluster four.yaml --strategy ps -o ps_open4 >/dev/null ||
  exit 1
mpirun4=(timeout 120 mpirun -np 4 --oversubscribe --mca btl self,vader)
"${mpirun4[@]}" "$parallax" run ps_open4/ "${rs_flags[@]}" --batch 12 --steps 10 \
  --checkpoint-dir agg1 >agg1.log 2>&1 || { cat agg1.log; fail "PS 4 ranks on one host"; }
PARALLAX_TEST_RANKS_PER_HOST=2 "${mpirun4[@]}" "$parallax" run ps_open4/ "${rs_flags[@]}" \
  --batch 12 --steps 10 --checkpoint-dir agg2 -v >agg2.log 2>&1 ||
  { cat agg2.log; fail "PS 4 ranks as 2 hosts"; }
echo "== PS 4 ranks: 2 fake hosts (aggregated pushes) vs one host vs one process x 48"
if grep -q "local rank 1/2" agg2.log &&
   "$diff_tool" --tolerance 3e-7 agg1@10 agg2@10 &&
   "$diff_tool" --tolerance 5e-7 rs_single/checkpoint-10.safetensors agg2@10; then
  pass "PS pushes aggregated per host (2 fake hosts) == one host (3e-7) == one process (5e-7)"
else
  fail "PS pushes aggregated per host"
fi
# A job checkpoint with a rank file missing cannot be re-sliced: one line naming it.
cp -r rs2 rs_missing
rm rs_missing/rank-1/checkpoint-10.safetensors
check_failure "PS resume on 3 ranks with a rank file missing" \
  "^parallax: error: rank .*rs_missing: no checkpoint step is on every one of the 2 ranks .*rs_missing/rank-1/checkpoint-10.safetensors is missing" 3 \
  timeout 120 mpirun -np 3 --oversubscribe --mca btl self,vader "$parallax" run ps_open3/ \
  "${rs_flags[@]}" --batch 16 --steps 20 --checkpoint-dir rs_missing --resume

# --- 3. equivalence: 1 process x batch 64 == 2 ranks x batch 32 -------------------------
"$parallax" models export mlp --widths 64 --batch 0 --lr 0.1 -o open.pb >/dev/null || exit 1
"$parallax" transform open.pb --cluster "$cluster" --strategy allreduce -o open_job >/dev/null ||
  exit 1
eq_flags=(--synthetic --no-shuffle --steps 10 --log-every 5)
"$parallax" run open.pb "${eq_flags[@]}" --batch 64 --checkpoint-dir single >single.log 2>&1 ||
  { cat single.log; fail "single process run"; }
"${mpirun[@]}" "$parallax" run open_job/ "${eq_flags[@]}" --batch 32 --checkpoint-dir job_ck \
  >job.log 2>&1 || { cat job.log; fail "2-rank run"; }
cat single.log job.log
for r in 0 1; do
  echo "== single process (batch 64) vs rank $r of 2 (batch 32 each), after 10 steps"
  if "$diff_tool" --tolerance 3e-6 single/checkpoint-10.safetensors \
       "job_ck/rank-$r/checkpoint-10.safetensors"; then
    pass "equivalence, rank $r"
  else
    fail "equivalence, rank $r"
  fi
done

# Another rank count without partitioned variables: 2 ranks x batch 32 for 10 steps, then
# 1 rank x batch 64 resumed to 20 == one process x batch 64 for 20 steps.
"$parallax" transform open.pb --cluster one.yaml --strategy allreduce -o open_job1 >/dev/null ||
  exit 1
eq20_flags=(--synthetic --no-shuffle --steps 20 --log-every 5)
"$parallax" run open.pb "${eq20_flags[@]}" --batch 64 --checkpoint-dir single20 \
  >single20.log 2>&1 || { cat single20.log; fail "single process, 20 steps"; }
"$parallax" run open_job1/ "${eq20_flags[@]}" --batch 64 --checkpoint-dir job_ck \
  --resume >job1.log 2>&1 || { cat job1.log; fail "1-rank job resumed from 2 ranks"; }
cat job1.log
echo "== one process (batch 64, 20 steps) vs" \
  "2 ranks (batch 32, 10 steps) + 1 rank (batch 64, to 20)"
if grep -q "resumed from job_ck/rank-0/checkpoint-10.safetensors (step 10)" job1.log &&
   "$diff_tool" --tolerance 2e-6 single20/checkpoint-20.safetensors \
     job_ck/rank-0/checkpoint-20.safetensors; then
  pass "2-rank checkpoint resumed on 1 rank"
else
  fail "2-rank checkpoint resumed on 1 rank"
fi

echo "$passed passed, $failed failed"
(( failed == 0 ))
