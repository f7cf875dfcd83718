#include "lib/testing/testdata.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace parallax::testing {

std::optional<std::string> SharedTfGraphDir(std::string* why) {
  const char* shared = std::getenv("PARALLAX_SHARED_DIR");
  if (shared == nullptr || *shared == '\0') {
    *why = "PARALLAX_SHARED_DIR is not set (scripts/test.sh sets it to ../shared)";
    return std::nullopt;
  }
  std::string dir = std::string(shared) + "/testdata/tf";
  if (!std::filesystem::is_directory(dir)) {
    *why = dir + " does not exist";
    return std::nullopt;
  }
  return dir;
}

std::vector<std::string> SharedTfGraphFiles() {
  std::string why;
  std::optional<std::string> dir = SharedTfGraphDir(&why);
  std::vector<std::string> files;
  if (!dir) return files;
  for (const auto& entry : std::filesystem::directory_iterator(*dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".pb" || ext == ".pbtxt" || ext == ".meta") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
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
