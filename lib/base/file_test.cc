#include "lib/base/file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

namespace parallax {
namespace {

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

TEST_CASE("ReadFileToString reports missing files and directories by path") {
  auto missing = ReadFileToString(TempDir() + "/does-not-exist.pb");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == TempDir() + "/does-not-exist.pb: no such file");
  auto dir = ReadFileToString(TempDir());
  CHECK(dir.status().message() == TempDir() + ": is a directory, not a file");
}

TEST_CASE("WriteFileAtomically writes, replaces and leaves no temporary behind") {
  std::string path = TempDir() + "/atomic.txt";
  REQUIRE(WriteFileAtomically(path, "one").ok());
  REQUIRE(WriteFileAtomically(path, "two").ok());
  CHECK(*ReadFileToString(path) == "two");
  for (auto& entry : std::filesystem::directory_iterator(TempDir())) {
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
  auto big = ReadFileToString(path, 2);
  CHECK(big.status().message() == path + ": file is 3 B, over the limit of 2 B");
}

TEST_CASE("ReadFileRange reads a window, short at the end, with the same errors") {
  const std::string path = TempDir() + "/range.txt";
  REQUIRE(WriteFileAtomically(path, "0123456789").ok());
  CHECK(*ReadFileRange(path, 0, 4) == "0123");
  CHECK(*ReadFileRange(path, 8, 4) == "89");
  CHECK(ReadFileRange(path, 20, 4)->empty());
  CHECK(ReadFileRange(TempDir() + "/nope", 0, 1).status().message() ==
        TempDir() + "/nope: no such file");
  CHECK(ReadFileRange(TempDir(), 0, 1).status().message() ==
        TempDir() + ": is a directory, not a file");
}

TEST_CASE("HumanBytes") {
  CHECK(HumanBytes(17) == "17 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(3ull << 30) == "3.0 GiB");
}

}  // namespace
}  // namespace parallax
