#!/usr/bin/env bash
# The seed paper's workloads on this machine's CPU, side by side with PyTorch in one run:
#   1. resnet50 (the zoo's ResNet-50 v1.5, NHWC, batch 32 of 224x224x3, Momentum with
#      L2 weight decay): median step time and images/s, next to the same network in
#      PyTorch eager (bench/workloads_torch.py) in both of its layouts, NCHW (its
#      default) and channels_last (NHWC, as the zoo's graph); target: at most 1.0x the
#      faster PyTorch's step time;
#   2. transformer (the zoo's BERT encoder at BERT-base shapes: 12 layers, hidden 768, 12
#      heads, seq 128, batch 8, dropout 0.1, AdamW) next to nn.TransformerEncoder with
#      the same shapes; target: at most 1.1x.
#   3. lm1b (the paper's LM-1B at its full size: vocabulary 793,470 x 512, LSTM 2048
#      projected to 512, 20 steps, sampled softmax of 8,192, Adagrad, batch 128 per rank):
#      its sparse tables synchronised by parameter servers (ps), all-gather and densify
#      (--sparse ps|allgather|dense) on 2 and 4 ranks of this machine (4 as 2 fake
#      hosts of 2 ranks over TCP, each host given half this machine's memory), and one
#      rank (the single-device graph, whatever the method: the baseline) — the
#      paper's comparison here: words/s (ranks x batch x 20 over the median step), bytes
#      each rank sent per step (the communicator's counters, `launch -v`, past the first
#      step) and the peak resident memory of each rank (`parallax run`'s report), next to
#      the transform's prediction of both. A combination whose plan does not fit in memory
#      is refused by the transform; the bench prints its estimate. Target: ps's bytes per
#      rank (the ranks' mean) within 5 % of the prediction.
# And, for each model and lm1b, the plan
# `parallax transform` makes for the paper's cluster (8 hosts
# of 6 GPUs, 56 Gb/s InfiniBand between hosts): bytes all-reduced per step, the all-reduce
# algorithm and its bytes off each host, and the method of each sparse variable (no
# timing: what the planner decides at that scale).
# Both sides use 2 threads (Parallax --threads 2, torch.set_num_threads(2)), float32, one
# process. Parallax's step time is the median of the steps after --warmup, read from
# `parallax run --metrics` (every step logged), which includes generating the synthetic
# batch; PyTorch's is the median of its steps after --warmup on one fixed batch. PyTorch
# runs with OPENBLAS_CORETYPE set as Parallax sets it for itself (Debian's OpenBLAS
# 0.3.21 does not know this CPU and falls back to SSE3 kernels, 20x slower).
#
# Output lines follow scripts/bench.sh (`workloads.<model>.<metric>: <value> <unit> (...)`
# and an indented target line).
# Usage: bench/workloads_bench.sh [--steps N] [--warmup N] [MODEL...] (default: resnet50
# transformer lm1b). Needs python3-torch (Debian's PyTorch 1.13, CPU) and libopenblas0-pthread.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
steps=6
warmup=2
models=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    -*) echo "workloads_bench: unknown argument '$1'" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[[ ${#models[@]} -gt 0 ]] || models=(resnet50 transformer lm1b)

for pkg in libopenblas0-pthread python3-torch; do
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) != "install ok installed" ]]; then
    echo "workloads_bench: Debian package $pkg is missing (apt-get install $pkg)" >&2
    exit 1
  fi
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //cmd/parallax:parallax
parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
work=$(mktemp -d /tmp/parallax-workloads-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
core=$(grep -qw avx512f /proc/cpuinfo && echo SkylakeX || (grep -qw avx2 /proc/cpuinfo && echo Haswell || echo ""))
echo "workloads_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(nproc) cores;" \
  "$warmup warm-up and $steps timed steps per model"

median_step_ms() {  # METRICS WARMUP: the median step after WARMUP steps
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, statistics, sys
points = [json.loads(l) for l in open(sys.argv[1]) if '"elapsed"' in l]
points = [(p["step"], p["elapsed"]) for p in points]
warmup = int(sys.argv[2])
steps = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(points, points[1:]) if a[0] >= warmup]
print(f"{statistics.median(steps) * 1e3:.1f}")
PY
}
ratio() { /usr/bin/python3 -c "print(f'{$1 / $2:.2f}')"; }
verdict() { /usr/bin/python3 -c "print('target met' if $1 <= $2 else 'TARGET MISSED')"; }

