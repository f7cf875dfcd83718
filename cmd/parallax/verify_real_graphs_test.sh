#!/usr/bin/env bash
# `parallax verify --ranks 2 --accumulate`, 20 steps, on real TF training graphs and the
# zoo's wide & deep model (docs/verify.md): one device runs each rank's micro-batch with
# that rank's random streams and keeps each rank's rank-local state, so the comparison is
# exact even with dropout, samplers and batch norm.
#  1. PASS, bit-identical (max relative difference 0: with --accumulate on 2 ranks the
#     only possible difference, the cross-rank sum's order, cannot arise):
#     - a tf.data softmax graph (Parallax's testdata): its pipeline runs inside the graph,
#       one device reads each rank's shard through a copy of it;
#     - the zoo's wide_deep (hash buckets, a crossed column, Ftrl + Adagrad; sparse weights
#       on parameter servers), fixed batch with --accumulate; open batch without it
#       (one device x 2b: not bit-identical, at most 1e-6; measured 5.6e-7);
#     - with PARALLAX_SHARED_DIR (else a SKIP; a FAIL under CI=true or
#       PARALLAX_REQUIRE_DATA=1): BERT-Tiny fine-tuning on MRPC
#       (its own TFRecord pipeline, one file sharded by record; AdamWeightDecay after
#       clip_by_global_norm; dropout; a random "pretrained" checkpoint), the LSTM-CRF
#       tagger (while loops, dropout fed 0.8; its sparse char embeddings all-gathered, and
#       on parameter servers), vd_cnn (batch norm: moving statistics rank-local, compared
#       on rank 0), word2vec with NCE (LogUniformCandidateSampler), the IMPALA learner
#       (tf.scan, LSTMBlockCell, a staging area filled from a queue: synthetic
#       trajectories fed to the dequeue);
#  2. FAIL (exit 1) with a planted bug — every rank draws rank 0's random numbers
#     (PARALLAX_TEST_SHARED_RANDOM_STREAM=1) — on BERT-Tiny (dropout) and word2vec (the
#     sampler).
#   verify_real_graphs_test.sh PARALLAX MAKE_TF_DATA TFDATA_SOFTMAX_GRAPH FEEDS_SCRIPT
set -u
parallax=$(realpath "$1")
make_tf_data=$(realpath "$2")
pipeline_graph=$(realpath "$3")  # lib/runtime/testdata/tfdata_softmax.pbtxt
feeds_script=$(realpath "$4")    # testdata/real_graph_feeds.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-verify-real.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
work=$TMPDIR/w
mkdir -p "$work" && cd "$work" || exit 1
passed=0
failed=0
skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# missing_data WHAT WHY: a failure under CI=true or PARALLAX_REQUIRE_DATA=1, else a
# SKIP line (lib/testing/missing_data.sh).
# shellcheck source=../../lib/testing/missing_data.sh
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/lib/testing/missing_data.sh"
start=$(date +%s)

# verify_case NAME EXPECTED_EXIT ARGS...: `parallax verify ARGS` must exit EXPECTED_EXIT
# (0: PASS with max relative difference <= $bound, 0 unless set for the call; 1: FAIL).
verify_case() {
  local name=$1 expected=$2
  shift 2
  local out rc rel limit=${bound:-0}
  out=$(timeout 600 "$parallax" verify "$@" 2>&1)
  rc=$?
  echo "== $name: exit status $rc"
  grep -v '^  .* PASS$' <<<"$out" | tail -n 20
  rel=$(grep -Eo 'max relative difference [^ ]+' <<<"$out" | tail -n 1 | awk '{print $4}')
  if [[ $rc -ne $expected ]]; then
    fail "$name: exit status $rc, expected $expected"
  elif [[ $expected -eq 0 ]] &&
       ! awk -v r="$rel" -v l="$limit" 'BEGIN { exit !(r != "" && r + 0 <= l + 0) }'; then
    fail "$name: max relative difference '$rel' > $limit"
  elif [[ $expected -eq 1 ]] && ! grep -q ': FAIL$' <<<"$out"; then
    fail "$name: no FAIL verdict"
  else
    pass "$name (max relative difference ${rel:-n/a})"
  fi
  last_out=$out
}
acc=(--ranks 2 --accumulate --steps 20)

# --- Parallax's own graphs ----------------------------------------------------------------
"$make_tf_data" softmax-examples train.tfrecord 1000 >/dev/null || fail "softmax examples"
verify_case "tf.data softmax, pipeline in the graph" 0 "$pipeline_graph" "${acc[@]}" \
  --input-dir "$work"
