#include "lib/runtime/checkpoint/tensor_slice.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

#include "lib/graph/names.h"
#include "lib/ops/dtypes.h"

namespace parallax {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// `text` split at `sep`; empty pieces dropped when `skip_empty` (as TF's str_util::Split
// with SkipEmpty, which its slice parser uses).
std::vector<std::string_view> Split(std::string_view text, char sep, bool skip_empty) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(sep, start), text.size());
    const std::string_view part = text.substr(start, end - start);
    if (!part.empty() || !skip_empty) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

bool ParseInt64(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// An extent's start and length are valid: start >= 0, length >= 1, no int64 overflow.
bool ValidExtent(int64_t start, int64_t length) {
  return start >= 0 && length >= 1 && start <= kInt64Max - length;
}

}  // namespace

TensorSlice TensorSlice::Full(int rank) {
  TensorSlice slice;
  for (int d = 0; d < rank; ++d) slice.AddExtent(0, kFullExtent);
  return slice;
}

StatusOr<TensorSlice> TensorSlice::Parse(std::string_view text) {
  TensorSlice slice;
  for (std::string_view item : Split(text, ':', /*skip_empty=*/true)) {
    if (item == "-") {
      slice.AddExtent(0, kFullExtent);
      continue;
    }
    const std::vector<std::string_view> numbers = Split(item, ',', /*skip_empty=*/true);
    int64_t start = 0, length = 0;
    if (numbers.size() != 2 || !ParseInt64(numbers[0], &start) ||
        !ParseInt64(numbers[1], &length)) {
      return InvalidArgumentError("slice '{}': extent '{}' is neither 'start,length' nor '-'",
                                  QuoteForMessage(text), QuoteForMessage(item));
    }
    if (!ValidExtent(start, length)) {
      return InvalidArgumentError("slice '{}': extent '{}' needs a start >= 0 and a length >= 1",
                                  QuoteForMessage(text), QuoteForMessage(item));
    }
    slice.AddExtent(start, length);
  }
  return slice;
}

StatusOr<TensorSlice> TensorSlice::FromProto(const tensorflow::TensorSliceProto& proto) {
  TensorSlice slice;
  for (int d = 0; d < proto.extent_size(); ++d) {
    const tensorflow::TensorSliceProto::Extent& e = proto.extent(d);
    if (!e.has_length()) {
      if (e.start() != 0) {
        return InvalidArgumentError("slice extent {}: start {} without a length", d, e.start());
      }
      slice.AddExtent(0, kFullExtent);
      continue;
    }
    if (!ValidExtent(e.start(), e.length())) {
      return InvalidArgumentError("slice extent {}: start {}, length {} (needs a start >= 0 and "
                                  "a length >= 1)",
                                  d, e.start(), e.length());
    }
    slice.AddExtent(e.start(), e.length());
  }
  return slice;
}

tensorflow::TensorSliceProto TensorSlice::ToProto() const {
  tensorflow::TensorSliceProto proto;
  for (int d = 0; d < rank(); ++d) {
    tensorflow::TensorSliceProto::Extent* e = proto.add_extent();
    if (!IsFullAt(d)) {
      e->set_start(start(d));
      e->set_length(length(d));
    }
  }
  return proto;
}

void TensorSlice::AddExtent(int64_t start, int64_t length) {
  starts_.push_back(length == kFullExtent ? 0 : start);
  lengths_.push_back(length);
}

bool TensorSlice::IsFull() const {
  for (int d = 0; d < rank(); ++d) {
    if (!IsFullAt(d)) return false;
  }
  return true;
}

bool TensorSlice::Covers(const TensorShape& shape) const {
  if (rank() != shape.rank()) return false;
  for (int d = 0; d < rank(); ++d) {
    if (Begin(d) != 0 || End(d, shape) != shape.dim(d)) return false;
  }
  return true;
}

StatusOr<TensorShape> TensorSlice::SliceShape(const TensorShape& shape) const {
  if (rank() != shape.rank()) {
    return InvalidArgumentError("slice '{}' has {} dimensions, the shape {} has {}", DebugString(),
                                rank(), shape.DebugString(), shape.rank());
  }
  TensorShape out;
  for (int d = 0; d < rank(); ++d) {
    if (IsFullAt(d)) {
      out.AddDim(shape.dim(d));
    } else if (start(d) + length(d) > shape.dim(d)) {
      return InvalidArgumentError("slice '{}': extent {},{} of dimension {} is outside its size {}",
                                  DebugString(), start(d), length(d), d, shape.dim(d));
    } else {
      out.AddDim(length(d));
    }
  }
  return out;
}

