// Golden-graph comparison for pass tests: the graph a pass produced against an expected
// text-format GraphDef, ignoring node order (passes append nodes; file order is not
// meaning). Attr maps compare as maps.
//
// Setting PARALLAX_UPDATE_GOLDENS=1 in a test's environment rewrites the expected file
// in the source tree instead of comparing (`bazel test //lib/passes/...
// --test_env=PARALLAX_UPDATE_GOLDENS=1`; works because the build uses the local spawn
// strategy, whose runfiles link back to the sources).
#ifndef PARALLAX_LIB_TESTING_GOLDEN_H_
#define PARALLAX_LIB_TESTING_GOLDEN_H_

#include <string>

#include "lib/graph/graph.h"

namespace parallax::testing {

// "" when `actual` equals the GraphDef in `expected_path` up to node order; otherwise a
// readable description of the differences.
std::string DiffAgainstGolden(const Graph& actual, const std::string& expected_path);

// The same for two graphs.
std::string DiffGraphs(const Graph& actual, const Graph& expected);

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_TESTING_GOLDEN_H_
