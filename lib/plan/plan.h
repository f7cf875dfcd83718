// The plan: every decision the transformer made, in one value.
//
// `parallax transform` builds a Plan from the training analysis, the cluster and the
// strategy flags; the passes read it (they decide nothing themselves), the report and
// plan.yaml print it, and the runtime reads plan.yaml back to know each rank's device,
// feeds and fetches. It depends on neither the passes nor the runtime.
//
// Terms:
//  - a variable's *sync method* says how its gradient is synchronised across ranks:
//    all-reduce (dense), parameter servers (sparse: rows partitioned over owner ranks,
//    pulled for lookups and pushed for updates), all-gather (sparse: every rank gathers
//    every rank's (indices, values)), densify (sparse turned dense, then all-reduced),
//    local (no gradient: state and slots that every rank updates identically), or none
//    (an update Parallax cannot synchronise: listed as a warning, an error under
//    --strict). The slots of a PS variable are listed as ps with its partitions: they
//    live with its rows and move with it (the passes rewrite them through it).
//  - a *gradient bucket* is a group of all-reduced dense gradients of one dtype that
//    travel as one all-reduce: flattened, concatenated in the bucket's order, reduced,
//    split and reshaped back. Buckets are filled in backprop order (the reverse of the
//    analysis's variable order: the last layer's gradient is ready first) up to the
//    plan's bucket_bytes, like PyTorch DDP's 25 MiB buckets; a variable larger than that
//    has a bucket of its own. Elements are reduced in the same order whether bucketed or
//    not (the communicator's rank order), so buckets never change the bits.
//  - a *partition* is a contiguous range of rows [row_begin, row_end) of a PS variable
//    and its slots, stored on its owner rank. Partitions go to the least loaded rank
//    (lib/transform/strategy.h), so P may be smaller than, equal to or larger than the
//    number of ranks.
#ifndef PARALLAX_LIB_PLAN_PLAN_H_
#define PARALLAX_LIB_PLAN_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cluster/rank_layout.h"

namespace parallax {

inline constexpr std::string_view kGeneratedInitOp = "parallax/init";

enum class SyncMethod {
  kAllReduce,
  kParameterServer,
  kAllGather,
  kDensify,
  kLocal,
  kNone,
};

std::string_view SyncMethodName(SyncMethod method);  // "allreduce", "ps", "allgather", ...

struct Partition {
  int64_t row_begin = 0;
  int64_t row_end = 0;  // exclusive
  int owner = 0;        // rank
  int64_t rows() const { return row_end - row_begin; }
  friend bool operator==(const Partition&, const Partition&) = default;
};

struct VariablePlan {
  std::string name;              // the variable's node name
  SyncMethod method = SyncMethod::kLocal;
  bool sparse = false;           // its gradient reaches the update as (values, indices)
  std::vector<int64_t> shape;    // -1 for unknown dimensions
  std::string dtype;             // "float"
  int64_t bytes = -1;            // -1 when unknown
  std::vector<std::string> slots;       // optimizer slots, which follow its partitioning
  std::vector<Partition> partitions;    // kParameterServer only (its slots: a copy), in row order
  // Estimated bytes each rank sends per step for this variable (cost model).
  int64_t bytes_sent_per_rank_per_step = 0;
  std::string reason;            // why this method: "dense gradient", "--strategy ps", ...

