#include "lib/runtime/data/npy.h"

#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "lib/base/file.h"
#include "lib/ops/dtypes.h"

namespace parallax {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct Descr {
  std::string_view text;
  DataType dtype;
};
// The element types Parallax reads; '<' is little-endian, '|' "not applicable" (1 byte).
constexpr Descr kDescrs[] = {
    {"<f4", tensorflow::DT_FLOAT}, {"<f8", tensorflow::DT_DOUBLE}, {"<i4", tensorflow::DT_INT32},
    {"<i8", tensorflow::DT_INT64}, {"|u1", tensorflow::DT_UINT8},  {"|i1", tensorflow::DT_INT8},
    {"|b1", tensorflow::DT_BOOL},
};

// Header text for a message, as it is but on one line: control characters as \xNN.
std::string OneLine(std::string_view text) {
  std::string shown;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    shown += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return shown;
}

// A tiny reader for the Python dict literal of the header.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  std::optional<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) out += text_[pos_++];
    if (pos_ >= text_.size()) return std::nullopt;
    ++pos_;
    return out;
  }
  std::optional<std::string> Word() {  // True, False
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (start == pos_) return std::nullopt;
    return std::string(text_.substr(start, pos_ - start));
  }
  std::optional<int64_t> Integer() {
    SkipSpace();
    size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
      value = value * 10 + digit;
      ++pos_;
    }
    if (start == pos_) return std::nullopt;
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs: (3L, 4L)
    return value;
  }
  // "(3, 4)", "(3,)", "()".
  std::optional<std::vector<int64_t>> Tuple() {
    if (!Consume('(')) return std::nullopt;
    std::vector<int64_t> dims;
    if (Consume(')')) return dims;
    while (true) {
      std::optional<int64_t> dim = Integer();
      if (!dim) return std::nullopt;
      dims.push_back(*dim);
      if (Consume(')')) return dims;
      if (!Consume(',')) return std::nullopt;
      if (Consume(')')) return dims;
    }
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

StatusOr<Header> ParseHeader(std::string_view text, std::string_view source) {
  auto malformed = [&](std::string_view what) {
    return InvalidArgumentError("{}: malformed .npy header ({}): {}", source, OneLine(what),
                                OneLine(text));
  };
  HeaderParser parser(text);
  Header header;
  bool has_descr = false, has_order = false, has_shape = false;
  if (!parser.Consume('{')) return malformed("not a dict");
  while (!parser.Consume('}')) {
    std::optional<std::string> key = parser.String();
    if (!key) return malformed("expected a quoted key");
    if (!parser.Consume(':')) return malformed("expected ':' after '" + *key + "'");
    if (*key == "descr") {
      std::optional<std::string> descr = parser.String();
      if (!descr) return malformed("'descr' is not a string (structured arrays are not supported)");
      header.descr = *descr;
      has_descr = true;
    } else if (*key == "fortran_order") {
      std::optional<std::string> word = parser.Word();
      if (!word || (*word != "True" && *word != "False")) {
        return malformed("'fortran_order' is not True or False");
      }
      header.fortran_order = *word == "True";
      has_order = true;
    } else if (*key == "shape") {
      std::optional<std::vector<int64_t>> shape = parser.Tuple();
      if (!shape) return malformed("'shape' is not a tuple of integers");
      header.shape = *shape;
      has_shape = true;
    } else {
      return malformed("unknown key '" + *key + "'");
    }
    if (!parser.Consume(',')) {
      if (!parser.Consume('}')) return malformed("expected ',' or '}'");
      break;
    }
  }
  if (!parser.AtEnd()) return malformed("text after the dict");
  if (!has_descr) return malformed("no 'descr'");
  if (!has_order) return malformed("no 'fortran_order'");
  if (!has_shape) return malformed("no 'shape'");
  return header;
}

uint32_t ReadLittleEndian(std::string_view bytes, size_t offset, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<uint8_t>(bytes[offset + static_cast<size_t>(i)]);
  }
  return value;
}

std::string SupportedDescrs() {
  std::string out;
  for (const Descr& d : kDescrs) {
    if (!out.empty()) out += " ";
    out += d.text;
  }
  return out;
}

std::optional<std::string_view> DescrFor(DataType dtype) {
  for (const Descr& d : kDescrs) {
    if (d.dtype == dtype) return d.text;
  }
  return std::nullopt;
}

}  // namespace

