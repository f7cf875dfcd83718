// NumPy .npy files: one array per file, as numpy.save writes them.
//
// Format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte,
// the header length (2 bytes little-endian in v1.0, 4 bytes in v2.0 and v3.0), then the
// header — a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (60000, 784), } padded with spaces and ending in '\n' (v3.0 allows UTF-8) —
// then the raw elements.
//
// Supported element types (descr): '<f4' float, '<f8' double, '<i4' int32, '<i8' int64,
// '|u1' uint8, '|i1' int8, '|b1' bool, in C (row-major) order. Fortran-order arrays,
// big-endian types and every other descr are errors that say how to convert the array.
// Cost: the file is read into memory once and copied into the tensor.
#ifndef PARALLAX_LIB_RUNTIME_DATA_NPY_H_
#define PARALLAX_LIB_RUNTIME_DATA_NPY_H_

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// Reads a .npy file. Errors start with the path.
StatusOr<Tensor> ReadNpy(const std::string& path);

// Parses .npy contents; `source` names the file in messages.
StatusOr<Tensor> ParseNpy(std::string_view contents, std::string_view source);

// The .npy encoding of `tensor` in format version `major` (1, 2 or 3). The header is
// padded so that the data starts at a multiple of 64 bytes, as numpy does.
StatusOr<std::string> EncodeNpy(const Tensor& tensor, int major = 1);

// Writes `tensor` to `path` atomically (format version 1.0).
Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_DATA_NPY_H_
