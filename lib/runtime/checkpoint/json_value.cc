#include "lib/runtime/checkpoint/json_value.h"

#include <nlohmann/json.hpp>

namespace parallax {
namespace {

constexpr size_t kMaxDepth = 64;

// nlohmann's parse errors read "[json.exception.parse_error.101] parse error at line 1,
// column 23: syntax error while parsing object key - unexpected end of input; expected
// string literal". A bad token keeps the lexer's words ("invalid literal", before
// "; last read: ..."); a token in the wrong place is said as what the grammar expected,
// in the words of the reader nlohmann replaced (docs/run.md and tests quote them).
std::string Describe(std::string_view what) {
  const size_t dash = what.find(" - ");
  if (dash == std::string_view::npos) {  // not a syntax error: "number overflow parsing '1e999'"
    const size_t bracket = what.find("] ");
    return std::string(bracket == std::string_view::npos ? what : what.substr(bracket + 2));
  }
  const std::string_view detail = what.substr(dash + 3);
  if (detail.ends_with("; expected end of input")) return "text after the JSON value";
  if (const size_t last_read = detail.find("; last read: "); last_read != std::string_view::npos) {
    return std::string(detail.substr(0, last_read));
  }
  static constexpr std::pair<std::string_view, std::string_view> kExpected[] = {
      {"; expected string literal", "expected a string key"},
      {"; expected ':'", "expected ':'"},
      {"; expected '}'", "expected ',' or '}'"},
      {"; expected ']'", "expected ',' or ']'"},
  };
  for (const auto& [suffix, words] : kExpected) {
    if (detail.ends_with(suffix)) return std::string(words);
  }
  if (detail.starts_with("unexpected end of input")) return "unexpected end of text";
  return std::string(detail.substr(0, detail.find(';')));  // "unexpected ']'"
}

// Builds the tree from nlohmann's SAX events. Open containers are on stack_; a value
// goes into the innermost one (under the last key for an object). The pointers stay
// valid: a container's vector grows only once its open child is closed.
class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  JsonValue& root() { return root_; }
  const Status& error() const { return error_; }

  bool null() override {
    Add(JsonValue::Kind::kNull);
    return true;
  }
  bool boolean(bool value) override {
    Add(JsonValue::Kind::kBool).boolean = value;
    return true;
  }
  bool number_integer(number_integer_t value) override {  // negative
    Add(JsonValue::Kind::kNumber).number = static_cast<double>(value);
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    JsonValue& v = Add(JsonValue::Kind::kNumber);
    v.number = static_cast<double>(value);
    v.is_uint = true;
    v.uint = value;
    return true;
  }
  bool number_float(number_float_t value, const string_t&) override {
    Add(JsonValue::Kind::kNumber).number = value;
    return true;
  }
  // nlohmann allows moving from the strings it passes.
  bool string(string_t& value) override {
    Add(JsonValue::Kind::kString).string = std::move(value);
    return true;
  }
  bool key(string_t& key) override {
    key_ = std::move(key);
    return true;
  }
  bool start_object(std::size_t) override { return Open(JsonValue::Kind::kObject); }
  bool start_array(std::size_t) override { return Open(JsonValue::Kind::kArray); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool binary(binary_t&) override {  // binary formats only (CBOR, ...), never JSON text
    error_ = InternalError("a binary value in JSON text");
    return false;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::json::exception& e) override {
    // position counts the bytes read, the one that failed included.
    error_ = InvalidArgumentError("at byte {}: {}", position == 0 ? 0 : position - 1,
                                  Describe(e.what()));
    return false;
  }

 private:
  JsonValue& Add(JsonValue::Kind kind) {
    JsonValue* v = &root_;
    if (!stack_.empty()) {
      JsonValue& parent = *stack_.back();
      v = parent.is_array()
              ? &parent.array.emplace_back()
              : &parent.object.emplace_back(JsonMember{std::move(key_), JsonValue()}).value;
    }
    v->kind = kind;
    return *v;
  }
  bool Open(JsonValue::Kind kind) {
    if (stack_.size() == kMaxDepth) {
      error_ = InvalidArgumentError("nested deeper than {} levels", kMaxDepth);
      return false;
    }
    stack_.push_back(&Add(kind));
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  JsonValue root_;
  std::vector<JsonValue*> stack_;
  std::string key_;
  Status error_;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [name, value] : object) {
    if (name == key) return &value;
  }
  return nullptr;
}

StatusOr<JsonValue> ParseJson(std::string_view text) {
  TreeBuilder builder;
  // Errors come to parse_error; sax_parse does not throw.
  if (!nlohmann::json::sax_parse(text, &builder)) return builder.error();
  return std::move(builder.root());
}

}  // namespace parallax
