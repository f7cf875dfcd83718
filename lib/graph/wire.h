// The protobuf wire format at the level Parallax needs it: walking the fields of a
// serialized message without building it, and appending fields to a buffer.
//
// The graph loader reads NodeDefs straight from the file bytes with this (no protobuf
// message objects on the hot path), keeping attrs and unknown fields as serialized
// spans; the saver writes them back unchanged. Errors give the byte offset.
#ifndef PARALLAX_LIB_GRAPH_WIRE_H_
#define PARALLAX_LIB_GRAPH_WIRE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/base/status.h"

namespace parallax::wire {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

std::string_view WireTypeName(WireType type);

struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t varint = 0;      // kVarint
  std::string_view bytes;   // kLengthDelimited payload; kFixed32/64 raw bytes
  std::string_view record;  // the whole field, tag included, as it appears in the input
  size_t offset = 0;        // of the tag, relative to the start of the message
};

// Walks the top-level fields of one serialized message.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool done() const { return pos_ >= data_.size(); }
  size_t offset() const { return pos_; }

  // Reads the next field. Errors say what is wrong at which byte offset (relative to
  // the start of `data`); groups are rejected (proto3 graphs never contain them).
  Status Next(Field* field);

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Reads the varint at *pos of `data` and moves *pos past it; false when it runs past the
// end or over 10 bytes.
bool ReadVarint(std::string_view data, size_t* pos, uint64_t* value);

void AppendVarint(std::string* out, uint64_t value);
void AppendTag(std::string* out, uint32_t number, WireType type);
void AppendLengthDelimited(std::string* out, uint32_t number, std::string_view payload);
size_t VarintSize(uint64_t value);

}  // namespace parallax::wire

#endif  // PARALLAX_LIB_GRAPH_WIRE_H_
