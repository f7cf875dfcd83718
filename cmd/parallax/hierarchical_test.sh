#!/usr/bin/env bash
# Hierarchical all-reduce (docs/strategy.md#all-reduce-across-hosts) on fake hosts
# (PARALLAX_TEST_RANKS_PER_HOST=2: ranks 0-1 and 2-3 are two hosts; multihost_test runs
# it on real ones, network namespaces, with the bytes on each host's link). For the zoo's
# mlp, lenet and embedding models planned on 2 hosts of 2 ranks:
#  1. the transform chooses hierarchical by itself (the cost model), says why in plan.yaml,
#     and the rank graphs ask for it; --allreduce flat plans flat;
#  2. 4 ranks, 3 steps, same seed: hierarchical twice gives the same bits (deterministic);
#     hierarchical and flat agree within 1e-5 but not bit for bit (hosts' sums are added
#     host by host: the other order ran);
#  3. the hierarchical plan run on one real host (no fake hosts) is flat bit for bit.
# And mlp on 5 ranks as hosts of 2 + 2 + 1 (hosts of unequal size) agrees with flat
# within 1e-5; a bad --allreduce is one line, exit 2, nothing written.
#   hierarchical_test.sh PARALLAX CHECKPOINT_DIFF
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-hier.XXXXXX)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cd "$TMPDIR" || exit 1
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

"$parallax" models export mlp --batch 16 -o mlp.pb >/dev/null || exit 1
"$parallax" models export lenet --batch 8 -o lenet.pb >/dev/null || exit 1
"$parallax" models export embedding --vocab 64 --dim 32 --seq 4 --batch 16 -o embedding.pb \
  >/dev/null || exit 1
printf 'hosts:\n  - name: host-a\n    cpus: 2\n  - name: host-b\n    cpus: 2\n' >two.yaml

run() {  # JOB TAG RANKS [ENV...]: 3 steps into checkpoint dir ck-TAG
  local job=$1 tag=$2 ranks=$3
  shift 3
  env "$@" timeout 300 mpirun -np "$ranks" --oversubscribe --mca btl self,vader "$parallax" run \
    "$job" --synthetic --steps 3 --seed 11 --threads 1 --checkpoint-dir "ck-$tag" \
    >"run-$tag.log" 2>&1 || { cat "run-$tag.log"; return 1; }
}
fake=PARALLAX_TEST_RANKS_PER_HOST=2

for model in mlp lenet embedding; do
  "$parallax" transform "$model.pb" --cluster two.yaml -o "$model-h" >/dev/null &&
    "$parallax" transform "$model.pb" --cluster two.yaml --allreduce flat -o "$model-f" \
      >/dev/null || { fail "$model: transform"; continue; }
  if grep -q '^  algorithm: "hierarchical"' "$model-h/plan.yaml" &&
    grep -q '^  reason: ".*decided by auto (cost model)"' "$model-h/plan.yaml" &&
    grep -qa 'hierarchical' "$model-h/rank-3.pb" &&
    grep -q '^  algorithm: "flat"' "$model-f/plan.yaml" && ! grep -qa 'hierarchical' "$model-f/rank-3.pb"; then
    pass "$model: auto plans hierarchical on 2 hosts of 2 (rank graphs ask for it); --allreduce flat plans flat"
  else
    grep -A3 '^allreduce:' "$model-h/plan.yaml" "$model-f/plan.yaml"
    fail "$model: the plans' all-reduce algorithms"
    continue
  fi
  run "$model-h" "$model-h1" 4 "$fake" && run "$model-h" "$model-h2" 4 "$fake" &&
    run "$model-f" "$model-f" 4 "$fake" && run "$model-h" "$model-h-onehost" 4 ||
    { fail "$model: runs"; continue; }
  if "$diff_tool" --exact "ck-$model-h1" "ck-$model-h2" >/dev/null 2>&1; then
    pass "$model: hierarchical on 2 fake hosts, twice: bit-identical"
  else
    fail "$model: hierarchical runs differ"
  fi
  if "$diff_tool" --tolerance 1e-5 "ck-$model-h1" "ck-$model-f" >"diff-$model.txt" 2>&1; then
    pass "$model: hierarchical == flat within 1e-5 ($(grep -o 'worst max relative difference [^ ]*' "diff-$model.txt" | tail -n 1))"
  else
    cat "diff-$model.txt"
    fail "$model: hierarchical != flat"
  fi
  if "$diff_tool" --exact "ck-$model-h1" "ck-$model-f" >/dev/null 2>&1; then
    fail "$model: hierarchical is flat bit for bit on 2 fake hosts (the hierarchical order did not run)"
  else
    pass "$model: hierarchical's bits differ from flat's (hosts' sums added host by host)"
  fi
  if "$diff_tool" --exact "ck-$model-h-onehost" "ck-$model-f" >/dev/null 2>&1; then
    pass "$model: the hierarchical plan on one real host is flat, bit for bit"
  else
    fail "$model: the hierarchical plan on one host differs from flat"
  fi
done

# Hosts of unequal size: 5 ranks as 2 + 2 + 1 (one slice per host).
printf 'hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n  - name: c\n    cpus: 1\n' >three.yaml
if "$parallax" transform mlp.pb --cluster three.yaml --allreduce hierarchical -o mlp5-h >/dev/null &&
  "$parallax" transform mlp.pb --cluster three.yaml --allreduce flat -o mlp5-f >/dev/null &&
  run mlp5-h mlp5-h 5 "$fake" && run mlp5-f mlp5-f 5 "$fake" &&
  "$diff_tool" --tolerance 1e-5 ck-mlp5-h ck-mlp5-f >diff-mlp5.txt 2>&1; then
  pass "mlp on 5 ranks as hosts of 2 + 2 + 1: hierarchical == flat within 1e-5"
else
  cat diff-mlp5.txt 2>/dev/null
  fail "mlp on hosts of 2 + 2 + 1"
fi

output=$("$parallax" transform mlp.pb --cluster two.yaml --allreduce ring -o bad 2>&1)
rc=$?
if [[ $rc -eq 2 && $(wc -l <<<"$output") -eq 1 && ! -e bad &&
  $output == "parallax: error: --allreduce: 'ring' is not auto, flat or hierarchical" ]]; then
  pass "--allreduce ring: one line, exit 2, nothing written"
else
  echo "$output (exit $rc)"
  fail "--allreduce ring"
fi

echo "hierarchical_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