  // The partition holding `row`, or -1.
  int PartitionOfRow(int64_t row) const;
};

struct GradientBucket {
  std::string dtype;                   // "float"
  std::vector<std::string> variables;  // in the order their gradients are concatenated
  int64_t bytes = 0;                   // of their gradients together
  friend bool operator==(const GradientBucket&, const GradientBucket&) = default;
};

// One timed probe of a measured search: the job planned with one value of the searched
// setting (a partition count, a bucket limit in bytes), trained for a few steps.
struct SearchProbe {
  int64_t value = 0;
  double step_seconds = 0;  // median over the probe's timed steps
  friend bool operator==(const SearchProbe&, const SearchProbe&) = default;
};

// What a measured search measured and chose (docs/transform.md, Measured searches):
// `transform --search` searches the partition count, `--bucket-mb auto` the bucket limit.
struct MeasuredSearch {
  std::vector<int64_t> candidates;  // the values it could probe, ascending
  std::vector<SearchProbe> probes;  // in the order they ran
  int64_t chosen = 0;               // the fastest probe's value
  double budget_seconds = 0;
  double used_seconds = 0;
  int steps = 0;                    // steps per probe (the first ones untimed)
  std::string stopped;              // why it stopped probing
  friend bool operator==(const MeasuredSearch&, const MeasuredSearch&) = default;
};

// How the job's all-reduces move their data: "flat" (one collective over all ranks) or
// "hierarchical" (within each host, among the hosts, within each host again: what leaves
// a host is 1/L of flat's, and sums are added host by host, so the bits differ from
// flat's). The cost model chooses (lib/transform/cost_model.h) unless --allreduce does.
struct AllReducePlan {
  std::string algorithm = "flat";
  int64_t off_host_bytes_per_step = 0;  // what leaves each host per step, by the model
  std::string reason;                   // why: the two algorithms' costs, what decided
};

// What one rank holds by the transform's memory estimate (lib/transform/memory_estimate.h):
// variables and slots (its partitions of parameter-server ones), and a step's gradient
// buffers as the plan synchronises them. Activations are not counted.
struct RankMemory {
  int64_t state_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t total() const { return state_bytes + gradient_bytes; }
  friend bool operator==(const RankMemory&, const RankMemory&) = default;
};

// The bucket limit when none is given: 25 MiB, PyTorch DDP's bucket_cap_mb.
inline constexpr int64_t kDefaultBucketBytes = int64_t{25} << 20;

struct Plan {
  static constexpr int kVersion = 1;

  std::string source_graph;        // path as given
  std::string source_fingerprint;  // 16 hex digits of the input file's FNV-1a hash
  std::string strategy;            // auto | allreduce | ps | hybrid
  bool average = true;             // gradients are the mean over ranks, not the sum
  std::vector<RankPlacement> ranks;
  std::vector<std::string> rank_devices;  // "/job:worker/replica:0/task:R/device:GPU:0"
  std::vector<VariablePlan> variables;    // in the analysis's variable order
  std::vector<std::string> feeds;         // placeholder names each rank feeds its shard to
  std::vector<std::string> fetches;       // loss tensors ("loss:0")
  std::string train_op;                   // "" when none was found
  // The init op each rank runs; kGeneratedInitOp when the graph has none and the job has
  // several ranks (the transform
  // adds it: a NoOp on every variable's initialiser, so the initialisers' collectives run
  // in one run, in one order on every rank).
  std::string init_op;
  std::vector<std::string> warnings;      // updates left unsynchronised, unsharded inputs
  // Gradient buckets (see the file comment): the limit they were filled to (0: none, every
  // gradient all-reduced alone) and the buckets of two or more gradients; a gradient in no
  // bucket is all-reduced alone.
  int64_t bucket_bytes = 0;
  std::vector<GradientBucket> buckets;
  AllReducePlan allreduce;
  std::vector<RankMemory> memory;  // per rank, in rank order; empty in plans from before it
  // Set when the partition count was measured (transform --search): the
  // parameter-server variables it searched have `chosen` partitions.
  std::optional<MeasuredSearch> partition_search;
  // Set when the bucket limit was measured (--bucket-mb auto): bucket_bytes is `chosen`.
  std::optional<MeasuredSearch> bucket_search;

  int world_size() const { return static_cast<int>(ranks.size()); }
  const VariablePlan* FindVariable(std::string_view name) const;
  // The variable that lists `slot` among its optimizer slots, or nullptr.
  const VariablePlan* FindSlotOwner(std::string_view slot) const;
  // Whether every rank holds the same value of the variable or slot `name` after every
  // step: a variable synchronised by all-reduce, all-gather or densify (every rank
  // applies the same synchronised gradient to the same initial value) or one of its
  // optimizer slots. False for parameter-server variables and their slots (each rank
  // holds other rows), local variables (state such as batch-norm statistics follows each
  // rank's examples), unsynchronised ones and names the plan does not have. Job
  // checkpoints write these once, in rank 0's file (lib/runtime/checkpoint/job_checkpoint.h).
  bool IdenticalOnEveryRank(std::string_view name) const;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_PLAN_PLAN_H_
