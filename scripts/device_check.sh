#!/usr/bin/env bash
# The GPU checks of Parallax, for a machine with an NVIDIA GPU and no network (docs/gpu.md).
#
#   scripts/device_check.sh pack   # here (nvcc installed, no GPU needed): builds the CUDA
#                                  # configuration with -c opt and packs into .device/ the
#                                  # binaries and the non-CUDA shared libraries they load
#   scripts/device_check.sh run    # there, from the checkout with .device/ carried along:
#                                  # every check below; the report goes to $OUT (or
#                                  # ./device-report) as device_check.txt, with the logs
#
# The GPU machine brings the NVIDIA driver, CUDA 13's runtime, cuBLAS, cuDNN and NCCL
# inside its Python nvidia-* packages (found through python3 and put on LD_LIBRARY_PATH),
# and PyTorch for the side-by-side runs. It may have no mpirun: the pack carries this
# machine's OpenMPI (relocated with OPAL_PREFIX; its PMIx library patched to look for its
# plugins under $PMIX_DIR, where run copies them), used when the machine has none.
# The checks, at most 8 minutes in all:
#  1. the kernel table: every GPU kernel against its CPU kernel, case by case
#     (PARALLAX_REQUIRE_GPU=1: a case that cannot run on the GPU fails);
#  2. the zoo's mlp, lenet, embedding, wide_deep (Ftrl, sparse segment sums), lstm (a
#     while loop whose TensorArrays and stacks stay on the GPU), a small resnet50 and a
#     small transformer, 20 steps
#     on the GPU and on the CPU from the same initial values and batches: every step's
#     loss within 1e-4 relative;
#     `parallax verify --ranks 2 --device gpu` of mlp: both ranks on the one GPU (their
#     collectives through the host) against one device on it, PASS wanted;
#  3. sgemm: Parallax's MatMul against cublasSgemm called directly (>= 0.95x wanted);
#  4. step time of mlp (batch 256), lenet (batch 64) and ResNet-50 (batch 32, 224x224)
#     against PyTorch eager on the same GPU, TF32 off on both (<= 1.2x wanted; ResNet-50
#     <= 1.0x).
# Each check prints PASS, FAIL or its figures; the script exits 1 when a check failed.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
mode=${1:-}

