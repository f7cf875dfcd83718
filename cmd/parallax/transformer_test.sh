#!/usr/bin/env bash
# The zoo's transformer (BERT, docs/models.md) at a small size (2 layers, hidden 32, 4
# heads, 8 tokens, vocabulary 50), exported with an open batch:
#  1. inspect: 41 trainable variables, the word embeddings' gradient sparse, the train op
#     AdamWeightDecay;
#  2. 50 steps of `parallax run --synthetic` (batch 64, lr 1e-3): the loss falls (the mean
#     of steps 41-50 at least 0.15 below the mean of steps 1-10; chance is ln 10 = 2.30);
#  3. `verify --ranks 2 --accumulate` (dropout 0): PASS bit for bit;
#  4. `verify --ranks 2` against one device at batch 2b (dropout 0): every variable within
#     1e-5 relative (measured 1.9e-6) except the attention key biases and their slots,
#     which differ by less than 1e-8 absolute: their gradient is 0 in exact arithmetic
#     (softmax ignores a bias added to every key), so their values are rounding noise
#     that no summation order reproduces; verify's relative measure, and its noise run,
#     see that noise as O(1) and FAIL them (exit 1);
#  5. with --dropout 0.1 the same comparison FAILs with verify's note on random ops:
#     each run draws its own masks.
#   transformer_test.sh PARALLAX
set -u
parallax=$(realpath "$1")
source "$TEST_SRCDIR/$TEST_WORKSPACE/lib/testing/shell_test.sh"
shell_test_begin transformer

small=(--layers 2 --hidden 32 --heads 4 --seq 8 --vocab 50 --batch 0 --lr 1e-3)
"$parallax" models export transformer "${small[@]}" --dropout 0 -o bert.pb >/dev/null || exit 1
"$parallax" models export transformer "${small[@]}" --dropout 0.1 -o bert_dropout.pb >/dev/null ||
  exit 1

# 1. What inspect sees.
"$parallax" inspect bert.pb >inspect.txt 2>&1 || { cat inspect.txt; exit 1; }
if grep -q 'variables  123: 41 trainable, 82 slots, 0 state, 0 unrecognised, 0 untouched' inspect.txt &&
  grep -q 'train op   AdamWeightDecay (41 gradient updates)' inspect.txt &&
  grep -q '^  bert/embeddings/word_embeddings .* sparse ' inspect.txt &&
  [[ $(grep -c ' sparse ' inspect.txt) -eq 1 ]]; then
  pass "inspect: 41 trainable, the word embeddings sparse, train op AdamWeightDecay"
else
  head -12 inspect.txt
  fail "inspect"
fi

# 2. 50 steps, falling loss.
if "$parallax" run bert.pb --synthetic --batch 64 --steps 50 --log-every 1 --metrics m.jsonl \
  >run.out 2>&1 && python3 - m.jsonl <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
print(f"loss at step 1 {losses[0]:.4f}, at step 50 {losses[-1]:.4f}; "
      f"mean of steps 1-10 {first:.4f}, of steps 41-50 {last:.4f}")
sys.exit(0 if len(losses) == 50 and losses[0] > 2.2 and last < first - 0.15 else 1)
PY
then
  pass "50 steps on synthetic data: the loss falls"
else
  tail -3 run.out
  fail "50 steps: the loss did not fall by 0.15"
fi

# 3. verify --accumulate: exact.
verify() {  # GRAPH OUT ARGS...
  local graph=$1 out=$2
  shift 2
  timeout 600 "$parallax" verify "$graph" --ranks 2 --synthetic --batch 8 --steps 20 "$@" >"$out" 2>&1
}
if verify bert.pb accumulate.out --accumulate &&
  tail -1 accumulate.out | grep -q 'max abs difference 0, .*: PASS$'; then
  pass "verify --ranks 2 --accumulate: PASS bit for bit"
else
  tail -5 accumulate.out
  fail "verify --ranks 2 --accumulate"
fi

# 4. verify against one device at batch 2b.
verify bert.pb nb.json --json
rc=$?
if [[ $rc -eq 1 ]] && python3 - nb.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
key = lambda name: "/attention/self/key/bias" in name
failing = sorted(v["name"] for v in d["variables"] if not v["pass"])
expected = sorted(f"bert/encoder/layer_{i}/attention/self/key/bias{s}"
                  for i in range(2) for s in ("", "/adam_m", "/adam_v"))
others = max(v["max_rel"] for v in d["variables"] if not key(v["name"]))
keys = max(v["max_abs"] for v in d["variables"] if key(v["name"]))
print(f"{len(d['variables'])} variables; the others' max relative difference {others:.3g}; "
      f"the key biases' max absolute difference {keys:.3g}; failing: {failing}")
sys.exit(0 if failing == expected and others <= 1e-5 and keys < 1e-8 else 1)
PY
then
  pass "verify --ranks 2 (N·b): every variable within 1e-5 but the zero-gradient key biases (< 1e-8 absolute)"
else
  head -c 600 nb.json
  fail "verify --ranks 2 (N·b): exit status $rc"
fi

# 5. Dropout: one device cannot reproduce the ranks' masks.
verify bert_dropout.pb dropout.out
rc=$?
if [[ $rc -eq 1 ]] && grep -q '^note: .*random ops in the step (dropout' dropout.out &&
  tail -1 dropout.out | grep -q ': FAIL$'; then
  pass "verify --ranks 2 with --dropout 0.1: FAIL with the note on random ops"
else
  tail -3 dropout.out
  fail "verify with dropout: exit status $rc"
fi

shell_test_end

