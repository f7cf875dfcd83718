// The malformed-op corpus: testdata/bad_ops/<family>/ holds graphs each with one op whose
// attrs or inputs are wrong, and expected_errors.txt the exact one-line error of running
// the graph's node `out` (after loading it, as `parallax run` does). Every graph file of
// a family must be listed; other files there are data its graphs read (relative names
// resolve in the family's directory).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "lib/graph/graph_io.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Status LoadAndRun(const std::string& file) {
  PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(file));
  CpuDevice device(2);
  Executor executor(graph, device);
  return executor.Run({.targets = {"out"}}).status();
}

TEST_CASE("every malformed op gives its exact one-line error") {
  const std::string root = std::filesystem::absolute(testing::RepoPath("testdata/bad_ops"));
  std::vector<std::string> families;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (entry.is_directory()) families.push_back(entry.path().filename());
  }
  std::sort(families.begin(), families.end());
  REQUIRE(!families.empty());
  size_t total = 0;
  for (const std::string& family : families) {
    const std::string dir = root + "/" + family;
    const std::vector<testing::ExpectedError> cases = testing::ReadExpectedErrors(dir);
    INFO(family);
    CHECK(!cases.empty());
    std::set<std::string> listed;
    for (const auto& [file, message] : cases) {
      INFO(file);
      listed.insert(file);
      const Status status = LoadAndRun(file);
      REQUIRE_FALSE(status.ok());
      CHECK(status.message() == message);
      CHECK(status.message().find('\n') == std::string::npos);
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename();
      // Graphs need a line; other files (vocabularies, ...) are data the graphs read.
      const std::string extension = entry.path().extension();
      if (name == "expected_errors.txt" || (extension != ".pbtxt" && extension != ".pb")) {
        continue;
      }
      INFO(family << "/" << name << " has no line in expected_errors.txt");
      CHECK(listed.count(name) == 1);
    }
    total += cases.size();
  }
  CHECK(total >= 3);
}

}  // namespace
}  // namespace parallax
