// JSON text into a tree, for the headers of checkpoint files (safetensors).
//
// nlohmann-json's SAX parser reads the text (RFC 8259: escapes, surrogate pairs, UTF-8,
// number syntax) and this file builds the tree. Objects keep their members in file
// order, duplicates included, so the safetensors reader can name the first faulty tensor
// and a repeated name. Integers without fraction or exponent are kept exactly (up to
// 2^64-1) because tensor offsets must not pass through a double. Nesting is limited to
// 64 levels (the tree is freed recursively).
//
// Why not nlohmann's own trees (bench/json_bench, a 10,000-tensor header, 1 MB): json
// keeps only the last of duplicate keys and sorts members, and took 1.2-1.8x the time
// of the hand-written parser this replaced; ordered_json keeps file order but took
// 3.9-5.2x (a linear key search per member). SAX into this tree took 0.95-1.27x: within
// noise, at most 3 ms more.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct JsonMember;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  bool is_uint = false;  // a non-negative integer literal that fits uint64
  uint64_t uint = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<JsonMember> object;  // in file order

  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_string() const { return kind == Kind::kString; }
  // The member `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
};

// A member of an object. Not a std::pair: a pair of the incomplete JsonValue inside its
// own definition is ill-formed, and clang's libstdc++ checks refuse it.
struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses one JSON value (surrounding whitespace allowed). Errors are "at byte N: what",
// N the offset where parsing stopped (the text's size when it ends too soon): what the
// grammar expected there ("expected a string key", "expected ':'", "expected ',' or
// '}'", "expected ',' or ']'", "text after the JSON value", "unexpected end of text",
// "unexpected ']'") or nlohmann's word for a bad token ("invalid literal", "invalid
// string: control character U+0001 (SOH) must be escaped to \u0001"); and "nested
// deeper than 64 levels".
StatusOr<JsonValue> ParseJson(std::string_view text);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_