StatusOr<Tensor> ParseNpy(std::string_view contents, std::string_view source) {
  if (contents.size() < kMagic.size() || contents.substr(0, kMagic.size()) != kMagic) {
    return InvalidArgumentError("{}: not a .npy file (no \\x93NUMPY magic)", source);
  }
  if (contents.size() < 8) return InvalidArgumentError("{}: truncated .npy header", source);
  const int major = static_cast<uint8_t>(contents[6]);
  const int minor = static_cast<uint8_t>(contents[7]);
  if (major < 1 || major > 3) {
    return InvalidArgumentError("{}: unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are "
                                "supported)",
                                source, major, minor);
  }
  const int length_width = major == 1 ? 2 : 4;
  const size_t prefix = 8 + static_cast<size_t>(length_width);
  if (contents.size() < prefix) return InvalidArgumentError("{}: truncated .npy header", source);
  const size_t header_length = ReadLittleEndian(contents, 8, length_width);
  if (contents.size() - prefix < header_length) {
    return InvalidArgumentError("{}: truncated .npy header (header length {}, file has {} bytes)",
                                source, header_length, contents.size());
  }
  std::string_view header_text = contents.substr(prefix, header_length);
  while (!header_text.empty() && (header_text.back() == '\n' || header_text.back() == ' ' ||
                                  header_text.back() == '\0')) {
    header_text.remove_suffix(1);
  }
  PX_ASSIGN_OR_RETURN(Header header, ParseHeader(header_text, source));

  DataType dtype = tensorflow::DT_INVALID;
  for (const Descr& d : kDescrs) {
    if (d.text == header.descr) dtype = d.dtype;
  }
  if (dtype == tensorflow::DT_INVALID) {
    if (header.descr.size() == 3 && header.descr[0] == '>') {
      return InvalidArgumentError(
          "{}: big-endian dtype '{}' is not supported; save the array with "
          "arr.astype('<{}')",
          source, OneLine(header.descr), OneLine(header.descr.substr(1)));
    }
    if (header.descr.size() == 3 && header.descr[0] == '=') {
      // '=' is native order; every machine Parallax runs on is little-endian.
      const std::string little = "<" + header.descr.substr(1);
      for (const Descr& d : kDescrs) {
        if (d.text == little) dtype = d.dtype;
      }
    }
    if (dtype == tensorflow::DT_INVALID) {
      return InvalidArgumentError("{}: unsupported dtype '{}' (supported: {})", source,
                                  OneLine(header.descr), SupportedDescrs());
    }
  }
  if (header.fortran_order && header.shape.size() > 1) {
    return InvalidArgumentError(
        "{}: Fortran-order arrays are not supported; save the array with "
        "np.ascontiguousarray(arr)",
        source);
  }
  int64_t elements = 1;
  for (int64_t dim : header.shape) {
    if (dim > 0 && elements > std::numeric_limits<int64_t>::max() / 16 / dim) {
      return InvalidArgumentError("{}: shape has too many elements", source);
    }
    elements *= dim;
  }
  const size_t data_bytes = static_cast<size_t>(elements) * static_cast<size_t>(DataTypeSize(dtype));
  const size_t available = contents.size() - prefix - header_length;
  TensorShape shape(header.shape);
  if (available < data_bytes) {
    return InvalidArgumentError("{}: truncated data: shape {} of {} needs {} bytes, the file has {}",
                                source, shape.DebugString(), DataTypeShortName(dtype), data_bytes,
                                available);
  }
  if (available > data_bytes) {
    return InvalidArgumentError("{}: {} bytes after the data of shape {} ({} bytes)", source,
                                available - data_bytes, shape.DebugString(), data_bytes);
  }
  Tensor tensor(dtype, shape);
  if (data_bytes > 0) std::memcpy(tensor.raw_data(), contents.data() + prefix + header_length, data_bytes);
  if (dtype == tensorflow::DT_BOOL) {
    // numpy writes bools as 0/1 bytes; anything else would be undefined as a C++ bool.
    auto* bytes = static_cast<uint8_t*>(tensor.raw_data());
    for (int64_t i = 0; i < elements; ++i) {
      if (bytes[i] > 1) {
        return InvalidArgumentError("{}: bool element {} has byte value {}", source, i, bytes[i]);
      }
    }
  }
  return tensor;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  return ParseNpy(contents, path);
}

StatusOr<std::string> EncodeNpy(const Tensor& tensor, int major) {
  std::optional<std::string_view> descr = DescrFor(tensor.dtype());
  if (!descr) {
    return InvalidArgumentError("cannot write {} tensors as .npy", DataTypeShortName(tensor.dtype()));
  }
  if (major < 1 || major > 3) return InvalidArgumentError("no .npy format version {}", major);
  std::string shape = "(";
  for (int i = 0; i < tensor.rank(); ++i) {
    shape += std::to_string(tensor.dim(i));
    shape += tensor.rank() == 1 ? "," : (i + 1 < tensor.rank() ? ", " : "");
  }
  shape += ")";
  std::string header = "{'descr': '" + std::string(*descr) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t unpadded = 8 + length_width + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (major == 1 && header.size() > 0xffff) return InvalidArgumentError(".npy header too long for format version 1.0");
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < length_width; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  StatusOr<std::string> bytes = EncodeNpy(tensor, 1);
  if (!bytes.ok()) return bytes.status().WithPrefix(path);
  return WriteFileAtomically(path, *bytes);
}

}  // namespace parallax
