#!/usr/bin/env bash
# Fuzzes every parser of outside input with libFuzzer: `scripts/fuzz.sh [SECONDS]`, or
# `scripts/fuzz.sh --smoke` (10 seconds each, for trying it out). Harness names after
# that (`scripts/fuzz.sh 600 graph_fuzzer`) run those alone.
#
# What: the harnesses of fuzz/ (one per parser: graphs, cluster specs, host lists,
# plan.yaml, safetensors, JSON, checkpoint text, TF checkpoints, TFRecord, event files,
# CSV/Example columns, .npy, IDX, literal feeds), built with Debian's clang under ASan,
# UBSan and libFuzzer (.bazelrc's --config=fuzz) in a separate Bazel output base
# ($PARALLAX_FUZZ_OUTPUT_BASE, default ~/.cache/parallax-fuzz), so the normal build's
# cache is never discarded. Installs clang and libclang-rt-14-dev first when missing.
#
# How long: each harness in turn (one at a time) until 1,000,000 executions or SECONDS
# (default 600), whichever comes first: at most 15 x SECONDS plus the build (about 80
# minutes with the default on two cores; the slower parsers take the full 600 s).
#
# Output: one line per harness — name, executions, seconds, crashes — then a total line.
# A crash, leak, UB report, timeout (-timeout=10), memory blow-up (-rss_limit_mb=2048,
# which also bounds single allocations) or a failed check of the harness (an internal or
# multi-line error: fuzz/fuzz_input.h) counts as a crash: the line names the input file
# libFuzzer saved and the script exits 1. Everything goes to one scratch folder
# (printed at the start; $PARALLAX_FUZZ_DIR to choose it): corpus/<harness>/ (the seeds,
# copied, plus what the fuzzer added), artifacts/<harness>/ (crash inputs),
# logs/<harness>.log. The repository is never written. Seeds are each harness's
# fuzz/<harness>.seeds list (fuzz/BUILD.bazel): repository test data, fuzz/corpus/, and
# the shared folder's real TF files ($PARALLAX_SHARED_DIR, default ../shared beside the
# checkout; skipped when absent); files over 64 KiB are left out, as they slow every
# execution without adding much the small ones do not.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

usage="usage: scripts/fuzz.sh [SECONDS | --smoke] [HARNESS...]"
seconds=600
case "${1:-}" in
  "") ;;
  --smoke) seconds=10 ;;
  *[!0-9]* | 0)
    echo "$usage" >&2
    exit 2
    ;;
  *) seconds=$1 ;;
esac
harnesses=("${@:2}")
readonly max_runs=1000000
readonly max_seed_bytes=65536

# clang and libFuzzer's runtime, as scripts/setup.sh installs packages.
missing=()
for pkg in clang libclang-rt-14-dev; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then missing+=("$pkg"); fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "fuzz.sh: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
    sudo_cmd=(sudo)
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "fuzz.sh: installed ${missing[*]}"
fi

if [[ -z "${PARALLAX_SHARED_DIR:-}" && -d "$repo/../shared" ]]; then
  PARALLAX_SHARED_DIR=$(cd "$repo/../shared" && pwd)
fi
shared=${PARALLAX_SHARED_DIR:-}

output_base=${PARALLAX_FUZZ_OUTPUT_BASE:-$HOME/.cache/parallax-fuzz}
bazel=(bazel "--output_base=$output_base")
# Only the harnesses named, when some are.
build_targets=(//fuzz:all)
if [[ ${#harnesses[@]} -gt 0 ]]; then
  build_targets=()
  for name in "${harnesses[@]}"; do build_targets+=("//fuzz:$name" "//fuzz:${name}_seeds"); done
fi
echo "fuzz.sh: building ${build_targets[*]} with --config=fuzz (output base $output_base)"
if ! "${bazel[@]}" build --config=fuzz "${build_targets[@]}" </dev/null; then
  echo "fuzz.sh: the build failed (a harness name not in fuzz/BUILD.bazel?)" >&2
  exit 2
fi
bin=$("${bazel[@]}" info --config=fuzz bazel-bin 2>/dev/null)/fuzz
# The fuzz output base's server is not needed while fuzzing (its cache stays on disk).
"${bazel[@]}" shutdown

work=${PARALLAX_FUZZ_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/parallax-fuzz.XXXXXX")}
mkdir -p "$work/corpus" "$work/artifacts" "$work/logs"
echo "fuzz.sh: up to $max_runs executions or ${seconds}s per harness; output in $work"

# Copies the seeds one line of a .seeds file names into $2 (see fuzz/replay_main.cc for
# the forms), flattening paths into file names.
copy_seeds() {
  local spec=$1 corpus=$2 base=$repo pattern='*' dir file
  if [[ "$spec" == shared:* ]]; then
    [[ -n "$shared" ]] || return 0
    base=$shared
    spec=${spec#shared:}
  fi
  dir=$spec
  if [[ "${spec##*/}" == *[*?]* ]]; then
    pattern=${spec##*/}
    dir=${spec%/*}
  fi
  [[ -e "$base/$dir" ]] || return 0
  while IFS= read -r -d '' file; do
    cp "$file" "$corpus/$(echo "${file#"$base"/}" | tr '/' '_')"
  done < <(find "$base/$dir" -type f -name "$pattern" -size -$((max_seed_bytes + 1))c -print0)
}

failed=0
total_runs=0
printf '%-30s %10s %8s  %s\n' harness executions seconds crashes
if [[ ${#harnesses[@]} -eq 0 ]]; then
  for seeds in "$bin"/*.seeds; do harnesses+=("$(basename "$seeds" .seeds)"); done
fi
for name in "${harnesses[@]}"; do
  seeds=$bin/$name.seeds
  if [[ ! -f "$seeds" ]]; then
    echo "fuzz.sh: no harness '$name' (fuzz/BUILD.bazel lists them)" >&2
    exit 2
  fi
  corpus=$work/corpus/$name
  artifacts=$work/artifacts/$name/
  log=$work/logs/$name.log
  mkdir -p "$corpus" "$artifacts"
  while IFS= read -r spec; do copy_seeds "$spec" "$corpus"; done < "$seeds"

  start=$(date +%s)
  set +e
  (cd "$work" && "$bin/$name" "$corpus" -runs=$max_runs -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts") \
    >"$log" 2>&1
  rc=$?
  set -e
  elapsed=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  total_runs=$((total_runs + runs))
  if [[ $rc -eq 0 ]]; then
    result=0
  else
    failed=1
    found=$(find "$artifacts" -type f | head -1)
    kind=$(sed -n 's/^SUMMARY: \([A-Za-z]*\): \([a-z-]*\).*/\1: \2/p' "$log" | head -1)
    result="1 (${kind:-exit $rc}): ${found:-no input saved; see $log}"
  fi
  printf '%-30s %10s %8s  %s\n' "$name" "$runs" "$elapsed" "$result"
done
echo "fuzz.sh: $total_runs executions in all; logs in $work/logs"
if [[ $failed -ne 0 ]]; then
  echo "fuzz.sh: FAILED: a harness crashed, leaked or hit UB (inputs above; replay one with" \
    "\`bazel run //fuzz:NAME -- FILE\`)" >&2
  exit 1
fi
