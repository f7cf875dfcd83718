// PassRunnerForTests: runs passes on one rank's graph the way the transformer does —
// one AnalysisCache and one TfCollectives (group = the plan's ranks, device = the rank's
// device) shared by every pass run on that graph, so instance keys continue from pass
// to pass. Testonly.
#ifndef PARALLAX_LIB_PASSES_TESTING_PASS_RUNNER_H_
#define PARALLAX_LIB_PASSES_TESTING_PASS_RUNNER_H_

#include "lib/graph/graph.h"
#include "lib/passes/collective_builder.h"
#include "lib/passes/pass.h"
#include "lib/plan/plan.h"

namespace parallax {

class PassRunnerForTests {
 public:
  // `graph` and `plan` must outlive the runner.
  PassRunnerForTests(Graph& graph, const Plan& plan, int rank);
  PassRunnerForTests(const PassRunnerForTests&) = delete;
  PassRunnerForTests& operator=(const PassRunnerForTests&) = delete;

  // Runs `pass` and, when it changed the graph, drops the analyses it does not preserve.
  StatusOr<bool> Run(Pass& pass);

  PassContext& context() { return context_; }
  TfCollectives& collectives() { return collectives_; }

 private:
  Graph& graph_;
  AnalysisCache analyses_;
  TfCollectives collectives_;
  PassContext context_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_PASSES_TESTING_PASS_RUNNER_H_
