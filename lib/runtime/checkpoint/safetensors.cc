#include "lib/runtime/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "lib/base/crc32c.h"
#include "lib/base/file.h"
#include "lib/base/json_writer.h"
#include "lib/graph/names.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/json_value.h"

namespace parallax {
namespace {

struct DtypeName {
  std::string_view name;
  DataType dtype;
};
constexpr DtypeName kDtypes[] = {
    {"F32", tensorflow::DT_FLOAT}, {"F64", tensorflow::DT_DOUBLE}, {"I32", tensorflow::DT_INT32},
    {"I64", tensorflow::DT_INT64}, {"U8", tensorflow::DT_UINT8},   {"BOOL", tensorflow::DT_BOOL},
};

struct Entry {
  std::string name;
  DataType dtype;
  TensorShape shape;
  uint64_t begin, end;
};

// The header length in the file's first 8 bytes (little-endian), checked against the
// limit and against the `after` bytes that follow it.
StatusOr<uint64_t> HeaderLength(std::string_view bytes, uint64_t after, std::string_view source) {
  if (bytes.size() < 8) {
    return InvalidArgumentError("{}: truncated safetensors file: {} bytes, the header length "
                                "alone takes 8",
                                source, bytes.size());
  }
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_length > kMaxSafetensorsHeaderBytes) {
    return InvalidArgumentError("{}: bad header length {}: over the limit of {} bytes", source,
                                header_length, kMaxSafetensorsHeaderBytes);
  }
  if (header_length > after) {
    return InvalidArgumentError("{}: bad header length {}: the file has {} bytes after it", source,
                                header_length, after);
  }
  return header_length;
}

// The header's JSON object.
StatusOr<JsonValue> ParseHeader(std::string_view json, std::string_view source) {
  StatusOr<JsonValue> header = ParseJson(json);
  if (!header.ok()) {
    return InvalidArgumentError("{}: header is not valid JSON: {}", source, header.status().message());
  }
  if (!header->is_object()) return InvalidArgumentError("{}: header is not a JSON object", source);
  return header;
}

// The __metadata__ entry's strings into *metadata.
Status ReadMetadata(const JsonValue& value, std::string_view source,
                    std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) return InvalidArgumentError("{}: __metadata__ is not an object", source);
  for (const auto& [key, item] : value.object) {
    if (!item.is_string()) {
      return InvalidArgumentError("{}: __metadata__ '{}' is not a string", source,
                                  QuoteForMessage(key));
    }
    (*metadata)[key] = item.string;
  }
  return Status::Ok();
}

}  // namespace

std::string_view SafetensorsDtypeName(DataType dtype) {
  for (const DtypeName& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "";
}

StatusOr<std::string> EncodeSafetensors(const SafetensorsContents& contents) {
  // Every tensor's checksum goes into the metadata.
  std::map<std::string, std::string> metadata = contents.metadata;
  for (const auto& [name, tensor] : contents.tensors) {
    const uint32_t crc = Crc32c(std::string_view(static_cast<const char*>(tensor.raw_data()),
                                                 tensor.bytes()));
    metadata[fmt::format("{}{}", kTensorChecksumPrefix, name)] = fmt::format("{:08x}", crc);
  }
  JsonWriter json(0);
  json.BeginObject();
  json.Key("__metadata__").BeginObject();
  for (const auto& [key, value] : metadata) json.Field(key, value);
  json.EndObject();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : contents.tensors) {
    const std::string_view dtype = SafetensorsDtypeName(tensor.dtype());
    if (dtype.empty()) {
      return InvalidArgumentError("tensor '{}': {} cannot be stored in a safetensors file", name,
                                  DataTypeShortName(tensor.dtype()));
    }
    json.Key(name).BeginObject();
    json.Field("dtype", dtype);
    json.Key("shape").BeginArray();
    for (int64_t d : tensor.shape().dims()) json.Int(d);
    json.EndArray();
    json.Key("data_offsets").BeginArray();
    json.Int(static_cast<int64_t>(offset));
    offset += tensor.bytes();
    json.Int(static_cast<int64_t>(offset));
    json.EndArray();
    json.EndObject();
  }
  json.EndObject();
  std::string header = json.str();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + header.size() + offset);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  for (const auto& [name, tensor] : contents.tensors) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  }
  return out;
}

