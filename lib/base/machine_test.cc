#include "lib/base/machine.h"

#include <filesystem>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

TEST_CASE("MemAvailable and MemTotal are read from /proc/meminfo's text") {
  const std::string meminfo = "MemTotal:       24576000 kB\nMemFree:  100 kB\n"
                              "MemAvailable:   20000000 kB\nBuffers: 5 kB\n";
  CHECK(MeminfoBytesOf(meminfo, "MemAvailable") == int64_t{20000000} * 1024);
  CHECK(MeminfoBytesOf(meminfo, "MemTotal") == int64_t{24576000} * 1024);
  CHECK(MeminfoBytesOf("MemTotalX: 5 kB\nMemTotal: 7 kB\n", "MemTotal") == 7 * 1024);
  CHECK_FALSE(MeminfoBytesOf("MemTotal: 5 kB\n", "MemAvailable").has_value());
  CHECK_FALSE(MeminfoBytesOf("MemAvailable: lots kB\n", "MemAvailable").has_value());
}

TEST_CASE("a cgroup v2 limit lowers what is available") {
  const std::string root = testing::TempDir();
  std::filesystem::create_directories(root + "/job/step");
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.max", "1073741824\n").ok());
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.current", "73741824\n").ok());
  CHECK(CgroupRoomOf(root, "0::/job/step\n") == int64_t{1000000000});
  CHECK(CgroupLimitOf(root, "0::/job/step\n") == int64_t{1073741824});
  REQUIRE(WriteFileAtomically(root + "/job/step/memory.max", "max\n").ok());
  CHECK_FALSE(CgroupRoomOf(root, "0::/job/step\n").has_value());
  CHECK_FALSE(CgroupLimitOf(root, "0::/job/step\n").has_value());
  CHECK_FALSE(CgroupRoomOf(root, "0::/nowhere\n").has_value());
  CHECK_FALSE(CgroupRoomOf(root, "12:memory:/job\n").has_value());  // cgroup v1: not read
}

TEST_CASE("the names of this machine") {
  CHECK(NamesThisMachine("localhost"));
  CHECK(NamesThisMachine("127.0.0.1"));
  CHECK_FALSE(NamesThisMachine("far-away-node"));
  CHECK_FALSE(NamesThisMachine(""));
  const std::string mine = MachineHostName();
  REQUIRE_FALSE(mine.empty());  // Linux gives every machine one
  CHECK(NamesThisMachine(mine));
  const std::string short_name = mine.substr(0, mine.find('.'));
  CHECK(NamesThisMachine(short_name + ".cluster.example"));
}

TEST_CASE("this machine: cores and some memory") {
  CHECK(MachineCores() >= 1);
  std::optional<int64_t> available = AvailableMemoryBytes();
  REQUIRE(available.has_value());  // Linux
  CHECK(*available > 0);
  std::optional<int64_t> total = TotalMemoryBytes();
  REQUIRE(total.has_value());
  CHECK(*total >= *available);
  // This process holds at least the 64 MiB it has just touched.
  std::vector<char> touched(size_t{64} << 20, 1);
  CHECK(PeakResidentBytes() >= static_cast<int64_t>(touched.size()));
}

}  // namespace
}  // namespace parallax
