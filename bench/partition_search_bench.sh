#!/usr/bin/env bash
# Partition search against a full sweep: a 4-rank job of the zoo's embedding model on 2
# hosts of 2 ranks (each host an OpenMPI daemon of its own, started through an rsh
# agent on this machine, ranks over TCP on loopback: the cross-host path of parameter
# servers runs). `transform --search` chooses a partition count within --budget
# seconds; the sweep then times every candidate count (as the search does: the median
# step time after the first third of --steps steps, synthetic data), in --rounds rounds
# interleaved, and takes each count's median over rounds. The figure is the swept time
# of the search's choice over the best swept time (acceptance: <= 1.10), and the search's
# time against its budget.
#
# Output lines follow scripts/bench.sh:
#   partition_search.sweep.p<P>: <ms> ms/step (median of R rounds)
#   partition_search.chosen: <ratio> x (vs the best swept, P=<best>; chose P=<P> in <s> s of a <b> s budget)
#     target: <= 1.10x the best swept, within the budget: target met
# Usage: bench/partition_search_bench.sh [--rounds R] [--steps N] [--budget S]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
rounds=3
steps=40
budget=120
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "partition_search_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //cmd/parallax:parallax
parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/parallax-search-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
export TMPDIR=$work
echo "partition_search_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start," \
  "$(nproc) cores; embedding vocab 200000 dim 32 seq 16 batch 64, 4 ranks on 2 hosts;" \
  "$steps steps per probe, $rounds sweep rounds, search budget $budget s"

"$parallax" models export embedding --vocab 200000 --dim 32 --seq 16 --batch 64 -o emb.pb >/dev/null
printf 'hosts:\n  - name: a\n    cpus: 2\n  - name: b\n    cpus: 2\n' >two.yaml
printf '#!/bin/sh\nmkdir -p "$TMPDIR/$1" && export TMPDIR="$TMPDIR/$1" || exit 1\nshift\nexec sh -c "$*"\n' >agent
chmod +x agent
launcher=(--mca plm_rsh_agent "$work/agent" --mca rtc ^hwloc --mca btl self,tcp
          --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
hosts=(-H px-a:2,px-b:2)

"$parallax" transform emb.pb --cluster two.yaml -o searched --search --search-budget "$budget" \
  --search-steps "$steps" --search-launch "${hosts[*]} -- ${launcher[*]}" --json >search.json
read -r chosen used candidates < <(python3 -c '
import json, sys
s = json.load(open("search.json"))["partition_search"]
print(s["chosen"], s["used_seconds"], ",".join(map(str, s["candidates"])))')

median_step_ms() {  # METRICS: as the search measures a probe
  python3 - "$1" "$steps" <<'PY'
import json, sys
points = [json.loads(l) for l in open(sys.argv[1]) if '"elapsed"' in l]
warmup = max(2, int(sys.argv[2]) // 3)
d = [(b["elapsed"] - a["elapsed"]) / (b["step"] - a["step"])
     for a, b in zip(points, points[1:]) if a["step"] >= warmup]
d.sort()
print(f"{d[len(d) // 2] * 1e3:.3f}")
PY
}

IFS=, read -r -a counts <<<"$candidates"
for p in "${counts[@]}"; do
  sed "s/^hosts:/strategy:\n  partitions: $p\nhosts:/" two.yaml >p$p.yaml
  "$parallax" transform emb.pb --cluster p$p.yaml -o job$p >/dev/null
done
for ((r = 0; r < rounds; ++r)); do
  for p in "${counts[@]}"; do
    "$parallax" launch job$p "${hosts[@]}" --synthetic --steps "$steps" --log-every 1 \
      --metrics m$p.$r.jsonl --progress lines -- "${launcher[@]}" >/dev/null 2>&1
    median_step_ms m$p.$r.jsonl >>t$p
  done
done
best=""
best_ms=""
for p in "${counts[@]}"; do
  ms=$(sort -g t$p | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  echo "partition_search.sweep.p$p: $ms ms/step (median of $rounds rounds)"
  echo "$p $ms" >>swept
done
python3 - "$chosen" "$used" "$budget" <<'PY'
import sys
chosen, used, budget = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
swept = {int(p): float(ms) for p, ms in (l.split() for l in open("swept"))}
best = min(swept, key=lambda p: (swept[p], p))
ratio = swept[chosen] / swept[best]
print(f"partition_search.chosen: {ratio:.2f} x (vs the best swept, P={best}; chose P={chosen} "
      f"in {used:.1f} s of a {budget:g} s budget)")
met = ratio <= 1.10 and used <= budget
print("  target: <= 1.10x the best swept, within the budget: "
      + ("target met" if met else "TARGET MISSED"))
PY
