#include "lib/testing/test_graphs.h"

#include <utility>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/testing/testdata.h"

namespace parallax::testing {
namespace {

const char* const kAnalysisGraphs[] = {
    "adam",           "adam_weight_decay", "addn_gradient",   "assign_optimizer",
    "clip_adam",      "control_flow",      "momentum",        "resource",
    "scatter_sub_sgd", "sgd_mlp",          "sparse_adagrad",  "sparse_adam",
    "sparse_momentum", "unrecognised_update",
};

std::string AnalysisGraphPath(const std::string& name) {
  return RepoPath("lib/analysis/testdata/" + name + ".pbtxt");
}

}  // namespace

Graph LoadGraphOrFail(const std::string& path) {
  StatusOr<Graph> graph = LoadGraph(path);
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  return std::move(graph).value();
}

Graph LoadAnalysisGraph(const std::string& name) {
  return LoadGraphOrFail(AnalysisGraphPath(name));
}

std::vector<std::string> AnalysisAndSharedGraphFiles() {
  std::vector<std::string> paths;
  for (const char* name : kAnalysisGraphs) paths.push_back(AnalysisGraphPath(name));
  std::vector<std::string> shared = SharedTfGraphFiles();  // skips or fails when absent
  paths.insert(paths.end(), shared.begin(), shared.end());
  return paths;
}

}  // namespace parallax::testing
