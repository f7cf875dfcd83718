// Verify: the proof a user asks for before trusting a rewrite — the single-device graph
// and its N-rank transform trained side by side on this machine, every variable compared
// after K steps (`parallax verify`, docs/verify.md).
//
// What is compared. One device trains the input graph with the *global batch* N·b; the
// job (the graph transformed for a generated cluster of N CPU ranks on localhost,
// launched with lib/launch's mpirun argv) trains with b per rank. DESIGN §5's invariant
// says both take the same steps up to float rounding: the ranks read disjoint shards
// whose union at step k is exactly the one device's batch k (data/sampler.h: rank r takes
// positions r, r+N, ... of the same seeded epoch order, so shuffling is fine), and the
// gradients are averaged over the ranks. After K steps every variable of the input graph
// (trainable variables, optimizer slots, state such as global_step or Adam's beta powers)
// is read from the one device's checkpoint and from every rank's: a replicated variable
// from each rank (all must agree with the reference), a parameter-server variable (or
// slot) reassembled from the ranks' `<name>/parallax/local` rows, placed by the
// `rows:<tensor>` ranges in each file's metadata (every row exactly once).
//
// Terms:
//  - the *reference* y is the one device's value, x the job's;
//  - *max abs difference* of a variable: max_i |x_i − y_i|, over every rank's copy;
//  - *max relative difference*: max abs difference / max(max_i |y_i|, kTinyMagnitude) —
//    normalised by the variable's largest reference magnitude, not per element (an
//    element-wise ratio explodes where values cross zero). A NaN on either side is a
//    failure. The overall figures are the maxima over variables;
//  - the *noise* of a variable (N·b only): its max relative difference between the
//    reference and the same one-device run with each batch's examples reordered (reversed;
//    halves swapped: two runs) — the same training in exact arithmetic, other summation
//    orders in floats. It is the
//    reference's own float noise at this learning rate and step count (a few 1e-7 after
//    20 steps of SGD; 1e-5 and more where training amplifies rounding: high learning
//    rates, Adam on gradients that cancel);
//  - the *noise* of the run: the largest variable noise; the *bound*: max(tolerance,
//    min(noise factor × the noise, kMaxNoiseBound)) (factor 10 by default; 0 turns the
//    noise run off and the bound is the tolerance). One bound for all variables: rounding differences spread
//    through every variable, and one variable's own noise can be 10x below what another
//    summation order leaves in it. A difference within the bound cannot be told from the
//    reference's own rounding; a rewrite bug (a gradient left un-averaged, a wrong
//    shard) moves variables by far more;
//  - *PASS*: every variable present, rows complete, relative difference <= the bound.
//
// With `accumulate`, one device instead runs, per step, the forward and backward pass on
// each rank's b examples (micro-batch r = rank r's shard, or the next batch of an
// in-graph pipeline's copy sharded as rank r's) with rank r's random streams, combines
// the gradients as the job does and applies them once (accumulate.h): the same training
// up to the order of the cross-rank sum, for graphs whose batch size is fixed, that read
// their own data, or draw random numbers in the step (the batch is b on both sides, and
// the ranks' epoch ends are the one device's too).
//
// Rank-local state (RankLocalState: batch-norm moving statistics) differs between ranks
// by design: with `accumulate` it is compared on rank 0 only (the one device keeps a copy
// per rank), without it is not compared; a note lists it.
//
// Refused as bad input (InvalidArgument), before anything runs: without `accumulate`, a
// placeholder that fixes the batch dimension (one device cannot take N·b; the error
// suggests --accumulate or an export with an open batch), data whose epoch is not a
// multiple of N examples when K steps run past the epoch end (the job leaves the last
// E mod N examples of each epoch out, one device does not; not with `accumulate`), a `--batch` other than an input pipeline's fixed dequeue count. An in-graph input
// pipeline (QueueDequeueMany with a Const count, which `parallax run` replaces by feeds)
// only sets how many examples a step reads: the reference's copy gets the count N·b, the
// ranks' graphs keep b; another in-graph pipeline (tf.data) needs `accumulate`. A graph
// whose variables have no initialisers starts both sides from `init_checkpoint` (a
// `parallax run` checkpoint of the input graph's variables, sliced for the ranks'
// parameter-server storage; or a TF checkpoint both sides' trainers restore from).
//
// Parameter-server variables are reassembled by ReadJobCheckpoint (job_checkpoint.h);
// replicated ones are compared on every rank's file.
//
// Cost: one transform, K single-device steps at batch N·b (or N·K runs at b and K apply
// runs), one mpirun job of N ranks x K steps, and reading N + 1 checkpoints. The work directory (job/, single/, ranks/,
// job.log) is a temporary one removed at the end unless `keep_dir` names it.
#ifndef PARALLAX_LIB_VERIFY_VERIFY_H_
#define PARALLAX_LIB_VERIFY_VERIFY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/trainer.h"

