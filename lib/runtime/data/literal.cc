#include "lib/runtime/data/literal.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "lib/graph/names.h"
#include "lib/ops/dtypes.h"

namespace parallax {
namespace {

bool IsNumberStart(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  // Lists nest at most this deep (a tensor of this rank): the parser recurses per level,
  // and a command-line argument of 128 KiB of '[' would otherwise overflow the stack.
  static constexpr size_t kMaxDepth = 64;

  // Parses one value or list at the current position into `out`, appending its dims at
  // `depth` (checking that sibling rows agree).
  Status Value(Literal& out, size_t depth) {
    SkipSpace();
    if (At('[')) {
      if (depth == kMaxDepth) {
        return Error(fmt::format("lists nested deeper than {} levels", kMaxDepth));
      }
      ++pos_;
      int64_t count = 0;
      SkipSpace();
      if (At(']')) return Error("empty lists have no dtype or size");
      for (;;) {
        PX_RETURN_IF_ERROR(Value(out, depth + 1));
        ++count;
        SkipSpace();
        if (At(',')) {
          ++pos_;
          continue;
        }
        if (At(']')) {
          ++pos_;
          break;
        }
        return Error("expected ',' or ']'");
      }
      if (out.dims.size() <= depth) out.dims.resize(depth + 1, -1);
      if (out.dims[depth] < 0) {
        out.dims[depth] = count;
      } else if (out.dims[depth] != count) {
        return Error(fmt::format("rows of {} and {} values", out.dims[depth], count));
      }
      return Status::Ok();
    }
    if (!saw_leaf_at_) {
      saw_leaf_at_ = depth;
    } else if (*saw_leaf_at_ != depth) {
      return Error("rows nest unevenly");
    }
    return Scalar(out);
  }

  Status Scalar(Literal& out) {
    Literal::Kind kind;
    if (At('"') || At('\'')) {
      kind = Literal::Kind::kString;
      PX_ASSIGN_OR_RETURN(std::string s, QuotedString());
      out.strings.push_back(std::move(s));
    } else if (Word("true") || Word("false")) {
      kind = Literal::Kind::kBool;
      out.bools.push_back(text_.substr(pos_ - 4, 4) == "true");
    } else {
      kind = Literal::Kind::kNumber;
      const size_t begin = pos_;
      while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ']' &&
             text_[pos_] != ' ' && text_[pos_] != '\t') {
        ++pos_;
      }
      std::string number(text_.substr(begin, pos_ - begin));
      if (number.empty() || !NumberParses(number)) {
        return Error(fmt::format("'{}' is not a number, true/false or a quoted string",
                                 QuoteForMessage(number)));
      }
      out.numbers.push_back(std::move(number));
    }
    if (!kind_) {
      kind_ = kind;
      out.kind = kind;
    } else if (*kind_ != kind) {
      return Error("values of different kinds in one list");
    }
    return Status::Ok();
  }

  size_t leaf_depth() const { return saw_leaf_at_.value_or(0); }
  bool Done() {
    SkipSpace();
    return pos_ == text_.size();
  }
  Status Error(std::string_view what) const {
    return InvalidArgumentError("literal '{}': {} (at character {})", QuoteForMessage(text_), what,
                                pos_ + 1);
  }

 private:
  static bool NumberParses(const std::string& number) {
    const std::string lower = [&] {
      std::string l = number;
      for (char& c : l) c = static_cast<char>(std::tolower(c));
      return l;
    }();
    for (std::string_view special : {"inf", "+inf", "-inf", "nan", "+nan", "-nan"}) {
      if (lower == special) return true;
    }
    if (!IsNumberStart(number[0])) return false;
    char* end = nullptr;
    errno = 0;
    std::strtod(number.c_str(), &end);
    return end == number.c_str() + number.size();
  }

  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool Word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    const size_t after = pos_ + w.size();
    if (after < text_.size() && text_[after] != ',' && text_[after] != ']' && text_[after] != ' ') {
      return false;
    }
    pos_ = after;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  StatusOr<std::string> QuotedString() {
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        const char e = text_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      out.push_back(c);
    }
    if (!At(quote)) return Error("the string has no closing quote");
    ++pos_;
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::optional<Literal::Kind> kind_;
  std::optional<size_t> saw_leaf_at_;
};

template <typename T>
Status FillIntegers(const Literal& literal, Tensor* out, std::string_view what) {
  T* data = out->data<T>();
  for (size_t i = 0; i < literal.numbers.size(); ++i) {
    const std::string& text = literal.numbers[i];
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() ||
        value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        value > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return InvalidArgumentError("{}: '{}' is not a {} value", what, QuoteForMessage(text),
                                  DataTypeShortName(out->dtype()));
    }
    data[i] = static_cast<T>(value);
  }
  return Status::Ok();
}

