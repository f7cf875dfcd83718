// Helpers shared by the pass tests (lib/passes/*_test.cc): loading graphs, running one
// pass on one rank, and the checks several pass tests make alike.
//
// Terms: a pass is run "on rank r of a plan" through PassRunnerForTests, which gives it
// the analyses and the collective factory the transformer would. RunPassOrFail runs the
// pass alone and REQUIREs success (for tests of what the pass did); RunOnRank runs it on
// a copy inside a Pipeline that verifies the output and checks that "changed" is truthful
// (for tests that also want the status). A pass golden is
// lib/passes/testdata/<dir>/<name>.expected.pbtxt, compared ignoring node order.
//
// Catch2-dependent and testonly: the helpers fail the current test case (REQUIRE) or add
// CHECKs to it, as each comment says.
#ifndef PARALLAX_LIB_PASSES_TESTING_PASS_TEST_UTIL_H_
#define PARALLAX_LIB_PASSES_TESTING_PASS_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/passes/pass.h"
#include "lib/plan/plan.h"
#include "lib/testing/test_graphs.h"

namespace parallax::testing {

// Makes the pass under test (CreatePlacePass, CreateSparseAllGatherPass, ...).
using PassFactory = std::function<std::unique_ptr<Pass>()>;

// The node named `name`; REQUIREs that it exists.
const Node& NodeNamed(const Graph& graph, std::string_view name);

// Node `node`'s input `index` as an input string ("x:1"); REQUIREs that both exist.
std::string NodeInput(const Graph& graph, std::string_view node, int index);

// Runs the pass made by `make_pass` on `graph` in place as rank `rank` of `plan`;
// REQUIREs that it succeeds and returns whether it changed the graph.
bool RunPassOrFail(const PassFactory& make_pass, Graph& graph, const Plan& plan, int rank);

// Runs the pass on `graph` in place as rank `rank` of `plan` (RunPassOrFail) and CHECKs
// that it reports no change and leaves the serialized graph as it was.
void CheckRunChangesNothing(const PassFactory& make_pass, Graph& graph, const Plan& plan,
                            int rank);

// Runs the pass made by `make_pass` on a copy of `input` as rank `rank` of `plan`,
// inside a Pipeline that verifies the output and checks that "changed" is truthful.
// *changed receives the pass's answer.
StatusOr<Graph> RunOnRank(const PassFactory& make_pass, const Graph& input, const Plan& plan,
                          int rank, bool* changed);

// "" when `graph` equals lib/passes/testdata/<golden>.expected.pbtxt up to node order
// (`golden` is "<dir>/<name>"); otherwise the differences.
std::string DiffAgainstPassGolden(const Graph& graph, const std::string& golden);

// "op#instance_key" for every collective node, in topological order.
std::vector<std::string> CollectiveSequence(const Graph& graph);

// The analysis graphs with sparse updates that the sparse passes are tested on.
inline const char* const kSparseGraphs[] = {"sparse_momentum", "sparse_adagrad",
                                            "scatter_sub_sgd", "resource", "sparse_adam"};

// For each of kSparseGraphs: runs the pass on ranks 0 and 1 of a 2-rank plan with
// `method`; both must report a change, rank 0 must equal the pass golden
// <golden_dir>/<graph>, and both ranks must issue the same, non-empty sequence of
// collectives (Catch2 checks).
void CheckTwoRankGoldens(const PassFactory& make_pass, SyncMethod method,
                         const std::string& golden_dir);

// Runs the pass on rank 0 of `plan` (RunOnRank); REQUIREs success and CHECKs that it
// reports no change and leaves the graph as `input` was.
void CheckNoChange(const PassFactory& make_pass, const Graph& input, const Plan& plan);

// For each shared TF graph (missing test data, skipped or failed as testdata.h says, when
// the folder is absent): runs the pass on ranks 0 and 1 of a 2-rank plan with `method`;
// both must succeed and issue the same collectives, two of them on the graphs with one
// sparse variable (*sparse_apply_momentum*, *scattersub*) (Catch2 checks).
void CheckSharedTfGraphsOnTwoRanks(const PassFactory& make_pass, SyncMethod method);

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_PASSES_TESTING_PASS_TEST_UTIL_H_
