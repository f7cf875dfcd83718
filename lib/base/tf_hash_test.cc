// Tests of TensorFlow's string hashes against published values: FarmHash Fingerprint64
// (the reference's test strings, and TF's own test comments), SipHash-2-4 (the SipHash
// paper's 64 vectors, and TF's StringToHashBucketStrong test), TF's legacy Hash64 (TF's
// test comments) and FingerprintCat64 (through TF's sparse-cross test, whose expected
// ids come from chaining it).
#include "lib/base/tf_hash.h"

#include <catch2/catch.hpp>

#include <string>

namespace parallax::tf_hash {
namespace {

TEST_CASE("Fingerprint64 is FarmHash's Fingerprint64 (farmhashna::Hash64)") {
  // The FarmHash reference's test strings, one per length class of the algorithm
  // (0, 1..3, 4..7, 8..16, 17..32, 33..64, and over 64 bytes).
  CHECK(Fingerprint64("") == 0x9ae16a3b2f90404fULL);
  CHECK(Fingerprint64("a") == 0xb3454265b6df75e3ULL);
  CHECK(Fingerprint64("abc") == 0x24a5b3a074e7f369ULL);
  CHECK(Fingerprint64("abcd") == 0x1a5502de4a1f8101ULL);
  CHECK(Fingerprint64("abcdefgh") == 0xfee9d22990c82909ULL);
  CHECK(Fingerprint64("0123456789") == 0xad052244b781c4ebULL);
  CHECK(Fingerprint64("0123456789^0123456789") == 0xdebcba8e6f3eabd1ULL);
  CHECK(Fingerprint64("C is as portable as Stonehedge!!") == 0xb944f8a16261e414ULL);
  CHECK(Fingerprint64("Discard medicine more than two years old.") == 0xe8f89ab6df9bdd25ULL);
  CHECK(Fingerprint64("For every action there is an equal and opposite government program.") ==
        0x55182f8859eca4ceULL);
  CHECK(Fingerprint64("You remind me of a TV show, but that's all right: I watch it anyway.") ==
        0xabcdb319fcf2826cULL);
  // TF's StringToHashBucketFast test: Fingerprint64('a'..'d').
  CHECK(Fingerprint64("a") == 12917804110809363939ULL);
  CHECK(Fingerprint64("b") == 11795596070477164822ULL);
  CHECK(Fingerprint64("c") == 11430444447143000872ULL);
  CHECK(Fingerprint64("d") == 4470636696479570465ULL);
}

TEST_CASE("StrongKeyedHash is SipHash-2-4 (the SipHash paper's vectors)") {
  // Key 00 01 .. 0f, message 00 01 .. (len-1): the reference implementation's vectors.
  const std::array<uint64_t, 2> key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  std::string message;
  for (int i = 0; i < 64; ++i) message.push_back(static_cast<char>(i));
  const std::vector<std::pair<size_t, uint64_t>> vectors = {
      {0, 0x726fdb47dd0e0e31ULL},  {1, 0x74f839c593dc67fdULL},  {2, 0x0d6c8009d9a94f5aULL},
      {3, 0x85676696d7fb7e2dULL},  {7, 0xab0200f58b01d137ULL},  {8, 0x93f5f5799a932462ULL},
      {9, 0x9e0082df0ba9e4b0ULL},  {15, 0xa129ca6149be45e5ULL}, {16, 0x3f2acc7f57c29bdbULL},
      {31, 0x32d892fad841c342ULL}, {32, 0x7127512f72f27cceULL}, {63, 0x958a324ceb064572ULL}};
  for (const auto& [length, expected] : vectors) {
    INFO("length " << length);
    CHECK(StrongKeyedHash(key, std::string_view(message).substr(0, length)) == expected);
  }
  // TF's StringToHashBucketStrong test, key [98765, 132].
  CHECK(StrongKeyedHash({98765, 132}, "a") == 7157389809176466784ULL);
  CHECK(StrongKeyedHash({98765, 132}, "b") == 15805638358933211562ULL);
  CHECK(StrongKeyedHash({98765, 132}, "c") == 18100027895074076528ULL);
}

TEST_CASE("LegacyHash64 is TF's Hash64 with its default seed") {
  // TF's StringToHashBucket (legacy) test comments.
  CHECK(LegacyHash64("a") == 2996632905371535868ULL);
  CHECK(LegacyHash64("b") == 5795986006276551370ULL);
  CHECK(LegacyHash64("c") == 14899841994519054197ULL);
  // Longer than one 8-byte word, with and without a tail: deterministic and distinct.
  CHECK(LegacyHash64("abcdefgh") != LegacyHash64("abcdefgh "));
  CHECK(LegacyHash64("abcdefghijklmnop") == LegacyHash64("abcdefghijklmnop"));
}

TEST_CASE("FingerprintCat64 chains fingerprints as TF's sparse crosses do") {
  // TF's sparse_cross_op_test: crossing one feature of three columns with the default
  // hash key 0xDECAFCAFFE gives 1971693436396284976, and 4847552627144134031 with key + 1.
  auto cross = [](uint64_t key) {
    uint64_t h = key;
    for (const char* f : {"batch1-FC1-F1", "batch1-FC2-F1", "batch1-FC3-F1"}) {
      h = FingerprintCat64(h, Fingerprint64(f));
    }
    return h % 0x7fffffffffffffffULL;
  };
  CHECK(cross(0xDECAFCAFFEULL) == 1971693436396284976ULL);
  CHECK(cross(0xDECAFCAFFEULL + 1) == 4847552627144134031ULL);
  // Not commutative.
  CHECK(FingerprintCat64(1, 2) != FingerprintCat64(2, 1));
}

}  // namespace
}  // namespace parallax::tf_hash
