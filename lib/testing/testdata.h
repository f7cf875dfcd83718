// Test helpers: where the test data lives, and what a test does when it is missing.
//
// Real TensorFlow graphs and files are read in place from the shared folder beside the
// checkout ($PARALLAX_SHARED_DIR: testdata/tf graphs, testdata/tf-files checkpoints,
// TFRecords and event files; set by scripts/test.sh); they are never copied into the
// repository. Fashion-MNIST is read where Debian's dataset-fashion-mnist installs it.
// The repository's own test data is found through Bazel's runfiles.
//
// *Missing test data* is such an outside file or folder that is not there. A test case
// that needs it calls SharedDataPath / SharedTfGraphDir / FashionMnistDir and returns
// when they give nothing. What happens then depends on whether the data is *required*
// (CI=true or PARALLAX_REQUIRE_DATA=1 in the test's environment):
//  - required: the test case FAILs with one line naming the missing data;
//  - otherwise it is *skipped*: one stdout line `SKIP <test case>: missing test data:
//    <what> (<how to get it>)`, which scripts/summarize_tests.py counts as a skipped
//    case rather than a passed one, and a Catch2 WARN with the same text.
// Catch2-dependent: call these only from inside a running test case.
#ifndef PARALLAX_LIB_TESTING_TESTDATA_H_
#define PARALLAX_LIB_TESTING_TESTDATA_H_

#include <optional>
#include <string>
#include <vector>

namespace parallax::testing {

// Fashion-MNIST's IDX files (train-/t10k-, images-idx3/labels-idx1, .gz) as Debian's
// dataset-fashion-mnist installs them.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// True when missing test data fails a test instead of skipping it: CI=true or
// PARALLAX_REQUIRE_DATA=1.
bool TestDataRequired();

// The current test case's data `what` is missing ("$PARALLAX_SHARED_DIR/testdata/tf
// (/x/testdata/tf) does not exist"); `remedy` says how to get it. Under
// TestDataRequired() FAILs the test case ("missing test data: WHAT (CI=true requires
// it; REMEDY)"); otherwise prints the SKIP line (once per test case) and WARNs.
void SkipForMissingData(const std::string& what, const std::string& remedy);

// $PARALLAX_SHARED_DIR/<relative> ("testdata/tf-files/bert_mrpc") when it exists; else
// SkipForMissingData and nullopt.
std::optional<std::string> SharedDataPath(const std::string& relative);

// SharedDataPath("testdata/tf"): the shared real TF graphs.
std::optional<std::string> SharedTfGraphDir();

// The shared TF graph files (*.pb, *.pbtxt GraphDefs, *.meta MetaGraphDefs), sorted;
// empty (after SkipForMissingData) when the folder is absent or holds none.
std::vector<std::string> SharedTfGraphFiles();

// kFashionMnistDir when it holds the four IDX files; else SkipForMissingData and nullopt.
std::optional<std::string> FashionMnistDir();

// Path of a file of this repository in the test's runfiles ("testdata/bad/empty.pb").
std::string RepoPath(const std::string& relative);

// One line of an expected_errors.txt file: "file | exact one-line error".
struct ExpectedError {
  std::string file;
  std::string message;
};

// Reads <dir>/expected_errors.txt (blank lines and '#' comments skipped) and changes the
// working directory to `dir`, so that the files load by the relative names their
// messages use. Empty when the file is missing or a line has no " | ".
std::vector<ExpectedError> ReadExpectedErrors(const std::string& dir);

// A fresh writable directory for one test.
std::string TempDir();

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_TESTING_TESTDATA_H_
