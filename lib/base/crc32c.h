// CRC-32C (Castagnoli), as TensorFlow's file formats use it: TFRecord and event-file
// framing, checkpoint index blocks and tensor checksums.
//
// Computed by Intel's ISA-L (libisal, crc32_iscsi: the same polynomial, SIMD-accelerated);
// these functions add the standard pre- and post-inversion so that Crc32c("123456789")
// is 0xE3069283 (RFC 3720's check value).
//
// A *masked* CRC is what TFRecord and LevelDB store next to the data they cover, so that
// a CRC of data that itself holds CRCs is not trivially related to them:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8.
#ifndef PARALLAX_LIB_BASE_CRC32C_H_
#define PARALLAX_LIB_BASE_CRC32C_H_

#include <cstdint>
#include <string_view>

namespace parallax {

// The CRC of `data`.
uint32_t Crc32c(std::string_view data);
// The CRC of A + B from the CRC of A (`crc`) and B: Crc32cExtend(Crc32c(a), b) ==
// Crc32c(a + b); Crc32cExtend(0, b) == Crc32c(b).
uint32_t Crc32cExtend(uint32_t crc, std::string_view data);

inline constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;
constexpr uint32_t MaskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta;
}
constexpr uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rotated = masked - kCrc32cMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_CRC32C_H_
