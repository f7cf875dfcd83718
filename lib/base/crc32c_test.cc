#include "lib/base/crc32c.h"

#include <catch2/catch.hpp>
#include <string>

namespace parallax {
namespace {

TEST_CASE("CRC-32C matches the published check values") {
  // RFC 3720 (iSCSI), appendix B.4, and the common "123456789" check value.
  CHECK(Crc32c("123456789") == 0xE3069283u);
  CHECK(Crc32c("") == 0u);
  CHECK(Crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(Crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[static_cast<size_t>(i)] = static_cast<char>(i);
    descending[static_cast<size_t>(i)] = static_cast<char>(31 - i);
  }
  CHECK(Crc32c(ascending) == 0x46DD794Eu);
  CHECK(Crc32c(descending) == 0x113FDB5Cu);
}

TEST_CASE("CRC-32C extends piece by piece") {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const std::string_view all(text);
    CHECK(Crc32cExtend(Crc32c(all.substr(0, cut)), all.substr(cut)) == Crc32c(text));
  }
  CHECK(Crc32cExtend(0, "123456789") == 0xE3069283u);
}

TEST_CASE("masking is LevelDB's and TFRecord's, and unmasking inverts it") {
  // LevelDB's crc32c_test: Mask(crc) != crc, Mask(Mask(crc)) != crc, Unmask inverts.
  const uint32_t crc = Crc32c("foo");
  CHECK(MaskCrc32c(crc) != crc);
  CHECK(MaskCrc32c(MaskCrc32c(crc)) != crc);
  CHECK(UnmaskCrc32c(MaskCrc32c(crc)) == crc);
  CHECK(UnmaskCrc32c(UnmaskCrc32c(MaskCrc32c(MaskCrc32c(crc)))) == crc);
}

}  // namespace
}  // namespace parallax
