// Rank-local state (rank_local.h).
#include "lib/analysis/rank_local.h"

#include <set>
#include <utility>

namespace parallax {

bool IsRankSpecificSource(std::string_view op) {
  static const std::set<std::string_view> kSources = {
      "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "IteratorGetNext",
      "IteratorGetNextSync", "IteratorGetNextAsOptional", "QueueDequeueV2", "QueueDequeue",
      "QueueDequeueManyV2", "QueueDequeueMany", "QueueDequeueUpToV2", "QueueDequeueUpTo",
      "ReaderReadV2", "ReaderRead", "ReaderReadUpToV2", "ReaderReadUpTo", "Multinomial",
      "ParameterizedTruncatedNormal", "TruncatedNormal", "RandomShuffle", "RandomGamma",
      "RandomPoisson", "RandomPoissonV2", "RandomStandardNormal", "RandomUniform",
      "RandomUniformInt", "LogUniformCandidateSampler", "UniformCandidateSampler",
      "LearnedUnigramCandidateSampler", "FixedUnigramCandidateSampler",
      "AllCandidateSampler", "ThreadUnsafeUnigramCandidateSampler"};
  return kSources.contains(op);
}

std::vector<RankLocalVariable> RankLocalState(const Graph& graph,
                                              const TrainingAnalysis& analysis) {
  // The tensors the job synchronises: what is computed from them is the same on every rank.
  std::set<NodeId> synchronised;
  for (const GradientUpdate& update : analysis.updates) {
    synchronised.insert(update.grad_input.node);
    synchronised.insert(update.raw_values.node);
    synchronised.insert(update.raw_indices.node);
    for (const BoundaryGradient& b : update.boundary) {
      synchronised.insert(b.values.node);
      synchronised.insert(b.indices.node);
    }
  }
  std::vector<RankLocalVariable> out;
  for (const Variable& variable : analysis.variables) {
    if (variable.role != VariableRole::kState) continue;
    std::vector<NodeId> stack;
    for (NodeId write : variable.writes) {
      const Node& node = graph.node(write);
      // The written value: every data input but the variable itself (input 0).
      for (int i = 1; i < node.num_data_inputs(); ++i) stack.push_back(node.input(i).node);
    }
    std::set<NodeId> seen;
    bool rank_specific = false;
    while (!stack.empty() && !rank_specific) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (id == kNoNode || synchronised.contains(id) || !seen.insert(id).second) continue;
      const Node& node = graph.node(id);
      rank_specific = IsRankSpecificSource(node.op());
      for (int i = 0; i < node.num_data_inputs(); ++i) stack.push_back(node.input(i).node);
    }
    if (!rank_specific) continue;
    RankLocalVariable local{variable.name, {}};
    for (NodeId write : variable.writes) local.writes.emplace_back(graph.node(write).name());
    out.push_back(std::move(local));
  }
  return out;
}

}  // namespace parallax
