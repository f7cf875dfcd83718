// IDX files: the format of the MNIST and Fashion-MNIST distributions
// (train-images-idx3-ubyte, train-labels-idx1-ubyte), plain or gzip-compressed.
//
// Format: a 4-byte magic — two zero bytes, a type code and the number of dimensions
// (0x00000801: 1-D unsigned bytes, e.g. labels; 0x00000803: 3-D unsigned bytes, e.g.
// N x 28 x 28 images) — then one big-endian uint32 per dimension, then the elements in
// row-major order, big-endian. Type codes: 0x08 uint8, 0x09 int8, 0x0B int16 (read as
// int32), 0x0C int32, 0x0D float, 0x0E double.
//
// A gzip file is recognised by its magic bytes (1f 8b), not its name, and decompressed
// in memory with zlib. Errors name the file and what is wrong: bad magic, unsupported
// type, truncated or over-long data.
#ifndef PARALLAX_LIB_RUNTIME_DATA_IDX_H_
#define PARALLAX_LIB_RUNTIME_DATA_IDX_H_

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// Reads an IDX file (gzip or not). Errors start with the path.
StatusOr<Tensor> ReadIdx(const std::string& path);

// Parses IDX contents (already decompressed); `source` names the file in messages.
StatusOr<Tensor> ParseIdx(std::string_view contents, std::string_view source);

// True when `contents` starts with the gzip magic.
bool IsGzip(std::string_view contents);
// Decompresses a gzip stream (all members); `source` names the file in messages.
StatusOr<std::string> Gunzip(std::string_view contents, std::string_view source);
// Compresses `contents` as one gzip member.
StatusOr<std::string> Gzip(std::string_view contents);

// The IDX encoding of a uint8, int8, int32, float or double tensor of rank >= 1.
StatusOr<std::string> EncodeIdx(const Tensor& tensor);
// Writes `tensor` to `path` atomically, gzip-compressed when `gzip`.
Status WriteIdx(const std::string& path, const Tensor& tensor, bool gzip);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_IDX_H_
