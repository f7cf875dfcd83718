// FNV-1a, 64 bits: the stable hash Parallax uses for fingerprints (a graph file, a
// checkpoint's graph, replicated variables compared across ranks) and for seeding
// random streams from node names. Stable across runs, builds and platforms, unlike
// std::hash; not for security.
#ifndef PARALLAX_LIB_BASE_FNV1A_H_
#define PARALLAX_LIB_BASE_FNV1A_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace parallax {

uint64_t Fnv1a64(std::string_view bytes);
// The same as 16 lower-case hex digits ("cbf29ce484222325" for "").
std::string Fnv1a64Hex(std::string_view bytes);

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_FNV1A_H_
