#!/usr/bin/env bash
# End-to-end tests of the `parallax` binary: exit codes, one-line errors, output formats.
# Prints a Catch2-like closing line "cli_test: N passed, M failed". The cases on the
# shared folder's graphs ($PARALLAX_SHARED_DIR) and Fashion-MNIST print a SKIP line when
# that data is missing, and fail instead under CI=true or PARALLAX_REQUIRE_DATA=1.
set -u

root="${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-.}"
parallax="$root/cmd/parallax/parallax"
tb_init_script="$root/cmd/parallax/testdata/tensorboard_mlp_init.py"
bad="$root/testdata/bad"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
passed=0
failed=0

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }

# missing_data WHAT WHY: a failure under CI=true or PARALLAX_REQUIRE_DATA=1, else a
# SKIP line (lib/testing/missing_data.sh).
# shellcheck source=../../lib/testing/missing_data.sh
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/lib/testing/missing_data.sh"

# expect CODE CMD...: runs CMD, checks its exit code; stdout/stderr land in $tmp/out|err.
expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -eq $want ]]; then pass; else fail "$* exited $got, want $want: $(head -c 300 "$tmp/err")"; fi
}

expect_stderr_line() {
  local want=$1
  local got
  got=$(head -n 1 "$tmp/err")
  if [[ "$got" == "$want" ]]; then pass; else fail "stderr: got '$got', want '$want'"; fi
}

expect 0 "$parallax" --version
grep -qx 'parallax 0.1.0' "$tmp/out" && pass || fail "--version printed '$(cat "$tmp/out")'"
expect 0 "$parallax" --help
grep -q 'inspect' "$tmp/out" && pass || fail "--help does not list inspect"
grep -q 'transform' "$tmp/out" && pass || fail "--help does not list transform"
expect 0 "$parallax" inspect --help
expect 2 "$parallax"
expect 2 "$parallax" inspect
expect 2 "$parallax" inspect --format xml "$bad/empty.pb"
expect_stderr_line "parallax: error: --format: unknown format 'xml' (expected table, json or dot)"
expect 2 "$parallax" inspect --format 1 "$root/lib/analysis/testdata/sparse_momentum.pbtxt"
expect_stderr_line "parallax: error: --format: unknown format '1' (expected table, json or dot)"
expect 0 "$parallax" inspect --help
grep -q -- '--format TEXT *output format: table (default), json or dot' "$tmp/out" &&
  ! grep -q -- '->' "$tmp/out" && pass || fail "inspect --help: $(grep -- --format "$tmp/out")"
expect 2 "$parallax" frobnicate
expect 2 "$parallax" inspect "$tmp/missing.pb"
expect_stderr_line "parallax: error: $tmp/missing.pb: no such file"

# Logs (-v) go to stderr; stdout stays the command's output.
example="$root/lib/analysis/testdata/sparse_momentum.pbtxt"
expect 0 "$parallax" -v inspect --format json "$example"
python3 -m json.tool "$tmp/out" >/dev/null && pass || fail "-v output on stdout is not pure JSON"
grep -q '^parallax: info: loaded' "$tmp/err" && pass || fail "-v printed no info log on stderr"
expect 0 "$parallax" inspect "$example"
[[ ! -s "$tmp/err" ]] && pass || fail "inspect without -v wrote to stderr: $(cat "$tmp/err")"
grep -q 'emb .*sparse .*SparseApplyMomentum after Unique/UnsortedSegmentSum' "$tmp/out" \
  && pass || fail "the table does not show emb's sparse update"
expect 0 "$parallax" inspect --format dot "$example"
head -n 1 "$tmp/out" | grep -q '^digraph parallax {' && pass || fail "--format dot is not a digraph"

# --device: a GPU this machine cannot use is exit 2 and one line saying why (this test's
# build has no CUDA, or this machine no GPU); a device that is not one, the same.
expect 2 "$parallax" run "$example" --device gpu --steps 1 --synthetic
head -n 1 "$tmp/err" | grep -Eqx "parallax: error: training on GPU 0: (this parallax was built without CUDA \(build it with --config=cuda: docs/gpu.md\)|no usable GPU: .*)" \
  && pass || fail "--device gpu without a GPU: $(head -n 1 "$tmp/err")"
expect 2 "$parallax" run "$example" --device tpu --steps 1 --synthetic
expect_stderr_line "parallax: error: --device tpu: expected cpu, gpu or gpu:N"
# --precision: a GPU's; fp32 on the CPU is the only one.
expect 2 "$parallax" run "$example" --precision tf32 --steps 1 --synthetic
expect_stderr_line "parallax: error: --precision tf32: a GPU's (the CPU computes in fp32); train on a GPU (--device gpu) or leave --precision out"
expect 2 "$parallax" run "$example" --precision fp16 --steps 1 --synthetic
expect_stderr_line "parallax: error: --precision fp16: expected fp32, tf32 or bf16"

