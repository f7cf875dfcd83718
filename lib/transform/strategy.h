// The plan builder: decides, per variable, how its gradient is synchronised across
// ranks (the *sync method*), how PS variables are partitioned and who owns each
// partition, and fills the rest of the Plan (ranks, feeds, fetches, train/init op,
// warnings). The passes then carry the decisions out; they decide nothing themselves.
//
// Rules (docs/strategy.md is the reference, with the numbers):
//  - a variable's method is asked for by the strongest *setting* that has one
//    (StrategySpec::Resolve): its per-variable override, then the command line (--sparse,
//    the preset of --strategy), then strategy.dense/sparse, then the preset of
//    strategy.default; when the command line and the spec disagree, a warning says which
//    wins. What no setting fixes is auto's;
//  - trainable, dense gradient: all-reduce, unless asked for ps (the ps preset, or
//    `dense: ps`): then parameter servers when the variable is partitionable (every row
//    pushed and pulled each step), else all-reduce with the reason recorded (and a
//    warning when a per-variable override asked). Auto all-reduces: all-reduce sends
//    fewer bytes than ps and, under the cost model, never takes longer;
//  - trainable, sparse gradient, left to auto: the cost model (cost_model.h) prices every
//    method that applies — ps when the variable is partitionable, allgather, densify —
//    and the cheapest wins: by time, then bytes, then kSparseTieOrder. One rank: allgather
//    (nothing to exchange); a table of unknown size: allgather;
//  - a gradient synchronised at the backprop boundary: all-reduce (dense) or allgather
//    (sparse), the only methods that apply there;
//  - each reason names the chosen method and its cost, the runner-up and its cost, and
//    the setting that decided ("auto (cost model)", "--strategy ps", "strategy.sparse: ps
//    in c.yaml", "strategy.variables["emb*"] in c.yaml");
//  - slots of a PS variable: ps, with its partitions (they live with its rows; the passes
//    move them with their variable); other slots, state and untouched variables: local
//    (every rank updates them identically);
//  - unrecognised updates and mixed dense/sparse gradients: none, plus a warning naming
//    the variable and its update op; TransformOptions::strict turns warnings into an
//    InvalidArgument error;
//  - partitions (auto): P = clamp(ceil(bytes / kTargetPartitionBytes), min(N, rows),
//    min(kMaxPartitionsPerRank·N, rows)); rows split evenly (the first rows % P
//    partitions get one more); each partition's owner is the rank that holds the fewest
//    partitioned bytes so far (variables in analysis order), ties broken in host-interleaved
//    order (host 0's first rank, host 1's first rank, ..., host 0's second rank, ...): one
//    variable alone is round-robin over that order, and many small ones (a dense model
//    under the ps preset) spread over the ranks instead of all starting at rank 0.
#ifndef PARALLAX_LIB_TRANSFORM_STRATEGY_H_
#define PARALLAX_LIB_TRANSFORM_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/transform/cost_model.h"

