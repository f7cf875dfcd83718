#!/usr/bin/env bash
# The zoo's lm1b (lib/models/lm1b.h) at a small size (vocab 50, dim 4, hidden 6, 10
# steps, 8 sampled candidates, batch 16: the full model's ops and patterns):
#  1. inspect: 6 trainable variables, three of them (the embedding, the sampled
#     softmax's weights and biases) with sparse (IndexedSlices) gradients updated by
#     SparseApplyAdagrad;
#  2. transform on 2 ranks, with a vocabulary of 1000 (a step touches 160 target rows and
#     8 sampled ones: at 50 it touches them all and the planner rightly densifies): the
#     three sparse variables and their Adagrad slots on parameter servers, the LSTM's
#     three all-reduced, softmax_w priced for the targets plus the sampled classes;
#  3. 50 steps of `run --synthetic` (Zipf ids, next-word targets): the loss falls (the
#     mean of steps 41-50 below 0.9 of steps 1-10's; the sampled loss is noisy step to
#     step, as every step draws new candidates);
#  4. `verify --ranks 2 --accumulate` of the vocabulary-1000 model: PASS, the three
#     sparse variables on parameter servers (the one device draws rank r's candidates
#     for micro-batch r);
#  5. the full-size model planned for one host of 24 GB (docs/transform.md, Memory): on
#     parameter servers the report's memory line, each rank holding half the tables;
#     densified on 4 ranks, refused (exit 2, the exact line, no job written).
#   lm1b_test.sh PARALLAX
set -u
parallax=$(realpath "$1")
source "$TEST_SRCDIR/$TEST_WORKSPACE/lib/testing/shell_test.sh"
shell_test_begin lm1b

"$parallax" models export lm1b --vocab 50 --dim 4 --hidden 6 --seq 10 --samples 8 --batch 16 \
  --lr 0.5 -o lm.pb >/dev/null || exit 1
"$parallax" models export lm1b --vocab 1000 --dim 4 --hidden 6 --seq 10 --samples 8 --batch 16 \
  -o lm1000.pb >/dev/null || exit 1

# 1. inspect.
"$parallax" inspect lm.pb >inspect.txt 2>&1 || { cat inspect.txt; exit 1; }
if grep -q 'variables  12: 6 trainable, 6 slots, 0 state' inspect.txt &&
  [[ $(grep -cE '^  model/(emb_0|softmax_w_0|softmax_b) .* sparse +SparseApplyAdagrad' inspect.txt) -eq 3 ]] &&
  [[ $(grep -cE '^  model/lstm_0/.* dense +ApplyAdagrad' inspect.txt) -eq 3 ]] &&
  grep -q 'feeds      ids int32\[16,10\], y int64\[16,10\]' inspect.txt; then
  pass "inspect: 6 trainable, the embedding and the sampled softmax's weights and biases sparse"
else
  head -20 inspect.txt
  fail "inspect"
fi

# 2. transform on 2 ranks.
printf 'hosts:\n  - name: localhost\n    cpus: 2\n' >local.yaml
if "$parallax" transform lm1000.pb --cluster local.yaml -o job >transform.out 2>&1 &&
  grep -q "168 of 1000 rows touched per rank (ids 'y' \[16,10\] + 8 sampled by" job/report.txt &&
  python3 - job/plan.yaml <<'PY'
import re, sys
text = open(sys.argv[1]).read()
methods = dict(re.findall(r'- name: "([^"]+)"\n    method: (\w+)', text))
sparse = ["model/emb_0", "model/softmax_w_0", "model/softmax_b"]
dense = ["model/lstm_0/lstm_cell/kernel", "model/lstm_0/lstm_cell/bias",
         "model/lstm_0/lstm_cell/projection/kernel"]
ok = all(methods.get(v) == "ps" and methods.get(v + "/Adagrad") == "ps" for v in sparse)
ok = ok and all(methods.get(v) == "allreduce" for v in dense)
print({v: methods.get(v) for v in sparse + dense})
sys.exit(0 if ok else 1)
PY
then
  pass "transform: the three sparse variables and their slots on ps, the LSTM all-reduced, softmax_w priced for 160 + 8 rows"
else
  cat transform.out
  fail "transform"
fi

# 3. 50 steps, falling loss.
if "$parallax" run lm.pb --synthetic --steps 50 --log-every 1 --metrics m.jsonl >run.out 2>&1 &&
  python3 - m.jsonl <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
print(f"loss at step 1 {losses[0]:.4f}, step 50 {losses[-1]:.4f}; "
      f"mean of steps 1-10 {first:.4f}, of steps 41-50 {last:.4f}")
sys.exit(0 if len(losses) == 50 and last < 0.9 * first else 1)
PY
then
  pass "50 steps on synthetic data: the loss falls"
else
  tail -3 run.out
  fail "50 steps: the loss did not fall below 0.9 of the first steps'"
fi

# 4. verify.
if timeout 600 "$parallax" verify lm1000.pb --ranks 2 --accumulate --synthetic --steps 3 >verify.out 2>&1 &&
  tail -1 verify.out | grep -q ': PASS' &&
  [[ $(grep -cE '^  model/(emb_0|softmax_w_0|softmax_b) .* ps \(rows\) .* PASS' verify.out) -eq 3 ]]; then
  pass "verify --ranks 2 --accumulate: PASS, the three sparse variables partitioned"
else
  tail -5 verify.out
  fail "verify --ranks 2 --accumulate"
fi

# 5. memory at the full size.
"$parallax" models export lm1b -o full.pb >/dev/null || exit 1
printf 'hosts:\n  - name: localhost\n    cpus: 2\n    memory_gb: 24\n' >c.yaml
expected_memory='memory: 3.2 GiB on rank 0, the most of any rank by the estimate (3.1 GiB of variables and slots, 124.5 MiB of gradient buffers; activations not counted)'
if "$parallax" transform full.pb --cluster c.yaml --sparse ps -o full-ps >full-ps.out 2>&1 &&
  grep -qxF "$expected_memory" full-ps/report.txt &&
  grep -qx '  state_bytes: \[3328790008, 3328790008\]' full-ps/plan.yaml; then
  pass "full size on parameter servers: $expected_memory"
else
  cat full-ps.out
  grep -A2 '^memory' full-ps/report.txt full-ps/plan.yaml
  fail "full size on parameter servers: the memory estimate"
fi
printf 'hosts:\n  - name: localhost\n    cpus: 4\n    memory_gb: 24\n' >c.yaml
expected_error="parallax: error: full.pb: the plan does not fit in memory: the 4 ranks of host 'localhost' need 49.1 GiB by the transform's estimate, more than the 22.4 GiB it has (memory_gb in c.yaml); rank 0 holds 6.1 GiB of state and 6.1 GiB of gradient buffers, most of it model/emb_0 (densify) with 4.5 GiB; use --sparse ps (tables partitioned over the ranks), fewer ranks per host, or set the host's memory_gb if the figure is wrong"
"$parallax" transform full.pb --cluster c.yaml --sparse dense -o full-dense >full-dense.out 2>&1
status=$?
if [[ $status -eq 2 && "$(cat full-dense.out)" == "$expected_error" && ! -e full-dense ]]; then
  pass "full size densified on 4 ranks of 24 GB: refused with the estimate, nothing written"
else
  cat full-dense.out
  fail "full size densified: exit $status, expected 2 and the line above"
fi

shell_test_end
