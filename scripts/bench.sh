#!/usr/bin/env bash
# Runs every benchmark (built with -c opt) and writes bench/results.md whole from what
# they print: `scripts/bench.sh [OUTPUT.md]` (default bench/results.md).
#
# Benchmarks are never timed tests; run this by hand on a quiet machine (about 20
# minutes on 2 cores, plus the -c opt build). BENCH_ARGS is passed to every cc_binary
# benchmark (e.g. BENCH_ARGS="--nodes 100000").
#
# What runs: every cc_binary under //bench (one tagged `mpirun` in bench/BUILD.bazel runs
# under `mpirun -np 2` on this machine), then bench/collective_wait_bench.sh and
# bench/distributed_bench.sh (the 2-rank throughput and traffic benchmarks, Parallax vs
# PyTorch DDP), bench/bucket_bench.sh (2-rank step time per gradient-bucket limit) and
# bench/partition_search_bench.sh (transform --search against a full sweep of partition
# counts, 4 ranks as 2 hosts) and bench/estimate_bench.sh (parallax estimate against
# measured 1- and 2-rank steps) and bench/paper_estimate_bench.sh (the seed paper's
# comparisons at 48 GPUs, estimated from GPU figures) and bench/workloads_bench.sh (ResNet-50 and BERT-Base
# against PyTorch, and the plans for the paper's 48 GPUs). Each must exit 0 and print each result on its own line, exactly
#     <bench>.<metric>: <value> <unit> (<ratio> vs baseline | baseline | <note>)
# optionally followed by the target it is held to, indented:
#       target: <= 2x protobuf parse: target met        (or: TARGET MISSED)
# Other lines are kept in the benchmark's section but not tabulated.
#
# The file written: a header (date, commit, CPU, load average before and after), one
# table of every result line, then one section per benchmark: what it measures (the
# header comment of its source, bench/<name>.cc or the script) and everything it printed.
# Nothing in it is written by hand.
#
# Adding a benchmark: write bench/<name>_bench.cc with a header comment and a main() and
# add a cc_binary for it to bench/BUILD.bazel; this script finds it.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${1:-bench/results.md}

scripts/setup.sh
# The PyTorch peer of step_time_bench and distributed_bench.sh (Debian's, CPU), which
# scripts/setup.sh leaves out: it is large and only the benchmarks need it.
if [[ $(dpkg-query -W -f='${Status}' python3-torch 2>/dev/null || true) != "install ok installed" ]]; then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
  echo "bench.sh: installed python3-torch"
fi

mapfile -t targets < <(bazel query 'kind("cc_binary rule", //bench/...)' 2>/dev/null)
mapfile -t mpi_targets < <(bazel query 'attr(tags, "\bmpirun\b", kind("cc_binary rule", //bench/...))' 2>/dev/null)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "bench.sh: no benchmarks under //bench" >&2
  exit 1
