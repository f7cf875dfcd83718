// shard-inputs: tells the runtime which shard of the data each rank reads.
//
// Data parallelism splits the data, not the model: every rank runs the same graph on
// its own examples, with the single-device batch per rank (weak scaling, DESIGN §5).
// The pass marks the graph's inputs with two attrs,
//   _parallax_shard_index = rank,  _parallax_num_shards = world size,
// on every placeholder the plan names in `feeds`, and on the input-pipeline nodes the
// training analysis lists (the queues' dequeues, readers and iterators whose outputs
// the model reads). The runtime's feeder honours them: rank r of N takes examples
// r, r+N, r+2N, ... of each epoch's shuffled order (the shuffle is seeded the same on
// every rank, so the shards are disjoint and together cover the epoch). Leading '_'
// marks the attrs as internal: TF tools ignore them.
//
// Terms: a *feed* is a placeholder the runtime fills from a data source (`--feed
// NAME=SRC`); an *input pipeline* is TF's in-graph reading (queues, readers,
// iterators). The runtime shards an in-graph pipeline itself, at its sources, from the
// job's rank and size (lib/runtime/pipeline/dataset.h, docs/pipelines.md); the attrs on
// its nodes say which shard the rank graph is for.
//
// Changed: an attr was added or corrected. With one rank nothing changes. Cost: two
// attrs per input node, O(feeds + input-pipeline nodes). The graph itself is not
// rewritten.
#ifndef PARALLAX_LIB_PASSES_SHARD_INPUTS_H_
#define PARALLAX_LIB_PASSES_SHARD_INPUTS_H_

#include <memory>
#include <string_view>

#include "lib/passes/pass.h"

namespace parallax {

inline constexpr std::string_view kShardIndexAttr = "_parallax_shard_index";
inline constexpr std::string_view kNumShardsAttr = "_parallax_num_shards";

class ShardInputsPass : public Pass {
 public:
  std::string_view name() const override { return "shard-inputs"; }
  std::string_view description() const override {
    return "feeds and input pipelines marked with the rank's shard of the data";
  }
  // Adds internal attrs only, which the training analysis does not read.
  AnalysisKind Preserves() const override { return AnalysisKind::kTraining; }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext& context) override;
};

std::unique_ptr<Pass> CreateShardInputsPass();

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_SHARD_INPUTS_H_
