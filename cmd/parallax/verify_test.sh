#!/usr/bin/env bash
# `parallax verify` under mpirun on localhost (docs/verify.md): N ranks x batch b trained
# side by side with one device x batch N*b, every variable compared after 20 steps.
#  1. equivalence (PASS, exit 0, and the overall max relative difference at most a bound
#     of 2-3x what the case measures, the figures of docs/verify.md's table; 0 where the
#     runs must be bit-identical):
#     zoo mlp with SGD, Momentum (2 ranks), lenet (Momentum, 2 ranks), embedding under
#     parameter servers with 1, 2 and 3 partitions (3 ranks), with allgather and densify
#     (2 and 4 ranks), embedding with sparse Adam on PS, started from --init-checkpoint;
#     the shared TensorBoard MNIST MLP (queue input, no init op: started from a
#     checkpoint) on 1 rank, bit-identical (its Reshape fixes the batch at 200, so 2 ranks
#     without --accumulate are refused with exit 2), and with --accumulate on 2, 3 and 4
#     ranks (one device runs each rank's 200 examples and applies the combined gradients:
#     bit-identical where the cross-rank sum has the same order); --accumulate on the
#     fixed-batch mlp, on the embedding (sparse slices: PS, 3 ranks; allgather) and on the
#     Adam mlp (bit-identical, where N*b gives 7.2e-6) and
#     following the plan's sum (`average: false`). Adam on the dense mlp with N*b is
#     checked at 4e-5 and passes verify's default verdict (within 10x the reference's
#     own noise, the one-device run with each batch reversed): TF's Adam (epsilon 1e-8 added to the
#     uncorrected sqrt(v)) amplifies the last-bit differences of gradients that cancel
#     to ~3e-7 by ~1000x (docs/verify.md);
#     Gradients taken at the backprop boundary: clip_by_global_norm + Adam, and BERT's
#     Assign-based AdamWeightDecay after clipping (embedding all-gathered);
#  2. the check can fail: gradients summed instead of averaged (`average: false`) FAILs
#     with exit 1; gradients synchronised after clipping and rank 1's gradients left
#     un-averaged (planted bugs) FAIL; tolerance 0 without the noise run
#     (--noise-factor 0) on a run that is not bit-identical FAILs; the Horovod MNIST graph
#     (dropout: one device cannot reproduce itself reordered) FAILs with a note;
#  3. bad input exits 2 with one line: a fixed batch (suggesting --accumulate), an
#     in-graph pipeline without --accumulate, an unknown method, no init op, data
#     whose epoch is not a multiple of the ranks when the steps pass its end; a rank that
#     fails makes verify exit 3.
# Every case prints verify's table, so the log shows each measured difference. Without the
# shared folder ($PARALLAX_SHARED_DIR) the TensorBoard MLP cases print a SKIP line (a FAIL
# under CI=true or PARALLAX_REQUIRE_DATA=1).
#   verify_test.sh PARALLAX TENSORBOARD_MLP_INIT_PY
set -u
parallax=$(realpath "$1")
tb_init_script=$(realpath "$2")  # testdata/tensorboard_mlp_init.py
pipeline_graph=$(realpath "$3")  # lib/runtime/testdata/tfdata_softmax.pbtxt
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMPI's session directory (unix sockets, short paths) in a short private folder.
TMPDIR=$(mktemp -d /tmp/parallax-verify.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# missing_data WHAT WHY: a failure under CI=true or PARALLAX_REQUIRE_DATA=1, else a
# SKIP line (lib/testing/missing_data.sh).
# shellcheck source=../../lib/testing/missing_data.sh
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/lib/testing/missing_data.sh"
start=$(date +%s)

# verify_case NAME EXPECTED_EXIT MAX_REL_LIMIT ARGS...: runs `parallax verify ARGS`,
# requires the exit status and, for a PASS, the overall max relative difference <= limit.
verify_case() {
  local name=$1 expected=$2 limit=$3
  shift 3
  local out rc rel
  out=$(timeout 300 "$parallax" verify "$@" 2>&1)
  rc=$?
  echo "== $name: exit status $rc"
  echo "$out"
  rel=$(grep -Eo 'max relative difference [^ ]+' <<<"$out" | tail -n 1 | awk '{print $4}')
  if [[ $rc -ne $expected ]]; then
    fail "$name: exit status $rc, expected $expected"
  elif [[ $expected -eq 0 ]] && ! awk -v r="$rel" -v l="$limit" 'BEGIN { exit !(r != "" && r + 0 <= l + 0) }'; then
    fail "$name: max relative difference '$rel' > $limit"
  elif [[ $expected -eq 0 ]] && ! grep -q ': PASS$' <<<"$out"; then
    fail "$name: no PASS verdict"
  elif [[ $expected -eq 1 ]] && ! grep -q ': FAIL$' <<<"$out"; then
    fail "$name: no FAIL verdict"
  else
    pass "$name (max relative difference ${rel:-n/a})"
  fi
  last_out=$out
}
# expect_error NAME EXIT LINE ARGS...: verify exits EXIT and its first stderr line is LINE.
expect_error() {
  local name=$1 expected=$2 line=$3
  shift 3
  local err rc
  err=$(timeout 300 "$parallax" verify "$@" 2>&1 >/dev/null)
  rc=$?
  echo "== $name: exit status $rc"
  echo "$err" | head -n 5
  if [[ $rc -eq $expected && "$(head -n 1 <<<"$err")" == "$line" ]]; then
    pass "$name"
  else
    fail "$name: exit status $rc (expected $expected), first line '$(head -n 1 <<<"$err")', expected '$line'"
  fi
}

export_model() { "$parallax" models export "$@" >/dev/null || { echo "export $* failed"; exit 1; }; }
export_model mlp --widths 64 --batch 0 --optimizer sgd --lr 0.1 -o mlp_sgd.pb
export_model mlp --widths 64 --batch 0 --optimizer momentum --lr 0.05 -o mlp_momentum.pb
export_model mlp --widths 64 --batch 0 --optimizer adam --lr 0.001 -o mlp_adam.pb
export_model lenet --widths 8,16,64 --batch 0 --optimizer momentum --lr 0.01 -o lenet.pb
export_model embedding --vocab 1000 --dim 16 --seq 4 --batch 0 -o emb.pb
export_model embedding --vocab 1000 --dim 16 --seq 4 --batch 0 --optimizer adam --lr 0.01 \
  -o emb_adam.pb
export_model mlp --widths 64 --batch 32 -o fixed.pb
export_model mlp --widths 64 --batch 24 -o fixed24.pb
export_model mlp --widths 64 --batch 0 --optimizer adam --clip-norm 0.05 -o mlp_clip.pb
export_model embedding --vocab 1000 --dim 16 --seq 4 --batch 0 --optimizer adamw --lr 0.01 \
  --clip-norm 0.05 -o emb_adamw.pb

# --- 1. equivalence ---------------------------------------------------------------------
syn=(--synthetic --steps 20)
verify_case "mlp SGD, 2 ranks" 0 5e-7 mlp_sgd.pb --ranks 2 --batch 32 "${syn[@]}"
# The reordered runs really sum in other orders: their noise is not 0.
grep -Eq '^noise: one device against itself with each batch.s examples reversed, and with its halves swapped .*: up to [1-9][0-9.e-]* relative' <<<"$last_out" &&
  grep -Eq '^overall: .* \(bound [0-9.e-]+\): PASS$' <<<"$last_out" ||
  fail "mlp SGD: no noise line or bound in the verdict"
verify_case "mlp SGD, 4 ranks, shuffled, seed 7" 0 1e-6 mlp_sgd.pb --ranks 4 --batch 16 \
  "${syn[@]}" --seed 7
verify_case "mlp Momentum, 2 ranks" 0 1e-6 mlp_momentum.pb --ranks 2 --batch 32 "${syn[@]}"
verify_case "mlp Adam, 2 ranks (4e-5: see the header)" 0 4e-5 mlp_adam.pb --ranks 2 --batch 32 \
  "${syn[@]}"
# --accumulate: the one device runs both ranks' 32 examples and applies the mean gradient,
# so only the cross-rank sum's order could differ (none on 2 ranks): bit-identical.
verify_case "mlp Adam, 2 ranks, --accumulate" 0 0 mlp_adam.pb --ranks 2 --batch 32 \
  "${syn[@]}" --accumulate
grep -q "vs one device accumulating 2 batches of 32" <<<"$last_out" ||
  fail "--accumulate: the header does not say the one device accumulates"
verify_case "fixed-batch mlp (placeholder [32,784]), 3 ranks, --accumulate" 0 3e-7 fixed.pb \
  --ranks 3 "${syn[@]}" --accumulate
verify_case "lenet Momentum, 2 ranks" 0 3e-6 lenet.pb --ranks 2 --batch 16 "${syn[@]}"
# --accumulate with sparse gradients: each micro-batch's slices concatenated in rank order,
# as allgather gathers them and the parameter servers receive them.
verify_case "embedding PS, 3 ranks, --accumulate" 0 5e-7 emb.pb --ranks 3 --batch 16 \
  "${syn[@]}" --strategy ps --accumulate
verify_case "embedding allgather, 2 ranks, --accumulate" 0 0 emb.pb --ranks 2 --batch 16 \
  "${syn[@]}" --sparse allgather --accumulate
for p in 1 2 3; do
  verify_case "embedding PS, $p partitions, 3 ranks" 0 2e-7 emb.pb --ranks 3 --batch 16 \
    "${syn[@]}" --strategy ps --partitions "$p"
  grep -q '^  embeddings .* ps (rows) ' <<<"$last_out" ||
    fail "embedding PS, $p partitions: embeddings not reassembled from parameter-server rows"
done
verify_case "embedding allgather, 2 ranks" 0 2e-7 emb.pb --ranks 2 --batch 16 "${syn[@]}" \
  --sparse allgather
grep -q '^  embeddings .* allgather ' <<<"$last_out" || fail "embedding: not allgather"
verify_case "embedding densify, 4 ranks" 0 2e-7 emb.pb --ranks 4 --batch 8 "${syn[@]}" \
  --sparse dense
grep -q '^  embeddings .* densify ' <<<"$last_out" || fail "embedding: not densify"
verify_case "embedding sparse Adam, PS, 2 ranks" 0 1e-5 emb_adam.pb --ranks 2 --batch 16 \
  "${syn[@]}" --strategy hybrid
# Gradients synchronised at the backprop boundary: clip_by_global_norm (0.05: it clips
# every step) must see the averaged gradient, as must BERT's Assign-based AdamWeightDecay
# (the embedding's IndexedSlices all-gathered before the optimizer densifies it).
verify_case "mlp clip_by_global_norm + Adam, 2 ranks" 0 2e-6 mlp_clip.pb --ranks 2 --batch 16 \
  "${syn[@]}"
verify_case "embedding clip_by_global_norm + AdamWeightDecay, 3 ranks" 0 3e-6 emb_adamw.pb \
  --ranks 3 --batch 8 "${syn[@]}"
grep -q '^  embeddings .* allgather ' <<<"$last_out" || fail "AdamWeightDecay: embeddings not allgather"
# Per-variable overrides from a cluster spec: embeddings on 2 PS partitions, the rest
# all-reduced.
cat >overrides.yaml <<'EOF'
hosts:
  - name: ignored
    cpus: 1
strategy:
  default: hybrid
  variables:
    embeddings: {sparse: ps, partitions: 2}
EOF
verify_case "embedding, overrides from --cluster, 3 ranks" 0 5e-7 emb.pb --ranks 3 --batch 16 \
  "${syn[@]}" --cluster overrides.yaml

# --init-checkpoint: both sides start from a checkpoint (sliced into the ranks' PS rows).
"$parallax" run emb.pb --synthetic --steps 1 --seed 9 --checkpoint-dir emb_init >/dev/null ||
  fail "writing an initial checkpoint"
verify_case "embedding PS from --init-checkpoint, 2 partitions, 3 ranks" 0 3e-7 emb.pb \
  --ranks 3 --batch 16 "${syn[@]}" --strategy ps --partitions 2 \
  --init-checkpoint emb_init/checkpoint-1.safetensors
expect_error "a missing --init-checkpoint" 2 \
  "parallax: error: --init-checkpoint: missing.safetensors: no such file, directory or checkpoint prefix (missing.safetensors.index does not exist)" \
  emb.pb --ranks 2 --synthetic --init-checkpoint missing.safetensors

# The shared TensorBoard MNIST MLP: its input is a queue dequeuing 200 examples (fed
# synthetic data here; one device dequeues 400), and it has no init op, so both sides
# start from the same checkpoint.
# A graph whose tf.data pipeline runs inside it: each side would read its own examples.
expect_error "an in-graph input pipeline" 2 \
  "parallax: error: $pipeline_graph: its input pipeline runs inside the graph (IteratorGetNext:0, IteratorGetNext:1), so the one device and the ranks would read examples of their own; use --accumulate (one device reads each rank's shard through its own copy of the pipeline), feed the pipeline's outputs (--feed NAME=FILE) or pass --synthetic" \
  "$pipeline_graph" --ranks 2

tb="${PARALLAX_SHARED_DIR:-}/testdata/tf/tensorboard_mnist_mlp_train.pbtxt"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -f "$tb" ]]; then
  python3 "$tb_init_script" tb_init.safetensors
  expect_error "TensorBoard MLP without an init checkpoint" 2 \
    "parallax: error: $tb: no init op found (no node initialises the variables); start both sides from a checkpoint with --init-checkpoint FILE" \
    "$tb" --ranks 2 --synthetic
  # Its Reshape to [200, -1] fixes the batch inside the graph: one device cannot take
  # 2 x 200, and verify says so. One rank checks the 1-rank transform == the input graph
  # (bit-identical), the pipeline fed and the initial checkpoint used, all-reduce and PS.
  expect_error "TensorBoard MLP on 2 ranks: batch fixed inside the graph" 2 \
    "parallax: error: $tb: one device, batch 400 (its input pipeline dequeues 200): step 1: node 'MatMul' (MatMul): Matrix size-incompatible: In[0]: [200,1568], In[1]: [784,100] (transpose_a=false, transpose_b=false); the graph seems to fix its batch size beyond its inputs (e.g. a Reshape to a constant shape): use --accumulate (one device accumulates the ranks' batches) or a graph that trains at any batch size" \
    "$tb" --ranks 2 "${syn[@]}" --init-checkpoint tb_init.safetensors
  # ... which --accumulate verifies: all-reduce on 2, 3 and 4 ranks, parameter servers on 3.
  # Bit-identical on 2 ranks; on 3 and 4 MPI's all-reduce or the parameter servers may
  # add the ranks' terms in another order than the one device (measured 0 to 2.6e-7).
  for n in 2 3 4; do
    limit=5e-7
    (( n == 2 )) && limit=0
    verify_case "TensorBoard MNIST MLP (shared), $n ranks, --accumulate" 0 "$limit" "$tb" \
      --ranks "$n" "${syn[@]}" --init-checkpoint tb_init.safetensors --accumulate
  done
  verify_case "TensorBoard MNIST MLP (shared), 3 ranks, ps, --accumulate" 0 5e-7 "$tb" \
    --ranks 3 "${syn[@]}" --init-checkpoint tb_init.safetensors --accumulate --strategy ps
  for strategy in auto ps; do
    verify_case "TensorBoard MNIST MLP (shared), 1 rank, $strategy: bit-identical" 0 0 "$tb" \
      --ranks 1 "${syn[@]}" --init-checkpoint tb_init.safetensors --strategy "$strategy" \
      --tolerance 0
    grep -q "one device dequeues 200 = 1 x 200 examples per step" <<<"$last_out" ||
      fail "TensorBoard MLP: no note on the input pipeline"
  done
