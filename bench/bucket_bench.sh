#!/usr/bin/env bash
# Overlapped collectives and gradient buckets: the step time of 2-rank jobs of the zoo's
# mlp, lenet and embedding models, side by side in one run:
#   neither        --bucket-mb 0 --no-overlap: one all-reduce per gradient, each in step
#                  with the kernels (the baseline; --no-overlap is run's default);
#   overlap        --bucket-mb 0 --overlap: the all-reduces on the communication thread;
#   overlap_<L>MiB buckets of up to L MiB (0.25, 1, 4, 25: the default), with overlap;
#   buckets_25MiB  the default buckets, --no-overlap.
#
# Method: each model is transformed once per limit for 2 local ranks (configs/
# local-2cpu.yaml), and each job trains --steps steps (default 300) under mpirun with
# synthetic data and 1 kernel thread per rank (2 ranks on 2 cores), writing --metrics
# every 100 steps; a job's step time is rank 0's elapsed time per step over the windows
# after the first (warm-up). The configurations of a model run interleaved, in --rounds
# rounds (default 3); each figure is the median over rounds, and its ratio is to the
# baseline of the same round (the median of those ratios).
#
# Output lines follow scripts/bench.sh: `bucket.<model>.<config>: <ms> ms/step (<note>)`.
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
# config name, bucket limit, run flag
configs=(neither:0:--no-overlap overlap:0:--overlap overlap_0.25MiB:0.25:--overlap
         overlap_1MiB:1:--overlap overlap_4MiB:4:--overlap overlap_25MiB:25:--overlap
         buckets_25MiB:25:--no-overlap)
for model in mlp lenet embedding; do
  "$parallax" models export "$model" -o "$work/$model.pb" >/dev/null
  for mb in "${limits[@]}"; do
    "$parallax" transform "$work/$model.pb" --cluster configs/local-2cpu.yaml \
      --bucket-mb "$mb" -o "$work/$model-$mb" >/dev/null
  done
  for round in $(seq "$rounds"); do
    for config in "${configs[@]}"; do
      IFS=: read -r name mb flag <<<"$config"
      # shellcheck disable=SC2086  # flag is empty or one word
      mpirun -np 2 --mca btl self,vader "$parallax" run "$work/$model-$mb" --synthetic \
        --steps "$steps" --log-every 100 --threads 1 --seed "$round" $flag \
        --metrics "$work/$model-$name.$round.jsonl" >/dev/null 2>&1
    done
  done
  /usr/bin/python3 - "$work" "$model" "$rounds" "${configs[@]}" <<'PY'
import json, statistics, sys
work, model, rounds, configs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def step_ms(path):
    # The steps after the first window (warm-up): elapsed time over steps.
    lines = [json.loads(l) for l in open(path) if '"elapsed"' in l]
    first, last = lines[0], lines[-1]
    return (last["elapsed"] - first["elapsed"]) / (last["step"] - first["step"]) * 1e3

def buckets(limit):
    return open(f"{work}/{model}-{limit}/plan.yaml").read().count("- dtype:")

times = {}
for config in configs:
    name = config.split(":")[0]
    times[name] = [step_ms(f"{work}/{model}-{name}.{r}.jsonl") for r in range(1, rounds + 1)]
for config in configs:
    name, limit, _ = config.split(":")
    median = statistics.median(times[name])
    if name == "neither":
        print(f"bucket.{model}.neither: {median:.3f} ms/step (baseline; one all-reduce per "
              f"gradient, no overlap)")
        continue
    ratios = [t / b for t, b in zip(times[name], times["neither"])]
    n = buckets(limit)
    print(f"bucket.{model}.{name}: {median:.3f} ms/step ({statistics.median(ratios):.2f}x "
          f"neither; {n} bucket{'' if n == 1 else 's'})")
PY
done
