#!/usr/bin/env bash
# What parking waiting collectives costs a fast job (docs/comm.md, "Waiting without
# spinning"): the zoo mlp (widths 64, batch 32 per rank, SGD) as a 2-rank all-reduce job,
# 4 all-reduces per step, trained with PARALLAX_COLLECTIVE_WAIT=sleep (the default: a
# call that waits 20 ms is parked) and =spin (MPI polls however long it waits), in
# interleaved rounds so that the machine's load falls on both alike. Parking only acts
# on calls that wait 20 ms or more, so the two should not differ beyond the noise. Prints
# the median ms per step of each and of the rounds' ratios, in scripts/bench.sh's line
# format.
#
# Usage: bench/collective_wait_bench.sh PARALLAX [ROUNDS [STEPS]]
#   PARALLAX: a built parallax binary (bazel build //cmd/parallax:parallax).
set -euo pipefail
parallax=$(realpath "$1")
rounds=${2:-7}
steps=${3:-20000}
repo=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/parallax-wait-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$parallax" models export mlp --widths 64 --batch 32 -o mlp.pb >/dev/null
"$parallax" transform mlp.pb --cluster "$repo/configs/local-2cpu.yaml" -o job >/dev/null

# ms per step of one run, from the job's own examples/s over its steps (start-up
# excluded; global batch 64).
ms_per_step() {  # POLICY
  local rate
  rate=$(PARALLAX_COLLECTIVE_WAIT=$1 "$parallax" launch job/ --synthetic --steps "$steps" \
           --log-every "$steps" 2>&1 | grep -o '[0-9.]* examples/s over all ranks' | tail -n 1)
  python3 -c "print(f'{64 * 1000 / ${rate%% *}:.4f}')"
}

sleep_ms=()
spin_ms=()
echo "collective_wait_bench: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores," \
     "$rounds rounds of $steps steps"
for ((round = 0; round < rounds; ++round)); do
  # Alternate which policy goes first.
  if ((round % 2 == 0)); then
    sleep_ms+=("$(ms_per_step sleep)"); spin_ms+=("$(ms_per_step spin)")
  else
    spin_ms+=("$(ms_per_step spin)"); sleep_ms+=("$(ms_per_step sleep)")
  fi
  echo "  round $round: sleep ${sleep_ms[-1]} ms/step, spin ${spin_ms[-1]} ms/step"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
sleep_median=$(median "${sleep_ms[@]}")
spin_median=$(median "${spin_ms[@]}")
echo "collective_wait.mlp64_sleep_ms_per_step: $sleep_median ms (median of $rounds)"
echo "collective_wait.mlp64_spin_ms_per_step: $spin_median ms (median of $rounds)"
# The paired ratio of each round (the two runs minutes apart at most), and their spread.
python3 - "${sleep_ms[*]}" "${spin_ms[*]}" <<'PY'
import statistics, sys
ratios = sorted(a / b for a, b in zip(map(float, sys.argv[1].split()), map(float, sys.argv[2].split())))
print(f"collective_wait.sleep_over_spin: {statistics.median(ratios):.3f} x (median of the rounds' "
      f"ratios, {ratios[0]:.3f} to {ratios[-1]:.3f}; 1.000: no cost)")
PY
