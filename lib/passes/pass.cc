#include "lib/passes/pass.h"

#include <spdlog/spdlog.h>

namespace parallax {

StatusOr<const TrainingAnalysis*> AnalysisCache::Training() {
  if (!training_) {
    PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(*graph_));
    training_ = std::move(analysis);
  }
  return &*training_;
}

void AnalysisCache::Invalidate(AnalysisKind preserved) {
  if (!Includes(preserved, AnalysisKind::kTraining)) training_.reset();
}

StatusOr<bool> Pass::Run(Graph& graph, PassContext& context) {
  StatusOr<bool> changed = RunImpl(graph, context);
  if (!changed.ok()) return changed.status().WithPrefix(name());
  spdlog::debug("pass {} on {}: {}", name(), graph.source(), *changed ? "changed" : "no change");
  return changed;
}

}  // namespace parallax
