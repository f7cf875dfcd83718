#!/usr/bin/env bash
# The seed paper's comparisons at 48 GPUs, estimated: `parallax estimate` of ResNet-50
# and LM-1B on the paper's cluster (configs/paper-8x6-titanxp.yaml: 8 machines of 6
# TITAN Xp, 100 Gb/s InfiniBand; devices/titan-xp.yaml) and on six machines of eight
# H100s (configs/h100-6x8.yaml; devices/h100-sxm.yaml, FP32), each model under the three
# ways of synchronising the paper compares:
#   hybrid     Parallax: dense gradients all-reduced, sparse ones on partitioned
#              parameter servers (the spec's strategy);
#   allgather  Horovod: dense gradients all-reduced, sparse ones all-gathered
#              (--sparse allgather);
#   ps         TensorFlow's parameter servers: every variable on them (--strategy ps).
# Nothing here is timed on this machine: a profile run here (a 2-rank job, --profile-steps
# steps, one profile per model and method) records each node's work (flops, memory
# bytes), which the device file turns into time (docs/estimate.md), and the collectives
# are priced by the cluster's network (its bandwidths and latencies). Each is estimated
# twice: collectives after the step's compute (the executor's plain schedule), and
# overlapping backward compute (--overlap, as Horovod and TensorFlow do on GPUs) — real
# systems fall between the two. ResNet-50 runs at batch 64 per GPU, LM-1B at its
# defaults (batch 128, 20 steps: 2,560 words per GPU and step).
#
# Output lines follow scripts/bench.sh:
#   paper.resnet50.one_gpu.<device>: <images>/s (one GPU of each device file)
#   paper.<model>.<cluster>.<method>[.overlap]: <examples or words>/s (step, scaling,
#     bottleneck)
#   paper.<model>.<cluster>.hybrid_vs_<method>[.overlap]: <ratio> x (what the paper reports)
# Usage: bench/paper_estimate_bench.sh [--profile-steps N] (default 4)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
profile_steps=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profile-steps) profile_steps=$2; shift 2 ;;
    *) echo "paper_estimate_bench: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //cmd/parallax:parallax
parallax="$(bazel info -c opt bazel-bin 2>/dev/null)/cmd/parallax/parallax"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/parallax-paper-estimate.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "paper_estimate_bench: profiles of $profile_steps steps (work per node, not timed)"

"$parallax" models export resnet50 --batch 64 -o "$work/resnet50.pb" >/dev/null
"$parallax" models export lm1b -o "$work/lm1b.pb" >/dev/null

# One GPU of each device file: ResNet-50 images/s, next to a published anchor where
# there is one (an H100 with TF32 trains ResNet-50 at about 1,900 images/s).
printf 'hosts:\n  - {name: gpu-box, gpus: [0]}\n' >"$work/one-gpu.yaml"
for device in titan-xp v100-sxm2 h100-sxm h100-sxm-tf32; do
  PARALLAX_CACHE_DIR="$work/cache-resnet50-one" "$parallax" estimate "$work/resnet50.pb" \
    --cluster "$work/one-gpu.yaml" --device "configs/devices/$device.yaml" \
    --profile-steps "$profile_steps" --json >"$work/one.json" 2>"$work/err" ||
    { cat "$work/err"; exit 1; }
  /usr/bin/python3 - "$work/one.json" "$device" <<'PY'
import json, sys
e, device = json.load(open(sys.argv[1])), sys.argv[2]
anchor = "; anchor: about 1,900 images/s" if device == "h100-sxm-tf32" else ""
print(f"paper.resnet50.one_gpu.{device}: {e['examples_per_second']:.0f} images/s "
      f"(batch {e['batch_per_rank']}, step {e['step_seconds'] * 1e3:.1f} ms on {e['device']}{anchor})")
PY
done

clusters=(paper-8x6-titanxp:titan-xp h100-6x8:h100-sxm)
for model in resnet50 lm1b; do
  unit=$([[ $model == lm1b ]] && echo words || echo images)
  per_example=$([[ $model == lm1b ]] && echo 20 || echo 1)  # words per example
  for method in hybrid allgather ps; do
    case $method in
      hybrid) flags=() ;;
      allgather) flags=(--sparse allgather) ;;
      ps) flags=(--strategy ps) ;;
    esac
    for pair in "${clusters[@]}"; do
      cluster=${pair%%:*}
      device=${pair##*:}
      for schedule in plain overlap; do
        suffix=$([[ $schedule == overlap ]] && echo .overlap || true)
        out="$work/$model.$cluster.$method$suffix.json"
        # One cache per model and method: the profiled job's plan is the method's; the
        # second schedule reads the first's profile from it.
        if ! PARALLAX_CACHE_DIR="$work/cache-$model-$method" "$parallax" estimate \
            "$work/$model.pb" --cluster "configs/$cluster.yaml" \
            --device "configs/devices/$device.yaml" --profile-steps "$profile_steps" \
            ${suffix:+--overlap} "${flags[@]}" --json >"$out" 2>"$work/err"; then
          echo "paper.$model.$cluster.$method$suffix: refused ($(tail -1 "$work/err"))"
          rm -f "$out"
          continue
        fi
        /usr/bin/python3 - "$out" "$model.$cluster.$method$suffix" "$unit" "$per_example" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
name, unit, per = sys.argv[2], sys.argv[3], int(sys.argv[4])
one = e["batch_per_rank"] * per / e["one_rank_step_seconds"]
print(f"paper.{name}: {e['examples_per_second'] * per:.0f} {unit}/s "
      f"({e['ranks']} GPUs; step {e['step_seconds'] * 1e3:.1f} ms: compute "
      f"{e['compute_seconds'] * 1e3:.1f}, communication {e['communication_seconds'] * 1e3:.1f} "
      f"of which exposed {e['exposed_communication_seconds'] * 1e3:.1f}; one GPU {one:.0f} {unit}/s, "
      f"scaling {e['examples_per_second'] * per / one:.1f}x = {e['scaling_efficiency']:.2f} of "
      f"linear; {e['bytes_sent_per_rank_per_step'] / 2**20:.1f} MiB sent per GPU and step; "
      f"bottleneck: {e['bottleneck']})")
PY
      done
    done
  done
  for pair in "${clusters[@]}"; do
    cluster=${pair%%:*}
    for suffix in "" .overlap; do
    /usr/bin/python3 - "$work" "$model" "$cluster" "$suffix" <<'PY'
import json, os, sys
work, model, cluster, suffix = sys.argv[1:]
def rate(method):
    path = f"{work}/{model}.{cluster}.{method}{suffix}.json"
    return json.load(open(path))["examples_per_second"] if os.path.exists(path) else None
hybrid = rate("hybrid")
paper = {"lm1b": {"allgather": "the paper: up to 6.02x over Horovod for NLP models",
                  "ps": "the paper: up to 2.8x over TensorFlow for NLP models"},
         "resnet50": {"allgather": "the paper: equal to Horovod for image models",
                      "ps": "the paper: 1.53x TensorFlow for image models"}}[model]
for other in ("allgather", "ps"):
    r = rate(other)
    if hybrid is None or r is None:
        print(f"paper.{model}.{cluster}.hybrid_vs_{other}{suffix}: n/a (a plan was refused)")
    else:
        print(f"paper.{model}.{cluster}.hybrid_vs_{other}{suffix}: {hybrid / r:.2f} x ({paper[other]})")
PY
    done
  done
done
