#include "lib/base/utf8.h"

namespace parallax {

size_t FirstInvalidUtf8(std::string_view text) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  for (size_t i = 0; i < text.size();) {
    const unsigned char b = byte(i);
    size_t length;
    if (b < 0x80) {
      ++i;
      continue;
    }
    if ((b & 0xe0) == 0xc0 && b >= 0xc2) {
      length = 2;
    } else if ((b & 0xf0) == 0xe0) {
      length = 3;
    } else if ((b & 0xf8) == 0xf0 && b <= 0xf4) {
      length = 4;
    } else {
      return i;
    }
    if (length > text.size() - i) return i;
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xc0) != 0x80) return i;
    }
    const unsigned char next = byte(i + 1);
    if ((b == 0xe0 && next < 0xa0) || (b == 0xf0 && next < 0x90)) return i;  // overlong
    if (b == 0xed && next >= 0xa0) return i;                                // surrogates
    if (b == 0xf4 && next >= 0x90) return i;                                // > U+10FFFF
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace parallax
