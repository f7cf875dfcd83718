// UTF-8 validation, for text read from files that must be UTF-8: YAML (cluster specs),
// protobuf `string` fields (graphs). Valid means well-formed as RFC 3629 defines it: no
// overlong forms, no surrogates, no code points above U+10FFFF, nothing cut short.
#ifndef PARALLAX_LIB_BASE_UTF8_H_
#define PARALLAX_LIB_BASE_UTF8_H_

#include <cstddef>
#include <string_view>

namespace parallax {

// The offset of the first byte of `text` that does not start a valid UTF-8 sequence (or
// whose sequence is broken); npos when all of it is valid.
size_t FirstInvalidUtf8(std::string_view text);

inline bool IsValidUtf8(std::string_view text) {
  return FirstInvalidUtf8(text) == std::string_view::npos;
}

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_UTF8_H_
