#!/usr/bin/env bash
# Job checkpoints written once (docs/run.md#job-checkpoints): on 4 ranks, what every rank
# holds identically is in rank 0's file only, so the 4 rank files of one step together
# are at most 1.1x the bytes of the variables and their slots (the sum of the plan's
# `bytes`, slots included), not 4x; and a resume from them is bit-identical to the
# uninterrupted run. Two jobs:
#  - the zoo lenet (Adam: two slots per variable), every variable all-reduced;
#  - the zoo embedding model (momentum), --strategy hybrid: the table and its slot on
#    parameter servers (each rank its rows), the dense layer and its slots all-reduced.
# Each trains 4 steps with checkpoints at 2 and 4; a copy of step 2 resumed to 4 equals
# step 4 bit for bit: every rank's file (read as the rank holds it, completed from rank
# 0's) and the job reassembled. Every file names its layout (job_layout); a rank file
# whose rank-0 file is gone is refused in one line naming that file.
#   job_checkpoint_once_test.sh PARALLAX CHECKPOINT_DIFF CLUSTER_YAML
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
cluster=$(realpath "$3")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-once.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cd "$TMPDIR" || exit 1
mpirun4=(timeout 300 mpirun -np 4 --oversubscribe --mca btl self,vader)
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

sed 's/cpus: 2 .*/cpus: 4/' "$cluster" >four.yaml
"$parallax" models export lenet --batch 16 -o lenet.pb >/dev/null || exit 1
"$parallax" transform lenet.pb --cluster four.yaml -o lenet_job >/dev/null || exit 1
"$parallax" models export embedding --vocab 64 --dim 256 --seq 4 --batch 16 \
  --optimizer momentum -o emb.pb >/dev/null || exit 1
"$parallax" transform emb.pb --cluster four.yaml --strategy hybrid -o emb_job >/dev/null ||
  exit 1
grep -A1 'name: "embeddings"$' emb_job/plan.yaml | grep -q 'method: ps' ||
  { cat emb_job/plan.yaml; fail "hybrid: the embedding table is not on parameter servers"; }

check_job() {  # NAME JOB_DIR
  local name=$1 job=$2
  local flags=(--synthetic --seed 5 --threads 1 --log-every 1 --keep-checkpoints 0)
  "${mpirun4[@]}" "$parallax" run "$job/" "${flags[@]}" --steps 4 --checkpoint-dir "${name}_a" \
    --checkpoint-every 2 >"${name}_a.log" 2>&1 ||
    { cat "${name}_a.log"; fail "$name: 4 steps"; return; }

  # Bytes written per checkpoint: the 4 rank files of step 4 against the variables and
  # slots (every variable of the plan, slots included, has its `bytes`).
  local written variables
  written=$(cat "${name}_a"/rank-*/checkpoint-4.safetensors | wc -c)
  variables=$(awk '/^    bytes: /{s += $2} END {print s}' "$job/plan.yaml")
  echo "== $name: 4 rank files of step 4: $written bytes; variables and slots: $variables bytes" \
    "($(awk -v w="$written" -v v="$variables" 'BEGIN {printf "%.3f", w / v}')x)"
  if awk -v w="$written" -v v="$variables" 'BEGIN {exit !(v > 0 && w <= 1.1 * v)}'; then
    pass "$name: one checkpoint's 4 rank files <= 1.1x the variables and slots"
  else
    ls -l "${name}_a"/rank-*/
    fail "$name: one checkpoint's 4 rank files are $written bytes, over 1.1 x $variables"
  fi
  local layouts
  layouts=$(for r in 0 1 2 3; do
              "$parallax" checkpoint ls "${name}_a/rank-$r/checkpoint-4.safetensors" --json |
                grep -o '"job_layout": *"[^"]*"' | tr -d ' '
            done | sort | uniq -c | tr -s ' ')
  if [[ $layouts == ' 4 "job_layout":"replicated-once"' ]]; then
    pass "$name: every rank file says job_layout replicated-once"
  else
    fail "$name: job_layout of the 4 files: '$layouts'"
  fi

  # Step 2 resumed to 4 == 4 straight, bit for bit (-v: each rank logs what it restored).
  mkdir "${name}_b" && cp -r "${name}_a"/rank-* "${name}_b/" &&
    rm "${name}_b"/rank-*/checkpoint-4.safetensors
  "${mpirun4[@]}" "$parallax" run "$job/" "${flags[@]}" --steps 4 --checkpoint-dir "${name}_b" \
    --resume -v >"${name}_b.log" 2>&1 ||
    { cat "${name}_b.log"; fail "$name: resumed to 4"; return; }
  if ! grep -q "restored [0-9]* variables from ${name}_b/rank-3/checkpoint-2.safetensors (step 2" \
       "${name}_b.log"; then
    cat "${name}_b.log"; fail "$name: rank 3 did not restore step 2"
  fi
  local same=1 r
  for r in 0 1 2 3; do
    "$diff_tool" --exact "${name}_a/rank-$r/checkpoint-4.safetensors" \
      "${name}_b/rank-$r/checkpoint-4.safetensors" >"diff_$r.txt" ||
      { cat "diff_$r.txt"; same=0; }
  done
  "$diff_tool" --exact "${name}_a@4" "${name}_b@4" >diff_job.txt || { cat diff_job.txt; same=0; }
  if (( same )); then
    pass "$name: 2 steps + resume to 4 == 4 steps (bit-identical, every rank and the job)"
  else
    fail "$name: 2 steps + resume to 4 != 4 steps"
  fi

  # Rank 1's file without rank 0's: one line naming the missing file.
  mv "${name}_b/rank-0/checkpoint-4.safetensors" rank0_moved.safetensors
  "$diff_tool" "${name}_b/rank-1/checkpoint-4.safetensors" \
    "${name}_a/rank-1/checkpoint-4.safetensors" >missing.out 2>missing.err
  local rc=$?
  local want="${name}_b/rank-0/checkpoint-4.safetensors: missing:"
  want+=" ${name}_b/rank-1/checkpoint-4.safetensors (job_layout 'replicated-once') leaves its"
  want+=" replicated tensors to rank 0's file of the same step"
  if [[ $rc -eq 2 && $(wc -l <missing.err) -eq 1 ]] && grep -qF "$want" missing.err; then
    pass "$name: a rank file without rank 0's is refused naming it"
  else
    cat missing.err; fail "$name: rank 1's file without rank 0's: exit $rc"
  fi
  mv rank0_moved.safetensors "${name}_b/rank-0/checkpoint-4.safetensors"
}

