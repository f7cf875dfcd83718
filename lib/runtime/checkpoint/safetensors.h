// safetensors files (https://github.com/huggingface/safetensors): named tensors with a
// JSON header, the checkpoint format of `parallax run`.
//
// Layout: an 8-byte little-endian header length L; L bytes of JSON
//   {"__metadata__": {"step": "100", ...},
//    "w": {"dtype": "F32", "shape": [784, 10], "data_offsets": [0, 31360]}, ...}
// padded with spaces to a multiple of 8; then the data section: each tensor's raw
// little-endian, row-major elements at [begin, end) relative to the section's start.
// Dtypes: F32 F64 I32 I64 U8 BOOL. Metadata maps strings to strings.
//
// Checksums: the writer puts every tensor's CRC-32C (8 hex digits) into the metadata as
// `crc32c:NAME`, as TensorFlow's bundle keeps one per tensor; a full read checks each one
// present and leaves them out of the metadata it returns, so that bytes flipped on disk
// or in transit are an error naming the file and the tensor rather than silently
// different values. Files of an earlier version carry one `data_crc32c` for the whole
// data section instead, which is checked the same way; files from elsewhere have none.
//
// Reading validates everything a corrupt or hostile file could get wrong — a header
// length beyond the file, JSON that does not parse, entries without dtype, shape or
// data_offsets, offsets outside the data, overlapping or gapped tensors, a byte count
// that does not match dtype x shape, bytes after the last tensor, a data section whose
// checksum differs — and reports the first problem as one line naming the file and the
// tensor.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_SAFETENSORS_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_SAFETENSORS_H_

#include <map>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// The metadata key prefix of a tensor's CRC-32C, and the older key of the whole data
// section's (see the file comment).
inline constexpr std::string_view kTensorChecksumPrefix = "crc32c:";
inline constexpr std::string_view kDataChecksumKey = "data_crc32c";

// Headers larger than this are refused before parsing (the reference implementation's
// limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// "F32" for DT_FLOAT, ...; "" for types safetensors files here do not hold.
std::string_view SafetensorsDtypeName(DataType dtype);

// The file's bytes. Errors: a dtype without a safetensors name.
StatusOr<std::string> EncodeSafetensors(const SafetensorsContents& contents);
// Parses a file's bytes; `source` (the path) starts every message.
StatusOr<SafetensorsContents> DecodeSafetensors(std::string_view bytes, std::string_view source);

// Writes atomically (temporary sibling, then rename).
Status WriteSafetensors(const std::string& path, const SafetensorsContents& contents);
StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path);
// The __metadata__ alone, reading only the header (the same header checks and errors;
// the checksum is not checked, nor returned).
StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_SAFETENSORS_H_
