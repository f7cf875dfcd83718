#include "lib/transform/pipelines.h"

#include <algorithm>
#include <set>
#include <string>

#include "lib/passes/add_init_op.h"
#include "lib/passes/broadcast_init.h"
#include "lib/passes/densify_sparse.h"
#include "lib/passes/insert_allreduce.h"
#include "lib/passes/order_collectives.h"
#include "lib/passes/partition_sparse.h"
#include "lib/passes/place.h"
#include "lib/passes/shard_inputs.h"
#include "lib/passes/sparse_allgather.h"

namespace parallax {

const std::vector<PassEntry>& TransformPassList() {
  static const std::vector<PassEntry> kList = {
      // ---- Rank-independent: run once, on the input graph. ----
      // A graph without an init op gets one, so that the initialisers' collectives run in
      // one run, ordered like any init op's.
      {CreateAddInitOpPass, /*per_rank=*/false},
      // Sparse gradients the plan all-gathers: gather every rank's (values, indices).
      {CreateSparseAllGatherPass, /*per_rank=*/false},
      // Sparse gradients the plan densifies: scatter into a dense tensor, all-reduce.
      {CreateDensifySparsePass, /*per_rank=*/false},
      // Dense gradients: all-reduce (mean or sum per the plan) before each update.
      {CreateInsertAllReducePass, /*per_rank=*/false},
      // Initial values broadcast from rank 0, so replicas start identical. After the
      // gradient passes: it skips PS variables, which partition-sparse initialises.
      {CreateBroadcastInitPass, /*per_rank=*/false},
      // ---- Per rank. ----
      // Sparse gradients the plan serves from parameter servers: each rank keeps the
      // partitions it owns (local storage shapes differ by rank), lookups become pulls
      // and updates pushes. Its broadcast of initial values continues the shared keys.
      {CreatePartitionSparsePass, /*per_rank=*/true},
      // Each rank's feeds and input pipelines marked with its shard of the data.
      {CreateShardInputsPass, /*per_rank=*/true},
      // Every node (new ones included) on the rank's device.
      {CreatePlacePass, /*per_rank=*/true},
      // Last: one canonical collective order on every rank — keys renumbered in it and
      // each run's collectives chained by control edges — after every pass that adds
      // collectives or edges between them.
      {CreateOrderCollectivesPass, /*per_rank=*/true},
  };
  return kList;
}

namespace {

std::unique_ptr<Pipeline> MakePipeline(std::string name, std::string description, size_t begin,
                                       size_t end, PipelineOptions options) {
  std::vector<std::unique_ptr<Pass>> passes;
  const auto& list = TransformPassList();
  for (size_t i = begin; i < end; ++i) passes.push_back(list[i].create());
  return std::make_unique<Pipeline>(std::move(name), std::move(description), std::move(passes),
                                    std::move(options));
}

}  // namespace

std::unique_ptr<Pipeline> BuildTransformPipeline(PipelineOptions options) {
  return MakePipeline("transform", "single-device graph -> rank r's graph", 0,
                      TransformPassList().size(), std::move(options));
}

StatusOr<SplitPipeline> BuildSplitTransformPipeline(const PipelineOptions& options) {
  PX_RETURN_IF_ERROR(BuildTransformPipeline(options)->ValidateOptions());
  const auto& list = TransformPassList();
  size_t prefix = 0;
  while (prefix < list.size() && !list[prefix].per_rank) ++prefix;
  std::set<std::string> shared_names;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name(list[i].create()->name());
    if (i < prefix) shared_names.insert(name);
    else if (!list[i].per_rank) {
      return InternalError("transform pass list: {} is rank-independent but follows a per-rank "
                           "pass",
                           name);
    }
  }
  // Each half gets the options that name its own passes.
  PipelineOptions shared = options, per_rank = options;
  shared.disabled_passes.clear();
  per_rank.disabled_passes.clear();
  for (const std::string& name : options.disabled_passes) {
    (shared_names.count(name) ? shared : per_rank).disabled_passes.insert(name);
  }
  if (!options.dump_after.empty()) {
    (shared_names.count(options.dump_after) ? per_rank : shared).dump_after.clear();
  }
  if (options.stop_after >= 0) {
    shared.stop_after = std::min(options.stop_after, static_cast<int>(prefix));
    per_rank.stop_after = std::max(0, options.stop_after - static_cast<int>(prefix));
  }
  SplitPipeline split;
  split.shared = MakePipeline("transform-shared", "rank-independent passes, run once", 0,
                              prefix, std::move(shared));
  split.per_rank = MakePipeline("transform-per-rank", "per-rank passes", prefix, list.size(),
                                std::move(per_rank));
  return split;
}

}  // namespace parallax
