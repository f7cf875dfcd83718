// Missing test data (testdata.h): found when there, a SKIP line naming the test case when
// not, and a failure instead under CI=true or PARALLAX_REQUIRE_DATA=1. Each case sets the
// environment it needs, so `--test_env=CI=true` does not change what it checks.
#include "lib/testing/testdata.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

namespace parallax::testing {
namespace {

void SetEnv(const char* name, const char* value) {
  if (value == nullptr) {
    ::unsetenv(name);
  } else {
    ::setenv(name, value, 1);
  }
}

// What `body` writes on std::cout (Catch2's reporter keeps a stream of its own).
template <typename Body>
std::string CaptureStdout(Body body) {
  std::ostringstream captured;
  std::streambuf* original = std::cout.rdbuf(captured.rdbuf());
  body();
  std::cout.rdbuf(original);
  return captured.str();
}

TEST_CASE("TestDataRequired: CI=true or PARALLAX_REQUIRE_DATA=1") {
  SetEnv("CI", nullptr);
  SetEnv("PARALLAX_REQUIRE_DATA", nullptr);
  CHECK_FALSE(TestDataRequired());
  SetEnv("CI", "false");
  SetEnv("PARALLAX_REQUIRE_DATA", "0");
  CHECK_FALSE(TestDataRequired());
  SetEnv("CI", "true");
  CHECK(TestDataRequired());
  SetEnv("CI", nullptr);
  SetEnv("PARALLAX_REQUIRE_DATA", "1");
  CHECK(TestDataRequired());
}

TEST_CASE("SharedDataPath: a path under $PARALLAX_SHARED_DIR that exists") {
  const std::string shared = TempDir();
  std::filesystem::create_directories(shared + "/testdata/tf-files");
  SetEnv("PARALLAX_SHARED_DIR", shared.c_str());
  SetEnv("CI", "true");  // present data never fails
  CHECK(SharedDataPath("testdata/tf-files") == shared + "/testdata/tf-files");
}

TEST_CASE("missing data without CI: nullopt and one SKIP line naming the test case") {
  const std::string shared = TempDir();
  SetEnv("PARALLAX_SHARED_DIR", shared.c_str());
  SetEnv("CI", nullptr);
  SetEnv("PARALLAX_REQUIRE_DATA", nullptr);
  std::optional<std::string> found;
  std::vector<std::string> graphs;
  const std::string out = CaptureStdout([&] {
    found = SharedDataPath("testdata/tf-files");
    graphs = SharedTfGraphFiles();  // a second skip in the same case: no second line
  });
  CHECK_FALSE(found);
  CHECK(graphs.empty());
  const std::string line =
      "SKIP missing data without CI: nullopt and one SKIP line naming the test case: "
      "missing test data: $PARALLAX_SHARED_DIR/testdata/tf-files (" + shared +
      "/testdata/tf-files) does not exist (set PARALLAX_SHARED_DIR to the shared folder; "
      "scripts/test.sh uses ../shared)\n";
  CHECK(out.substr(0, line.size()) == line);
  CHECK(out.find("\nSKIP ") == std::string::npos);
}

TEST_CASE("missing data without PARALLAX_SHARED_DIR: the SKIP line says it is not set") {
  SetEnv("PARALLAX_SHARED_DIR", nullptr);
  SetEnv("CI", nullptr);
  SetEnv("PARALLAX_REQUIRE_DATA", nullptr);
  std::optional<std::string> found;
  const std::string out = CaptureStdout([&] { found = SharedTfGraphDir(); });
  CHECK_FALSE(found);
  CHECK(out.find("missing test data: $PARALLAX_SHARED_DIR/testdata/tf: PARALLAX_SHARED_DIR "
                 "is not set (") != std::string::npos);
}

// Fails (as expected) at the FAIL inside SharedDataPath, whose one line the log shows:
// "missing test data: $PARALLAX_SHARED_DIR/testdata/tf (...) does not exist (CI=true
// requires it; set PARALLAX_SHARED_DIR ...)".
TEST_CASE("missing data under CI=true fails the test case", "[!shouldfail]") {
  const std::string shared = TempDir();
  SetEnv("PARALLAX_SHARED_DIR", shared.c_str());
  SetEnv("CI", "true");
  SharedDataPath("testdata/tf");
}

TEST_CASE("missing data under PARALLAX_REQUIRE_DATA=1 fails the test case", "[!shouldfail]") {
  SetEnv("PARALLAX_SHARED_DIR", nullptr);
  SetEnv("CI", nullptr);
  SetEnv("PARALLAX_REQUIRE_DATA", "1");
  SharedTfGraphFiles();
}

}  // namespace
}  // namespace parallax::testing
