#!/usr/bin/env bash
# Gradient buckets (`parallax transform --bucket-mb`): the step time of 2-rank jobs of the
# zoo's mlp, lenet and embedding models, for bucket limits 0 (one all-reduce per
# gradient: the baseline), 0.25, 1, 4 and 25 MiB (the default), measured in one run.
#
# Method: each model is transformed once per limit for 2 local ranks (configs/
# local-2cpu.yaml), and each job trains --steps steps (default 300) under mpirun with
# synthetic data and 1 kernel thread per rank (2 ranks on 2 cores), writing --metrics
# every 100 steps; a job's step time is its rank 0's mean over the windows after the
# first (warm-up), batch / examples_per_sec. The limits of a model run interleaved, in
# --rounds rounds (default 3); each figure is the median over rounds, and its ratio is
# to the unbucketed job of the same round (the median of those ratios).
# A rank runs one kernel at a time and every all-reduce blocks it: buckets save
# collective calls (latency) and cost a concatenation and a split of the gradients.
#
# Output lines follow scripts/bench.sh: `bucket.<model>.<limit>: <ms> ms/step (<note>)`.
# Usage: bench/bucket_bench.sh [--rounds R] [--steps N]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
rounds=3
steps=300
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "bucket_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //cmd/parallax:parallax
parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/parallax-bucket-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "bucket_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(nproc) cores;" \
  "2 ranks x 1 kernel thread, $steps steps, $rounds rounds"

limits=(0 0.25 1 4 25)
for model in mlp lenet embedding; do
  "$parallax" models export "$model" -o "$work/$model.pb" >/dev/null
  for mb in "${limits[@]}"; do
    "$parallax" transform "$work/$model.pb" --cluster configs/local-2cpu.yaml \
      --bucket-mb "$mb" -o "$work/$model-$mb" >/dev/null
  done
  for round in $(seq "$rounds"); do
    for mb in "${limits[@]}"; do
      mpirun -np 2 --mca btl self,vader "$parallax" run "$work/$model-$mb" --synthetic \
        --steps "$steps" --log-every 100 --threads 1 --seed "$round" \
        --metrics "$work/$model-$mb.$round.jsonl" >/dev/null 2>&1
    done
  done
  /usr/bin/python3 - "$work" "$model" "$rounds" "${limits[@]}" <<'PY'
import json, statistics, sys
work, model, rounds, limits = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def step_ms(path):
    # The steps after the first window (warm-up): elapsed time over steps.
    lines = [json.loads(l) for l in open(path) if '"elapsed"' in l]
    first, last = lines[0], lines[-1]
    return (last["elapsed"] - first["elapsed"]) / (last["step"] - first["step"]) * 1e3

def buckets(limit):
    return open(f"{work}/{model}-{limit}/plan.yaml").read().count("- dtype:")

times = {m: [step_ms(f"{work}/{model}-{m}.{r}.jsonl") for r in range(1, rounds + 1)] for m in limits}
for m in limits:
    median = statistics.median(times[m])
    if m == "0":
        print(f"bucket.{model}.unbucketed: {median:.3f} ms/step (baseline; one all-reduce per gradient)")
        continue
    ratios = [t / b for t, b in zip(times[m], times["0"])]
    print(f"bucket.{model}.{m}MiB: {median:.3f} ms/step ({statistics.median(ratios):.2f}x unbucketed; "
          f"{buckets(m)} bucket{'s' if buckets(m) != 1 else ''})")
PY
done