std::string TensorSlice::DebugString() const {
  std::string out;
  for (int d = 0; d < rank(); ++d) {
    if (d > 0) out += ':';
    out += IsFullAt(d) ? "-" : fmt::format("{},{}", start(d), length(d));
  }
  return out;
}

StatusOr<ShapeAndSlice> ParseShapeAndSlice(std::string_view text) {
  std::vector<std::string_view> words = Split(text, ' ', /*skip_empty=*/false);
  if (words.size() < 2) {
    return InvalidArgumentError("shape_and_slice '{}': expected the dims then the slice, "
                                "separated by spaces (e.g. '4 3 0,2:-')",
                                QuoteForMessage(text));
  }
  ShapeAndSlice out;
  StatusOr<TensorSlice> slice = TensorSlice::Parse(words.back());
  if (!slice.ok()) {
    return slice.status().WithPrefix(fmt::format("shape_and_slice '{}'", QuoteForMessage(text)));
  }
  out.slice = std::move(slice).value();
  words.pop_back();
  for (std::string_view word : words) {
    int64_t dim = 0;
    if (!ParseInt64(word, &dim) || dim < 0) {
      return InvalidArgumentError("shape_and_slice '{}': dim '{}' is not a non-negative integer",
                                  QuoteForMessage(text), QuoteForMessage(word));
    }
    out.shape.AddDim(dim);
  }
  StatusOr<TensorShape> slice_shape = out.slice.SliceShape(out.shape);
  if (!slice_shape.ok()) {
    return slice_shape.status().WithPrefix(
        fmt::format("shape_and_slice '{}'", QuoteForMessage(text)));
  }
  out.slice_shape = std::move(slice_shape).value();
  return out;
}

// ---- OrderedCode (TF's tensorflow/core/lib/strings/ordered_code) ----

void AppendOrderedNumIncreasing(std::string* out, uint64_t value) {
  // One length byte, then the value big-endian without leading zero bytes.
  char bytes[8];
  int n = 0;
  for (; value > 0; value >>= 8) bytes[7 - n++] = static_cast<char>(value & 0xff);
  out->push_back(static_cast<char>(n));
  out->append(bytes + 8 - n, static_cast<size_t>(n));
}

void AppendOrderedString(std::string* out, std::string_view value) {
  // 0x00 -> 00 ff, 0xff -> ff 00; then the separator 00 01.
  for (char c : value) {
    if (c == '\0') {
      out->append("\x00\xff", 2);
    } else if (c == '\xff') {
      out->append("\xff\x00", 2);
    } else {
      out->push_back(c);
    }
  }
  out->append("\x00\x01", 2);
}

void AppendOrderedSignedNumIncreasing(std::string* out, int64_t value) {
  // The sign bit, then as many further copies of it as there are bytes after the first,
  // a delimiter bit, then the value in two's complement, big-endian: 1 to 10 bytes.
  static constexpr unsigned char kHeader[11][2] = {
      {0, 0},       {0x80, 0},    {0xc0, 0},    {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
      {0xfc, 0},    {0xfe, 0},    {0xff, 0},    {0xff, 0x80}, {0xff, 0xc0}};
  const uint64_t magnitude = static_cast<uint64_t>(value < 0 ? ~value : value);
  if (magnitude < 64) {
    out->push_back(static_cast<char>(0x80 ^ static_cast<unsigned char>(value & 0xff)));
    return;
  }
  // Bits needed besides the sign: floor(log2) + 1; 7 per byte, the first byte loses
  // one more to the delimiter.
  const int bits = std::bit_width(magnitude);
  const int length = bits / 7 + 1;  // 7..13 bits: 2 bytes, 14..20: 3, ... 63: 10
  unsigned char buffer[10];
  const unsigned char sign = value < 0 ? 0xff : 0x00;
  buffer[0] = buffer[1] = sign;
  for (int i = 0; i < 8; ++i) {
    buffer[2 + i] = static_cast<unsigned char>(static_cast<uint64_t>(value) >> (56 - 8 * i));
  }
  unsigned char* begin = buffer + 10 - length;
  begin[0] ^= kHeader[length][0];
  begin[1] ^= kHeader[length][1];
  out->append(reinterpret_cast<const char*>(begin), static_cast<size_t>(length));
}

std::string EncodeTensorNameSlice(std::string_view name, const TensorSlice& slice) {
  std::string key;
  AppendOrderedNumIncreasing(&key, 0);
  AppendOrderedString(&key, name);
  AppendOrderedNumIncreasing(&key, static_cast<uint64_t>(slice.rank()));
  for (int d = 0; d < slice.rank(); ++d) {
    AppendOrderedSignedNumIncreasing(&key, slice.start(d));
    AppendOrderedSignedNumIncreasing(&key, slice.length(d));
  }
  return key;
}

// ---- Copies between slices ----

std::optional<TensorSlice> IntersectSlices(const TensorSlice& a, const TensorSlice& b,
                                           const TensorShape& shape) {
  TensorSlice out;
  for (int d = 0; d < shape.rank(); ++d) {
    if (a.IsFullAt(d) && b.IsFullAt(d)) {
      out.AddExtent(0, TensorSlice::kFullExtent);
      continue;
    }
    const int64_t begin = std::max(a.Begin(d), b.Begin(d));
    const int64_t end = std::min(a.End(d, shape), b.End(d, shape));
    if (begin >= end) return std::nullopt;
    out.AddExtent(begin, end - begin);
  }
  return out;
}

namespace {

// Row-major strides of a tensor of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d) + 1] * dims[static_cast<size_t>(d) + 1];
  }
  return strides;
}