else
  missing_data "the TensorBoard MNIST MLP (shared)" "\$PARALLAX_SHARED_DIR/testdata/tf/tensorboard_mnist_mlp_train.pbtxt is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
fi

# --- 2. the check can fail -------------------------------------------------------------
cat >sum.yaml <<'EOF'
hosts:
  - name: ignored
    cpus: 1
strategy:
  average: false     # the ranks' gradients summed: N times the step of one device
EOF
verify_case "gradients summed, not averaged: FAIL" 1 0 mlp_sgd.pb --ranks 2 --batch 32 \
  "${syn[@]}" --cluster sum.yaml
# With --accumulate the one device combines as the plan does: summed here, so it PASSes.
verify_case "gradients summed, --accumulate sums too: PASS" 0 0 mlp_sgd.pb --ranks 2 \
  --batch 32 "${syn[@]}" --cluster sum.yaml --accumulate
# The bug Parallax had: each rank clips its own gradient, then the clipped ones are
# averaged (PARALLAX_TEST_SYNC_AFTER_CLIPPING plants it).
export PARALLAX_TEST_SYNC_AFTER_CLIPPING=1
verify_case "synchronised after clipping: FAIL" 1 0 mlp_clip.pb --ranks 2 --batch 16 "${syn[@]}"
unset PARALLAX_TEST_SYNC_AFTER_CLIPPING
# A rewrite bug: rank 1 keeps the sum of the all-reduced gradients (N times the step).
PARALLAX_TEST_UNAVERAGED_RANK=1 verify_case "rank 1's gradients left un-averaged: FAIL" 1 0 \
  mlp_sgd.pb --ranks 2 --batch 32 "${syn[@]}"
