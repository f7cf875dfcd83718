#include "lib/runtime/data/idx.h"

#include <zlib.h>

#include <cstring>
#include <limits>

#include "lib/base/file.h"
#include "lib/ops/dtypes.h"

namespace parallax {
namespace {

struct IdxType {
  uint8_t code;
  DataType dtype;    // the tensor's type
  int file_bytes;    // bytes per element in the file
};
constexpr IdxType kIdxTypes[] = {
    {0x08, tensorflow::DT_UINT8, 1}, {0x09, tensorflow::DT_INT8, 1},
    {0x0B, tensorflow::DT_INT32, 2}, {0x0C, tensorflow::DT_INT32, 4},
    {0x0D, tensorflow::DT_FLOAT, 4}, {0x0E, tensorflow::DT_DOUBLE, 8},
};

uint64_t BigEndian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

void PutBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) *out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

bool IsGzip(std::string_view contents) {
  return contents.size() >= 2 && static_cast<uint8_t>(contents[0]) == 0x1f &&
         static_cast<uint8_t>(contents[1]) == 0x8b;
}

StatusOr<std::string> Gunzip(std::string_view contents, std::string_view source) {
  std::string out;
  z_stream stream{};
  // 15 + 32: zlib or gzip header, detected automatically.
  if (inflateInit2(&stream, 15 + 32) != Z_OK) {
    return InternalError("{}: zlib inflateInit2 failed", source);
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(contents.data()));
  stream.avail_in = static_cast<uInt>(contents.size());
  out.resize(std::max<size_t>(contents.size() * 4, 1 << 16));
  size_t produced = 0;
  while (true) {
    if (produced == out.size()) out.resize(out.size() * 2);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT32_MAX));
    const uInt before = stream.avail_out;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    produced += before - stream.avail_out;
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      // Another gzip member follows (concatenated .gz files are valid gzip).
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) {
      inflateEnd(&stream);
      return InvalidArgumentError("{}: truncated gzip data", source);
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string message = stream.msg != nullptr ? stream.msg : "error " + std::to_string(rc);
      inflateEnd(&stream);
      return InvalidArgumentError("{}: corrupt gzip data: {}", source, message);
    }
  }
  inflateEnd(&stream);
  out.resize(produced);
  return out;
}