// Calls copy(src_index, dst_index, count) for each run of `count` consecutive elements
// of the intersection `common`, with element indices into the src and dst slices.
template <typename Copy>
void ForEachRun(const TensorShape& shape, const TensorSlice& src_slice,
                const TensorSlice& dst_slice, const TensorSlice& common, Copy copy) {
  const int rank = shape.rank();
  if (rank == 0) {
    copy(0, 0, 1);
    return;
  }
  std::vector<int64_t> src_dims(static_cast<size_t>(rank)), dst_dims(static_cast<size_t>(rank)),
      counts(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const size_t i = static_cast<size_t>(d);
    src_dims[i] = src_slice.End(d, shape) - src_slice.Begin(d);
    dst_dims[i] = dst_slice.End(d, shape) - dst_slice.Begin(d);
    counts[i] = common.End(d, shape) - common.Begin(d);
  }
  const std::vector<int64_t> src_strides = Strides(src_dims);
  const std::vector<int64_t> dst_strides = Strides(dst_dims);
  const int64_t run = counts.back();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);  // within `common`, last dim 0
  while (true) {
    int64_t src = 0, dst = 0;
    for (int d = 0; d < rank; ++d) {
      const size_t i = static_cast<size_t>(d);
      const int64_t at = common.Begin(d) + index[i];
      src += (at - src_slice.Begin(d)) * src_strides[i];
      dst += (at - dst_slice.Begin(d)) * dst_strides[i];
    }
    copy(src, dst, run);
    int d = rank - 2;
    for (; d >= 0; --d) {
      const size_t i = static_cast<size_t>(d);
      if (++index[i] < counts[i]) break;
      index[i] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

void CopySliceIntersection(const TensorShape& shape, const TensorSlice& src_slice,
                           const Tensor& src, const TensorSlice& dst_slice, Tensor* dst) {
  const std::optional<TensorSlice> common = IntersectSlices(src_slice, dst_slice, shape);
  if (!common) return;
  for (int d = 0; d < shape.rank(); ++d) {
    if (common->End(d, shape) == common->Begin(d)) return;  // no elements
  }
  if (src.dtype() == tensorflow::DT_STRING) {
    const std::string* from = src.data<std::string>();
    std::string* to = dst->data<std::string>();
    ForEachRun(shape, src_slice, dst_slice, *common, [&](int64_t s, int64_t t, int64_t n) {
      std::copy(from + s, from + s + n, to + t);
    });
    return;
  }
  const size_t size = static_cast<size_t>(DataTypeSize(src.dtype()));
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst->raw_data());
  ForEachRun(shape, src_slice, dst_slice, *common, [&](int64_t s, int64_t t, int64_t n) {
    std::memcpy(to + static_cast<size_t>(t) * size, from + static_cast<size_t>(s) * size,
                static_cast<size_t>(n) * size);
  });
}

}  // namespace parallax
