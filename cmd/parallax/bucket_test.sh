#!/usr/bin/env bash
# Gradient buckets (docs/transform.md#gradient-buckets) change no bit: the zoo's mlp,
# lenet and embedding models, on 2 and 4 ranks, trained 3 steps from the same seed with
# the default buckets (25 MiB) and with --bucket-mb 0, end with bit-identical variables
# on every rank (checkpoint_diff --exact of the job checkpoints). Also: the plan lists the
# buckets and the rank graphs hold the fused all-reduce.
#   bucket_test.sh PARALLAX CHECKPOINT_DIFF
set -u
parallax=$(realpath "$1")
diff_tool=$(realpath "$2")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMPDIR=$(mktemp -d /tmp/parallax-bucket.XXXXXX)
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

for ranks in 2 4; do
  printf 'hosts:\n  - name: localhost\n    cpus: %s\n' "$ranks" >"c$ranks.yaml"
  for model in mlp lenet embedding; do
    name="$model on $ranks ranks"
    "$parallax" transform "$model.pb" --cluster "c$ranks.yaml" -o "$model-$ranks-b" >/dev/null &&
      "$parallax" transform "$model.pb" --cluster "c$ranks.yaml" --bucket-mb 0 \
        -o "$model-$ranks-0" >/dev/null || { fail "$name: transform"; continue; }
    if grep -q '^buckets: \[\]' "$model-$ranks-b/plan.yaml" ||
      ! grep -q '^buckets: \[\]' "$model-$ranks-0/plan.yaml" ||
      ! grep -qa 'parallax/bucket_0/allreduce' "$model-$ranks-b/rank-$((ranks - 1)).pb"; then
      fail "$name: the plan has no bucket, or the rank graph no fused all-reduce"
      continue
    fi
    ok=1
    for variant in b 0; do
      timeout 300 mpirun -np "$ranks" --oversubscribe --mca btl self,vader "$parallax" run \
        "$model-$ranks-$variant" --synthetic --steps 3 --seed 11 --threads 1 \
        --checkpoint-dir "ck-$model-$ranks-$variant" >"run-$model-$ranks-$variant.log" 2>&1 ||
        { cat "run-$model-$ranks-$variant.log"; ok=0; }
    done
    if [[ $ok -eq 1 ]] && "$diff_tool" --exact "ck-$model-$ranks-b" "ck-$model-$ranks-0" \
      >"diff-$model-$ranks.txt" 2>&1; then
      pass "$name: bucketed == unbucketed, bit for bit"
    else
      cat "diff-$model-$ranks.txt" 2>/dev/null
      fail "$name: bucketed != unbucketed"
    fi
  done
done

echo "bucket_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
