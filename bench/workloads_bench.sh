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
# And, for each model and lm1b (the paper's LM-1B at its full size, planned only), the plan
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
# transformer). Needs python3-torch (Debian's PyTorch 1.13, CPU) and libopenblas0-pthread.
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
[[ ${#models[@]} -gt 0 ]] || models=(resnet50 transformer)

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
# The paper's cluster: 8 hosts x 6 GPUs, 56 Gb/s between hosts.
{
  echo "hosts:"
  for h in 0 1 2 3 4 5 6 7; do printf '  - name: gpu-host-%d\n    gpus: [0, 1, 2, 3, 4, 5]\n' "$h"; done
  printf 'network:\n  bandwidth_gbps: 56\n'
} >"$work/paper.yaml"
for model in "${models[@]}" lm1b; do
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