fi
# Arguments a benchmark gets besides BENCH_ARGS: every model step_time_bench knows.
declare -A extra_args=([//bench:step_time_bench]="--models mlp lenet lstm")

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ "${targets[@]}" //cmd/parallax:parallax
bindir=$(bazel info -c opt bazel-bin 2>/dev/null)

log=$(mktemp "${TMPDIR:-/tmp}/parallax-bench.XXXXXX")
trap 'rm -f "$log"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
failed=0

# run NAME SOURCE COMMAND...: one benchmark, its output shown and logged under NAME.
run() {
  local name=$1 source=$2 start rc
  shift 2
  echo "== $name"
  echo "== BENCH $name $source" >>"$log"
  start=$(date +%s)
  set +e
  "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  echo "== SECONDS $(($(date +%s) - start))" >>"$log"
  if [[ $rc -ne 0 ]]; then
    echo "bench.sh: $name failed (exit status $rc)" >&2
    echo "== FAILED $rc" >>"$log"
    failed=1
  fi
}

for target in "${targets[@]}"; do
  name=${target##*:}
  binary="$bindir/${target#//}"
  binary="${binary/://}"
  launcher=()
  if [[ " ${mpi_targets[*]} " == *" $target "* ]]; then
    launcher=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
              mpirun -np 2 --oversubscribe --mca btl self,vader)
  fi
  # shellcheck disable=SC2086  # BENCH_ARGS and extra_args are lists of words
  run "$name" "bench/$name.cc" "${launcher[@]}" "$binary" ${extra_args[$target]:-} ${BENCH_ARGS:-}
done
run collective_wait_bench.sh bench/collective_wait_bench.sh \
  bench/collective_wait_bench.sh "$bindir/cmd/parallax/parallax"
run distributed_bench.sh bench/distributed_bench.sh bench/distributed_bench.sh --no-allreduce
run bucket_bench.sh bench/bucket_bench.sh bench/bucket_bench.sh
run partition_search_bench.sh bench/partition_search_bench.sh bench/partition_search_bench.sh
run estimate_bench.sh bench/estimate_bench.sh bench/estimate_bench.sh
run paper_estimate_bench.sh bench/paper_estimate_bench.sh bench/paper_estimate_bench.sh
run workloads_bench.sh bench/workloads_bench.sh bench/workloads_bench.sh

python3 - "$log" "$out" "$load_before" <<'PY'
import datetime, os, platform, re, subprocess, sys

log, out, load_before = sys.argv[1], sys.argv[2], sys.argv[3]
result = re.compile(r"^([A-Za-z0-9_.\-]+): (\S+) (\S+)(?: \((.*)\))?\s*$")
target = re.compile(r"^\s+target: (.*)$")

# Sections of the log: name, source, printed lines, seconds, exit status (0 = passed).
benches = []
for line in open(log, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("== BENCH "):
        name, source = line[len("== BENCH "):].split(" ", 1)
        benches.append({"name": name, "source": source, "lines": [], "seconds": 0, "rc": 0})
    elif line.startswith("== SECONDS "):
        benches[-1]["seconds"] = int(line.split()[2])
    elif line.startswith("== FAILED "):
        benches[-1]["rc"] = int(line.split()[2])
    elif benches:
        benches[-1]["lines"].append(line)

def header_comment(path):
    """The source's leading comment (// lines, # lines after a shebang), as text."""
    text = []
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        return f"(no source file {path})"
    marker = "//" if path.endswith(".cc") else "#"
    for i, l in enumerate(lines):
        if i == 0 and l.startswith("#!"):
            continue
        if not l.startswith(marker):
            break
        body = l[len(marker):]
        text.append(body[1:] if body.startswith(" ") else body)
    return "\n".join(text).strip("\n")

def cpu():
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                return l.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"

def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""

commit = git("rev-parse", "--short", "HEAD") or "unknown"
if git("status", "--porcelain", "--untracked-files=no"):
    commit += " with uncommitted changes"
load_after = " ".join(open("/proc/loadavg").read().split()[:3])

rows = []
for b in benches:
    for line in b["lines"]:
        if m := result.match(line):
            rows.append([m.group(1), f"{m.group(2)} {m.group(3)}", m.group(4) or "", ""])
        elif (m := target.match(line)) and rows:
            rows[-1][3] = m.group(1)

def cell(text):
    return text.replace("|", "\\|")

with open(out, "w", encoding="utf-8") as f:
    f.write("# Benchmark results\n\n")
    f.write(f"Written whole by `scripts/bench.sh` on {datetime.date.today()}, commit {commit}, "
            f"{os.cpu_count()} x {cpu()}, `-c opt`. Load average (1, 5, 15 min) "
            f"{load_before} before the run and {load_after} after it: other processes "
            f"on the machine make the figures noisy. Each section below says what its "
            f"benchmark measures (the header comment of its source) and shows all it "
            f"printed.\n\n")
    f.write("| Benchmark | Value | Compared | Target |\n|---|---|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(cell(c) for c in r) + " |\n")
    for b in benches:
        f.write(f"\n## {b['name']}\n\n")
        status = "passed" if b["rc"] == 0 else f"**FAILED** (exit status {b['rc']})"
        f.write(f"`{b['source']}`, {b['seconds']} s, {status}.\n\n")
        f.write("```text\n" + header_comment(b["source"]) + "\n```\n\nOutput:\n\n")
        f.write("```text\n" + "\n".join(b["lines"]).strip("\n") + "\n```\n")
print(f"bench.sh: {len(rows)} results from {len(benches)} benchmarks written to {out}")
PY
exit $failed
