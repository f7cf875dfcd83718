#!/usr/bin/env bash
# What `parallax inspect` says about GPU kernels for the zoo's models, as docs/gpu.md
# quotes it. Built with CUDA (--config=cuda, .ci/run's second step): the ops left without
# a GPU kernel are only the values made on the host (mlp, lenet), the embedding model's
# integer work (Unique, shape arithmetic) and the lstm model's loop bookkeeping (its
# counters, the TensorArray and stack handles). Built without: inspect says nothing
# about GPU kernels. $1 says which build this is (cuda or cpu, from the BUILD's select), so
# an inspect that lost its GPU report fails rather than passing as the CPU build.
# Prints "gpu_inspect_test: N passed, M failed".
set -u

root="${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-.}"
parallax="$root/cmd/parallax/parallax"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

declare -A want=(
  [mlp]="no GPU kernel (3 ops, 25 nodes): Const x20, Placeholder x2, RandomUniform x3 (a GPU rank runs them on its host)"
  [lenet]="no GPU kernel (3 ops, 57 nodes): Const x51, Placeholder x2, RandomUniform x4 (a GPU rank runs them on its host)"
  [embedding]="no GPU kernel (10 ops, 45 nodes): Cast x1, ConcatV2 x1, Const x33, ExpandDims x1, Placeholder x2, RandomUniform x2, Reshape x1, Shape x1, StridedSlice x2, Unique x1 (a GPU rank runs them on its host)"
  [lstm]="no GPU kernel (26 ops, 137 nodes): Add x2, BroadcastGradientArgs x1, ConcatOffset x1, Const x67, ControlTrigger x1, Enter x24, Exit x3, FloorMod x1, GreaterEqual x1, Identity x1, InvertPermutation x1, Less x1, LoopCond x2, Merge x3, NextIteration x3, Placeholder x2, RandomUniform x2, Range x2, StackPopV2 x1, StackPushV2 x1, StackV2 x8, Sub x1, Switch x3, TensorArrayGradV3 x2, TensorArraySizeV3 x1, TensorArrayV3 x2 (a GPU rank runs them on its host)"
)

build=${1:?usage: gpu_inspect_test.sh cuda|cpu}
for model in mlp lenet embedding lstm; do
  if ! "$parallax" models export "$model" -o "$tmp/$model.pb" >"$tmp/out" 2>&1; then
    fail "models export $model: $(head -c 300 "$tmp/out")"
    continue
  fi
  if ! "$parallax" inspect "$tmp/$model.pb" --format json >"$tmp/$model.json" 2>"$tmp/err"; then
    fail "inspect --format json $model: $(head -c 300 "$tmp/err")"
    continue
  fi
  "$parallax" inspect "$tmp/$model.pb" >"$tmp/$model.txt" 2>&1
  if [[ $build == cuda ]]; then
    grep -q '"without_gpu_kernel"' "$tmp/$model.json" || fail "$model: no without_gpu_kernel in --format json"
    line=$(grep '^no GPU kernel' "$tmp/$model.txt")
    if [[ "$line" == "${want[$model]}" ]]; then pass; else fail "$model: '$line', want '${want[$model]}'"; fi
  elif grep -q 'GPU kernel' "$tmp/$model.txt" || grep -q '"without_gpu_kernel"' "$tmp/$model.json"; then
    fail "$model: a build without CUDA reports GPU kernels"
  else
    pass
  fi
done
echo "gpu_inspect_test: the $build build"
echo "gpu_inspect_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
