#include "lib/base/fnv1a.h"

#include <fmt/format.h>

namespace parallax {

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;  // the offset basis
  for (const char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;  // the FNV prime
  }
  return hash;
}

std::string Fnv1a64Hex(std::string_view bytes) { return fmt::format("{:016x}", Fnv1a64(bytes)); }

}  // namespace parallax
