#include "lib/graph/names.h"

#include <catch2/catch.hpp>

#include "lib/graph/wire.h"

namespace parallax {
namespace {

TEST_CASE("ParseInput reads data and control inputs") {
  auto plain = ParseInput("layer/MatMul");
  REQUIRE(plain);
  CHECK(plain->node == "layer/MatMul");
  CHECK(plain->port == 0);
  auto port = ParseInput("Unique:1");
  REQUIRE(port);
  CHECK(port->node == "Unique");
  CHECK(port->port == 1);
  auto control = ParseInput("^init");
  REQUIRE(control);
  CHECK(control->is_control());
  CHECK(control->node == "init");
  auto internal = ParseInput("_send_Mean_0");
  REQUIRE(internal);
  CHECK(internal->node == "_send_Mean_0");
}

TEST_CASE("ParseInput rejects malformed inputs") {
  for (const char* bad : {"", "^", ":1", "x:", "x:-1", "x:a", "x:1:2", "^x:1", "a b",
                          "x:12345678901", "-x"}) {
    INFO(bad);
    CHECK_FALSE(ParseInput(bad).has_value());
  }
}

TEST_CASE("FormatInput is ParseInput's inverse") {
  CHECK(FormatInput("x", 0) == "x");
  CHECK(FormatInput("x", 3) == "x:3");
  CHECK(FormatInput("x", kControlPort) == "^x");
}

TEST_CASE("node and op name rules") {
  CHECK(IsValidNodeName("gradients/dense/MatMul_grad/tuple/control_dependency_1"));
  CHECK(IsValidNodeName(".hidden"));
  CHECK(IsValidNodeName("a-b>c"));
  CHECK_FALSE(IsValidNodeName("/leading/slash"));
  CHECK_FALSE(IsValidNodeName("has space"));
  CHECK_FALSE(IsValidNodeName("colon:0"));
  CHECK(IsValidOpName("ApplyAdam"));
  CHECK(IsValidOpName("_Send"));
  CHECK_FALSE(IsValidOpName("3D"));
  CHECK_FALSE(IsValidOpName("Apply Adam"));
}

TEST_CASE("QuoteForMessage escapes and truncates") {
  CHECK(QuoteForMessage("it's") == "it\\'s");
  CHECK(QuoteForMessage(std::string("a\x01", 2)) == "a\\x01");
  CHECK(QuoteForMessage("abcdef", 3) == "abc...");
}

TEST_CASE("wire Reader walks fields and reports faults with offsets") {
  std::string message;
  wire::AppendTag(&message, 1, wire::WireType::kVarint);
  wire::AppendVarint(&message, 300);
  wire::AppendLengthDelimited(&message, 2, "hello");
  message += std::string("\x1d\x01\x02\x03\x04", 5);  // field 3, fixed32
  wire::Reader reader(message);
  wire::Field field;
  REQUIRE(reader.Next(&field).ok());
  CHECK(field.number == 1);
  CHECK(field.varint == 300);
  REQUIRE(reader.Next(&field).ok());
  CHECK(field.bytes == "hello");
  CHECK(field.record.size() == 7);
  REQUIRE(reader.Next(&field).ok());
  CHECK(field.type == wire::WireType::kFixed32);
  CHECK(reader.done());

  std::string truncated = message.substr(0, 6);
  wire::Reader bad(truncated);
  REQUIRE(bad.Next(&field).ok());
  CHECK(bad.Next(&field).message() ==
        "field 2 at byte 3 declares 5 bytes but only 1 remain (truncated or corrupt)");
  wire::Reader group(std::string_view("\x0b", 1));
  CHECK(group.Next(&field).message() ==
        "field 1 at byte 0 uses the group wire type, which GraphDef never contains");
  wire::Reader zero(std::string_view("\x00\x01", 2));
  CHECK(zero.Next(&field).message() == "invalid field number 0 at byte 0");
  CHECK(wire::VarintSize(127) == 1);
  CHECK(wire::VarintSize(128) == 2);
}

}  // namespace
}  // namespace parallax
