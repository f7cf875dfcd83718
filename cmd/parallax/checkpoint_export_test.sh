#!/usr/bin/env bash
# `parallax checkpoint export` of a job with parameter-server variables (docs/checkpoints.md):
# the zoo embedding model (vocabulary 1000, embeddings partitioned over 2 ranks) trains
# 11 steps as a 2-rank job on 16 examples (per-rank batch 8, in file order: every step
# reads all 16); its step-10 checkpoint, exported as ONE TensorFlow checkpoint (the
# partitioned embeddings and their Adagrad slot reassembled), starts the single-device
# graph (`run --init-checkpoint`, batch 16), whose first loss equals the job's step-11
# loss (computed from the same variables on the same 16 examples) to 3e-7 relative
# (measured 1.0e-7: one float32 rounding step of a loss near 2.3).
# Also: the export lists exactly the single-device graph's variables; safetensors export;
# bad input.
#   checkpoint_export_test.sh PARALLAX CLUSTER_YAML
set -u
parallax=$(realpath "$1")
cluster=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-export.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# 16 examples: ids int32 [16, 4] in [0, 1000), labels int64 [16] in [0, 10) (.npy).
python3 - <<'PY' || exit 1
import random, struct
def npy(path, descr, shape, values, fmt):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
rng = random.Random(3)
npy("ids.npy", "<i4", (16, 4), [rng.randrange(1000) for _ in range(64)], "i")
npy("labels.npy", "<i8", (16,), [rng.randrange(10) for _ in range(16)], "q")
PY
"$parallax" models export embedding --vocab 1000 --dim 8 --seq 4 --batch 0 -o emb.pb >/dev/null || exit 1
"$parallax" transform emb.pb --cluster "$cluster" --strategy hybrid -o job >/dev/null || exit 1
if grep -q "method: ps" job/plan.yaml; then pass "the embeddings are on parameter servers"; else fail "no parameter-server variable in the plan"; fi

feeds=(--feed ids=ids.npy --feed y=labels.npy --no-shuffle)
timeout 120 "$parallax" launch job --hostfile job/hostfile "${feeds[@]}" --batch 8 --steps 11 \
  --checkpoint-dir ck --checkpoint-every 10 --log-every 1 --metrics job.jsonl -- --mca btl self,vader \
  >job.out 2>&1 || { cat job.out; fail "the job"; }
job_loss=$(grep '"step":11,' job.jsonl | sed 's/.*"loss":\([^,]*\),.*/\1/')

out=$("$parallax" checkpoint export ck --step 10 -o exported/model 2>&1)
echo "$out"
if [[ -f exported/model.index && -f exported/model.data-00000-of-00001 ]] &&
   grep -q 'model_checkpoint_path: "model"' exported/checkpoint; then
  pass "export wrote a TF checkpoint and its checkpoint file"
else
  fail "export wrote no TF checkpoint"
fi
if grep -q "exported 6 variables of ck (step 10, 2 ranks, 2 reassembled) to exported/model (TensorFlow checkpoint)" <<<"$out"; then
  pass "export reports the reassembled variables"
else
  fail "export's report"
fi
names=$("$parallax" checkpoint ls exported/model --json | grep -o '"name": *"[^"]*"' | cut -d'"' -f4 | sort | tr '\n' ' ')
want='dense/bias dense/bias/Adagrad dense/kernel dense/kernel/Adagrad embeddings embeddings/Adagrad '
if [[ "$names" == "$want" ]]; then pass "the export holds the single-device graph's variables"; else fail "exported names: $names"; fi

"$parallax" run emb.pb "${feeds[@]}" --batch 16 --steps 1 --init-checkpoint exported/model \
  --log-every 1 --metrics single.jsonl >single.out 2>&1 || { cat single.out; fail "the single-device run"; }
single_loss=$(grep '"step":1,' single.jsonl | sed 's/.*"loss":\([^,]*\),.*/\1/')
echo "job step 11 loss $job_loss, single device from the export: $single_loss"
if python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 3e-7 * abs(b) else 1)" \
     "${job_loss:-nan}" "${single_loss:-0}"; then
  pass "the single-device graph from the export gives the job's loss"
else
  fail "losses differ: job $job_loss, single device $single_loss"
fi

"$parallax" checkpoint export ck --format safetensors -o exported.safetensors >/dev/null
if "$parallax" checkpoint ls exported.safetensors | grep -q "embeddings/Adagrad  *float  *\[1000,8\]"; then
  pass "safetensors export"
else
  fail "safetensors export"
fi

"$parallax" checkpoint export ck --format onnx -o x >/dev/null 2>err.txt
rc=$?
if [[ $rc -eq 2 ]] && grep -qx "parallax: error: --format 'onnx': expected tf or safetensors" err.txt; then
  pass "an unknown format is refused"
else
  fail "unknown format: exit $rc, $(cat err.txt)"
fi
"$parallax" checkpoint export nowhere -o x >/dev/null 2>err.txt
rc=$?
if [[ $rc -eq 2 ]] && grep -qx "parallax: error: nowhere: not a directory (expected a \`parallax run\` checkpoint directory)" err.txt; then
  pass "a missing directory is refused"
else
  fail "missing directory: exit $rc, $(cat err.txt)"
fi
if [[ ! -e x.index ]]; then pass "nothing written on error"; else fail "a file was written on error"; fi

echo "checkpoint_export_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
