#!/usr/bin/env bash
# Gradient buckets (docs/transform.md#gradient-buckets) and overlapped collectives
# (docs/run.md, `--no-overlap`) change no bit: the zoo's mlp, lenet and embedding models,
# on 2 and 4 ranks, trained 3 steps from the same seed with 25 MiB buckets (the default)
# and --overlap, with --overlap alone (--bucket-mb 0) and with neither (--bucket-mb 0
# --no-overlap), end with bit-identical variables on every rank (checkpoint_diff --exact
# of the job checkpoints). Also: the plan lists the buckets and the rank graphs hold the
# fused all-reduce.
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
    # Runs: b = buckets and --overlap; 0 = neither (--no-overlap); 0o = --overlap alone.
    ok=1
    for run in b:b:--overlap 0:0:--no-overlap 0o:0:--overlap; do
      IFS=: read -r tag job flag <<<"$run"
      timeout 300 mpirun -np "$ranks" --oversubscribe --mca btl self,vader "$parallax" run \
        "$model-$ranks-$job" --synthetic --steps 3 --seed 11 --threads 1 $flag \
        --checkpoint-dir "ck-$model-$ranks-$tag" >"run-$model-$ranks-$tag.log" 2>&1 ||
        { cat "run-$model-$ranks-$tag.log"; ok=0; }
    done
    for pair in b:"buckets and overlap" 0o:"overlap alone"; do
      tag=${pair%%:*}
      if [[ $ok -eq 1 ]] && "$diff_tool" --exact "ck-$model-$ranks-$tag" "ck-$model-$ranks-0" \
        >"diff-$model-$ranks-$tag.txt" 2>&1; then
        pass "$name: ${pair#*:} == neither, bit for bit"
      else
        cat "diff-$model-$ranks-$tag.txt" 2>/dev/null
        fail "$name: ${pair#*:} != neither"
      fi
    done
  done
done

echo "bucket_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
