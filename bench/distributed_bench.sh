#!/usr/bin/env bash
# The distributed benchmarks of issue #5, side by side, in one command (about 3 minutes
# on 2 cores):
#   1. bench/allreduce_bench (under mpirun -np 2): Parallax's all-reduce vs raw
#      MPI_Allreduce on the same buffers, 1 KB to 64 MB;
#   2. bench/distributed_bench.py: examples/s of the zoo's mlp and embedding on 1 and 2
#      ranks, Parallax next to PyTorch DDP (gloo), and each one's scaling efficiency;
#   3. the same script: bytes per step of the embedding model under PS, allgather and
#      densify (the Communicator's counters) next to `parallax transform`'s prediction.
# Output lines follow scripts/bench.sh (`<bench>.<metric>: <value> <unit> (<note>)`), which
# runs this script with --no-allreduce (it runs allreduce_bench itself).
#
# Usage: bench/distributed_bench.sh [--no-allreduce] [--rounds R] [--steps N] ...
# (flags other than --no-allreduce go to distributed_bench.py; see its docstring).
# Needs the Debian packages openmpi-bin, libopenblas0-pthread (scripts/setup.sh installs
# them) and python3-torch (PyTorch 1.13, CPU) for /usr/bin/python3.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

allreduce=1
args=()
for arg in "$@"; do
  if [[ "$arg" == --no-allreduce ]]; then allreduce=0; else args+=("$arg"); fi
done

for pkg in openmpi-bin libopenblas0-pthread python3-torch; do
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) != "install ok installed" ]]; then
    echo "distributed_bench: Debian package $pkg is missing (scripts/setup.sh installs" \
         "openmpi-bin and libopenblas0-pthread; apt-get install python3-torch)" >&2
    exit 1
  fi
done

# --symlink_prefix=/ leaves the bazel-bin symlink on the default (fastbuild) tree.
bazel build -c opt --symlink_prefix=/ //bench:allreduce_bench //cmd/parallax:parallax
bindir=$(bazel info -c opt bazel-bin 2>/dev/null)

echo "distributed_bench: load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(nproc) cores"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ $allreduce -eq 1 ]]; then
  mpirun -np 2 --oversubscribe --mca btl self,vader "$bindir/bench/allreduce_bench"
fi
/usr/bin/python3 bench/distributed_bench.py --parallax "$bindir/cmd/parallax/parallax" "${args[@]}"