verify_case "tolerance 0 on a run that is not bit-identical: FAIL" 1 0 mlp_sgd.pb --ranks 2 \
  --batch 32 "${syn[@]}" --tolerance 0 --noise-factor 0
grep -Eq '^  dense/kernel .* FAIL$' <<<"$last_out" || fail "tolerance 0: dense/kernel did not FAIL"
# A reference that cannot reproduce itself: the Horovod MNIST graph's dropout masks fall on
# other examples when a batch is reordered, so its noise is large (0.201; asserted >= 0.1);
# the bound stops at 1e-3, the verdict is FAIL and a note says why.
hvd="${PARALLAX_SHARED_DIR:-}/testdata/tf/horovod_mnist_rmsprop.pbtxt"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -f "$hvd" ]]; then
  verify_case "Horovod MNIST (dropout): noise too large to judge: FAIL" 1 0 "$hvd" --ranks 2 \
    "${syn[@]}"
  grep -Eq '^note: one device differs from itself by up to (0\.[1-9][0-9]*|[1-9][0-9.e+-]*) \(relative\) when only the order of each batch.s examples changes: .*--accumulate compares exactly$' <<<"$last_out" &&
    grep -Eq '^overall: .*\(bound 0\.001\): FAIL$' <<<"$last_out" ||
    fail "Horovod MNIST: no note of a noise >= 0.1, or a bound other than 1e-3"
