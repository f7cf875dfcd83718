// TensorFlow's string hashes, bit for bit, so that the kernels that bucket strings
// (StringToHashBucket*, SparseCross*, hashed vocabulary lookups) give TensorFlow's ids.
//
// Terms (TF's names):
//  - Fingerprint64(s): FarmHash's Fingerprint64 (farmhashna::Hash64, from libfarmhash),
//    TF's portable string fingerprint; StringToHashBucketFast is Fingerprint64 % buckets.
//  - FingerprintCat64(a, b): TF's combination of two fingerprints (not commutative); sparse
//    crosses chain it over the features of one cross.
//  - LegacyHash64(s): TF's Hash64, MurmurHash64A with TF's seed 0xDECAFCAFFE; the legacy
//    StringToHashBucket op uses it.
//  - StrongKeyedHash(key, s): SipHash-2-4 keyed by 128 bits (key[0] the low 64), from
//    highwayhash as TF takes it; StringToHashBucketStrong and strong sparse crosses.
// All are pure functions of the bytes; none depends on the platform's endianness beyond
// reading little-endian words, which is what TF does on the x86/ARM hosts it runs on.
#ifndef PARALLAX_LIB_BASE_TF_HASH_H_
#define PARALLAX_LIB_BASE_TF_HASH_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace parallax::tf_hash {

uint64_t Fingerprint64(std::string_view s);

inline uint64_t FingerprintCat64(uint64_t fp1, uint64_t fp2) {
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  auto shift_mix = [](uint64_t v) { return v ^ (v >> 47); };
  uint64_t result = fp1 ^ kMul;
  result ^= shift_mix(fp2 * kMul) * kMul;
  result *= kMul;
  result = shift_mix(result) * kMul;
  return shift_mix(result);
}

// TF's Hash64 with its default seed.
uint64_t LegacyHash64(std::string_view s);

uint64_t StrongKeyedHash(const std::array<uint64_t, 2>& key, std::string_view s);

}  // namespace parallax::tf_hash

#endif  // PARALLAX_LIB_BASE_TF_HASH_H_
