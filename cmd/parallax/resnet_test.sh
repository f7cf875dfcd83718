#!/usr/bin/env bash
# The zoo's resnet50 (docs/workloads.md) at a small size (32x32 images, 8 filters, one
# block per stage: the full network's ops and patterns, 1,444 nodes):
#  1. the exported graph is what inspect and transform expect of a TF ResNet training
#     graph: 53 trainable variables all-reduced, batch norm's moving mean and variance
#     state, kept per rank (local, the plan's reason says why), the train op
#     `group_deps`;
#  2. 50 steps on synthetic data: the loss falls (the mean of the last 10 steps below
#     0.7 of the first step's: from ln(1001) towards the labels' ln(10));
#  3. `verify --ranks 2 --accumulate`: PASS (bit for bit on 2 ranks), the moving
#     statistics compared on rank 0; without --accumulate the fixed batch is refused
#     with the one-line hint;
#  4. --data-format NCHW: the same variables, and fed the same batch, one training step
#     gives every variable within 1e-3 of NHWC's (only oneDNN's summation order
#     differs; batch norm over the last stage's 1x1 maps of 4 examples amplifies that
#     to ~1e-4 in one step and chaotically after a few, so one step is compared);
#     verify PASS too.
#   resnet_test.sh PARALLAX CHECKPOINT_DIFF
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
source "$TEST_SRCDIR/$TEST_WORKSPACE/lib/testing/shell_test.sh"
shell_test_begin resnet

small=(--image-size 32 --filters 8 --blocks 1,1,1,1 --batch 4)
"$parallax" models export resnet50 "${small[@]}" -o nhwc.pb >/dev/null || exit 1
"$parallax" models export resnet50 "${small[@]}" --data-format NCHW -o nchw.pb >/dev/null || exit 1

# 1. What inspect and transform see.
"$parallax" inspect nhwc.pb >inspect.txt 2>&1 || { cat inspect.txt; exit 1; }
if grep -q 'variables  140: 53 trainable, 53 slots, 34 state' inspect.txt &&
  grep -q 'train op   group_deps (53 gradient updates)' inspect.txt &&
  grep -q 'resnet_model/batch_normalization_3/moving_variance .* state ' inspect.txt; then
  pass "inspect: 53 trainable, 34 moving statistics as state, train op group_deps"
else
  head -12 inspect.txt
  fail "inspect"
fi
printf 'hosts:\n  - name: localhost\n    cpus: 2\n' >local.yaml
if "$parallax" transform nhwc.pb --cluster local.yaml -o job >transform.out 2>&1 &&
  [[ $(grep -c '^    method: allreduce$' job/plan.yaml) -eq 53 ]] &&
  [[ $(grep -c '^    method: local$' job/plan.yaml) -eq 87 ]] &&
  [[ $(grep -c "reason: \"state (no gradient) written from each rank's own examples" job/plan.yaml) -eq 34 ]]; then
  pass "transform: 53 all-reduced gradients, the 34 moving statistics local, kept per rank"
else
  cat transform.out
  grep -c 'strategy:' job/plan.yaml
  fail "transform"
fi

# 2. 50 steps, falling loss.
if "$parallax" run nhwc.pb --synthetic --steps 50 --log-every 1 --metrics m.jsonl >run.out 2>&1 &&
  python3 - m.jsonl <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
first, last = losses[0], sum(losses[-10:]) / 10
print(f"loss at step 1 {first:.4f}, mean of steps 41-50 {last:.4f}")
sys.exit(0 if len(losses) == 50 and last < 0.7 * first else 1)
PY
then
  pass "50 steps on synthetic data: the loss falls"
else
  tail -3 run.out
  fail "50 steps: the loss did not fall below 0.7 of the first"
fi

# 3. verify.
verify() {  # GRAPH TAG
  timeout 600 "$parallax" verify "$1" --ranks 2 --accumulate --synthetic --steps 3 >"verify-$2.out" 2>&1
}
if verify nhwc.pb nhwc && tail -1 verify-nhwc.out | grep -q 'max abs difference 0, .*: PASS' &&
  grep -q 'moving_mean .* local (rank 0) .* PASS' verify-nhwc.out; then
  pass "verify --ranks 2 --accumulate: PASS bit for bit, moving statistics compared on rank 0"
else
  tail -5 verify-nhwc.out
  fail "verify --ranks 2 --accumulate (NHWC)"
fi
"$parallax" verify nhwc.pb --ranks 2 --synthetic --steps 1 >refused.out 2>&1
code=$?
if [[ $code -eq 2 && $(wc -l <refused.out) -eq 1 ]] && grep -q 'fixes the batch dimension at 4.*use --accumulate' refused.out; then
  pass "verify without --accumulate: the fixed batch refused in one line, exit 2"
else
  cat refused.out
  fail "verify without --accumulate: exit $code"
fi

# 4. NCHW.
"$parallax" inspect nchw.pb --format json >nchw.json 2>&1 &&
  "$parallax" inspect nhwc.pb --format json >nhwc.json 2>&1
if python3 - nhwc.json nchw.json <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
va = {v["name"]: v["shape"] for v in a["variables"]}
vb = {v["name"]: v["shape"] for v in b["variables"]}
sys.exit(0 if va == vb else 1)
PY
then
  pass "NCHW: the same variables and shapes as NHWC"
else
  fail "NCHW: variables differ from NHWC"
fi
steps=(--synthetic --steps 1 --seed 3 --threads 2)
if "$parallax" run nhwc.pb "${steps[@]}" --checkpoint-dir ck-nhwc >nhwc-run.out 2>&1 &&
  "$parallax" run nchw.pb "${steps[@]}" --checkpoint-dir ck-nchw >nchw-run.out 2>&1 &&
  "$diff_tool" ck-nhwc/checkpoint-1.safetensors ck-nchw/checkpoint-1.safetensors \
    --tolerance 1e-3 >diff.out 2>&1; then
  pass "NCHW trains as NHWC: one step, every variable within 1e-3"
else
  tail -n 3 nchw-run.out diff.out
  fail "NCHW vs NHWC after one step"
fi
if verify nchw.pb nchw && tail -1 verify-nchw.out | grep -q ': PASS'; then
  pass "NCHW: verify --ranks 2 --accumulate PASS"
else
  tail -5 verify-nchw.out
  fail "verify --ranks 2 --accumulate (NCHW)"
fi

shell_test_end