else
  missing_data "the Horovod MNIST graph (shared)" "\$PARALLAX_SHARED_DIR/testdata/tf/horovod_mnist_rmsprop.pbtxt is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
fi

# --json: one object; a variable's shape is a list of dimensions, as in transform's JSON.
json_out=$(timeout 300 "$parallax" verify mlp_sgd.pb --ranks 2 --batch 32 --synthetic --steps 3 --json 2>/dev/null)
python3 -c '
import json, sys
r = json.loads(sys.argv[1])
shapes = {v["name"]: v["shape"] for v in r["variables"]}
assert shapes["dense/kernel"] == [784, 64] and shapes["dense/bias"] == [64], shapes
assert r["pass"] is True and all(v["compared"] for v in r["variables"])
assert r["noise_factor"] == 10 and r["noise"] is not None and r["noise"] >= 0, r["noise"]
assert r["bound"] == max(1e-5, min(10 * r["noise"], 1e-3)), (r["bound"], r["noise"])
assert all(v["bound"] == r["bound"] and v["noise"] is not None for v in r["variables"])
' "$json_out" && pass "verify --json: shapes as lists" || fail "verify --json: $json_out"

# --- 3. bad input and failed jobs -------------------------------------------------------
expect_error "fixed batch" 2 \
  "parallax: error: fixed.pb: placeholder 'x' (float [32,784]) fixes the batch dimension at 32, so one device cannot take the global batch of 2 x 32 = 64; use --accumulate (one device accumulates the ranks' 2 batches of 32), or export the graph with an open batch (\`parallax models export NAME --batch 0\`, or a placeholder of shape [-1, ...])" \
  fixed.pb --ranks 2 --synthetic
