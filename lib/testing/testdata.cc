#include "lib/testing/testdata.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string_view>

#include <catch2/catch.hpp>
#include <unistd.h>

namespace parallax::testing {
namespace {

constexpr const char* kSharedDirRemedy =
    "set PARALLAX_SHARED_DIR to the shared folder; scripts/test.sh uses ../shared";
constexpr const char* kFashionMnistRemedy = "scripts/setup.sh installs dataset-fashion-mnist";

// The setting that requires the test data ("CI=true"), or "" when none does.
std::string DataRequiredBy() {
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string_view(ci) == "true") return "CI=true";
  const char* require = std::getenv("PARALLAX_REQUIRE_DATA");
  if (require != nullptr && std::string_view(require) == "1") return "PARALLAX_REQUIRE_DATA=1";
  return "";
}

}  // namespace

bool TestDataRequired() { return !DataRequiredBy().empty(); }

void SkipForMissingData(const std::string& what, const std::string& remedy) {
  const std::string required_by = DataRequiredBy();
  if (!required_by.empty()) {
    FAIL("missing test data: " << what << " (" << required_by << " requires it; " << remedy
                               << ")");
  }
  const std::string line = "missing test data: " + what + " (" + remedy + ")";
  // One SKIP line per test case: Catch2 reruns a case once per section, and the summary
  // counts each line as one skipped case.
  static std::set<std::string> skipped_cases;
  const std::string test_case = Catch::getResultCapture().getCurrentTestName();
  if (skipped_cases.insert(test_case).second) {
    std::cout << "SKIP " << test_case << ": " << line << std::endl;
  }
  WARN("skipped: " << line);
}

std::optional<std::string> SharedDataPath(const std::string& relative) {
  const std::string name = "$PARALLAX_SHARED_DIR/" + relative;
  const char* shared = std::getenv("PARALLAX_SHARED_DIR");
  if (shared == nullptr || *shared == '\0') {
    SkipForMissingData(name + ": PARALLAX_SHARED_DIR is not set", kSharedDirRemedy);
    return std::nullopt;
  }
  std::string path = std::string(shared) + "/" + relative;
  if (!std::filesystem::exists(path)) {
    SkipForMissingData(name + " (" + path + ") does not exist", kSharedDirRemedy);
    return std::nullopt;
  }
  return path;
}

std::optional<std::string> SharedTfGraphDir() { return SharedDataPath("testdata/tf"); }

std::vector<std::string> SharedTfGraphFiles() {
  std::optional<std::string> dir = SharedTfGraphDir();
  std::vector<std::string> files;
  if (!dir) return files;
  for (const auto& entry : std::filesystem::directory_iterator(*dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".pb" || ext == ".pbtxt" || ext == ".meta") files.push_back(entry.path().string());
  }
  if (files.empty()) {
    SkipForMissingData("$PARALLAX_SHARED_DIR/testdata/tf (" + *dir +
                           ") holds no .pb, .pbtxt or .meta graphs",
                       kSharedDirRemedy);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<std::string> FashionMnistDir() {
  for (const char* file : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::string path = std::string(kFashionMnistDir) + "/" + file;
    if (!std::filesystem::exists(path)) {
      SkipForMissingData("Fashion-MNIST: " + path + " does not exist", kFashionMnistRemedy);
      return std::nullopt;
    }
  }
  return kFashionMnistDir;
}

std::string RepoPath(const std::string& relative) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return relative;  // run by hand from the root
  return std::string(srcdir) + "/" + workspace + "/" + relative;
}

std::vector<ExpectedError> ReadExpectedErrors(const std::string& dir) {
  std::ifstream in(dir + "/expected_errors.txt");
  std::vector<ExpectedError> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find(" | ");
    if (bar == std::string::npos) return {};
    cases.push_back({line.substr(0, bar), line.substr(bar + 3)});
  }
  if (::chdir(dir.c_str()) != 0) return {};
  return cases;
}

std::string TempDir() {
  static int counter = 0;
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/t" + std::to_string(++counter);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace parallax::testing
