// Test helpers: where the test data lives.
//
// Real TensorFlow graphs are read in place from the shared folder beside the checkout
// ($PARALLAX_SHARED_DIR/testdata/tf, set by scripts/test.sh); they are never copied into
// the repository. Tests that need them skip with a message when the folder is absent.
// The repository's own test data is found through Bazel's runfiles.
#ifndef PARALLAX_LIB_TESTING_TESTDATA_H_
#define PARALLAX_LIB_TESTING_TESTDATA_H_

#include <optional>
#include <string>
#include <vector>

namespace parallax::testing {

// $PARALLAX_SHARED_DIR/testdata/tf, or nullopt (with the reason in *why) when unset or
// missing.
std::optional<std::string> SharedTfGraphDir(std::string* why);

// The shared TF graph files (*.pb, *.pbtxt GraphDefs, *.meta MetaGraphDefs), sorted;
// empty when the folder is absent.
std::vector<std::string> SharedTfGraphFiles();

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
