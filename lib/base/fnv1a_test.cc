#include "lib/base/fnv1a.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("Fnv1a64: the published FNV-1a 64 values") {
  CHECK(Fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(Fnv1a64Hex("") == "cbf29ce484222325");
  CHECK(Fnv1a64Hex("a") == "af63dc4c8601ec8c");
  CHECK(Fnv1a64Hex("foobar") == "85944171f73967e8");
  // Bytes above 0x7f hash as unsigned.
  CHECK(Fnv1a64(std::string_view("\xff", 1)) != Fnv1a64(std::string_view("\x7f", 1)));
}

}  // namespace
}  // namespace parallax