StatusOr<std::string> Gzip(std::string_view contents) {
  z_stream stream{};
  // 15 + 16: write a gzip (not zlib) header.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return InternalError("zlib deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, contents.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(contents.data()));
  stream.avail_in = static_cast<uInt>(contents.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  const size_t produced = out.size() - stream.avail_out;
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return InternalError("zlib deflate failed: {}", rc);
  out.resize(produced);
  return out;
}

StatusOr<Tensor> ParseIdx(std::string_view contents, std::string_view source) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(contents.data());
  if (contents.size() < 4 || bytes[0] != 0 || bytes[1] != 0) {
    return InvalidArgumentError("{}: not an IDX file (bad magic)", source);
  }
  const IdxType* type = nullptr;
  for (const IdxType& t : kIdxTypes) {
    if (t.code == bytes[2]) type = &t;
  }
  if (type == nullptr) {
    return InvalidArgumentError("{}: unsupported IDX type code 0x{:02X} (magic 0x{:08X})", source,
                                bytes[2], BigEndian(bytes, 4));
  }
  const int rank = bytes[3];
  if (rank == 0) return InvalidArgumentError("{}: IDX file has 0 dimensions", source);
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (contents.size() < header) {
    return InvalidArgumentError("{}: truncated IDX header ({} dimensions need {} bytes, the file "
                                "has {})",
                                source, rank, header, contents.size());
  }
  TensorShape shape;
  uint64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    const uint64_t dim = BigEndian(bytes + 4 + 4 * i, 4);
    if (dim > 0 && elements > (uint64_t{1} << 40) / dim) {
      return InvalidArgumentError("{}: IDX dimensions have too many elements", source);
    }
    elements *= dim;
    shape.AddDim(static_cast<int64_t>(dim));
  }
  const uint64_t data_bytes = elements * static_cast<uint64_t>(type->file_bytes);
  const uint64_t available = contents.size() - header;
  if (available < data_bytes) {
    return InvalidArgumentError("{}: truncated IDX data: shape {} needs {} bytes, the file has {}",
                                source, shape.DebugString(), data_bytes, available);
  }
  if (available > data_bytes) {
    return InvalidArgumentError("{}: {} bytes after the IDX data of shape {}", source,
                                available - data_bytes, shape.DebugString());
  }
  Tensor tensor(type->dtype, shape);
  const uint8_t* data = bytes + header;
  const int width = type->file_bytes;
  switch (type->code) {
    case 0x08:
    case 0x09:
      if (elements > 0) std::memcpy(tensor.raw_data(), data, elements);
      break;
    case 0x0B: {
      int32_t* out = tensor.data<int32_t>();
      for (uint64_t i = 0; i < elements; ++i) {
        out[i] = static_cast<int16_t>(static_cast<uint16_t>(BigEndian(data + i * width, width)));
      }
      break;
    }
    case 0x0C: {
      int32_t* out = tensor.data<int32_t>();
      for (uint64_t i = 0; i < elements; ++i) {
        out[i] = static_cast<int32_t>(static_cast<uint32_t>(BigEndian(data + i * width, width)));
      }
      break;
    }
    case 0x0D: {
      float* out = tensor.data<float>();
      for (uint64_t i = 0; i < elements; ++i) {
        const auto bits = static_cast<uint32_t>(BigEndian(data + i * width, width));
        std::memcpy(&out[i], &bits, 4);
      }
      break;
    }
    case 0x0E: {
      double* out = tensor.data<double>();
      for (uint64_t i = 0; i < elements; ++i) {
        const uint64_t bits = BigEndian(data + i * width, width);
        std::memcpy(&out[i], &bits, 8);
      }
      break;
    }
  }
  return tensor;
}

StatusOr<Tensor> ReadIdx(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  if (IsGzip(contents)) {
    PX_ASSIGN_OR_RETURN(contents, Gunzip(contents, path));
  }
  return ParseIdx(contents, path);
}

StatusOr<std::string> EncodeIdx(const Tensor& tensor) {
  uint8_t code = 0;
  switch (tensor.dtype()) {
    case tensorflow::DT_UINT8: code = 0x08; break;
    case tensorflow::DT_INT8: code = 0x09; break;
    case tensorflow::DT_INT32: code = 0x0C; break;
    case tensorflow::DT_FLOAT: code = 0x0D; break;
    case tensorflow::DT_DOUBLE: code = 0x0E; break;
    default:
      return InvalidArgumentError("cannot write {} tensors as IDX", DataTypeShortName(tensor.dtype()));
  }
  if (tensor.rank() < 1 || tensor.rank() > 255) {
    return InvalidArgumentError("cannot write a rank-{} tensor as IDX", tensor.rank());
  }
  std::string out;
  out += '\0';
  out += '\0';
  out += static_cast<char>(code);
  out += static_cast<char>(tensor.rank());
  for (int64_t dim : tensor.shape().dims()) {
    if (dim > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgumentError("dimension {} does not fit IDX's uint32", dim);
    }
    PutBigEndian(&out, static_cast<uint64_t>(dim), 4);
  }
  const int width = DataTypeSize(tensor.dtype());
  const auto* data = static_cast<const uint8_t*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, data + i * width, static_cast<size_t>(width));  // little-endian host
    PutBigEndian(&out, v, width);
  }
  return out;
}

Status WriteIdx(const std::string& path, const Tensor& tensor, bool gzip) {
  StatusOr<std::string> bytes = EncodeIdx(tensor);
  if (!bytes.ok()) return bytes.status().WithPrefix(path);
  if (gzip) {
    StatusOr<std::string> compressed = Gzip(*bytes);
    if (!compressed.ok()) return compressed.status().WithPrefix(path);
    return WriteFileAtomically(path, *compressed);
  }
  return WriteFileAtomically(path, *bytes);
}

}  // namespace parallax