namespace parallax {

// The floor of the relative difference's denominator: a variable that is zero in the
// reference compares by its absolute difference scaled by 1e30 (any change fails).
inline constexpr double kTinyMagnitude = 1e-30;
inline constexpr int64_t kDefaultVerifySteps = 20;
inline constexpr double kDefaultVerifyTolerance = 1e-5;
inline constexpr double kDefaultNoiseFactor = 10;
// The bound never exceeds this: where noise factor × the noise would, the reference's
// own noise (random ops in the step draw for other examples when reversed; chaotic
// training) is too large to tell a bug from rounding, and the report says so and
// suggests --accumulate.
inline constexpr double kMaxNoiseBound = 1e-3;

struct VerifyOptions {
  std::string graph;            // the single-device training graph (path)
  int ranks = 0;                // N >= 1
  int64_t steps = kDefaultVerifySteps;
  int64_t batch = 0;            // per rank; 0: an input pipeline's count, else kDefaultBatchSize
  std::vector<FeedSpec> feeds;  // as `parallax run`; file paths are passed to the ranks as given
  bool synthetic = false;
  uint64_t seed = 0;
  bool shuffle = true;
  int threads = 0;              // the one device's kernel threads (0: one per core); the ranks
                                // get the cores divided by N, as `parallax run JOB_DIR`
  double tolerance = kDefaultVerifyTolerance;
  // N·b: a variable passes within max(tolerance, noise_factor × the noise), the noise
  // measured by two more one-device runs with each batch reordered; 0: no such runs, the
  // tolerance alone. Not used with `accumulate` (its comparison is exact up to the
  // cross-rank sum's order).
  double noise_factor = kDefaultNoiseFactor;
  // Strategy: the cluster spec's `strategy` section (hosts are replaced by localhost with
  // N CPU ranks), and these flags, which win over it as transform's do.
  std::string cluster;                     // "" : the defaults (auto, average)
  std::optional<StrategyKind> strategy;    // --strategy
  std::optional<SparseMethod> sparse;      // --sparse
  std::optional<int> partitions;           // --partitions: strategy.partitions
  // One device trains N micro-batches of b per step (each rank's examples), its gradients
  // combined as the plan's reduction and applied once (accumulate.h), instead of one batch
  // of N·b: for graphs that fix their batch size.
  bool accumulate = false;
  // The GPU both sides train on (-1: the CPU): one device there, and the N ranks sharing
  // it (a cluster of localhost with that GPU and ranks_per_gpu N: their collectives go
  // through the host). Not with `accumulate`.
  int gpu = -1;
  // Start both sides from this checkpoint: a `parallax run` safetensors checkpoint of the
  // input graph's variables replaces the init op (sliced for parameter-server storage); a
  // TF checkpoint (prefix, or a directory with a `checkpoint` file) is passed to both as
  // `parallax run --init-checkpoint` (a fine-tuning graph's checkpoint_initializer reads it).
  std::string init_checkpoint;
  // In-graph input pipelines' files, as `parallax run --input-dir/--input-map`.
  std::string input_dir;
  std::vector<std::pair<std::string, std::string>> input_map;
  std::string keep_dir;         // keep the work directory here (must not exist); "" removes it
};

struct VariableComparison {
  std::string name;
  std::string method;           // the plan's sync method ("ps" for a PS variable's slot too)
  std::string shape;            // "[784,64]"
  std::vector<int64_t> dims;    // {784, 64}
  bool partitioned = false;     // reassembled from the ranks' rows
  double max_abs = 0;           // max |x - y|
  double max_rel = 0;           // max_abs / max(max |y|, kTinyMagnitude); NaN when either has NaN
  double reference_max = 0;     // max |y|
  std::optional<double> noise;  // N·b with noise runs: the reference vs itself reordered
  double bound = 0;             // what max_rel is judged against (the same for all)
  std::string problem;          // missing on a rank, dtype/shape mismatch, rows not covered
  // Rank-local state (batch-norm moving statistics, ...): each rank writes it from its own
  // examples or random numbers. With accumulate it is compared on rank 0 only (one
  // device's apply run recomputes it on micro-batch 0); without, it is not compared.
  bool rank_local = false;
  bool compared = true;
  bool pass = false;
};

struct VerifyReport {
  std::string graph;
  int ranks = 0;
  int64_t steps = 0;
  int64_t batch = 0;            // per rank
  int64_t global_batch = 0;     // N·b, the one device's (N micro-batches of b: accumulate)
  bool accumulate = false;
  std::string strategy;
  double tolerance = 0;
  double noise_factor = 0;         // 0: no noise run (accumulate, or turned off)
  std::optional<double> noise;     // the largest variable noise, when measured
  double bound = 0;                // what every max_rel is judged against
  std::vector<VariableComparison> variables;  // in the reference checkpoint's (name) order
  double max_abs = 0;
  double max_rel = 0;
  bool pass = false;
  std::optional<double> single_loss_first, single_loss_last;
  std::vector<std::string> notes;  // adjustments made (rebatched pipelines, ...)
  std::string kept_dir;            // the work directory when kept
};

// Runs both sides and compares. Errors: bad input (InvalidArgument, NotFound, ...), the
// job failing (Aborted: mpirun's exit status and the tail of the ranks' output).
StatusOr<VerifyReport> Verify(const VerifyOptions& options);

// The table and the verdict, as `parallax verify` prints them.
std::string RenderVerifyReport(const VerifyReport& report);
// The report as one JSON object (`parallax verify --json`).
std::string VerifyReportToJson(const VerifyReport& report);

// --- pieces, exposed for tests -----------------------------------------------------------

// Compares the job's `got` against the reference `want` (same dtype and shape, or a
// problem is set); accumulates into `out` (max over calls, e.g. over ranks).
void CompareInto(const Tensor& want, const Tensor& got, VariableComparison* out);

// Finds the input pipelines whose Const dequeue count fixes the batch (QueueDequeueMany /
// UpTo): returns {count, description}; none: nullopt. Errors: counts that differ, a
// count Const that feeds something else.
struct PipelineBatch {
  int64_t count = 0;
  std::vector<NodeId> count_consts;
  std::string description;  // "input pipeline 'q/DequeueMany' (count Const 'q/n' = 200)"
};
StatusOr<std::optional<PipelineBatch>> FindPipelineBatch(const Graph& graph);
// Sets every count Const of `pipeline` to `count` (the reference's global batch).
void SetPipelineBatch(Graph& graph, const PipelineBatch& pipeline, int64_t count);

}  // namespace parallax

#endif  // PARALLAX_LIB_VERIFY_VERIFY_H_