pack() {
  set -e
  export PARALLAX_SHARED_DIR=${PARALLAX_SHARED_DIR:-$repo/../shared}
  local targets=(//cmd/parallax:parallax //lib/runtime/kernels:kernel_table_test //bench:sgemm_bench)
  bazel build -c opt --config=cuda --symlink_prefix=/ "${targets[@]}"
  local bin
  bin=$(bazel info -c opt --config=cuda bazel-bin 2>/dev/null)
  rm -rf .device && mkdir -p .device/pack/bin .device/pack/lib
  cp "$bin/cmd/parallax/parallax" "$bin/lib/runtime/kernels/kernel_table_test" \
     "$bin/bench/sgemm_bench" .device/pack/bin/
  chmod u+w .device/pack/bin/*
  strip .device/pack/bin/*
  # The shared libraries they load, except the C runtime and CUDA's (the GPU machine's own).
  ldd .device/pack/bin/* | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libgcc_s|libstdc\+\+)\.so|/(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl)\.so' |
    while read -r lib; do cp -L "$lib" .device/pack/lib/; done
  pack_mpi
  tar -C .device -czf .device/pack.tgz pack
  rm -rf .device/pack
  ls -l .device/pack.tgz
}

# Where run puts PMIx's plugins: a path exactly as long as Debian's PMIx prefix, which
# the packed libpmix is patched to (PMIx takes no relocation of its plugin folder).
PMIX_DIR=/tmp/parallax_device_check_pmix
DEBIAN_PMIX=/usr/lib/x86_64-linux-gnu/pmix2

# OpenMPI (Debian's) into .device/pack/mpi as a relocatable prefix, PMIx beside it, and
# the libraries they load into .device/pack/lib.
pack_mpi() {
  local mpi=.device/pack/mpi
  mkdir -p "$mpi/bin" "$mpi/lib/x86_64-linux-gnu" "$mpi/share"
  cp -L /usr/bin/orterun "$mpi/bin/mpirun"
  cp -L /usr/bin/orted "$mpi/bin/"
  cp -a /usr/lib/x86_64-linux-gnu/openmpi "$mpi/lib/x86_64-linux-gnu/"
  cp -a /usr/share/openmpi "$mpi/share/"
  cp -a "$DEBIAN_PMIX" .device/pack/pmix2
  rm -rf "$mpi/lib/x86_64-linux-gnu/openmpi/include" .device/pack/pmix2/include
  find "$mpi" .device/pack/pmix2 -name '*.a' -delete
  find "$mpi" .device/pack/pmix2 -name '*.so*' -type f -print0 | xargs -0 ldd 2>/dev/null |
    awk '/=> \// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do cp -L "$lib" .device/pack/lib/; done
  python3 - "$DEBIAN_PMIX" "$PMIX_DIR" .device/pack/lib/libpmix.so.2 <<'PY'
import sys
old, new, path = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3]
assert len(old) == len(new), "the PMIx path must keep its length"
data = open(path, "rb").read()
assert old in data, f"{path} does not name {sys.argv[1]}"
open(path, "wb").write(data.replace(old, new))
PY
}

# The lib folders of the Python nvidia-* packages (cuBLAS, cuDNN, NCCL, the runtime).
nvidia_libs() {
  python3 - <<'PY'
import glob, os, site
dirs = set()
for base in site.getsitepackages() + [site.getusersitepackages()]:
    for lib in glob.glob(os.path.join(base, "nvidia", "*", "lib")) + glob.glob(os.path.join(base, "nvidia", "cu13", "lib")):
        dirs.add(lib)
print(":".join(sorted(dirs)))
PY
}

run() {
  local out=${OUT:-$repo/device-report}
  mkdir -p "$out"
  local report=$out/device_check.txt
  local work
  work=$(mktemp -d)
  tar -C "$work" -xzf .device/pack.tgz || { echo "no .device/pack.tgz: run 'scripts/device_check.sh pack' first" >&2; exit 2; }
  local px=$work/pack/bin
  export LD_LIBRARY_PATH="$work/pack/lib:$(nvidia_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local failed=0
  say() { echo "$*" | tee -a "$report"; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  if ! command -v mpirun >/dev/null; then  # the packed OpenMPI
    rm -rf "$PMIX_DIR" && cp -a "$work/pack/pmix2" "$PMIX_DIR"
    export OPAL_PREFIX=$work/pack/mpi PATH=$work/pack/mpi/bin:$PATH
  fi
  : > "$report"
  say "device_check $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null)"
  nvidia-smi -L 2>&1 | tee -a "$report"
  if ldd "$px"/* | grep -q "not found"; then
    ldd "$px"/* | grep "not found" | sort -u | tee -a "$report"
  fi

  # 1. The kernel table.
  if PARALLAX_REQUIRE_GPU=1 timeout 120 "$px/kernel_table_test" > "$out/kernel_table.log" 2>&1; then
    say "PASS kernel table: $(tail -n 1 "$out/kernel_table.log")"
  else
    say "FAIL kernel table (kernel_table.log):"
    { grep -A6 "FAILED" "$out/kernel_table.log" | head -60; tail -n 3 "$out/kernel_table.log"; } | tee -a "$report"
    failed=1
  fi

  # 2. The zoo on the GPU against the CPU, step by step (resnet50 and transformer made
  #    small enough for the CPU's half).
  local -A zoo=(
    [mlp]=""
    [lenet]=""
    [embedding]=""
    [wide_deep]=""
    [lstm]=""
    [resnet50]="--image-size 64 --batch 8"
    [transformer]="--layers 2 --hidden 128 --heads 2 --seq 32 --vocab 1000 --dropout 0 --batch 8"
  )
  for model in mlp lenet embedding wide_deep lstm resnet50 transformer; do
    # shellcheck disable=SC2086  # the export flags are words
    "$px/parallax" models export "$model" ${zoo[$model]} -o "$work/$model.pb" --force >/dev/null 2>&1
    for device in cpu gpu; do
      timeout 120 "$px/parallax" run "$work/$model.pb" --device "$device" --synthetic --seed 1 \
        --steps 20 --log-every 1 --metrics "$work/$model.$device.jsonl" > "$out/$model.$device.log" 2>&1
    done
    if python3 - "$work/$model.cpu.jsonl" "$work/$model.gpu.jsonl" "$model" >> "$report" <<'PY'
import json, os, sys
def losses(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l)["loss"] for l in open(path) if '"loss"' in l]
cpu, gpu = losses(sys.argv[1]), losses(sys.argv[2])
worst = max((abs(g - c) / max(abs(c), 1e-30) for c, g in zip(cpu, gpu)), default=float("inf"))
ok = len(cpu) == len(gpu) == 20 and worst <= 1e-4
print(f"{'PASS' if ok else 'FAIL'} zoo {sys.argv[3]} on the GPU: {len(gpu)} steps, worst loss difference {worst:.2e} relative (<= 1e-4)")
sys.exit(0 if ok else 1)
PY
    then :; else failed=1; tail -n 3 "$out/$model.gpu.log" | tee -a "$report"; fi
  done
  "$px/parallax" models export mlp -o "$work/mlp_open.pb" --batch 0 --force >/dev/null 2>&1
  if timeout 240 "$px/parallax" verify "$work/mlp_open.pb" --ranks 2 --device gpu --synthetic \
      --batch 64 --steps 20 > "$out/verify.log" 2>&1; then
    say "PASS verify --ranks 2 on one GPU: $(grep '^overall' "$out/verify.log")"
  else
    say "FAIL verify --ranks 2 on one GPU (verify.log):"
    tail -n 5 "$out/verify.log" | tee -a "$report"
    failed=1
  fi

  # 3. sgemm against cuBLAS.
  timeout 120 "$px/sgemm_bench" 2>&1 | tee -a "$report" || failed=1

  # 4. Step time against PyTorch eager on the same GPU.
  local torch_ms
  torch_ms=$(python3 bench/step_time_torch.py --device cuda --threads 8 mlp lenet resnet50 \
    2>>"$out/torch.log")
  echo "$torch_ms" >> "$out/torch.log"
  "$px/parallax" models export resnet50 -o "$work/resnet50.pb" --force >/dev/null 2>&1
  for spec in mlp:256 lenet:64 resnet50:32; do
    local model=${spec%%:*} batch=${spec##*:}
    timeout 150 "$px/parallax" run "$work/$model.pb" --device gpu --synthetic --batch "$batch" \
      --steps 110 --log-every 10 --metrics "$work/$model.time.jsonl" > "$out/$model.time.log" 2>&1
    python3 - "$work/$model.time.jsonl" "$model" "$batch" "$torch_ms" >> "$report" <<'PY'
import json, os, statistics, sys
path, model, batch, torch_lines = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
lines = open(path).readlines() if os.path.exists(path) else []
rates = [json.loads(l)["examples_per_sec"] for l in lines if '"examples_per_sec"' in l][1:]
ours = batch / statistics.median(rates) * 1e3 if rates else float("nan")
theirs = dict(l.split(": ") for l in torch_lines.splitlines() if ": " in l).get(model)
theirs = float(theirs) if theirs else float("nan")
wanted = "1.0" if model == "resnet50" else "1.2"
print(f"step.{model}.parallax_ms: {ours:.3f} ms; step.{model}.torch_ms: {theirs:.3f} ms; ratio {ours / theirs:.2f}x (<= {wanted} wanted); {batch / ours * 1e3:.0f} examples/s")
PY
  done
  say "device_check: $([[ $failed -eq 0 ]] && echo PASS || echo FAIL) (report $report)"
  rm -rf "$work"
  return $failed
}

case "$mode" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/device_check.sh pack|run" >&2; exit 2 ;;
esac
