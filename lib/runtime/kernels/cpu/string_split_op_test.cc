// Tests of StringSplit and StringSplitV2: TF's documented examples, naive references on
// random strings (delimiter sets, multi-byte separators, whitespace, maxsplit, empty
// strings and an empty batch), the SparseTensor layout, and the input errors.
#include <catch2/catch.hpp>

#include <random>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;

using Rows = std::vector<std::vector<std::string>>;

Tensor Vec(std::vector<std::string> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<std::string>(v, TensorShape({n}));
}

// Runs the op and checks the SparseTensor's layout; returns the tokens per row.
Rows Split(const std::string& op, const std::vector<std::string>& input, const std::string& sep,
           const AttrMap& attrs) {
  const std::vector<Tensor> out = Run(op, {Vec(input), Tensor::Scalar<std::string>(sep)}, attrs);
  REQUIRE(out.size() == 3);
  const Tensor& indices = out[0];
  const Tensor& values = out[1];
  const Tensor& shape = out[2];
  REQUIRE(indices.shape() == TensorShape({values.dim(0), 2}));
  REQUIRE(shape.shape() == TensorShape({2}));
  Rows rows(input.size());
  size_t widest = 0;
  for (int64_t k = 0; k < values.dim(0); ++k) {
    const int64_t r = indices.data<int64_t>()[2 * k];
    const int64_t j = indices.data<int64_t>()[2 * k + 1];
    REQUIRE((r >= 0 && r < static_cast<int64_t>(rows.size())));
    CHECK(j == static_cast<int64_t>(rows[static_cast<size_t>(r)].size()));  // row-major order
    rows[static_cast<size_t>(r)].push_back(values.data<std::string>()[k]);
    widest = std::max(widest, rows[static_cast<size_t>(r)].size());
  }
  CHECK(shape.data<int64_t>()[0] == static_cast<int64_t>(input.size()));
  CHECK(shape.data<int64_t>()[1] == static_cast<int64_t>(widest));
  return rows;
}

Rows SplitV1(const std::vector<std::string>& input, const std::string& delimiter,
             bool skip_empty = true) {
  return Split("StringSplit", input, delimiter, {{"skip_empty", BoolAttr(skip_empty)}});
}
Rows SplitV2(const std::vector<std::string>& input, const std::string& sep, int64_t maxsplit = -1) {
  return Split("StringSplitV2", input, sep, {{"maxsplit", IntAttr(maxsplit)}});
}

TEST_CASE("StringSplit and StringSplitV2 give TF's documented results") {
  // StringSplit's doc: ["hello world", "a b c"] at " ".
  CHECK(SplitV1({"hello world", "a b c"}, " ") == Rows{{"hello", "world"}, {"a", "b", "c"}});
  // Every byte of the delimiter splits; empty tokens kept with skip_empty=false.
  CHECK(SplitV1({"a<b>c", "<>"}, "<>") == Rows{{"a", "b", "c"}, {}});
  CHECK(SplitV1({"a<b>c", "<>"}, "<>", false) == Rows{{"a", "b", "c"}, {"", "", ""}});
  // An empty delimiter splits into bytes; an empty string has no tokens.
  CHECK(SplitV1({"abc", ""}, "") == Rows{{"a", "b", "c"}, {}});
  CHECK(SplitV1({""}, ",", false) == Rows{{}});
  // StringSplitV2's doc (Python's str.split).
  CHECK(SplitV2({"1<>2<>3"}, "<>") == Rows{{"1", "2", "3"}});
  CHECK(SplitV2({"1,,2", ""}, ",") == Rows{{"1", "", "2"}, {""}});
  CHECK(SplitV2({" 1  2 3 ", "", "  "}, "") == Rows{{"1", "2", "3"}, {}, {}});
  CHECK(SplitV2({"a b c d"}, " ", 2) == Rows{{"a", "b", "c d"}});
  CHECK(SplitV2({"a  b\tc\n d "}, "", 2) == Rows{{"a", "b", "c\n d "}});
  CHECK(SplitV2({"a b", "x"}, " ", 0) == Rows{{"a b"}, {"x"}});
  // An empty batch.
  CHECK(SplitV2({}, ",").empty());
  CHECK(SplitV1({}, ",").empty());
}

