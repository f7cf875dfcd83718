#include "lib/passes/shard_inputs.h"

#include <vector>

#include "lib/graph/names.h"
#include "lib/passes/collective_builder.h"
#include "lib/plan/plan.h"

namespace parallax {
namespace {

// Sets the int attr `key` to `value` unless it already has that value.
bool SetIntAttr(Graph& graph, NodeId id, std::string_view key, int64_t value) {
  if (auto current = graph.node(id).FindAttr(key);
      current && current->value_case() == tensorflow::AttrValue::kI && current->i() == value) {
    return false;
  }
  graph.SetAttr(id, key, IntAttr(value));
  return true;
}

}  // namespace

StatusOr<bool> ShardInputsPass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  const int world_size = plan->world_size();
  if (world_size <= 1) return false;
  if (context.rank < 0 || context.rank >= world_size) {
    return InternalError("rank {} is not a rank of the plan ({} ranks)", context.rank, world_size);
  }
  if (context.analyses == nullptr) return InternalError("the pass context lacks the analyses");
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis* analysis, context.analyses->Training());

  // Resolve every node first, so that a bad feed leaves the graph untouched.
  std::vector<NodeId> inputs;
  for (const std::string& feed : plan->feeds) {
    const std::optional<ParsedInput> parsed = ParseInput(feed);  // accepts "x" and "x:0"
    const NodeId id = parsed && !parsed->is_control() ? graph.FindNode(parsed->node) : kNoNode;
    if (id == kNoNode) return InternalError("feed '{}': the graph has no such node", feed);
    inputs.push_back(id);
  }
  inputs.insert(inputs.end(), analysis->input_pipeline.begin(), analysis->input_pipeline.end());

  bool changed = false;
  for (NodeId id : inputs) {
    changed |= SetIntAttr(graph, id, kShardIndexAttr, context.rank);
    changed |= SetIntAttr(graph, id, kNumShardsAttr, world_size);
  }
  return changed;
}

std::unique_ptr<Pass> CreateShardInputsPass() { return std::make_unique<ShardInputsPass>(); }

}  // namespace parallax
