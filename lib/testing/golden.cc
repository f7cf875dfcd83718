#include "lib/testing/golden.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"

namespace parallax::testing {

namespace {

tensorflow::GraphDef Sorted(tensorflow::GraphDef graph_def) {
  auto* nodes = graph_def.mutable_node();
  std::sort(nodes->begin(), nodes->end(),
            [](const tensorflow::NodeDef& a, const tensorflow::NodeDef& b) {
              return a.name() < b.name();
            });
  return graph_def;
}

std::string Diff(const tensorflow::GraphDef& actual, const tensorflow::GraphDef& expected) {
  google::protobuf::util::MessageDifferencer differencer;
  std::string report;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(Sorted(expected), Sorted(actual))) return "";
  return "differences (expected -> actual, nodes sorted by name):\n" + report;
}

}  // namespace

std::string DiffGraphs(const Graph& actual, const Graph& expected) {
  StatusOr<tensorflow::GraphDef> a = ToGraphDef(actual);
  StatusOr<tensorflow::GraphDef> e = ToGraphDef(expected);
  if (!a.ok()) return a.status().message();
  if (!e.ok()) return e.status().message();
  return Diff(*a, *e);
}

std::string DiffAgainstGolden(const Graph& actual, const std::string& expected_path) {
  const char* update = std::getenv("PARALLAX_UPDATE_GOLDENS");
  if (update != nullptr && std::string(update) == "1") {
    // Follow the runfiles symlink back to the source tree.
    std::error_code error;
    std::filesystem::path target = std::filesystem::canonical(expected_path, error);
    if (error) target = expected_path;
    StatusOr<std::string> text = SerializeGraphDefText(actual);
    if (!text.ok()) return text.status().message();
    Status written = WriteFileAtomically(target.string(), *text);
    return written.ok() ? "" : written.message();
  }
  StatusOr<Graph> expected = LoadGraph(expected_path);
  if (!expected.ok()) {
    return expected.status().message() +
           " (run the test with --test_env=PARALLAX_UPDATE_GOLDENS=1 to write it)";
  }
  return DiffGraphs(actual, *expected);
}

}  // namespace parallax::testing
