// Test helpers: loading the test graphs inside a Catch2 test.
//
// The test graph corpus is lib/analysis/testdata/<name>.pbtxt (small TF-style training
// graphs, written by lib/analysis/testdata/gen_graphs.py) plus the real TensorFlow
// graphs of the shared folder (see testdata.h). A test that loads one declares the files
// as data ("//lib/analysis:testdata").
//
// Catch2-dependent and testonly: a graph that fails to load fails the test case with the
// load error (a REQUIRE); a missing shared folder is missing test data (testdata.h:
// skipped, or a failure under CI=true / PARALLAX_REQUIRE_DATA=1).
#ifndef PARALLAX_LIB_TESTING_TEST_GRAPHS_H_
#define PARALLAX_LIB_TESTING_TEST_GRAPHS_H_

#include <string>
#include <vector>

#include "lib/graph/graph.h"

namespace parallax::testing {

// The graph in `path`; REQUIREs that it loads.
Graph LoadGraphOrFail(const std::string& path);

// The analysis test graph `name` (lib/analysis/testdata/<name>.pbtxt); REQUIREs that it
// loads.
Graph LoadAnalysisGraph(const std::string& name);

// Paths of every analysis test graph followed by the shared TF graphs; when the shared
// folder is absent, SkipForMissingData (testdata.h) and only the analysis graphs.
std::vector<std::string> AnalysisAndSharedGraphFiles();

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_TESTING_TEST_GRAPHS_H_
