// A small JSON reader for the headers of checkpoint files (safetensors): RFC 8259
// values into a tree. Integers without fraction or exponent are kept exactly (up to
// 2^64-1) because tensor offsets must not pass through a double. Nesting is limited to
// 64 levels; errors give the byte offset.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  bool is_uint = false;  // a non-negative integer literal that fits uint64
  uint64_t uint = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in file order

  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_string() const { return kind == Kind::kString; }
  // The member `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
};

// Parses one JSON value (surrounding whitespace allowed). Errors: "at byte N: what".
StatusOr<JsonValue> ParseJson(std::string_view text);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_JSON_VALUE_H_
