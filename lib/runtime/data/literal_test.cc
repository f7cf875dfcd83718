#include "lib/runtime/data/literal.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

Tensor Convert(std::string_view text, DataType dtype,
               std::optional<std::vector<int64_t>> dims = std::nullopt) {
  StatusOr<std::optional<Literal>> literal = ParseLiteral(text);
  INFO(literal.status().ToString());
  REQUIRE(literal.ok());
  REQUIRE(literal->has_value());
  StatusOr<Tensor> t = LiteralToTensor(**literal, dtype, dims, "--feed x");
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  return *t;
}

std::string Error(std::string_view text, DataType dtype,
                  std::optional<std::vector<int64_t>> dims = std::nullopt) {
  StatusOr<std::optional<Literal>> literal = ParseLiteral(text);
  if (!literal.ok()) return literal.status().message();
  REQUIRE(literal->has_value());
  StatusOr<Tensor> t = LiteralToTensor(**literal, dtype, dims, "--feed x");
  REQUIRE_FALSE(t.ok());
  return t.status().message();
}

TEST_CASE("scalars, bools, strings and nested lists become tensors of the fed dtype") {
  CHECK(Convert("0.9", tensorflow::DT_FLOAT).DebugString() == "float[] {0.9}");
  CHECK(Convert("1e-3", tensorflow::DT_DOUBLE).DebugString() == "double[] {0.001}");
  CHECK(Convert("-3", tensorflow::DT_INT64).DebugString() == "int64[] {-3}");
  CHECK(Convert("2", tensorflow::DT_FLOAT).DebugString() == "float[] {2}");
  CHECK(Convert("true", tensorflow::DT_BOOL).DebugString() == "bool[] {true}");
  CHECK(Convert("\"train\"", tensorflow::DT_STRING).DebugString() == "string[] {\"train\"}");
  CHECK(Convert("'a \\'b\\''", tensorflow::DT_STRING).DebugString() == "string[] {\"a 'b'\"}");
  CHECK(Convert("[1, 2, 3]", tensorflow::DT_INT32, std::vector<int64_t>{-1}).DebugString() ==
        "int32[3] {1, 2, 3}");
  CHECK(Convert("[[1,0],[0,1]]", tensorflow::DT_FLOAT, std::vector<int64_t>{2, 2}).DebugString() ==
        "float[2,2] {1, 0, 0, 1}");
  CHECK(std::isnan(Convert("nan", tensorflow::DT_FLOAT).data<float>()[0]));
}

TEST_CASE("file names are not literals") {
  for (std::string_view file : {"train.npy", "./1", "1.npy", "data/x.idx", "synthetic", "gs://b/x"}) {
    StatusOr<std::optional<Literal>> literal = ParseLiteral(file);
    REQUIRE(literal.ok());
    CHECK_FALSE(literal->has_value());
  }
}

TEST_CASE("malformed literals and mismatches are one clear line") {
  CHECK(Error("[1,2", tensorflow::DT_FLOAT) ==
        "literal '[1,2': expected ',' or ']' (at character 5)");
  CHECK(Error("[1,\"a\"]", tensorflow::DT_FLOAT) ==
        "literal '[1,\"a\"]': values of different kinds in one list (at character 7)");
  CHECK(Error("[[1,2],[3]]", tensorflow::DT_FLOAT) ==
        "literal '[[1,2],[3]]': rows of 2 and 1 values (at character 11)");
  CHECK(Error("[]", tensorflow::DT_FLOAT) ==
        "literal '[]': empty lists have no dtype or size (at character 2)");
  // Nesting is bounded (the parser recurses per level) and the text is quoted on one line.
  CHECK(Error(std::string(100'000, '['), tensorflow::DT_FLOAT) ==
        "literal '" + std::string(80, '[') + "...': lists nested deeper than 64 levels (at "
        "character 65)");
  CHECK(Error("[1,\n2]", tensorflow::DT_FLOAT) ==
        "literal '[1,\\x0a2]': '\\x0a2' is not a number, true/false or a quoted string (at "
        "character 6)");
  CHECK(Error("0.5", tensorflow::DT_INT32) == "--feed x: '0.5' is not a int32 value");
  CHECK(Error("3000000000", tensorflow::DT_INT32) == "--feed x: '3000000000' is not a int32 value");
  CHECK(Error("true", tensorflow::DT_FLOAT) ==
        "--feed x: literal 'true' is a bool, the fed tensor is float");
  CHECK(Error("[1,2]", tensorflow::DT_FLOAT, std::vector<int64_t>{3}) ==
        "--feed x: literal '[1,2]' has shape [2], the graph's is [3]");
  CHECK(Error("0.9", tensorflow::DT_FLOAT, std::vector<int64_t>{1}) ==
        "--feed x: literal '0.9' has shape [], the graph's is [1]");
}

}  // namespace
}  // namespace parallax
