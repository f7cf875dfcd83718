#include "lib/base/crc32c.h"

#include <algorithm>
#include <climits>

#include <isa-l/crc.h>

namespace parallax {

uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  // ISA-L works on the raw register (no inversions) and takes an int length.
  uint32_t state = ~crc;
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), INT_MAX);
    state = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<char*>(data.data())),
                        static_cast<int>(n), state);
    data.remove_prefix(n);
  }
  return ~state;
}

uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

}  // namespace parallax
