// Pass: one rewrite of a Graph, and the context every pass runs in.
//
// A pass has a kebab-case name (used in logs, errors and flags such as
// --disable-pass=insert-allreduce) and one entry point, Run, which returns whether the
// graph changed. Run is not virtual: it wraps RunImpl so that every pass gets the same
// treatment (logging, analysis invalidation). "Changed" must be truthful; tests
// fingerprint the graph around every pass (PipelineOptions::check_changed).
//
// Analyses are computed once and cached in the AnalysisCache; a pass lists what it
// preserves (Preserves) and the pipeline drops everything else after the pass changed
// the graph, so the next pass that asks recomputes it from the edited graph.
#ifndef PARALLAX_LIB_PASSES_PASS_H_
#define PARALLAX_LIB_PASSES_PASS_H_

#include <memory>
#include <optional>
#include <string_view>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"

namespace parallax {

class CollectiveBuilder;
struct Plan;

// The analyses a pass may preserve, as bits.
enum class AnalysisKind : uint32_t {
  kNone = 0,
  kTraining = 1u << 0,  // TrainingAnalysis: variables, updates, gradients
};
constexpr AnalysisKind operator|(AnalysisKind a, AnalysisKind b) {
  return static_cast<AnalysisKind>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr bool Includes(AnalysisKind set, AnalysisKind kind) {
  return (static_cast<uint32_t>(set) & static_cast<uint32_t>(kind)) != 0;
}

// Analyses of one graph, computed on first use and kept until invalidated.
class AnalysisCache {
 public:
  explicit AnalysisCache(const Graph* graph) : graph_(graph) {}

  StatusOr<const TrainingAnalysis*> Training();

  // Starts the cache with an analysis already computed for an identical graph (a copy
  // made before any edit: node ids are the same), sparing the recomputation.
  void SeedTraining(TrainingAnalysis analysis) { training_ = std::move(analysis); }

  // Drops every analysis not in `preserved`.
  void Invalidate(AnalysisKind preserved);

 private:
  const Graph* graph_;
  std::optional<TrainingAnalysis> training_;
};

// What a pass may read besides the graph. Passes never re-parse inputs: the plan holds
// every decision (strategy per variable, partitions, owners), `collectives` makes the
// communication nodes, and `rank` says which rank's graph this is.
struct PassContext {
  const Plan* plan = nullptr;
  int rank = 0;
  AnalysisCache* analyses = nullptr;
  CollectiveBuilder* collectives = nullptr;
};

class Pass {
 public:
  virtual ~Pass() = default;

  // kebab-case id: "insert-allreduce".
  virtual std::string_view name() const = 0;
  // One line for --print-passes.
  virtual std::string_view description() const = 0;
  // The analyses still valid after this pass changed the graph.
  virtual AnalysisKind Preserves() const { return AnalysisKind::kNone; }

  // Runs the pass; true when it changed the graph. Errors are prefixed with the pass.
  StatusOr<bool> Run(Graph& graph, PassContext& context);

 protected:
  virtual StatusOr<bool> RunImpl(Graph& graph, PassContext& context) = 0;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_PASS_H_
