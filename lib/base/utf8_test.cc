#include "lib/base/utf8.h"

#include <catch2/catch.hpp>
#include <string>

namespace parallax {
namespace {

TEST_CASE("UTF-8: valid text, and the offset of the first invalid byte") {
  CHECK(IsValidUtf8(""));
  CHECK(IsValidUtf8("plain ASCII \t\n"));
  CHECK(IsValidUtf8("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80"));  // ü ß € 😀
  CHECK(IsValidUtf8("\xf4\x8f\xbf\xbf"));                                   // U+10FFFF
  CHECK(FirstInvalidUtf8("ab\xff") == 2);               // never a lead byte
  CHECK(FirstInvalidUtf8("a\x80") == 1);                // a continuation byte first
  CHECK(FirstInvalidUtf8("a\xc3") == 1);                // cut short
  CHECK(FirstInvalidUtf8("\xc3(") == 0);                // not a continuation
  CHECK(FirstInvalidUtf8("\xc0\x80") == 0);             // overlong (NUL in 2 bytes)
  CHECK(FirstInvalidUtf8("x\xe0\x80\x80") == 1);        // overlong 3-byte form
  CHECK(FirstInvalidUtf8("\xed\xa0\x80") == 0);         // a surrogate, U+D800
  CHECK(FirstInvalidUtf8("\xf4\x90\x80\x80") == 0);     // above U+10FFFF
  CHECK(FirstInvalidUtf8(std::string("a\0b", 3)) == std::string_view::npos);
}

}  // namespace
}  // namespace parallax