StatusOr<SafetensorsContents> DecodeSafetensors(std::string_view bytes, std::string_view source) {
  PX_ASSIGN_OR_RETURN(const uint64_t header_length,
                      HeaderLength(bytes, bytes.size() < 8 ? 0 : bytes.size() - 8, source));
  PX_ASSIGN_OR_RETURN(const JsonValue header, ParseHeader(bytes.substr(8, header_length), source));
  const std::string_view data = bytes.substr(8 + header_length);

  SafetensorsContents contents;
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const JsonMember& member : header.object) {
    // Named references, not a structured binding: the lambda below captures `name`,
    // which clang accepts only from version 16.
    const std::string& name = member.key;
    const JsonValue& value = member.value;
    if (!names.insert(name).second) {
      return InvalidArgumentError("{}: '{}' appears twice in the header", source,
                                  QuoteForMessage(name));
    }
    if (name == "__metadata__") {
      PX_RETURN_IF_ERROR(ReadMetadata(value, source, &contents.metadata));
      continue;
    }
    auto bad = [&](std::string_view what) {
      return InvalidArgumentError("{}: tensor '{}': {}", source, QuoteForMessage(name), what);
    };
    if (!value.is_object()) return bad("entry is not an object");
    const JsonValue* dtype = value.Find("dtype");
    const JsonValue* shape = value.Find("shape");
    const JsonValue* offsets = value.Find("data_offsets");
    if (dtype == nullptr || !dtype->is_string()) return bad("no string 'dtype'");
    if (shape == nullptr || !shape->is_array()) return bad("no 'shape' array");
    if (offsets == nullptr || !offsets->is_array()) return bad("no 'data_offsets' array");
    Entry entry{name, tensorflow::DT_INVALID, TensorShape(), 0, 0};
    for (const DtypeName& d : kDtypes) {
      if (d.name == dtype->string) entry.dtype = d.dtype;
    }
    if (entry.dtype == tensorflow::DT_INVALID) {
      return bad(fmt::format("unsupported dtype '{}' (supported: F32 F64 I32 I64 U8 BOOL)",
                             QuoteForMessage(dtype->string)));
    }
    uint64_t elements = 1;
    for (const JsonValue& dim : shape->array) {
      if (!dim.is_uint || dim.uint > (uint64_t{1} << 48)) {
        return bad("'shape' must hold non-negative integers");
      }
      if (dim.uint > 0 && elements > (uint64_t{1} << 48) / dim.uint) return bad("'shape' is too large");
      elements *= dim.uint;
      entry.shape.AddDim(static_cast<int64_t>(dim.uint));
    }
    if (offsets->array.size() != 2 || !offsets->array[0].is_uint || !offsets->array[1].is_uint ||
        offsets->array[0].uint > offsets->array[1].uint) {
      return bad("'data_offsets' must be [begin, end] with begin <= end");
    }
    entry.begin = offsets->array[0].uint;
    entry.end = offsets->array[1].uint;
    if (entry.end > data.size()) {
      return bad(fmt::format("data_offsets [{}, {}] are outside the data section ({} bytes; is "
                             "the file truncated?)",
                             entry.begin, entry.end, data.size()));
    }
    const uint64_t want = elements * static_cast<uint64_t>(DataTypeSize(entry.dtype));
    if (entry.end - entry.begin != want) {
      return bad(fmt::format("data_offsets [{}, {}] hold {} bytes, {} {} needs {}", entry.begin,
                             entry.end, entry.end - entry.begin, dtype->string,
                             entry.shape.DebugString(), want));
    }
    entries.push_back(std::move(entry));
  }
  // The tensors must tile the data section: no overlap, no gap, nothing after.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != cursor) {
      return InvalidArgumentError("{}: tensor '{}': data_offsets [{}, {}] {} the previous tensor's "
                                  "data (which ends at {})",
                                  source, QuoteForMessage(e->name), e->begin, e->end,
                                  e->begin < cursor ? "overlap" : "leave a gap after", cursor);
    }
    cursor = e->end;
  }
  if (cursor != data.size()) {
    return InvalidArgumentError("{}: {} bytes after the last tensor's data", source,
                                data.size() - cursor);
  }
  if (auto it = contents.metadata.find(std::string(kDataChecksumKey));
      it != contents.metadata.end()) {
    const std::string actual = fmt::format("{:08x}", Crc32c(data));
    if (it->second != actual) {
      return InvalidArgumentError("{}: corrupt: the data section's CRC-32C is {}, the header's "
                                  "'{}' says '{}' (bytes changed after the file was written)",
                                  source, actual, kDataChecksumKey, QuoteForMessage(it->second));
    }
    contents.metadata.erase(it);
  }
  for (const Entry& e : entries) {
    const auto it = contents.metadata.find(fmt::format("{}{}", kTensorChecksumPrefix, e.name));
    if (it == contents.metadata.end()) continue;
    const std::string actual = fmt::format(
        "{:08x}", Crc32c(std::string_view(data.data() + e.begin, e.end - e.begin)));
    if (it->second != actual) {
      return InvalidArgumentError("{}: corrupt: tensor '{}': its CRC-32C is {}, the header says "
                                  "'{}' (bytes changed after the file was written)",
                                  source, QuoteForMessage(e.name), actual,
                                  QuoteForMessage(it->second));
    }
  }
  std::erase_if(contents.metadata,
                [](const auto& entry) { return entry.first.starts_with(kTensorChecksumPrefix); });
  for (const Entry& e : entries) {
    Tensor tensor(e.dtype, e.shape);
    if (e.end > e.begin) std::memcpy(tensor.raw_data(), data.data() + e.begin, e.end - e.begin);
    if (e.dtype == tensorflow::DT_BOOL) {
      const auto* b = static_cast<const uint8_t*>(tensor.raw_data());
      for (uint64_t i = 0; i < e.end - e.begin; ++i) {
        if (b[i] > 1) {
          return InvalidArgumentError("{}: tensor '{}': bool element {} has byte value {}", source,
                                      QuoteForMessage(e.name), i, b[i]);
        }
      }
    }
    contents.tensors.emplace(e.name, std::move(tensor));
  }
  return contents;
}

