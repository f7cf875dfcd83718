#!/usr/bin/env bash
# Installs the Debian packages that Parallax needs to build, test and benchmark.
#
# Idempotent and quiet: when every package is already installed it does nothing (not
# even `apt-get update`); otherwise it updates the package lists once and installs only
# the missing packages. Runs as root, or through sudo where that exists.
#
# To add a dependency, put its Debian package name in the PACKAGES list below, in the
# group it belongs to (or a new group with a comment), and nowhere else.
set -euo pipefail

PACKAGES=(
  # Build system and compiler (Bazel 4.2.3, offline; see WORKSPACE).
  bazel-bootstrap
  g++
  # Protocol buffers: the GraphDef schema is compiled by the system protoc.
  libprotobuf-dev
  protobuf-compiler
  # Command line, logging, formatting, config files.
  libcli11-dev
  libspdlog-dev
  libfmt-dev
  libyaml-cpp-dev
  # JSON: safetensors headers and --json output (nlohmann-json, header-only).
  nlohmann-json3-dev
  # Runtime kernels: GEMM (OpenBLAS, threaded build) and convolutions (oneDNN).
  libopenblas-dev
  libopenblas0-pthread
  libdnnl-dev
  # Data files: gzip-compressed IDX (MNIST) inputs of `parallax run`.
  zlib1g-dev
  # TensorFlow's file formats: CRC-32C (ISA-L) and checkpoint index tables (LevelDB).
  libisal-dev
  libleveldb-dev
  # Image decoders and encoders of the input pipeline's kernels (DecodeJpeg/Png/Gif,
  # EncodeJpeg/Png): libjpeg-turbo, libpng, giflib.
  libjpeg62-turbo-dev
  libpng-dev
  libgif-dev
  # TensorFlow's string hashes (lib/base/tf_hash): Fingerprint64 is FarmHash's; the strong
  # keyed hash is highwayhash's SipHash.
  libfarmhash-dev
  libhighwayhash-dev
  # Collectives between ranks: OpenMPI 4.1 (mpirun, headers, libmpi).
  openmpi-bin
  libopenmpi-dev
  # SLURM for `parallax launch --launcher srun` and its test, which runs a real SLURM on
  # this machine: the controller and node daemons, srun/salloc/sbatch, munge for their
  # authentication (the PMIx plugin srun wires MPI up with comes with them).
  slurmctld
  slurmd
  slurm-client
  munge
  # Multi-host tests: hosts as network namespaces (`ip netns`, veth, bridge); their
  # `unshare` is util-linux, always installed.
  iproute2
  # The fault test: a size-limited tmpfs (mount; usually installed) for a disk that fills
  # up, and a private mount namespace (util-linux's unshare) that hides a rank's data.
  mount
  # Real data for tests and examples (Fashion-MNIST as IDX files).
  dataset-fashion-mnist
  # Tests (Catch2 v2, header-only).
  catch2
  # scripts/test.sh reads Bazel's build event file; benches and tools use it too.
  python3
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

"${sudo_cmd[@]}" apt-get update -qq
# apt's progress goes to /dev/null; its errors (and not debconf's apt-utils notice) stay.
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  2> >(grep -v '^debconf: delaying package configuration' >&2)
echo "setup.sh: installed ${missing[*]}"