for model in "${models[@]}"; do
  case "$model" in
    resnet50) export_args=(); unit=images; target=1.0 ;;
    transformer) export_args=(--layers 12 --hidden 768 --heads 12 --seq 128 --batch 8); unit=sequences; target=1.1 ;;
    lm1b) continue ;;  # below
    *) echo "workloads_bench: unknown model '$model'" >&2; exit 2 ;;
  esac
  "$parallax" models export "$model" "${export_args[@]}" -o "$work/$model.pb" >"$work/$model.export"
  batch=$(sed -n 's/.*(batch=\([0-9]*\) .*/\1/p' "$work/$model.export")
  "$parallax" run "$work/$model.pb" --synthetic --steps $((warmup + steps + 1)) --threads 2 \
    --log-every 1 --metrics "$work/$model.jsonl" --progress lines >"$work/$model.log" 2>&1 ||
    { cat "$work/$model.log"; exit 1; }
  ms=$(median_step_ms "$work/$model.jsonl" "$warmup")
  torch_models=("$model")
  [[ $model == resnet50 ]] && torch_models+=(resnet50_channels_last)
  env OMP_WAIT_POLICY=PASSIVE ${core:+OPENBLAS_CORETYPE=$core} /usr/bin/python3 \
    bench/workloads_torch.py "${torch_models[@]}" --threads 2 --warmup "$warmup" \
    --steps "$steps" >"$work/$model.torch"
  torch_ms=""  # the faster layout's
  for t in "${torch_models[@]}"; do
    t_ms=$(sed -n "s/^$t: //p" "$work/$model.torch")
    [[ -n "$t_ms" ]] || { echo "workloads_bench: PyTorch printed no time for $t" >&2; exit 1; }
    layout=${t#$model}
    echo "workloads.$model.torch_step$layout: $t_ms ms (PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') eager, 2 threads${layout:+, ${layout#_}})"
    if [[ -z $torch_ms ]] || /usr/bin/python3 -c "import sys; sys.exit(0 if $t_ms < $torch_ms else 1)"; then
      torch_ms=$t_ms
    fi
  done
  r=$(ratio "$ms" "$torch_ms")
  echo "workloads.$model.step: $ms ms ($r x PyTorch's faster layout; $(head -1 "$work/$model.export" | sed 's/^wrote //; s/ to .*//'))"
  echo "  target: <= ${target}x PyTorch's step time: $(verdict "$r" "$target")"
  echo "workloads.$model.throughput: $(/usr/bin/python3 -c "print(f'{$batch / $ms * 1e3:.2f}')") $unit/s (batch $batch)"
done
if [[ " ${models[*]} " == *" lm1b "* ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  "$parallax" models export lm1b -o "$work/lm1b.pb" >/dev/null
  half_gb=$(awk '/^MemTotal:/ {printf "%.1f", $2 * 1024 / 2 / 1e9}' /proc/meminfo)
  printf '#!/bin/sh\nmkdir -p "$TMPDIR/$1" && export TMPDIR="$TMPDIR/$1" || exit 1\nshift\nexec sh -c "$*"\n' >"$work/agent"
  chmod +x "$work/agent"
  lm_steps=$((warmup + steps + 1))
  for ranks in 1 2 4; do
    launch_args=()
    if [[ $ranks -eq 4 ]]; then
      printf 'hosts:\n  - name: px-a\n    cpus: 2\n    memory_gb: %s\n  - name: px-b\n    cpus: 2\n    memory_gb: %s\n' \
        "$half_gb" "$half_gb" >"$work/lm$ranks.yaml"
      launch_args=(-H px-a:2,px-b:2 -- --mca plm_rsh_agent "$work/agent" --mca rtc ^hwloc
                   --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
      where="4 ranks on 2 fake hosts of ${half_gb} GB"
    else
      printf 'hosts:\n  - name: localhost\n    cpus: %d\n' "$ranks" >"$work/lm$ranks.yaml"
      where="1 rank on this machine: the single-device graph, whatever the method"
      [[ $ranks -eq 1 ]] || where="$ranks ranks on this machine"
    fi
    methods=(ps allgather dense)
    # One rank runs the single-device graph whatever the method: one row.
    [[ $ranks -gt 1 ]] || methods=(ps)
    for method in "${methods[@]}"; do
      name=$([[ $method == dense ]] && echo densify || echo "$method")_${ranks}rank
      [[ $ranks -gt 1 ]] || name=single_1rank
      job="$work/lm-$method-$ranks"
      if ! "$parallax" transform "$work/lm1b.pb" --cluster "$work/lm$ranks.yaml" --sparse "$method" \
          -o "$job" >"$work/$name.transform" 2>&1; then
        need=$(sed -n "s/.* need \([0-9.]* [KMGT]iB\) by the transform's estimate.*/\1/p" "$work/$name.transform")
        [[ -n $need ]] || { cat "$work/$name.transform"; exit 1; }
        has=$(sed -n "s/.*more than the \([0-9.]* [KMGT]iB\) it has.*/\1/p" "$work/$name.transform")
        echo "workloads.lm1b.$name.refused: $need (the transform's memory estimate for one host's ranks, over its $has; $where: not run)"
        continue
      fi
      "$parallax" launch "$job" --synthetic --steps "$lm_steps" --threads $((ranks >= 2 ? 1 : 2)) \
        --log-every 1 --metrics "$work/$name.jsonl" --progress lines -v "${launch_args[@]}" \
        >"$work/$name.log" 2>&1 || { tail -20 "$work/$name.log"; exit 1; }
      /usr/bin/python3 - "$job/plan.yaml" "$work/$name.log" "$work/$name.jsonl" "$warmup" \
        "$name" "$ranks" "$where" "$method" <<'PY'
import json, re, statistics, sys
plan_path, log_path, metrics_path, warmup, name, ranks, where, method = sys.argv[1:]
ranks, warmup = int(ranks), int(warmup)
plan = open(plan_path).read()
log = open(log_path).read()
points = [json.loads(l) for l in open(metrics_path) if '"elapsed"' in l]
steps = [(b["elapsed"] - a["elapsed"]) / (b["step"] - a["step"])
         for a, b in zip(points, points[1:]) if a["step"] >= warmup]
step = statistics.median(steps)
words = ranks * 128 * 20 / step
print(f"workloads.lm1b.{name}.throughput: {words:.0f} words/s ({where}; median step {step:.2f} s, "
      f"batch 128 x 20 words per rank)")
predicted = sum(int(b) for b in re.findall(r"^    bytes_per_step: (\d+)$", plan, re.M))
memory = re.search(r"^memory:\n  state_bytes: \[([\d, ]+)\]\n  gradient_bytes: \[([\d, ]+)\]", plan, re.M)
estimate = max(int(s) + int(g) for s, g in zip(memory.group(1).split(","), memory.group(2).split(",")))
sent = {int(r): int(b) for r, b in re.findall(r"traffic: rank (\d+) sent \d+ bytes in \d+ messages; "
                                               r"steps \d+ -> \d+: (\d+) bytes/step", log)}
if ranks > 1:
    if len(sent) != ranks:
        sys.exit(f"workloads_bench: {name}: {len(sent)} traffic lines of {ranks} ranks")
    mean = statistics.mean(sent.values())
    ratio = mean / predicted
    each = ", ".join(f"{sent[r] / 2**20:.1f}" for r in sorted(sent))
    print(f"workloads.lm1b.{name}.sent_per_rank: {mean / 2**20:.1f} MiB/step ({ratio:.3f}x the "
          f"transform's {predicted / 2**20:.1f} MiB; the mean of ranks {each} MiB)")
    if method == "ps":
        print(f"  target: within 5% of the prediction: {'target met' if abs(ratio - 1) <= 0.05 else 'TARGET MISSED'}")
peaks = re.search(r"peak memory \(resident\)(?: per rank)?: (.*)", log).group(1).split(", ")
def gib(text):
    value, unit = text.split()
    return float(value) * {"GiB": 1, "MiB": 1 / 1024, "KiB": 1 / 2**20}[unit]
print(f"workloads.lm1b.{name}.peak_memory: {max(gib(p) for p in peaks):.1f} GiB (the largest rank; "
      f"ranks {', '.join(peaks)}; the transform's estimate {estimate / 2**30:.1f} GiB, activations "
      f"and initial values not counted)")
PY
    done
  done
fi
# The paper's cluster: 8 hosts x 6 GPUs, 56 Gb/s between hosts.
{
  echo "hosts:"
  for h in 0 1 2 3 4 5 6 7; do printf '  - name: gpu-host-%d\n    gpus: [0, 1, 2, 3, 4, 5]\n' "$h"; done
  printf 'network:\n  bandwidth_gbps: 56\n'
} >"$work/paper.yaml"
planned=()
for model in "${models[@]}"; do [[ $model == lm1b ]] || planned+=("$model"); done
for model in "${planned[@]}" lm1b; do
  [[ -f "$work/$model.pb" ]] || "$parallax" models export "$model" -o "$work/$model.pb" >/dev/null
  "$parallax" transform "$work/$model.pb" --cluster "$work/paper.yaml" -o "$work/$model-48" >/dev/null
  /usr/bin/python3 - "$work/$model-48/plan.yaml" "$model" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
model = sys.argv[2]
variables = re.findall(r'  - name: "([^"]+)"\n    method: (\w+)\n    sparse: (\w+)\n(?:.*\n)*?'
                       r'    bytes: (\d+)\n(?:.*\n)*?    bytes_per_step: (\d+)', text)
reduced = [(int(size), int(sent)) for _, m, _, size, sent in variables if m == "allreduce"]
algorithm = re.search(r'^allreduce:\n  algorithm: "(\w+)"\n  off_host_bytes_per_step: (\d+)', text, re.M)
print(f"workloads.{model}.plan_48gpu_allreduce: {sum(s for s, _ in reduced) / 2**20:.1f} MiB/step "
      f"(gradients of {len(reduced)} variables; {sum(t for _, t in reduced) / 2**20:.1f} MiB sent per "
      f"rank; {algorithm.group(1)}: {int(algorithm.group(2)) / 2**20:.1f} MiB off each host; "
      f"8 hosts x 6 GPUs, 56 Gb/s)")
for name, method, sparse, size, sent in variables:
    if sparse == "true":
        print(f"workloads.{model}.plan_48gpu_sparse: {int(sent) / 2**20:.1f} MiB/step "
              f"({name}, {int(size) / 2**20:.1f} MiB: {method}; sent per rank)")
PY
done
echo "workloads_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
