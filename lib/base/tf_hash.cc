// TensorFlow's string hashes (tf_hash.h): FarmHash and highwayhash's SipHash from their
// Debian libraries, MurmurHash64A written out (TF's own Hash64).
#include "lib/base/tf_hash.h"

#include <farmhash.h>
#include <highwayhash/sip_hash.h>

#include <cstring>

namespace parallax::tf_hash {

uint64_t Fingerprint64(std::string_view s) { return util::Fingerprint64(s.data(), s.size()); }

uint64_t LegacyHash64(std::string_view s) {
  constexpr uint64_t kSeed = 0xDECAFCAFFEULL;
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  constexpr int kShift = 47;
  const unsigned char* data = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint64_t h = kSeed ^ (n * kMul);
  for (; n >= 8; n -= 8, data += 8) {
    uint64_t k = 0;
    std::memcpy(&k, data, 8);  // little-endian words, as TF's DecodeFixed64 on its hosts
    k *= kMul;
    k ^= k >> kShift;
    k *= kMul;
    h ^= k;
    h *= kMul;
  }
  if (n > 0) {
    // The last 1..7 bytes, the first one lowest.
    for (size_t i = n; i-- > 0;) h ^= static_cast<uint64_t>(data[i]) << (8 * i);
    h *= kMul;
  }
  h ^= h >> kShift;
  h *= kMul;
  h ^= h >> kShift;
  return h;
}

uint64_t StrongKeyedHash(const std::array<uint64_t, 2>& key, std::string_view s) {
  const highwayhash::SipHashState::Key sip_key = {key[0], key[1]};
  return highwayhash::SipHash(sip_key, s.data(), s.size());
}

}  // namespace parallax::tf_hash
