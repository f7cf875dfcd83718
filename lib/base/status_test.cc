#include "lib/base/status.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

StatusOr<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("value {} is not positive", x);
  return x;
}

StatusOr<int> Doubled(int x) {
  PX_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

Status Check(int x) {
  PX_RETURN_IF_ERROR(ParsePositive(x));
  return Status::Ok();
}

// The status of a temporary StatusOr: must outlive the full-expression.
Status CheckTemporary(int x) {
  PX_RETURN_IF_ERROR(ParsePositive(x).status());
  return Status::Ok();
}

TEST_CASE("StatusOr carries a value or the error") {
  REQUIRE(Doubled(4).ok());
  CHECK(*Doubled(4) == 8);
  StatusOr<int> bad = Doubled(-1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "value -1 is not positive");
  CHECK(Check(3).ok());
  CHECK(Check(0).message() == "value 0 is not positive");
  CHECK(CheckTemporary(1).ok());
  // A long message (not in the small-string buffer) would read freed memory if
  // status() returned a reference into the temporary.
  CHECK(CheckTemporary(-123456789).message() == "value -123456789 is not positive");
  static_assert(std::is_same_v<decltype(ParsePositive(1).status()), Status>);
}

TEST_CASE("WithPrefix keeps the code and prepends context") {
  Status s = NotFoundError("no such node 'x'").WithPrefix("graph.pb");
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message() == "graph.pb: no such node 'x'");
  CHECK(s.ToString() == "NOT_FOUND: graph.pb: no such node 'x'");
  CHECK(Status::Ok().WithPrefix("x").ok());
}

}  // namespace
}  // namespace parallax