# Without --batch the ranks train at the batch the graph fixes, and the message quotes it.
expect_error "fixed batch, no --batch" 2 \
  "parallax: error: fixed24.pb: placeholder 'x' (float [24,784]) fixes the batch dimension at 24, so one device cannot take the global batch of 3 x 24 = 72; use --accumulate (one device accumulates the ranks' 3 batches of 24), or export the graph with an open batch (\`parallax models export NAME --batch 0\`, or a placeholder of shape [-1, ...])" \
  fixed24.pb --ranks 3 --synthetic
expect_error "fixed batch, --batch 16" 2 \
  "parallax: error: fixed.pb: placeholder 'x' (float [32,784]) fixes the batch dimension at 32, so one device cannot take the global batch of 2 x 16 = 32; use --accumulate (one device accumulates the ranks' 2 batches of 16), or export the graph with an open batch (\`parallax models export NAME --batch 0\`, or a placeholder of shape [-1, ...])" \
  fixed.pb --ranks 2 --synthetic --batch 16
expect_error "--accumulate: --batch other than a fixed placeholder's" 2 \
  "parallax: error: --batch 16 conflicts with placeholder 'x' (float [32,784]): it fixes the batch at 32" \
  fixed.pb --ranks 2 --synthetic --accumulate --batch 16
