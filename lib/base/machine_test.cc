#include "lib/base/machine.h"

#include <filesystem>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

TEST_CASE("MemAvailable is read from /proc/meminfo's text") {
  CHECK(MemAvailableOf("MemTotal:       24576000 kB\nMemFree:  100 kB\n"
                       "MemAvailable:   20000000 kB\nBuffers: 5 kB\n") ==
        int64_t{20000000} * 1024);
  CHECK_FALSE(MemAvailableOf("MemTotal: 5 kB\n").has_value());
  CHECK_FALSE(MemAvailableOf("MemAvailable: lots kB\n").has_value());
}

TEST_CASE("a cgroup v2 limit lowers what is available") {
  const std::string root = testing::TempDir();
  std::filesystem::create_directories(root + "/job/step");
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.max", "1073741824\n").ok());
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.current", "73741824\n").ok());
  CHECK(CgroupRoomOf(root, "0::/job/step\n") == int64_t{1000000000});
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.max", "max\n").ok());
  CHECK_FALSE(CgroupRoomOf(root, "0::/job/step\n").has_value());
  CHECK_FALSE(CgroupRoomOf(root, "0::/nowhere\n").has_value());
  CHECK_FALSE(CgroupRoomOf(root, "12:memory:/job\n").has_value());  // cgroup v1: not read
}

TEST_CASE("this machine: cores and some memory") {
  CHECK(MachineCores() >= 1);
  std::optional<int64_t> available = AvailableMemoryBytes();
  REQUIRE(available.has_value());  // Linux
  CHECK(*available > 0);
}

}  // namespace
}  // namespace parallax
