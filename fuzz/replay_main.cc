// main() of a harness outside fuzzing: runs corpus files through LLVMFuzzerTestOneInput
// once each, as a Catch2 test (the harness's `<what>_fuzzer_test`, CI's smoke run) or by
// hand on a crash file (`bazel run //fuzz:graph_fuzzer -- /tmp/crash-1234`).
//
// Arguments name the inputs, each a file or a folder (walked recursively, in name order):
//   testdata/bad               a path in this repository (its runfiles); absolute paths
//                              are taken as they are
//   shared:testdata/tf         a path under $PARALLAX_SHARED_DIR; missing shared data
//                              follows lib/testing/testdata.h (SKIP, or FAIL under CI)
//   testdata/bad_cluster/*.hosts   a last component with '*' or '?': the files of the
//                              folder before it (recursively) whose names match
// A repository path that is missing or matches no file fails the test: the corpus the
// BUILD file names must be there. Prints one line: how many inputs ran, from where.
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "fuzz/fuzz_input.h"
#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<std::string>& InputArguments() {
  static std::vector<std::string> arguments;
  return arguments;
}

// The files of `root` (itself when it is a file) whose names match `pattern` ("" = all).
std::vector<std::string> FilesUnder(const std::string& root, const std::string& pattern) {
  std::vector<std::string> files;
  const auto matches = [&](const fs::path& path) {
    return pattern.empty() || ::fnmatch(pattern.c_str(), path.filename().c_str(), 0) == 0;
  };
  if (fs::is_regular_file(root)) {
    if (matches(root)) files.push_back(root);
    return files;
  }
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && matches(entry.path())) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST_CASE("every corpus file runs through the harness") {
  REQUIRE_FALSE(InputArguments().empty());
  int total = 0;
  std::string counts;
  for (const std::string& argument : InputArguments()) {
    constexpr std::string_view kShared = "shared:";
    const bool shared = argument.starts_with(kShared);
    std::string path = shared ? argument.substr(kShared.size()) : argument;
    std::string pattern;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && path.find_first_of("*?", slash) != std::string::npos) {
      pattern = path.substr(slash + 1);
      path.resize(slash);
    }
    if (shared) {
      const std::optional<std::string> found = testing::SharedDataPath(path);
      if (!found) continue;  // skipped or failed as testdata.h says
      path = *found;
    } else if (!path.starts_with('/')) {
      path = testing::RepoPath(path);
    }
    INFO(argument);
    REQUIRE(fs::exists(path));
    const std::vector<std::string> files = FilesUnder(path, pattern);
    if (!shared) REQUIRE_FALSE(files.empty());
    for (const std::string& file : files) {
      INFO(file);
      StatusOr<std::string> bytes = ReadFileToString(file);
      REQUIRE(bytes.ok());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    }
    total += static_cast<int>(files.size());
    counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", argument, files.size());
  }
  std::printf("replayed %d inputs through the harness (%s)\n", total, counts.c_str());
}

}  // namespace
}  // namespace parallax::fuzz

// Arguments up to "--" name inputs; those after it go to Catch2.
int main(int argc, char** argv) {
  std::vector<char*> catch_arguments = {argv[0]};
  bool to_catch = false;
  for (int i = 1; i < argc; ++i) {
    if (!to_catch && std::string_view(argv[i]) == "--") {
      to_catch = true;
    } else if (to_catch) {
      catch_arguments.push_back(argv[i]);
    } else {
      parallax::fuzz::InputArguments().push_back(argv[i]);
    }
  }
  return Catch::Session().run(static_cast<int>(catch_arguments.size()), catch_arguments.data());
}