expect_error "unknown sparse method" 2 \
  "parallax: error: --sparse: unknown method 'gather' (expected ps, allgather or dense)" \
  emb.pb --ranks 2 --synthetic --sparse gather
expect_error "no ranks" 2 "parallax: error: --ranks: must be at least 1, not 0" \
  mlp_sgd.pb --ranks 0 --synthetic
expect_error "epoch end with 10000 examples on 3 ranks" 2 \
  "parallax: error: the data has 10000 examples per epoch, not a multiple of 3 ranks: each epoch the job leaves out the last 1, one device does not, so they read different examples after step 104; use --steps 104 or fewer, or data with a multiple of 3 examples" \
  mlp_sgd.pb --ranks 3 --batch 32 --synthetic --steps 105
mkdir kept
expect_error "--keep names an existing directory" 2 \
  "parallax: error: --keep kept: exists; name a directory that does not" \
  mlp_sgd.pb --ranks 2 --synthetic --keep kept
err=$(PARALLAX_TEST_FAIL_AT_STEP=1:5:error timeout 300 "$parallax" verify mlp_sgd.pb --ranks 2 \
  --synthetic 2>&1 >/dev/null)
rc=$?
echo "== a rank fails: exit status $rc"
echo "$err" | head -n 8
if [[ $rc -eq 3 ]] && grep -q "^parallax: error: mlp_sgd.pb: the 2-rank job failed: mpirun exited with status" <<<"$err" &&
   grep -q "PARALLAX_TEST_FAIL_AT_STEP: injected failure before step 5" <<<"$err"; then
  pass "a failing rank: exit 3 with the rank's error"
else
  fail "a failing rank: exit status $rc"
fi
# Nothing left behind without --keep; --keep keeps the job and the checkpoints.
leftovers=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'parallax-verify.*' | wc -l)
[[ $leftovers -eq 0 ]] && pass "no work directory left behind" ||
  fail "$leftovers work directories left in $TMPDIR"
verify_case "--keep" 0 1e-5 mlp_sgd.pb --ranks 2 --batch 32 --synthetic --steps 3 --keep kept2
[[ -f kept2/job/plan.yaml && -f kept2/single/checkpoint-3.safetensors &&
   -f kept2/ranks/rank-1/checkpoint-3.safetensors && -s kept2/job.log ]] &&
  pass "--keep keeps the job, the checkpoints and the ranks' output" || fail "--keep: $(ls -R kept2)"

echo "$passed passed, $failed failed, $(( $(date +%s) - start )) s"
(( failed == 0 ))
