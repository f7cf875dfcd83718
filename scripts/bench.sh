#!/usr/bin/env bash
# Runs every benchmark under //bench (built with -c opt) and writes their results as a
# markdown table: `scripts/bench.sh [OUTPUT.md]` (default bench/results.md).
#
# Benchmarks are never timed tests; run this by hand on a quiet machine.
# BENCH_ARGS is passed to every benchmark (e.g. BENCH_ARGS="--nodes 100000").
#
# Adding a benchmark: write bench/<name>_bench.cc with a main() and add a cc_binary for
# it to bench/BUILD.bazel; this script finds every cc_binary under //bench. It must
# exit 0 and print each result on its own line, exactly
#     <bench>.<metric>: <value> <unit> (<ratio> vs baseline | baseline | <note>)
# optionally followed by the target it is held to, indented:
#       target: <= 2x protobuf parse: target met        (or: TARGET MISSED)
# Any other output is shown but not tabulated. A benchmark tagged `mpirun` in its BUILD
# rule runs under `mpirun -np 2` on this machine (e.g. allreduce_bench). Then
# bench/distributed_bench.sh runs the 2-rank throughput and traffic benchmarks (Parallax
# vs PyTorch DDP); it also runs allreduce_bench when started by itself, so
# `bench/distributed_bench.sh` alone reruns every distributed benchmark.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${1:-bench/results.md}

scripts/setup.sh

mapfile -t targets < <(bazel query 'kind("cc_binary rule", //bench/...)' 2>/dev/null)
mapfile -t mpi_targets < <(bazel query 'attr(tags, "\bmpirun\b", kind("cc_binary rule", //bench/...))' 2>/dev/null)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "bench.sh: no benchmarks under //bench" >&2
  exit 1
fi

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ "${targets[@]}"
bindir=$(bazel info -c opt bazel-bin 2>/dev/null)

log=$(mktemp "${TMPDIR:-/tmp}/parallax-bench.XXXXXX")
trap 'rm -f "$log"' EXIT
failed=0
for target in "${targets[@]}"; do
  binary="$bindir/${target#//}"
  binary="${binary/://}"
  echo "== $target"
  echo "== $target" >>"$log"
  launcher=()
  if [[ " ${mpi_targets[*]} " == *" $target "* ]]; then
    launcher=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
              mpirun -np 2 --oversubscribe --mca btl self,vader)
  fi
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of words
  if ! "${launcher[@]}" "$binary" ${BENCH_ARGS:-} 2>&1 | tee -a "$log"; then
    echo "bench.sh: $target failed" >&2
    echo "== FAILED $target" >>"$log"
    failed=1
  fi
done
echo "== bench/distributed_bench.sh" | tee -a "$log"
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words
if ! bench/distributed_bench.sh --no-allreduce ${BENCH_ARGS:-} 2>&1 | tee -a "$log"; then
  echo "bench.sh: bench/distributed_bench.sh failed" >&2
  echo "== FAILED bench/distributed_bench.sh" >>"$log"
  failed=1
fi

python3 - "$log" "$out" <<'PY'
import datetime, os, platform, re, subprocess, sys

log, out = sys.argv[1], sys.argv[2]
result = re.compile(r"^([A-Za-z0-9_.\-]+): (\S+) (\S+)(?: \((.*)\))?\s*$")
target = re.compile(r"^\s+target: (.*)$")
rows, failed = [], []
for line in open(log, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("== FAILED "):
        failed.append(line[len("== FAILED "):])
    elif m := result.match(line):
        rows.append([m.group(1), f"{m.group(2)} {m.group(3)}", m.group(4) or "", ""])
    elif (m := target.match(line)) and rows:
        rows[-1][3] = m.group(1)

def cpu():
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                return l.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"

try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
except OSError:
    commit = "unknown"
with open(out, "w", encoding="utf-8") as f:
    f.write("# Benchmark results\n\n")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    f.write(f"Written by `scripts/bench.sh` on {datetime.date.today()}, commit {commit}, "
            f"{os.cpu_count()} x {cpu()}, `-c opt`; load average {load} at the end (1, 5, "
            f"15 min; other processes make the figures noisy).\n\n")
    f.write("| Benchmark | Value | Compared | Target |\n|---|---|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n")
    for t in failed:
        f.write(f"\n**{t} failed**; see its output.\n")
print(f"bench.sh: {len(rows)} results written to {out}")
PY
exit $failed
