#include "lib/base/file.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

namespace parallax {
namespace {

std::string TestTmp() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

TEST_CASE("ReadFileToString reports missing files and directories by path") {
  auto missing = ReadFileToString(TestTmp() + "/does-not-exist.pb");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == TestTmp() + "/does-not-exist.pb: no such file");
  auto dir = ReadFileToString(TestTmp());
  CHECK(dir.status().message() == TestTmp() + ": is a directory, not a file");
}

TEST_CASE("WriteFileAtomically writes, replaces and leaves no temporary behind") {
  std::string path = TestTmp() + "/atomic.txt";
  REQUIRE(WriteFileAtomically(path, "one").ok());
  REQUIRE(WriteFileAtomically(path, "two").ok());
  CHECK(*ReadFileToString(path) == "two");
  for (auto& entry : std::filesystem::directory_iterator(TestTmp())) {
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
  auto big = ReadFileToString(path, 2);
  CHECK(big.status().message() == path + ": file is 3 B, over the limit of 2 B");
}

TEST_CASE("ReadFileRange reads a window, short at the end, with the same errors") {
  const std::string path = TestTmp() + "/range.txt";
  REQUIRE(WriteFileAtomically(path, "0123456789").ok());
  CHECK(*ReadFileRange(path, 0, 4) == "0123");
  CHECK(*ReadFileRange(path, 8, 4) == "89");
  CHECK(ReadFileRange(path, 20, 4)->empty());
  CHECK(ReadFileRange(TestTmp() + "/nope", 0, 1).status().message() ==
        TestTmp() + "/nope: no such file");
  CHECK(ReadFileRange(TestTmp(), 0, 1).status().message() ==
        TestTmp() + ": is a directory, not a file");
}

TEST_CASE("HumanBytes") {
  CHECK(HumanBytes(17) == "17 B");
  CHECK(HumanBytes(1536) == "1.5 KiB");
  CHECK(HumanBytes(3ull << 30) == "3.0 GiB");
}

TEST_CASE("TempDir: made under TMPDIR and removed with its files; a kept one stays") {
  const std::filesystem::path base = std::filesystem::path(std::getenv("TEST_TMPDIR")) / "tempdir";
  std::filesystem::create_directories(base);
  ::setenv("TMPDIR", base.c_str(), 1);
  std::string made;
  {
    StatusOr<TempDir> dir = TempDir::Make("px-test");
    REQUIRE(dir.ok());
    made = dir->path();
    CHECK(made.starts_with((base / "px-test.").string()));
    REQUIRE(WriteFileAtomically(dir->Sub("a.txt"), "x").ok());
    TempDir moved = std::move(*dir);  // the moved-from one removes nothing
    CHECK(std::filesystem::exists(moved.Sub("a.txt")));
  }
  CHECK_FALSE(std::filesystem::exists(made));
  const std::string keep = (base / "kept").string();
  {
    StatusOr<TempDir> kept = TempDir::Keep(keep, "--keep");
    REQUIRE(kept.ok());
    CHECK(kept->kept());
  }
  CHECK(std::filesystem::exists(keep));
  StatusOr<TempDir> again = TempDir::Keep(keep, "--keep");
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message() == "--keep " + keep + ": exists; name a directory that does not");
}

}  // namespace
}  // namespace parallax