template <typename T>
void FillFloats(const Literal& literal, Tensor* out) {
  T* data = out->data<T>();
  for (size_t i = 0; i < literal.numbers.size(); ++i) {
    data[i] = static_cast<T>(std::strtod(literal.numbers[i].c_str(), nullptr));
  }
}

}  // namespace

StatusOr<std::optional<Literal>> ParseLiteral(std::string_view text) {
  // Literals start with a bracket, a quote, a sign, a digit or a dot, or are a bool or
  // a special float; anything else names a file.
  std::string_view trimmed = text;
  while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
  if (trimmed.empty()) return std::optional<Literal>();
  const char first = trimmed.front();
  const bool looks = first == '[' || first == '"' || first == '\'' || IsNumberStart(first) ||
                     trimmed == "true" || trimmed == "false" || trimmed == "inf" ||
                     trimmed == "nan";
  if (!looks) return std::optional<Literal>();
  // A relative path like "./1" or "1.npy" is a file when it does not parse as a number.
  if (IsNumberStart(first) && first != '-' && first != '+') {
    char* end = nullptr;
    const std::string copy(trimmed);
    std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return std::optional<Literal>();
  }
  Literal literal;
  literal.text = std::string(text);
  Parser parser(text);
  PX_RETURN_IF_ERROR(parser.Value(literal, 0));
  if (!parser.Done()) return parser.Error("unexpected text after the value");
  if (parser.leaf_depth() != literal.dims.size()) return parser.Error("rows nest unevenly");
  return std::optional<Literal>(std::move(literal));
}

StatusOr<Tensor> LiteralToTensor(const Literal& literal, DataType dtype,
                                 const std::optional<std::vector<int64_t>>& dims,
                                 std::string_view what) {
  if (dims) {
    bool fits = dims->size() == literal.dims.size();
    for (size_t d = 0; fits && d < dims->size(); ++d) {
      fits = (*dims)[d] < 0 || (*dims)[d] == literal.dims[d];
    }
    if (!fits) {
      std::vector<std::string> shown;
      for (int64_t d : *dims) shown.push_back(d < 0 ? "?" : std::to_string(d));
      return InvalidArgumentError("{}: literal '{}' has shape {}, the graph's is [{}]", what,
                                  QuoteForMessage(literal.text),
                                  TensorShape(literal.dims).DebugString(),
                                  fmt::join(shown, ","));
    }
  }
  Tensor out(dtype, TensorShape(literal.dims));
  const auto kind_error = [&](std::string_view kind) {
    return InvalidArgumentError("{}: literal '{}' is {}, the fed tensor is {}", what,
                                QuoteForMessage(literal.text), kind, DataTypeShortName(dtype));
  };
  switch (literal.kind) {
    case Literal::Kind::kBool:
      if (dtype != tensorflow::DT_BOOL) return kind_error("a bool");
      for (size_t i = 0; i < literal.bools.size(); ++i) out.data<bool>()[i] = literal.bools[i];
      return out;
    case Literal::Kind::kString:
      if (dtype != tensorflow::DT_STRING) return kind_error("a string");
      for (size_t i = 0; i < literal.strings.size(); ++i) {
        out.data<std::string>()[i] = literal.strings[i];
      }
      return out;
    case Literal::Kind::kNumber:
      switch (dtype) {
        case tensorflow::DT_FLOAT: FillFloats<float>(literal, &out); return out;
        case tensorflow::DT_DOUBLE: FillFloats<double>(literal, &out); return out;
        case tensorflow::DT_INT32: PX_RETURN_IF_ERROR(FillIntegers<int32_t>(literal, &out, what)); return out;
        case tensorflow::DT_INT64: PX_RETURN_IF_ERROR(FillIntegers<int64_t>(literal, &out, what)); return out;
        case tensorflow::DT_INT16: PX_RETURN_IF_ERROR(FillIntegers<int16_t>(literal, &out, what)); return out;
        case tensorflow::DT_INT8: PX_RETURN_IF_ERROR(FillIntegers<int8_t>(literal, &out, what)); return out;
        case tensorflow::DT_UINT8: PX_RETURN_IF_ERROR(FillIntegers<uint8_t>(literal, &out, what)); return out;
        case tensorflow::DT_UINT16: PX_RETURN_IF_ERROR(FillIntegers<uint16_t>(literal, &out, what)); return out;
        default: return kind_error("a number");
      }
  }
  return InternalError("unknown literal kind");
}

}  // namespace parallax