check_job lenet lenet_job
check_job emb emb_job

# --checkpoint-every-rank (what verify uses): every rank writes its full copy.
"${mpirun4[@]}" "$parallax" run lenet_job/ --synthetic --threads 1 --steps 1 \
  --checkpoint-dir lenet_every --checkpoint-every-rank >lenet_every.log 2>&1 ||
  { cat lenet_every.log; fail "lenet --checkpoint-every-rank"; }
every_layouts=$(for r in 0 1 2 3; do
                  "$parallax" checkpoint ls "lenet_every/rank-$r/checkpoint-1.safetensors" --json |
                    grep -o '"job_layout": *"[^"]*"' | tr -d ' '
                done | sort | uniq -c | tr -s ' ')
rank0=$(wc -c <lenet_every/rank-0/checkpoint-1.safetensors)
rank3=$(wc -c <lenet_every/rank-3/checkpoint-1.safetensors)
if [[ $every_layouts == ' 4 "job_layout":"every-rank"' && $rank3 -gt $((rank0 * 9 / 10)) ]]; then
  pass "--checkpoint-every-rank: every rank file says every-rank and holds the variables"
else
  fail "--checkpoint-every-rank: layouts '$every_layouts', rank 0 $rank0 bytes, rank 3 $rank3"
fi

# A job's checkpoint directory read as a whole: `checkpoint ls` lists the full table
# (reassembled from the ranks' rows), and `parallax eval` of the job with it gives what
# the single-device graph gives with the exported checkpoint, to the last bit.
"$parallax" checkpoint ls emb_a --json >ls.json 2>ls.err &&
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
shapes = {t["name"]: t["shape"] for t in r["tensors"]}
assert r["format"] == "job" and shapes["embeddings"] == [64, 256], (r["format"], shapes)
' ls.json && pass "checkpoint ls of a job directory: the reassembled table" ||
  { cat ls.err; fail "checkpoint ls emb_a: $(head -c 300 ls.json)"; }
"$parallax" checkpoint export emb_a --format safetensors -o emb_full.safetensors >/dev/null &&
  "$parallax" eval emb_job/ --checkpoint emb_a --feed ids=synthetic --feed y=synthetic --json \
    >eval_job.json &&
  "$parallax" eval emb.pb --checkpoint emb_full.safetensors --feed ids=synthetic --feed y=synthetic \
    --json >eval_full.json &&
  python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["checkpoint_format"] == "job" and b["checkpoint_format"] == "safetensors"
for key in ("examples", "accuracy", "loss", "classes"):
    assert a[key] == b[key], (key, a[key], b[key])
' eval_job.json eval_full.json && pass "parallax eval of a PS job's checkpoint == of its export" ||
  fail "parallax eval emb_job/ --checkpoint emb_a: $(head -c 300 eval_job.json)"

echo "job_checkpoint_once_test: $passed passed, $failed failed"
(( failed == 0 ))