namespace parallax {

// Sparse methods that cost the same time and bytes are taken in this order: ps first, as
// it also splits the table's memory over the ranks (two ranks of one host: ps and
// allgather send the same bytes), then allgather, which leaves the update as it is.
inline constexpr SyncMethod kSparseTieOrder[] = {SyncMethod::kParameterServer,
                                                 SyncMethod::kAllGather, SyncMethod::kDensify};
// A dimension of an ids tensor that the graph leaves unknown (batch, sequence) is
// assumed to be this long; an ids tensor whose shape cannot be found at all counts as
// this many ids (one batch of single ids).
inline constexpr int64_t kAssumedUnknownDim = 32;
// Auto partitions aim at about this many bytes each.
inline constexpr int64_t kTargetPartitionBytes = int64_t{64} << 20;
// ... but at most this many partitions per rank.
inline constexpr int kMaxPartitionsPerRank = 4;
// Whether the PS pass (partition-sparse) partitions variables with dense gradients. It
// does (row-wise Apply updates: pushes of the whole gradient, pulls of the whole
// variable), so a dense variable asked to use `ps` goes to parameter servers when
// CheckPartitionable accepts it. When false, such a variable is all-reduced instead,
// with the reason in the plan.
inline constexpr bool kPsSupportsDenseVariables = true;

// Whether a variable can be served by parameter servers; OK or the reason it cannot.
using PartitionableCheck =
    std::function<Status(const Graph&, const TrainingAnalysis&, const Variable&)>;

// The gradient buckets of a plan's variables (plan.h): the all-reduced variables whose
// gradient can travel inside a bucket, in backprop order (the reverse of the analysis's
// variable order), grouped by dtype, each bucket filled up to `limit` bytes; only buckets
// of two or more gradients are returned. A gradient can travel in a bucket when its
// variable is all-reduced, dense, float or double, of a fully known shape, with one
// dense gradient update (an Apply op, or one dense tensor at the backprop boundary). No
// buckets when `limit` <= 0.
std::vector<GradientBucket> BucketGradients(const TrainingAnalysis& analysis,
                                            const std::vector<VariablePlan>& variables,
                                            int64_t limit);

struct TransformOptions {
  std::optional<StrategyKind> strategy;  // --strategy; unset: the spec's strategy.default
  std::optional<SparseMethod> sparse;    // --sparse; unset: as the settings decide
  std::optional<bool> average;           // unset: the spec's strategy.average
  bool strict = false;                   // warnings become an InvalidArgument error
  // Gradient buckets are filled up to this many bytes (--bucket-mb); 0: no buckets.
  int64_t bucket_bytes = kDefaultBucketBytes;
  // The all-reduce algorithm (--allreduce): "flat" or "hierarchical"; "" lets the cost
  // model choose (cost_model.h).
  std::string allreduce_algorithm;
  // 16 hex digits of the input file's FNV-1a hash (Fnv1a64Hex); "" when unknown.
  std::string source_fingerprint;
  // Eligibility for PS, after BasicPartitionable. Unset: the PS pass's own check,
  // CheckPartitionable (lib/passes/partition_sparse.h).
  PartitionableCheck partitionable;
};

StatusOr<Plan> BuildPlan(const Graph& graph, const TrainingAnalysis& analysis,
                         const ClusterSpec& cluster, const RankLayout& layout,
                         const TransformOptions& options);

// The checks BuildPlan makes itself: a ref or resource variable (not frozen), not a
// scalar, with a known number of rows (dimension 0).
Status BasicPartitionable(const Graph& graph, const TrainingAnalysis& analysis,
                          const Variable& variable);

// The number of ids one rank looks up in `variable` per step, from the static shape of
// the ids that reach its sparse updates (traced back through Identity, Reshape, Cast,
// ...), a candidate sampler's num_sampled, and the sum over a concatenation of such ids
// (sampled softmax's labels and sampled classes); unknown dimensions count as
// kAssumedUnknownDim. `how` says where it came from.
int64_t EstimateIdsPerStep(const Graph& graph, const TrainingAnalysis& analysis,
                           const Variable& variable, std::string* how);

// The traffic of a sparse variable as the cost model prices it: its rows and row bytes,
// the rows one rank touches per step (EstimateIdsPerStep, at most the rows) and the index
// bytes of its updates (8 for int64 Tindices, else 4); nullopt when its size is unknown.
std::optional<SparseTraffic> EstimateSparseTraffic(const Graph& graph,
                                                   const TrainingAnalysis& analysis,
                                                   const Variable& variable, std::string* how);

// The auto partition count (see the file comment).
int AutoPartitionCount(int64_t bytes, int64_t rows, const RankLayout& layout);

// Rows [0, rows) split into `count` even ranges. Owners: with `owner_bytes` (bytes each
// rank already holds of the plan's partitioned variables, indexed by rank; updated),
// each partition goes to the rank holding the fewest, ties in owner order; without it,
// owner order round-robin. Rows are `row_bytes` each.
std::vector<Partition> PartitionRows(int64_t rows, int count, const RankLayout& layout,
                                     std::vector<double>* owner_bytes = nullptr,
                                     double row_bytes = 0);

// The ranks in owner order: host-interleaved (see the file comment).
std::vector<int> OwnerOrder(const RankLayout& layout);


}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_STRATEGY_H_
