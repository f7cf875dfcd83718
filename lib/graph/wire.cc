#include "lib/graph/wire.h"

namespace parallax::wire {

std::string_view WireTypeName(WireType type) {
  switch (type) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLengthDelimited: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

bool ReadVarint(std::string_view data, size_t* pos, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= data.size()) return false;
    const auto byte = static_cast<uint8_t>(data[(*pos)++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

Status Reader::Next(Field* field) {
  const size_t start = pos_;
  uint64_t tag = 0;
  if (!ReadVarint(data_, &pos_, &tag)) {
    return InvalidArgumentError("truncated field tag at byte {}", start);
  }
  const uint64_t number = tag >> 3;
  const uint32_t type = static_cast<uint32_t>(tag & 7);
  if (number == 0 || number > 0x1fffffff) {
    return InvalidArgumentError("invalid field number {} at byte {}", number, start);
  }
  field->number = static_cast<uint32_t>(number);
  field->offset = start;
  field->varint = 0;
  field->bytes = {};
  switch (type) {
    case 0:
      field->type = WireType::kVarint;
      if (!ReadVarint(data_, &pos_, &field->varint)) {
        return InvalidArgumentError("truncated varint in field {} at byte {}", number, start);
      }
      break;
    case 1:
    case 5: {
      field->type = type == 1 ? WireType::kFixed64 : WireType::kFixed32;
      const size_t size = type == 1 ? 8 : 4;
      if (data_.size() - pos_ < size) {
        return InvalidArgumentError("truncated {} field {} at byte {}",
                                    WireTypeName(field->type), number, start);
      }
      field->bytes = data_.substr(pos_, size);
      pos_ += size;
      break;
    }
    case 2: {
      field->type = WireType::kLengthDelimited;
      uint64_t length = 0;
      if (!ReadVarint(data_, &pos_, &length)) {
        return InvalidArgumentError("truncated length of field {} at byte {}", number, start);
      }
      if (length > data_.size() - pos_) {
        return InvalidArgumentError(
            "field {} at byte {} declares {} bytes but only {} remain (truncated or corrupt)",
            number, start, length, data_.size() - pos_);
      }
      field->bytes = data_.substr(pos_, length);
      pos_ += length;
      break;
    }
    case 3:
    case 4:
      return InvalidArgumentError("field {} at byte {} uses the group wire type, "
                                  "which GraphDef never contains",
                                  number, start);
    default:
      return InvalidArgumentError("invalid wire type {} for field {} at byte {}", type, number,
                                  start);
  }
  field->record = data_.substr(start, pos_ - start);
  return Status::Ok();
}

void AppendVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendTag(std::string* out, uint32_t number, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(number) << 3) | static_cast<uint64_t>(type));
}

void AppendLengthDelimited(std::string* out, uint32_t number, std::string_view payload) {
  AppendTag(out, number, WireType::kLengthDelimited);
  AppendVarint(out, payload.size());
  out->append(payload);
}

size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

}  // namespace parallax::wire