grep -q "vs one device accumulating 2 batches of" <<<"$last_out" ||
  fail "tf.data softmax: the header does not give the pipeline's batch"
"$parallax" models export wide_deep --batch 64 -o wide_deep.pb >/dev/null || fail "export"
"$parallax" models export wide_deep --batch 0 -o wide_deep_open.pb >/dev/null || fail "export"
verify_case "wide_deep, fixed batch 64" 0 wide_deep.pb "${acc[@]}" --synthetic
grep -q '^  linear/linear_model/c0_X_c1/weights .* ps (rows) ' <<<"$last_out" ||
  fail "wide_deep: the crossed column's weights are not on parameter servers"
bound=1e-6 verify_case "wide_deep, open batch, one device x 128" 0 wide_deep_open.pb --ranks 2 --steps 20 \
  --batch 64 --synthetic

# --- Real TF graphs -------------------------------------------------------------------------
tf="${PARALLAX_SHARED_DIR:-}/testdata/tf"
files="${PARALLAX_SHARED_DIR:-}/testdata/tf-files"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -d "$tf" ]]; then
  bert="$tf/bert_tiny_mrpc_finetune.pbtxt"
  "$make_tf_data" checkpoint "$bert" pretrained >/dev/null || fail "pretrained checkpoint"
  bert_args=("$bert" "${acc[@]}" --init-checkpoint "$work/pretrained"
             --input-dir "$files/bert_mrpc")
  verify_case "BERT-Tiny MRPC fine-tuning" 0 "${bert_args[@]}"
  grep -q '^  bert/embeddings/word_embeddings .* allgather ' <<<"$last_out" ||
    fail "BERT-Tiny: word_embeddings not all-gathered"
  PARALLAX_TEST_SHARED_RANDOM_STREAM=1 verify_case \
    "BERT-Tiny, planted bug: every rank draws rank 0's dropout masks" 1 "${bert_args[@]}"

  python3 "$feeds_script" lstm_crf lstm_crf || fail "lstm_crf feeds"
  lstm_args=("$tf/tfnet_lstm_crf_ner.meta" "${acc[@]}" --batch 8 --feed dropout=0.8
             --feed lr=0.01)
  for name in word_ids sequence_lengths char_ids word_lengths labels; do
    lstm_args+=(--feed "$name=lstm_crf/$name.npy")
  done
  verify_case "LSTM-CRF (dropout 0.8)" 0 "${lstm_args[@]}"
  verify_case "LSTM-CRF, char embeddings on parameter servers" 0 "${lstm_args[@]}" --sparse ps
  grep -q '^  chars/_char_embeddings .* ps (rows) ' <<<"$last_out" ||
    fail "LSTM-CRF: char embeddings not on parameter servers"

  python3 "$feeds_script" vd_cnn vd_cnn || fail "vd_cnn feeds"
  verify_case "vd_cnn (batch norm)" 0 "$tf/tfnet_vd_cnn.meta" "${acc[@]}" --batch 4 \
    --feed x=vd_cnn/x.npy --feed y=vd_cnn/y.npy --feed is_training=true
  grep -q '^note: rank-local state (conv-block-1/conv-0/batch_normalization/moving_mean, ' \
    <<<"$last_out" || fail "vd_cnn: the moving statistics are not reported rank-local"
  grep -q '^  conv-block-1/conv-0/batch_normalization/moving_mean .* local (rank 0) .* PASS$' \
    <<<"$last_out" || fail "vd_cnn: moving_mean not compared on rank 0"

  w2v=("$tf/tfnet_word2vec_nce.meta" "${acc[@]}" --batch 128 --synthetic)
  verify_case "word2vec NCE" 0 "${w2v[@]}"
  PARALLAX_TEST_SHARED_RANDOM_STREAM=1 verify_case \
    "word2vec, planted bug: every rank draws rank 0's negative samples" 1 "${w2v[@]}"

  verify_case "IMPALA learner (tf.scan, LSTMBlockCell, a staging area)" 0 \
    "$tf/impala_scalable_agent_learner.pbtxt" "${acc[@]}" --synthetic
else
  missing_data "the real TF graphs (BERT-Tiny, LSTM-CRF, vd_cnn, word2vec, IMPALA)" "\$PARALLAX_SHARED_DIR/testdata/tf is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
fi

echo "$passed passed, $failed failed, $skipped skipped, $(( $(date +%s) - start )) s"
(( failed == 0 ))