# Every malformed input: exit 2 and its exact one-line error.
cd "$bad"
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  file=${line%% | *}
  message=${line#* | }
  expect 2 "$parallax" inspect "$file"
  expect_stderr_line "parallax: error: $message"
  [[ ! -s "$tmp/out" ]] && pass || fail "$file: printed output on stdout despite the error"
done < expected_errors.txt

# ---- transform ----
example="$root/lib/analysis/testdata/sparse_momentum.pbtxt"
cluster="$tmp/cluster.yaml"
printf 'hosts:\n  - name: node1\n    gpus: [0, 1]\n  - name: node2\n    cpus: 2\n' > "$cluster"
job="$tmp/job"
rm -rf "$job"
expect 0 "$parallax" transform "$example" --cluster "$cluster" -o "$job"
for f in plan.yaml report.txt hostfile launch.sh rank-0.pb rank-1.pb rank-2.pb rank-3.pb; do
  [[ -s "$job/$f" ]] && pass || fail "transform did not write $f"
done
[[ ! -e "$job/rank-4.pb" ]] && pass || fail "transform wrote a fifth rank"
[[ -x "$job/launch.sh" ]] && pass || fail "launch.sh is not executable"
cmp -s "$tmp/out" "$job/report.txt" && pass || fail "the printed report differs from report.txt"
grep -q '^  emb .* sparse .* ps ' "$tmp/out" && pass || fail "the report does not show emb on ps: $(cat "$tmp/out")"
# emb's slot lives with its rows: ps, the same 4 partitions and owners, nothing sent.
grep -q '^  emb/Momentum  *\[1000,16\]  *62.5 KiB  -  *ps  *4  0,2,1,3  *-$' "$tmp/out" && pass ||
  fail "the report does not show emb/Momentum with emb's partitions: $(grep 'emb/Momentum' "$tmp/out")"
# The reason names the cost, the runner-up and the setting that decided.
grep -q '^  emb: ps: sparse gradient; ps (3.2 KiB/step, [0-9.]* us); runner-up allgather (6.4 KiB/step, [0-9.]* us); decided by auto (cost model); ' "$tmp/out" &&
  pass || fail "emb's reason: $(grep '^  emb:' "$tmp/out")"
grep -qx 'node1 slots=2' "$job/hostfile" && grep -qx 'node2 slots=2' "$job/hostfile" \
  && pass || fail "hostfile: $(cat "$job/hostfile")"
# launch.sh is the argv `parallax launch` builds on this machine (lib/launch/mpirun.h).
grep -q '^exec mpirun -np 4 --hostfile "$job/hostfile" --map-by slot --bind-to none --tag-output -x PATH -x LD_LIBRARY_PATH .* run "$job" "$@"$' \
  "$job/launch.sh" && pass || fail "launch.sh: $(cat "$job/launch.sh")"
grep -q -- "$(realpath "$parallax") run" "$job/launch.sh" && pass || fail "launch.sh does not run this parallax"
sh -n "$job/launch.sh" && pass || fail "launch.sh is not valid sh"
# launch.sh decides at run time what depends on who runs it where: -x for the NCCL_*
# variables and the PARALLAX_* ones a rank reads that are set then (not others, not the
# test hooks), --allow-run-as-root for root (a fake mpirun prints its arguments).
grep '^exec' "$job/launch.sh" | grep -q -- '--allow-run-as-root\|-x PARALLAX_\|-x NCCL_' &&
  fail "launch.sh bakes in the transform-time environment: $(grep '^exec' "$job/launch.sh")" || pass
mkdir -p "$tmp/echobin"
printf '#!/bin/sh\necho "$@"\n' > "$tmp/echobin/mpirun"
chmod +x "$tmp/echobin/mpirun"
PATH="$tmp/echobin:$PATH" PARALLAX_HEARTBEAT_TIMEOUT_S=30 NCCL_DEBUG=INFO PARALLAX_LAUNCH_SH_TEST=1 \
  PARALLAX_TEST_FAIL_AT_STEP=0:1 "$job/launch.sh" --steps 3 > "$tmp/launch_sh.out"
root_words=""; [[ $(id -u) -eq 0 ]] && root_words=" --allow-run-as-root"
! grep -q -- "PARALLAX_LAUNCH_SH_TEST\|PARALLAX_TEST_" "$tmp/launch_sh.out" &&
grep -q -- "-x LD_LIBRARY_PATH .*-x NCCL_DEBUG -x PARALLAX_HEARTBEAT_TIMEOUT_S .*run $job --steps 3$" "$tmp/launch_sh.out" &&
  { [[ -z "$root_words" ]] || grep -q -- "$root_words " "$tmp/launch_sh.out"; } &&
  pass || fail "launch.sh at run time: $(cat "$tmp/launch_sh.out")"
ls -d "$tmp"/job.* 2>/dev/null | grep -q . && fail "temporary directories left: $(ls -d "$tmp"/job.*)" || pass

# launch: the host binding and the mpirun argv for one host and for several, run flags
# and mpirun args passed on; hosts that cannot hold the plan are bad input; a failing job
# exits 3. mpirun reads the bound hosts from a temporary hostfile (the dry run shows its
# name pattern and its lines); launch_test runs jobs on hosts bound by every source.
self=$(realpath "$parallax")
local_job="$tmp/local_job"
rm -rf "$local_job"
printf 'hosts:\n  - name: localhost\n    cpus: 2\n' > "$tmp/local.yaml"
expect 0 "$parallax" transform "$example" --cluster "$tmp/local.yaml" -o "$local_job"
expect 0 "$parallax" launch "$local_job" --dry-run --steps 5 -- --mca btl self,tcp
root_flag=""; [[ $(id -u) -eq 0 ]] && root_flag=" --allow-run-as-root"
# Forwarded: NCCL_*, the PARALLAX_* variables a rank reads and the sanitizers' options
# (set under --config=asan) (lib/launch/mpirun.h).
rank_env='^(NCCL_.*|PARALLAX_(BUFFER_CACHE_MB|COLLECTIVE_TIMEOUT_S|COLLECTIVE_WAIT|HEARTBEAT_INTERVAL_S|HEARTBEAT_TIMEOUT_S|THREAD_POLICY)|(ASAN|LSAN|UBSAN)_OPTIONS)$'
forwarded=$(env | cut -d= -f1 | grep -E "$rank_env" | LC_ALL=C sort | sed 's/^/ -x /' | tr -d '\n')
# `parallax launch` forwards PATH and LD_LIBRARY_PATH when set (mpirun warns about unset
# ones); launch.sh always names both.
base_env=""
for v in PATH LD_LIBRARY_PATH; do [[ -n "${!v+x}" ]] && base_env+=" -x $v"; done
hostfile_pattern="${TMPDIR:-/tmp}/parallax-hosts.XXXXXX"
want="mpirun -np 2 --hostfile $hostfile_pattern --map-by slot --bind-to none --tag-output$base_env$forwarded$root_flag --mca btl self,tcp $self run $local_job --steps 5"
[[ "$(tail -n 1 "$tmp/out")" == "$want" ]] && pass || fail "launch --dry-run (one host): got '$(tail -n 1 "$tmp/out")', want '$want'"
want_binding="# hosts from the plan, bound in order (plan host -> host: ranks)
#   host 0 (localhost) -> localhost: ranks 0-1 (2 of 2 slots)
# mpirun reads them from a temporary hostfile, removed when it exits:
#   localhost slots=2"
[[ "$(head -n 4 "$tmp/out")" == "$want_binding" ]] && pass || fail "launch --dry-run binding: got '$(head -n 4 "$tmp/out")'"
# `parallax -v launch`: the ranks log at the same level (-v passed on).
expect 0 "$parallax" -v launch "$local_job" --dry-run --steps 5 -- --mca btl self,tcp
[[ "$(tail -n 1 "$tmp/out")" == "$want -v" ]] && pass || fail "-v launch --dry-run: got '$(tail -n 1 "$tmp/out")', want '$want -v'"
# A relative job directory: the line names it absolutely, as launch.sh does.
pushd "$tmp" >/dev/null || exit 1
expect 0 "$parallax" launch local_job/ --dry-run --steps 5 -- --mca btl self,tcp
popd >/dev/null || exit 1
[[ "$(tail -n 1 "$tmp/out")" == "$want" ]] && pass || fail "launch --dry-run (relative): got '$(tail -n 1 "$tmp/out")', want '$want'"
expect 0 "$parallax" launch "$job" --hostfile "$job/hostfile" --dry-run
want="mpirun -np 4 --hostfile $hostfile_pattern --map-by slot --bind-to none --tag-output$base_env$forwarded$root_flag $self run $job"
[[ "$(tail -n 1 "$tmp/out")" == "$want" ]] && pass || fail "launch --dry-run (two hosts): got '$(tail -n 1 "$tmp/out")', want '$want'"
grep -qx "#   host 1 (node2) -> node2: ranks 2-3 (2 of 2 slots)" "$tmp/out" && pass ||
  fail "launch --dry-run (two hosts): binding $(cat "$tmp/out")"
printf 'node1 slots=2\n' > "$tmp/small.hosts"
expect 2 "$parallax" launch "$job" --hostfile "$tmp/small.hosts" --dry-run
expect_stderr_line "parallax: error: $tmp/small.hosts: 1 host (node1) for the plan's 2 hosts; give as many hosts, or transform the job for 1 host"
expect 2 "$parallax" launch "$job" -H node1:2,node2:1 --dry-run
expect_stderr_line "parallax: error: -H: host 'node2' has 1 slot but plan host 1 (node2) has 2 ranks"
expect 2 "$parallax" launch "$tmp/no_such_job" --dry-run
# A job whose mpirun fails: exit 3, naming the job.
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\necho "rank 1 failed" >&2\nexit 1\n' > "$tmp/fakebin/mpirun"
chmod +x "$tmp/fakebin/mpirun"
PATH="$tmp/fakebin:$PATH" expect 3 "$parallax" launch "$local_job" --synthetic --steps 1
grep -q "parallax: error: $local_job: the job failed: mpirun exited with status 1" "$tmp/err" \
  && pass || fail "a failed job's error: $(cat "$tmp/err")"
# Its missing feeds are found before mpirun starts: exit 2, one line.
PATH="$tmp/fakebin:$PATH" expect 2 "$parallax" launch "$local_job"
expect_stderr_line "parallax: error: 2 inputs of the train step have no data: placeholder 'ids' (int32 [?]), placeholder 'y' (int64 [?]); pass --feed NAME=FILE (.npy, IDX, or FILE:COLUMN of a CSV or TFRecord file) or NAME=VALUE for each, or --synthetic"

# An existing directory: exit 2, untouched; --force replaces it.
touch "$job/mine"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$job"
expect_stderr_line "parallax: error: $job: already exists; pass --force to replace it"
[[ -e "$job/mine" ]] && pass || fail "the existing directory was touched"
expect 0 "$parallax" transform "$example" --cluster "$cluster" -o "$job" --force --json
[[ ! -e "$job/mine" && -s "$job/plan.yaml" ]] && pass || fail "--force did not replace the directory"
python3 - "$tmp/out" <<'PY' && pass || fail "--json is not the plan: $(head -c 300 "$tmp/out")"
import json, sys
plan = json.load(open(sys.argv[1]))
assert plan["schema"] == 1 and plan["world_size"] == 4, plan
methods = {v["name"]: v["method"] for v in plan["variables"]}
assert methods == {"emb": "ps", "w": "allreduce", "emb/Momentum": "ps", "w/Momentum": "local"}, methods
parts = {v["name"]: v["partitions"] for v in plan["variables"]}
assert parts["emb/Momentum"] == parts["emb"] and len(parts["emb"]) == 4, parts
assert plan["totals"]["synchronised"] == 2 and plan["totals"]["methods"]["ps"] == 2, plan["totals"]
assert [r["kind"] for r in plan["ranks"]] == ["GPU", "GPU", "CPU", "CPU"], plan["ranks"]
assert plan["feeds"] == ["ids", "y"] and plan["fetches"] == ["loss:0"], plan
PY
# --force replaces only a job or an empty directory: not a folder of other work.
mkdir -p "$tmp/other_files" && touch "$tmp/other_files/thesis.tex"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/other_files" --force
expect_stderr_line "parallax: error: $tmp/other_files: exists and is not a Parallax job (it has no plan.yaml); --force replaces only a job directory or an empty one"
[[ -e "$tmp/other_files/thesis.tex" ]] && pass || fail "--force deleted a directory that is not a job"
mkdir -p "$tmp/empty_out"
expect 0 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/empty_out" --force
[[ -s "$tmp/empty_out/plan.yaml" ]] && pass || fail "--force did not fill an empty directory"
expect 0 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/job2" --strategy allreduce
grep -q '^  emb .* sparse .* allgather ' "$tmp/out" && pass || fail "--strategy allreduce did not all-gather emb"
grep -q '^  emb: allgather: .*; decided by --strategy allreduce; ' "$tmp/out" && pass ||
  fail "--strategy allreduce: emb's reason: $(grep '^  emb:' "$tmp/out")"
# --sparse as verify's: it wins over --strategy and the spec's strategy.sparse, and the
# spec's key that loses is a warning (stderr and the report).
{ cat "$cluster"; printf 'strategy:\n  sparse: ps\n'; } > "$tmp/sparse_ps.yaml"
expect 0 "$parallax" transform "$example" --cluster "$tmp/sparse_ps.yaml" -o "$tmp/job3" --strategy hybrid --sparse dense
grep -q '^  emb: densify: .*; decided by --sparse dense; ' "$tmp/out" && pass ||
  fail "--sparse dense: emb's reason: $(grep '^  emb:' "$tmp/out")"
want="$tmp/sparse_ps.yaml:7: strategy.sparse: ps is overruled by --sparse dense: the command line wins over the spec's strategy section"
grep -qxF "parallax: warning: $want" "$tmp/err" && grep -qxF "  $want" "$tmp/out" && pass ||
  fail "no warning that --sparse overrules strategy.sparse: $(cat "$tmp/err")"
# A per-variable override is more specific than the flag: it wins, with a warning.
{ cat "$cluster"; printf 'strategy:\n  variables:\n    emb: {sparse: allgather}\n'; } > "$tmp/emb_gather.yaml"
expect 0 "$parallax" transform "$example" --cluster "$tmp/emb_gather.yaml" -o "$tmp/job4" --strategy ps
grep -q '^  emb: allgather: .*; decided by strategy.variables\["emb"\] in '"$tmp"'/emb_gather.yaml; ' "$tmp/out" &&
  grep -qxF "parallax: warning: $tmp/emb_gather.yaml:8: strategy.variables[\"emb\"] (sparse: allgather) wins over --strategy ps (sparse: ps): a per-variable override is more specific than the command line" "$tmp/err" &&
  pass || fail "the override over --strategy ps: $(cat "$tmp/err") $(grep '^  emb:' "$tmp/out")"
# --dump-after writes into --dump-dir, created when missing.
expect 0 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/dumpjob" \
  --dump-after place --dump-dir "$tmp/dumps/new"
ls "$tmp/dumps/new/"*.after-place.pbtxt >/dev/null 2>&1 && pass ||
  fail "--dump-dir was not created: $(cat "$tmp/err")"
# A --dump-dir that cannot be created (a file is in the way): one line naming it.
: > "$tmp/dumps/a_file"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/dumpjob2" \
  --dump-after place --dump-dir "$tmp/dumps/a_file/sub"
grep -q "^parallax: error: .*--dump-dir $tmp/dumps/a_file/sub: cannot create it: " "$tmp/err" &&
  [[ ! -e "$tmp/dumpjob2" ]] && pass || fail "--dump-dir error: $(cat "$tmp/err")"
expect 0 "$parallax" transform --print-passes
grep -q '^   1\. add-init-op' "$tmp/out" && grep -q '^   2\. sparse-allgather' "$tmp/out" && grep -q 'place' "$tmp/out" && pass || fail "--print-passes: $(cat "$tmp/out")"

# Bad flags and inputs: exit 2, one line, and no output directory.
rm -rf "$tmp/nojob"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/nojob" --strategy fastest
expect_stderr_line "parallax: error: --strategy: unknown strategy 'fastest' (expected auto, allreduce, ps or hybrid)"
# A sync method is not a preset: the error points to --sparse.
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/nojob" --strategy allgather
expect_stderr_line "parallax: error: --strategy: unknown strategy 'allgather' (expected auto, allreduce, ps or hybrid); 'allgather' is a method for sparse gradients, not a preset: use --sparse allgather"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/nojob" --strategy densify
expect_stderr_line "parallax: error: --strategy: unknown strategy 'densify' (expected auto, allreduce, ps or hybrid); 'densify' is a method for sparse gradients, not a preset: use --sparse dense"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/nojob" --sparse gather
expect_stderr_line "parallax: error: --sparse: unknown method 'gather' (expected ps, allgather or dense)"
expect 2 "$parallax" transform "$example" --cluster "$cluster" -o "$tmp/nojob" --disable-pass bogus
grep -q "^parallax: error: --disable-pass: unknown pass 'bogus'; the passes are: add-init-op, sparse-allgather, " "$tmp/err" && pass || fail "$(cat "$tmp/err")"
expect 2 "$parallax" transform "$example" -o "$tmp/nojob"
expect_stderr_line "parallax: error: transform: --cluster is required"
expect 2 "$parallax" transform "$bad/empty.pb" --cluster "$cluster" -o "$tmp/nojob"
expect 2 "$parallax" transform "$root/lib/analysis/testdata/unrecognised_update.pbtxt" --cluster "$cluster" -o "$tmp/nojob" --strict
grep -q "^parallax: error: .*unrecognised_update.pbtxt: --strict: variable 'b' is updated from a gradient by 'update_b/Assign' (Assign): its value reaches tf.gradients only through 'update_b/concat' (ConcatV2), which combines several gradients; Parallax cannot synchronise it" "$tmp/err" \
  && pass || fail "--strict: $(cat "$tmp/err")"
[[ ! -e "$tmp/nojob" ]] && pass || fail "a failed transform left $tmp/nojob"
# --strict also refuses a graph with ops no CPU kernel runs (`parallax run` would stop at
# them), in one line listing them as inspect does; without --strict they are a warning.
{ cat "$example"; echo 'node { name: "frob" op: "ParallaxTestOpWithoutKernel" }'; } > "$tmp/nokernel.pbtxt"
expect 2 "$parallax" transform "$tmp/nokernel.pbtxt" --cluster "$cluster" -o "$tmp/nokernel_nojob" --strict
expect_stderr_line "parallax: error: $tmp/nokernel.pbtxt: --strict: no CPU kernel (1 op, 1 node): ParallaxTestOpWithoutKernel x1"
[[ $(wc -l < "$tmp/err") -eq 1 ]] && pass || fail "--strict without a kernel printed more than one line: $(cat "$tmp/err")"
[[ ! -e "$tmp/nokernel_nojob" ]] && pass || fail "a --strict transform refused for kernels left $tmp/nokernel_nojob"
ls -d "$tmp"/nokernel_nojob* 2>/dev/null | grep -q . && fail "left a temporary job directory" || pass
expect 0 "$parallax" transform "$tmp/nokernel.pbtxt" --cluster "$cluster" -o "$tmp/nokerneljob"
grep -q "^parallax: warning: $tmp/nokernel.pbtxt: no CPU kernel (1 op, 1 node): ParallaxTestOpWithoutKernel x1; " "$tmp/err" \
  && pass || fail "no warning for an op without a CPU kernel: $(cat "$tmp/err")"
expect 0 "$parallax" inspect --format json "$tmp/nokernel.pbtxt"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["without_cpu_kernel"] == {"ParallaxTestOpWithoutKernel": 1}' "$tmp/out" \
  && pass || fail "inspect's without_cpu_kernel: $(head -c 300 "$tmp/out")"

# Every malformed cluster spec: exit 2, its exact error, nothing written.
cd "$root/testdata/bad_cluster"
bad_specs=0
while IFS= read -r line; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  file=${line%% | *}
  message=${line#* | }
  [[ "$file" == *.hosts ]] && continue  # hostfiles are parallax launch's
  bad_specs=$((bad_specs + 1))
  expect 2 "$parallax" transform "$example" --cluster "$file" -o "$tmp/nojob"
  expect_stderr_line "parallax: error: $message"
  [[ ! -e "$tmp/nojob" ]] && pass || fail "$file: left $tmp/nojob behind"
done < expected_errors.txt
[[ $bad_specs -ge 10 ]] && pass || fail "only $bad_specs bad cluster specs tested"
ls -d "$tmp"/nojob* 2>/dev/null | grep -q . && fail "left behind: $(ls -d "$tmp"/nojob*)" || pass
cd "$root"

# parallax run: a tiny softmax regression (lib/runtime/testdata) on synthetic and file data.
graph="$root/lib/runtime/testdata/softmax_regression.pbtxt"
expect 0 "$parallax" run --help
expect 2 "$parallax" run "$graph" --feed x
expect_stderr_line "parallax: error: --feed 'x': expected NAME=SRC (SRC: a .npy or IDX file, FILE:COLUMN of a CSV or TFRecord file, a literal value, or synthetic)"
expect 2 "$parallax" run "$graph" --feed "x=$tmp/absent.npy" --synthetic
expect_stderr_line "parallax: error: $tmp/absent.npy: no such file"
expect 2 "$parallax" run "$graph"
expect_stderr_line "parallax: error: 2 inputs of the train step have no data: placeholder 'x' (float [8,4]), placeholder 'y' (int64 [8]); pass --feed NAME=FILE (.npy, IDX, or FILE:COLUMN of a CSV or TFRecord file) or NAME=VALUE for each, or --synthetic"
expect 2 "$parallax" run "$graph" --synthetic --steps 3 --epochs 1
expect 2 "$parallax" run "$graph" --synthetic --batch 16
expect_stderr_line "parallax: error: --batch 16 conflicts with placeholder 'x' (float [8,4]), whose batch dimension is fixed at 8"
mkdir -p "$tmp/corrupt"
printf '\x10\x00\x00\x00\x00\x00\x00\x00abcd' > "$tmp/corrupt/checkpoint-3.safetensors"
expect 2 "$parallax" run "$graph" --synthetic --checkpoint-dir "$tmp/corrupt" --resume
expect_stderr_line "parallax: error: $tmp/corrupt/checkpoint-3.safetensors: bad header length 16: the file has 4 bytes after it"
expect 2 "$parallax" run "$graph" --synthetic --resume
expect_stderr_line "parallax: error: --resume needs --checkpoint-dir"

rm -rf "$tmp/ck"
expect 0 "$parallax" run "$graph" --synthetic --steps 20 --log-every 5 --metrics "$tmp/m.jsonl" \
  --checkpoint-dir "$tmp/ck" --checkpoint-every 10 --threads 1
grep -q '^trained steps 0 -> 20 (batch 8): loss ' "$tmp/out" && pass || fail "run printed no summary: $(cat "$tmp/out")"
[[ $(grep -c '^step ' "$tmp/out") -eq 4 ]] && pass || fail "expected 4 step lines: $(cat "$tmp/out")"
[[ $(wc -l < "$tmp/m.jsonl") -eq 4 ]] && pass || fail "expected 4 metrics lines"
python3 -c 'import json,sys; [json.loads(l)["examples_per_sec"] for l in open(sys.argv[1])]' "$tmp/m.jsonl" \
  && pass || fail "metrics are not JSON lines with examples_per_sec"
[[ -f "$tmp/ck/checkpoint-10.safetensors" && -f "$tmp/ck/checkpoint-20.safetensors" ]] \
  && pass || fail "checkpoints 10 and 20 missing: $(ls "$tmp/ck")"
expect 0 "$parallax" run "$graph" --synthetic --steps 30 --checkpoint-dir "$tmp/ck" --resume --threads 1
grep -q "^resumed from $tmp/ck/checkpoint-20.safetensors (step 20)" "$tmp/out" \
  && grep -q '^trained steps 20 -> 30' "$tmp/out" && pass || fail "resume output: $(cat "$tmp/out")"
# A missing eval feed is found before training, not after it.
expect 2 "$parallax" run "$graph" --synthetic --steps 20 --eval-feed x=missing_eval.npy
expect_stderr_line "parallax: error: missing_eval.npy: no such file"
! grep -q '^trained steps' "$tmp/out" && pass || fail "trained before checking --eval-feed"
# -vv says more than -v: the time of every step's run.
expect 0 "$parallax" -vv run "$graph" --synthetic --steps 3 --threads 1
[[ $(grep -c '^parallax: debug: step [0-9]*: [0-9.]* ms' "$tmp/err") -eq 3 ]] && pass ||
  fail "-vv run: no step times: $(head -c 300 "$tmp/err")"
expect 0 "$parallax" -v run "$graph" --synthetic --steps 3 --threads 1
! grep -q '^parallax: debug:' "$tmp/err" && pass || fail "-v run printed debug lines"
# Resumed at the target: nothing to train, and it says so.
expect 0 "$parallax" run "$graph" --synthetic --steps 30 --checkpoint-dir "$tmp/ck" --resume --threads 1
grep -q '^nothing to train: the run is at step 30, the target is step 30 ' "$tmp/out" \
  && pass || fail "resume at the target: $(cat "$tmp/out")"
# --resume into a directory without a checkpoint: an error, nothing written;
# --resume=if-exists starts from the init op there.
rm -rf "$tmp/ck_empty"
mkdir -p "$tmp/ck_empty"
expect 2 "$parallax" run "$graph" --synthetic --steps 5 --checkpoint-dir "$tmp/ck_empty" --resume
expect_stderr_line "parallax: error: --resume: no checkpoint in $tmp/ck_empty to resume from; pass --resume=if-exists to start from the init op when there is none"
[[ -z "$(ls "$tmp/ck_empty")" ]] && pass || fail "--resume without a checkpoint wrote $(ls "$tmp/ck_empty")"
expect 0 "$parallax" run "$graph" --synthetic --steps 5 --checkpoint-dir "$tmp/ck_empty" \
  --resume=if-exists --threads 1
grep -q '^trained steps 0 -> 5' "$tmp/out" && [[ -f "$tmp/ck_empty/checkpoint-5.safetensors" ]] \
  && pass || fail "--resume=if-exists: $(cat "$tmp/out")"
expect 2 "$parallax" run "$graph" --synthetic --checkpoint-dir "$tmp/ck_empty" --resume=maybe
expect_stderr_line "parallax: error: --resume=maybe: expected --resume or --resume=if-exists"

# File data: .npy features and labels (written without numpy), evaluation accuracy.
python3 - "$tmp" <<'PY'
import random, struct, sys
def save(path, descr, fmt, shape, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
rng = random.Random(3)
xs = [[rng.uniform(-1, 1) for _ in range(4)] for _ in range(64)]
ys = [max(range(3), key=lambda k: [x[0] - x[2], x[1] - x[0], x[2] - x[1]][k]) for x in xs]
save(sys.argv[1] + "/x.npy", "<f4", "f", (64, 4), [v for x in xs for v in x])
save(sys.argv[1] + "/y.npy", "<i8", "q", (64,), ys)
PY
expect 0 "$parallax" run "$graph" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy" --epochs 5 \
  --eval-feed "x=$tmp/x.npy" --eval-feed "y=$tmp/y.npy" --threads 1
grep -q "^eval: 64 examples, accuracy .* (argmax of 'logits:0' vs 'y:0'), loss " "$tmp/out" \
  && pass || fail "no eval line: $(cat "$tmp/out")"

# Progress: where the run starts and what it writes first, then lines with the epoch, the
# share done, elapsed time and ETA; the evaluation in the metrics file.
rm -rf "$tmp/evck" "$tmp/ev.jsonl"
pushd "$tmp" >/dev/null || exit 1
expect 0 "$parallax" run "$graph" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy" --steps 16 --log-every 4 \
  --checkpoint-dir evck --metrics ev.jsonl --eval-feed "x=$tmp/x.npy" --eval-feed "y=$tmp/y.npy" --threads 1
popd >/dev/null || exit 1
[[ "$(head -n 2 "$tmp/out")" == "training steps 0 -> 16: batch 8
writing checkpoints to $tmp/evck (at the end, newest 3 kept); metrics to $tmp/ev.jsonl" ]] \
  && pass || fail "run's first lines: $(head -n 3 "$tmp/out")"
grep -q '^step 8/16  loss [0-9.]*  [0-9.]* examples/s  epoch 1.00  50%  elapsed [0-9.]*s  ETA [0-9.]*s$' "$tmp/out" \
  && pass || fail "progress line: $(grep '^step 8/' "$tmp/out")"
grep -q '^trained steps 0 -> 16 (batch 8): loss [0-9.]* -> [0-9.]*, [0-9.]* examples/s in [0-9.]*s$' "$tmp/out" \
  && pass || fail "run's summary: $(grep '^trained' "$tmp/out")"
grep -A1 '^trained steps 0 -> 16' "$tmp/out" | grep -q '^peak memory (resident): [0-9.]* MiB$' \
  && pass || fail "run's peak memory line: $(grep '^peak' "$tmp/out")"
run_accuracy=$(grep -o 'accuracy [0-9.]*' "$tmp/out" | awk '{print $2}')
python3 - "$tmp/ev.jsonl" "$run_accuracy" <<'PY' && pass || fail "metrics with the evaluation: $(tail -n 2 "$tmp/ev.jsonl")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps, ev = lines[:-1], lines[-1]
assert [l["step"] for l in steps] == [4, 8, 12, 16], steps
assert all(l["world_size"] == 1 and l["global_examples_per_sec"] == l["examples_per_sec"] and l["elapsed"] >= 0 for l in steps)
e = ev["eval"]
assert ev["step"] == 16 and e["examples"] == 64 and "%.4f" % e["accuracy"] == sys.argv[2], ev
assert sum(c["examples"] for c in e["classes"]) == 64 and len(e["classes"]) == 3, e
assert abs(sum(c["correct"] for c in e["classes"]) / 64 - e["accuracy"]) < 1e-12, e
PY

# parallax eval: the same numbers from the checkpoint alone; --json; bad input.
expect 0 "$parallax" eval "$graph" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
grep -q "^evaluated $tmp/evck/checkpoint-16.safetensors (the newest checkpoint in $tmp/evck) with $graph on 64 examples$" "$tmp/out" &&
  grep -q "^accuracy $run_accuracy (argmax of 'logits:0' vs 'y:0'), loss [0-9.]*$" "$tmp/out" &&
  [[ $(grep -c '^ *[0-2]  ' "$tmp/out") -eq 3 ]] && pass || fail "eval: $(cat "$tmp/out")"
expect 0 "$parallax" eval "$graph" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy" --json
python3 - "$tmp/out" "$tmp/ev.jsonl" <<'PY' && pass || fail "eval --json: $(head -c 400 "$tmp/out")"
import json, sys
got = json.load(open(sys.argv[1]))
want = [json.loads(l) for l in open(sys.argv[2])][-1]["eval"]
assert got["checkpoint_format"] == "safetensors" and got["examples"] == 64
assert got["accuracy"] == want["accuracy"] and got["classes"] == want["classes"], (got, want)
assert abs(got["loss"] - want["loss"]) < 1e-9, (got["loss"], want["loss"])
PY
expect 2 "$parallax" eval "$graph" --checkpoint "$tmp/evck"
expect_stderr_line "parallax: error: eval: --feed NAME=SRC is required (the labelled examples to evaluate on)"
expect 2 "$parallax" eval "$graph" --checkpoint "$tmp/no_ck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
expect_stderr_line "parallax: error: $tmp/no_ck: no such file, directory or checkpoint prefix ($tmp/no_ck.index does not exist)"
rm -rf "$tmp/other_ck"
expect 0 "$parallax" models export softmax -o "$tmp/other.pb" --force
expect 0 "$parallax" run "$tmp/other.pb" --synthetic --steps 1 --checkpoint-dir "$tmp/other_ck" --threads 1
expect 2 "$parallax" eval "$graph" --checkpoint "$tmp/other_ck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
[[ $(wc -l < "$tmp/err") -eq 1 ]] && grep -q "^parallax: error: --checkpoint $tmp/other_ck: .* not in it: " "$tmp/err" \
  && pass || fail "eval of another graph's checkpoint: $(cat "$tmp/err")"
expect 2 "$parallax" eval "$graph" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy"
grep -q "^parallax: error: .*'y'" "$tmp/err" && pass || fail "eval without labels: $(cat "$tmp/err")"

# A job written before graph.pb existed: eval uses the plan's source graph while its
# fingerprint matches, and names what is wrong when it is gone or changed.
rm -rf "$tmp/eval_job"
cp "$graph" "$tmp/eval_source.pbtxt"
expect 0 "$parallax" transform "$tmp/eval_source.pbtxt" --cluster "$tmp/local.yaml" -o "$tmp/eval_job"
rm "$tmp/eval_job/graph.pb"
expect 0 "$parallax" eval "$tmp/eval_job" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
grep -q "^evaluated .* with $tmp/eval_source.pbtxt on 64 examples$" "$tmp/out" &&
  grep -q "^accuracy $run_accuracy " "$tmp/out" && pass || fail "eval of a job without graph.pb: $(cat "$tmp/out")"
echo "# edited" >> "$tmp/eval_source.pbtxt"
expect 2 "$parallax" eval "$tmp/eval_job" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
expect_stderr_line "parallax: error: $tmp/eval_job: no graph.pb in the job, and its source graph $tmp/eval_source.pbtxt has changed since the job was written; pass the single-device graph instead: parallax eval GRAPH --checkpoint ..."
rm "$tmp/eval_source.pbtxt"
expect 2 "$parallax" eval "$tmp/eval_job" --checkpoint "$tmp/evck" --feed "x=$tmp/x.npy" --feed "y=$tmp/y.npy"
expect_stderr_line "parallax: error: $tmp/eval_job: no graph.pb in the job, and its source graph $tmp/eval_source.pbtxt is missing; pass the single-device graph instead: parallax eval GRAPH --checkpoint ..."

# On a terminal (script(1) gives one) progress is one line redrawn on stderr; --progress
# chooses; launch asks rank 0 for the live line when it runs on a terminal.
expect 2 "$parallax" run "$graph" --synthetic --steps 2 --progress sometimes
expect_stderr_line "parallax: error: --progress sometimes: expected auto, live or lines"
script -qec "$parallax run $graph --synthetic --steps 8 --log-every 4 --threads 1" /dev/null > "$tmp/tty.out"
grep -q $'\r\033\[Kstep 4/8  loss' "$tmp/tty.out" && ! grep -q '^step 4/8' "$tmp/tty.out" &&
  pass || fail "run on a terminal: no live line: $(cat -v "$tmp/tty.out" | head -c 400)"
script -qec "$parallax run $graph --synthetic --steps 8 --log-every 4 --threads 1 --progress lines" /dev/null > "$tmp/tty.out"
grep -q $'^step 4/8  loss' "$tmp/tty.out" && pass || fail "--progress lines on a terminal: $(cat -v "$tmp/tty.out" | head -c 400)"
script -qec "$parallax launch $local_job --dry-run --steps 5" /dev/null > "$tmp/tty.out"
grep -q -- "run $local_job --steps 5 --progress live"$'\r'"$" "$tmp/tty.out" && pass ||
  fail "launch on a terminal: $(cat -v "$tmp/tty.out")"

# The shared TensorBoard MNIST graph reads its input from a queue: feed the dequeue's outputs
# with Fashion-MNIST. It has no initialisers, so it starts from a checkpoint written here.
tb="${PARALLAX_SHARED_DIR:-}/testdata/tf/tensorboard_mnist_mlp_train.pbtxt"
fm=/usr/share/datasets/fashion-mnist
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -f "$tb" && -f "$fm/train-images-idx3-ubyte.gz" ]]; then
  q=mnist_dataset_train_2/random_shuffle_queue_DequeueMany
  expect 2 "$parallax" run "$tb" --feed "$q:0=$fm/train-images-idx3-ubyte.gz" --feed "$q:1=$fm/train-labels-idx1-ubyte.gz"
  expect_stderr_line "parallax: error: $tb: 4 variables have no initial value (logits_biases, logits_weights, hidden_biases, hidden_weights): nothing in the graph initialises them; start from a checkpoint with --init-checkpoint FILE, or --resume"
  mkdir -p "$tmp/tb"
  python3 "$tb_init_script" "$tmp/tb/checkpoint-0.safetensors"
  expect 0 "$parallax" run "$tb" --feed "$q:0=$fm/train-images-idx3-ubyte.gz" --feed "$q:1=$fm/train-labels-idx1-ubyte.gz" \
    --steps 200 --checkpoint-dir "$tmp/tb" --resume --threads 2 \
    --eval-feed "$q:0=$fm/t10k-images-idx3-ubyte.gz" --eval-feed "$q:1=$fm/t10k-labels-idx1-ubyte.gz"
  python3 - "$tmp/out" <<'PY' && pass || fail "the TensorBoard MNIST graph did not learn Fashion-MNIST: $(cat "$tmp/out")"
import re, sys
text = open(sys.argv[1]).read()
first, last = map(float, re.search(r"loss ([0-9.]+) -> ([0-9.]+)", text).groups())
accuracy = float(re.search(r"accuracy ([0-9.]+)", text).group(1))
assert last < 0.5 * first and accuracy > 0.7, (first, last, accuracy)
PY
elif [[ ! -f "$tb" ]]; then
  missing_data "the TensorBoard MNIST run" "\$PARALLAX_SHARED_DIR/testdata/tf/tensorboard_mnist_mlp_train.pbtxt is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
else
  missing_data "the TensorBoard MNIST run" "$fm/train-images-idx3-ubyte.gz is not there (scripts/setup.sh installs dataset-fashion-mnist)"
fi

# The model zoo: list, export (binary and text), errors; exported graphs load, analyse
# as training graphs and transform.
expect 0 "$parallax" models list
for model in softmax mlp lenet embedding wide_deep lstm resnet50 transformer lm1b; do
  grep -q "^$model " "$tmp/out" && pass || fail "models list does not show $model"
done
expect 0 "$parallax" models list --json
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["models"]; assert [x["name"] for x in m]==["softmax","mlp","lenet","embedding","wide_deep","lstm","resnet50","transformer","lm1b"] and all(x["params"]>0 for x in m)' "$tmp/out" \
  && pass || fail "models list --json: $(head -c 300 "$tmp/out")"
# embedding last: its inspect output is checked below.
for model in softmax mlp lenet wide_deep embedding; do
  rm -f "$tmp/$model.pb"
  expect 0 "$parallax" models export "$model" -o "$tmp/$model.pb"
  [[ -s "$tmp/$model.pb" ]] && pass || fail "models export $model wrote no file"
  expect 0 "$parallax" inspect --format json "$tmp/$model.pb"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert not r["problems"], r["problems"]' "$tmp/out" \
    && pass || fail "$model: inspect reports problems"
done
grep -q 'embeddings' "$tmp/out" && pass || fail "embedding: inspect does not list the embeddings"
rm -f "$tmp/small.pbtxt"
expect 0 "$parallax" models export embedding -o "$tmp/small.pbtxt" --text --vocab 1000 --dim 8 --seq 4 \
  --batch 0 --optimizer adam --lr 0.01 --seed 3 --global-step
grep -q 'node {' "$tmp/small.pbtxt" && pass || fail "--text did not write text format"
expect 0 "$parallax" inspect "$tmp/small.pbtxt"
grep -q 'embeddings .*sparse' "$tmp/out" && pass || fail "exported embedding: the gradient is not sparse"
grep -q 'train op *Adam' "$tmp/out" && pass || fail "exported embedding: train op is not Adam"
rm -rf "$tmp/zoojob"
expect 0 "$parallax" transform "$tmp/small.pbtxt" --cluster "$cluster" -o "$tmp/zoojob"
[[ -s "$tmp/zoojob/rank-0.pb" ]] && pass || fail "transform of an exported model wrote no rank-0.pb"
# Errors: exit 2, one line, nothing written.
expect 2 "$parallax" models export mlp -o "$tmp/small.pbtxt"
expect_stderr_line "parallax: error: $tmp/small.pbtxt: exists; pass --force to overwrite it"
expect 0 "$parallax" models export mlp -o "$tmp/small.pbtxt" --force --widths 16
expect 2 "$parallax" models export mlp -o "$tmp/bad.pb" --vocab 10
expect_stderr_line "parallax: error: option --vocab does not apply to model 'mlp'"
expect 2 "$parallax" models export resnet -o "$tmp/bad.pb"
expect_stderr_line "parallax: error: unknown model 'resnet' (known: softmax, mlp, lenet, embedding, wide_deep, lstm, resnet50, transformer, lm1b)"
expect 2 "$parallax" models export mlp -o "$tmp/bad.pb" --optimizer lbfgs
expect_stderr_line "parallax: error: unknown optimizer 'lbfgs' (sgd, momentum, adam, rmsprop, adagrad, adamw, ftrl)"
expect 2 "$parallax" models export mlp -o "$tmp/bad.pb" --widths 8,x
expect_stderr_line "parallax: error: --widths: 'x' is not an integer (want e.g. 512,512)"
expect 2 "$parallax" models export lenet -o "$tmp/bad.pb" --batch -1
expect_stderr_line "parallax: error: --batch must be at least 0, got -1"
expect 2 "$parallax" models export mlp
expect 2 "$parallax" models
[[ ! -e "$tmp/bad.pb" ]] && pass || fail "a failed export left $tmp/bad.pb"
expect 2 "$parallax" models export mlp -o "$tmp/no/such/dir/m.pb"

# Real graphs: every format works and JSON parses.
shared="${PARALLAX_SHARED_DIR:-}/testdata/tf"
if [[ -n "${PARALLAX_SHARED_DIR:-}" && -d "$shared" ]]; then
  for graph in "$shared"/*.pb "$shared"/*.pbtxt; do
    for format in table json dot; do
      expect 0 "$parallax" inspect --format "$format" "$graph"
    done
    "$parallax" inspect --format json "$graph" | python3 -m json.tool >/dev/null \
      && pass || fail "$graph: --format json is not valid JSON"
    rm -rf "$tmp/realjob"
    expect 0 "$parallax" transform "$graph" --cluster "$cluster" -o "$tmp/realjob"
    [[ -s "$tmp/realjob/rank-3.pb" ]] && pass || fail "$graph: no rank-3.pb"
    expect 0 "$parallax" inspect "$tmp/realjob/rank-3.pb"
  done
  "$parallax" inspect --format json "$shared/bigdl_lenet_rmsprop_train.pbtxt" > "$tmp/lenet.json"
  python3 - "$tmp/lenet.json" <<'PY' && pass || fail "lenet JSON does not report 8 trainable variables with 16 slots"
import json, sys
report = json.load(open(sys.argv[1]))
roles = [v["role"] for v in report["variables"]]
assert roles.count("trainable") == 8, roles
assert roles.count("slot") == 16, roles
assert all(u["type"] == "ApplyRMSProp" for v in report["variables"] for u in v["updates"])
assert any(v["name"] == "global_step" and v["role"] == "state" for v in report["variables"])
PY
else
  missing_data "the real-graph cases" "\$PARALLAX_SHARED_DIR/testdata/tf is not there (PARALLAX_SHARED_DIR='${PARALLAX_SHARED_DIR:-}'; set it to the shared folder)"
fi

# Graphs that read their own data: bad literals, columns and files are one line, exit 2.
pipe_graph="$root/lib/runtime/testdata/tfdata_softmax.pbtxt"
softmax="$root/lib/runtime/testdata/softmax_regression.pbtxt"
expect 2 "$parallax" run "$pipe_graph" --feed "epochs=[1,2" --input-dir "$tmp"
expect_stderr_line "parallax: error: --feed epochs: literal '[1,2': expected ',' or ']' (at character 5)"
expect 2 "$parallax" run "$pipe_graph" --feed "epochs=1.5" --input-dir "$tmp"
expect_stderr_line "parallax: error: --feed epochs: '1.5' is not a int64 value"
printf 'a,b\n1,2\n' >"$tmp/cols.csv"
expect 2 "$parallax" run "$softmax" --feed "x=synthetic" --feed "y=$tmp/cols.csv:label"
expect_stderr_line "parallax: error: $tmp/cols.csv: no column 'label' (the header has: a, b)"
# A corrupt record in the graph's own TFRecordDataset: the step fails naming file and record.
mkdir -p "$tmp/corrupt_input"
cp "$root/testdata/bad_records/length_crc.tfrecord" "$tmp/corrupt_input/train.tfrecord"
expect 2 "$parallax" run "$pipe_graph" --input-dir "$tmp/corrupt_input" --steps 2
grep -q "^parallax: error: step 1: input pipeline: node 'IteratorGetNext' (IteratorGetNext): TFRecordDataset 'records': $tmp/corrupt_input/train.tfrecord: record 0 at byte 0: length crc32c mismatch (corrupt file)" "$tmp/err" \
  && pass || fail "a corrupt TFRecord: $(head -n 1 "$tmp/err")"
expect 2 "$parallax" run "$pipe_graph" --input-dir "$tmp/nowhere" --steps 2
grep -q "^parallax: error: step 1: input pipeline: .*TFRecordDataset 'records': $tmp/nowhere/train.tfrecord" "$tmp/err" \
  && pass || fail "a missing TFRecord: $(head -n 1 "$tmp/err")"
expect 2 "$parallax" run "$softmax" --synthetic --init-checkpoint "$tmp/no_checkpoint"
grep -q "^parallax: error: --init-checkpoint: $tmp/no_checkpoint: " "$tmp/err" \
  && pass || fail "a missing --init-checkpoint: $(head -n 1 "$tmp/err")"
expect 2 "$parallax" run "$softmax" --synthetic --input-map nothing
expect_stderr_line "parallax: error: --input-map 'nothing': expected OLD=NEW (file name prefixes)"

"$parallax" models export softmax --batch 0 -o "$tmp/open_softmax.pb" >/dev/null || fail "export"
# Strings written into scripts are quoted: a graph file name holding a newline and a
# command stays inside launch.sh's comment (it would run on every host), and --sbatch
# refuses a working directory such a name cannot be written in.
evil="$tmp/g"$'\n'"touch pwned"$'\n'".pb"
"$parallax" models export softmax --batch 0 -o "$evil" --force >/dev/null || fail "export"
rm -rf "$tmp/evil_job" "$tmp/pwned"
expect 0 "$parallax" transform "$evil" --cluster "$cluster" -o "$tmp/evil_job"
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\nexit 0\n' >"$tmp/fakebin/mpirun"
chmod +x "$tmp/fakebin/mpirun"
(cd "$tmp" && PATH="$tmp/fakebin:$PATH" sh evil_job/launch.sh --steps 1) || fail "launch.sh did not run"
[[ ! -e "$tmp/pwned" ]] && pass || fail "a newline in the graph's name ran a command in launch.sh"
grep -qF "from $tmp/g\ntouch pwned\n.pb." "$tmp/evil_job/launch.sh" && pass ||
  fail "launch.sh's comment: $(sed -n 2p "$tmp/evil_job/launch.sh")"
mkdir -p "$tmp/dir"$'\n'"x"
(cd "$tmp/dir"$'\n'"x" && "$parallax" launch "$tmp/evil_job" --sbatch s.sh --synthetic \
   >"$tmp/out" 2>"$tmp/err")
[[ $? -eq 2 ]] && pass || fail "--sbatch in a directory with a newline: not exit 2"
expect_stderr_line "parallax: error: --sbatch: the working directory '$tmp/dir\nx' holds a control character, which a #SBATCH line cannot; write the script from another directory"

# The release binary reads no test hook: a failure injected at step 1 does not happen, and
# launch does not forward the hooks to the ranks.
PARALLAX_TEST_FAIL_AT_STEP=0:1:error expect 0 "$parallax" run "$tmp/open_softmax.pb" --synthetic --steps 3
PARALLAX_TEST_FAIL_AT_STEP=0:1 expect 0 "$parallax" launch "$local_job" \
  --dry-run --synthetic
! grep -q -- "-x PARALLAX_TEST_FAIL_AT_STEP" "$tmp/out" && pass ||
  fail "the release binary's launch forwards a test hook: $(tail -n 1 "$tmp/out")"

# Exit codes: a job started without its launcher, a malformed plan.yaml and a FIFO given
# as a graph or data are bad input (2, one line), not a failed job (3) or a hang.
rm -rf "$tmp/two_rank_job"
printf 'hosts:\n  - name: localhost\n    cpus: 2\n' >"$tmp/local2.yaml"
"$parallax" transform "$tmp/open_softmax.pb" --cluster "$tmp/local2.yaml" \
  -o "$tmp/two_rank_job" >/dev/null 2>&1 || fail "transform for 2 ranks"
expect 2 "$parallax" run "$tmp/two_rank_job" --synthetic --steps 1
expect_stderr_line "parallax: error: $tmp/two_rank_job: the plan has 2 ranks but this job has 1 processes (local); start it with \`parallax launch $tmp/two_rank_job\`"
cp -r "$tmp/two_rank_job" "$tmp/bad_plan_job"
echo "ranks: [" >"$tmp/bad_plan_job/plan.yaml"
expect 2 "$parallax" run "$tmp/bad_plan_job" --synthetic --steps 1
expect_stderr_line "parallax: error: $tmp/bad_plan_job/plan.yaml:2:1: end of sequence flow not found"
rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
expect 2 timeout 10 "$parallax" inspect "$tmp/fifo"
expect_stderr_line "parallax: error: $tmp/fifo: not a regular file (a FIFO, socket or device); give a file"
expect 2 timeout 10 "$parallax" run "$tmp/open_softmax.pb" --feed "x=$tmp/fifo" --synthetic --steps 1
expect_stderr_line "parallax: error: $tmp/fifo: not a regular file (a FIFO, socket or device); give a file"

# Flag values a run cannot use: exit 2 and one line naming the flag, before anything is
# allocated (they were accepted silently, or aborted with bad_alloc or system_error).
while IFS='|' read -r flags line; do
  # shellcheck disable=SC2086
  expect 2 "$parallax" run "$tmp/open_softmax.pb" --synthetic $flags
  expect_stderr_line "parallax: error: $line"
done <<'CASES'
--steps -5|--steps: must be at least 0, not -5
--epochs -1|--epochs: must be greater than 0, not -1
--epochs 0|--epochs: must be greater than 0, not 0
--steps 2 --batch 0|--batch: must be at least 1, not 0
--steps 2 --batch -3|--batch: must be at least 1, not -3
--steps 2 --threads 0|--threads: must be at least 1, not 0
--steps 2 --keep-checkpoints -2|--keep-checkpoints: must be at least 0, not -2
CASES
expect 2 "$parallax" run "$tmp/open_softmax.pb" --synthetic --steps 2 --threads 100000
expect_stderr_line "parallax: error: --threads 100000: at most $(( $(nproc) * 4 )) on this machine (4 per core): more kernel threads than that only slow the kernels down"
expect 2 "$parallax" run "$tmp/open_softmax.pb" --synthetic --steps 2 --batch 100000000
grep -qx "parallax: error: batch 100000000: one step's feeds alone take 292.8 GiB, more than the .* of memory available here; use a smaller --batch" "$tmp/err" &&
  pass || fail "--batch 100000000: $(cat "$tmp/err")"
expect 2 "$parallax" eval "$tmp/open_softmax.pb" --checkpoint "$tmp/none" --batch 0
expect_stderr_line "parallax: error: --batch: must be at least 1, not 0"
expect 2 "$parallax" verify "$tmp/open_softmax.pb" --ranks 0 --synthetic
expect_stderr_line "parallax: error: --ranks: must be at least 1, not 0"
expect 2 "$parallax" verify "$tmp/open_softmax.pb" --ranks 2 --steps 0 --synthetic
expect_stderr_line "parallax: error: --steps: must be at least 1, not 0"
# verify --device: both sides on one GPU (the ranks sharing it); without one, exit 2 and
# why; --accumulate is the CPU's.
expect 2 "$parallax" verify "$tmp/open_softmax.pb" --ranks 2 --synthetic --device gpu
head -n 1 "$tmp/err" | grep -Eqx "parallax: error: --device gpu: (this parallax was built without CUDA \(build it with --config=cuda: docs/gpu.md\)|no usable GPU: .*)" \
  && pass || fail "verify --device gpu without a GPU: $(head -n 1 "$tmp/err")"
expect 2 "$parallax" verify "$tmp/open_softmax.pb" --ranks 2 --synthetic --device gpu:1 --accumulate
expect_stderr_line "parallax: error: --device gpu:1: --accumulate runs on the CPU only"
expect 2 "$parallax" verify "$tmp/open_softmax.pb" --ranks 2 --synthetic --device gpu1
expect_stderr_line "parallax: error: --device gpu1: expected cpu, gpu or gpu:N"

echo "cli_test: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
