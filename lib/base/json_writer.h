// A small streaming JSON writer for machine-readable CLI output (--json, --format json).
//
// Keys are written in the order the caller gives them, so output is stable for diffs and
// tests. Strings are escaped per RFC 8259 (control bytes as \u00XX); bytes that are not
// valid UTF-8 are written as U+FFFD so the output always parses.
//
// Why not nlohmann-json, which reads JSON here (lib/runtime/checkpoint/json_value.h):
// building an nlohmann::ordered_json and dump(2) took 3.3-6.5x the time of this writer
// for inspect's JSON of 100,000 variables, 1.1-1.4 s more for its 105 MB
// (bench/json_bench); nlohmann has no streaming writer. Its doubles also differ ("1.0"
// and "1e+15" where this writes "1" and "1000000000000000").
#ifndef PARALLAX_LIB_BASE_JSON_WRITER_H_
#define PARALLAX_LIB_BASE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

class JsonWriter {
 public:
  // indent 0 writes one line; otherwise nested values are indented by `indent` spaces.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // Shorthands for `Key(k).Value(v)`.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, int64_t value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, int value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, bool value) { return Key(key).Bool(value); }

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  void Newline();

  int indent_;
  std::string out_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view text);

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_JSON_WRITER_H_