// References written independently: index scans over the string.
std::vector<std::string> ReferenceV1(const std::string& s, const std::string& delims, bool skip) {
  std::vector<std::string> tokens;
  if (s.empty()) return tokens;
  if (delims.empty()) {
    for (char c : s) tokens.emplace_back(1, c);
    return tokens;
  }
  std::string current;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || delims.find(s[i]) != std::string::npos) {
      if (!skip || !current.empty()) tokens.push_back(current);
      current.clear();
    } else {
      current += s[i];
    }
  }
  return tokens;
}

std::vector<std::string> ReferenceV2(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (maxsplit == 0) return {s};
  std::vector<std::string> tokens;
  if (!sep.empty()) {
    size_t start = 0;
    for (size_t i = 0; i + sep.size() <= s.size();) {
      if (s.compare(i, sep.size(), sep) == 0 &&
          (maxsplit < 0 || static_cast<int64_t>(tokens.size()) < maxsplit)) {
        tokens.push_back(s.substr(start, i - start));
        i += sep.size();
        start = i;
      } else {
        ++i;
      }
    }
    tokens.push_back(s.substr(start));
    return tokens;
  }
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  size_t i = 0;
  while (true) {
    while (i < s.size() && space(s[i])) ++i;
    if (maxsplit > 0 && static_cast<int64_t>(tokens.size()) == maxsplit) {
      tokens.push_back(s.substr(i));
      return tokens;
    }
    if (i == s.size()) return tokens;
    const size_t start = i;
    while (i < s.size() && !space(s[i])) ++i;
    tokens.push_back(s.substr(start, i - start));
  }
}

TEST_CASE("StringSplit and StringSplitV2 match naive references on random strings") {
  std::mt19937 rng(11);
  const std::string alphabet = "ab, \t<>";
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::string> input(rng() % 6);
    for (std::string& s : input) {
      s.resize(rng() % 12);
      for (char& c : s) c = alphabet[rng() % alphabet.size()];
    }
    for (const std::string sep : {"", ",", " ", "<>", ", "}) {
      for (bool skip : {true, false}) {
        const Rows got = SplitV1(input, sep, skip);
        for (size_t r = 0; r < input.size(); ++r) {
          INFO("'" << input[r] << "' at '" << sep << "' skip " << skip);
          CHECK(got[r] == ReferenceV1(input[r], sep, skip));
        }
      }
      for (int64_t maxsplit : {-1, 0, 1, 2}) {
        const Rows got = SplitV2(input, sep, maxsplit);
        for (size_t r = 0; r < input.size(); ++r) {
          INFO("'" << input[r] << "' at '" << sep << "' maxsplit " << maxsplit);
          CHECK(got[r] == ReferenceV2(input[r], sep, maxsplit));
        }
      }
    }
  }
}

TEST_CASE("StringSplit and StringSplitV2 check their inputs' shapes") {
  const Tensor matrix = Tensor::FromVector<std::string>({"a", "b"}, {1, 2});
  CHECK(ErrorOf("StringSplit", {matrix, Tensor::Scalar<std::string>(" ")}, {}) ==
        "node 'op' (StringSplit): input must be a vector, got shape: [1,2]");
  CHECK(ErrorOf("StringSplitV2", {Vec({"a"}), Vec({",", ";"})}, {}) ==
        "node 'op' (StringSplitV2): sep must be a scalar, got shape: [2]");
  CHECK(ErrorOf("StringSplit", {Vec({"a"}), Vec({","})}, {}) ==
        "node 'op' (StringSplit): delimiter must be a scalar, got shape: [1]");
}

}  // namespace
}  // namespace parallax