Status WriteSafetensors(const std::string& path, const SafetensorsContents& contents) {
  StatusOr<std::string> bytes = EncodeSafetensors(contents);
  if (!bytes.ok()) return bytes.status().WithPrefix(path);
  return WriteFileAtomically(path, *bytes);
}

StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return DecodeSafetensors(bytes, path);
}

StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path) {
  PX_ASSIGN_OR_RETURN(const std::string length_bytes, ReadFileRange(path, 0, 8));
  // The bytes after the length are only known once the header is read: at most what
  // the length asks for, and fewer when the file ends first.
  PX_ASSIGN_OR_RETURN(const uint64_t asked, HeaderLength(length_bytes, UINT64_MAX, path));
  PX_ASSIGN_OR_RETURN(const std::string json, ReadFileRange(path, 8, asked));
  PX_RETURN_IF_ERROR(HeaderLength(length_bytes, json.size(), path).status());
  PX_ASSIGN_OR_RETURN(const JsonValue header, ParseHeader(json, path));
  std::map<std::string, std::string> metadata;
  if (const JsonValue* value = header.Find("__metadata__")) {
    PX_RETURN_IF_ERROR(ReadMetadata(*value, path, &metadata));
  }
  // Checksums are checked by a full read only.
  metadata.erase(std::string(kDataChecksumKey));
  std::erase_if(metadata,
                [](const auto& entry) { return entry.first.starts_with(kTensorChecksumPrefix); });
  return metadata;
}

}  // namespace parallax
