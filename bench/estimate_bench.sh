#!/usr/bin/env bash
# `parallax estimate` against measured runs on this machine: the zoo's mlp, lenet and
# embedding models (their default sizes and batches), on 1 rank (2 kernel threads) and 2
# local ranks (1 thread each, as launch gives them), side by side in one run.
#
# Method: for each model and rank count, `parallax estimate` (a fresh profile cache per
# run, so each estimate measures its profile now: --profile-steps steps) predicts the step
# time; then the job trains --steps steps (default 200) with synthetic data and --metrics
# every step, in --rounds rounds (default 3), and the measured step time is the median
# step after the first third of each round, the median over rounds. The error is
# estimate / measured - 1. The same is done with --overlap for the 2-rank jobs.
#
# Output lines follow scripts/bench.sh:
#   estimate.<model>.<ranks>rank[.overlap]: <estimated ms> ms/step (estimated; measured
#   <measured ms> ms/step: <error>%)
# Usage: bench/estimate_bench.sh [--rounds R] [--steps N] [--profile-steps N]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
rounds=3
steps=200
profile_steps=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --profile-steps) profile_steps=$2; shift 2 ;;
    *) echo "estimate_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //cmd/parallax:parallax
parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/parallax-estimate-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "estimate_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(nproc) cores;" \
  "$steps steps, $rounds rounds, profiles of $profile_steps steps"

printf 'hosts:\n  - name: localhost\n    cpus: 1\n' >"$work/one.yaml"
printf 'hosts:\n  - name: localhost\n    cpus: 2\n' >"$work/two.yaml"
median_step_ms() {  # METRICS...: the median over files of each file's median step after the first third
  /usr/bin/python3 - "$@" <<'PY'
import json, statistics, sys
medians = []
for path in sys.argv[1:]:
    points = [json.loads(l) for l in open(path) if '"elapsed"' in l]
    points = [(p["step"], p["elapsed"]) for p in points]
    start = points[-1][0] // 3
    steps = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(points, points[1:]) if a[0] >= start]
    medians.append(statistics.median(steps))
print(f"{statistics.median(medians) * 1e3:.3f}")
PY
}
for model in mlp lenet embedding; do
  "$parallax" models export "$model" -o "$work/$model.pb" >/dev/null
  "$parallax" transform "$work/$model.pb" --cluster "$work/two.yaml" -o "$work/$model-2" >/dev/null
  for config in 1: 2: 2:--overlap; do
    IFS=: read -r ranks flag <<<"$config"
    cluster=$([[ $ranks == 1 ]] && echo one || echo two)
    # shellcheck disable=SC2086  # flag is empty or one word
    estimated=$(PARALLAX_CACHE_DIR="$work/cache-$model-$ranks$flag" "$parallax" estimate \
      "$work/$model.pb" --cluster "$work/$cluster.yaml" --profile-steps "$profile_steps" $flag \
      --json 2>/dev/null | /usr/bin/python3 -c \
      'import json, sys; print("%.3f" % (json.load(sys.stdin)["step_seconds"] * 1e3))')
    metrics=()
    for round in $(seq "$rounds"); do
      m="$work/$model-$ranks$flag.$round.jsonl"
      if [[ $ranks == 1 ]]; then
        "$parallax" run "$work/$model.pb" --synthetic --steps "$steps" --log-every 1 \
          --seed "$round" --metrics "$m" >/dev/null 2>&1
      else
        # shellcheck disable=SC2086
        mpirun -np 2 --mca btl self,vader "$parallax" run "$work/$model-2" --synthetic \
          --steps "$steps" --log-every 1 --threads 1 --seed "$round" $flag --metrics "$m" \
          >/dev/null 2>&1
      fi
      metrics+=("$m")
    done
    measured=$(median_step_ms "${metrics[@]}")
    name="estimate.$model.${ranks}rank${flag:+.overlap}"
    awk -v n="$name" -v m="$measured" -v e="$estimated" 'BEGIN {
      printf "%s: %.3f ms/step (estimated; measured %.3f ms/step: %+.1f%%)\n", n, e, m, (e / m - 1) * 100 }'
  done
done
