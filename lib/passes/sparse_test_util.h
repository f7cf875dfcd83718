// Test helpers shared by the sparse-gradient pass tests (sparse_allgather_test,
// densify_sparse_test, partition_sparse_test). Testonly.
#ifndef PARALLAX_LIB_PASSES_SPARSE_TEST_UTIL_H_
#define PARALLAX_LIB_PASSES_SPARSE_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/passes/pass.h"
#include "lib/plan/plan.h"

namespace parallax::testing {

// The analysis test graph `name` (lib/analysis/testdata/<name>.pbtxt).
Graph LoadAnalysisGraph(const std::string& name);

// Runs the pass made by `make_pass` on a copy of `input` as rank `rank` of `plan`,
// inside a Pipeline that verifies the output and checks that "changed" is truthful.
// *changed receives the pass's answer.
StatusOr<Graph> RunOnRank(const std::function<std::unique_ptr<Pass>()>& make_pass,
                          const Graph& input, const Plan& plan, int rank, bool* changed);

// "op#instance_key" for every collective node, in topological order.
std::vector<std::string> CollectiveSequence(const Graph& graph);

// The analysis graphs with sparse updates that the sparse passes are tested on.
inline const char* const kSparseGraphs[] = {"sparse_momentum", "sparse_adagrad",
                                            "scatter_sub_sgd", "resource", "sparse_adam"};

// Node `node`'s input `index` as an input string ("x:1").
std::string NodeInput(const Graph& graph, std::string_view node, int index);

// For each of kSparseGraphs: runs the pass on ranks 0 and 1 of a 2-rank plan with
// `method`; both must report a change, rank 0 must equal
// lib/passes/testdata/<golden_dir>/<graph>.expected.pbtxt, and both ranks must issue the
// same, non-empty sequence of collectives (Catch2 checks).
void CheckTwoRankGoldens(const std::function<std::unique_ptr<Pass>()>& make_pass,
                         SyncMethod method, const std::string& golden_dir);

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_PASSES_SPARSE_TEST_UTIL_H_
