#include "lib/base/json_writer.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

TEST_CASE("JsonWriter writes nested values in caller order") {
  JsonWriter json(0);
  json.BeginObject()
      .Field("name", "w")
      .Field("bytes", int64_t{1024})
      .Key("shape").BeginArray().Int(784).Int(-1).EndArray()
      .Key("empty").BeginObject().EndObject()
      .Field("trainable", true)
      .Key("ratio").Double(0.5)
      .Key("none").Null()
      .EndObject();
  CHECK(json.str() ==
        R"({"name":"w","bytes":1024,"shape":[784,-1],"empty":{},"trainable":true,"ratio":0.5,"none":null})");
}

TEST_CASE("JsonWriter indents") {
  JsonWriter json(2);
  json.BeginObject().Key("a").BeginArray().Int(1).EndArray().EndObject();
  CHECK(json.str() == "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST_CASE("JsonQuote escapes control bytes and replaces invalid UTF-8") {
  CHECK(JsonQuote("a\"b\\c\n") == R"("a\"b\\c\n")");
  CHECK(JsonQuote(std::string("\x01", 1)) == R"("\u0001")");
  CHECK(JsonQuote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(JsonQuote("bad\xff") == "\"bad\xef\xbf\xbd\"");
}

}  // namespace
}  // namespace parallax
