#include "lib/cluster/hostfile.h"


#include <catch2/catch.hpp>
#include <string>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

std::string ErrorOf(const std::string& text) {
  StatusOr<Hostfile> hostfile = ParseHostfile(text, "hosts");
  REQUIRE_FALSE(hostfile.ok());
  CHECK(hostfile.status().code() == StatusCode::kInvalidArgument);
  return hostfile.status().message();
}

std::string HostListError(const std::string& list) {
  StatusOr<Hostfile> hostfile = ParseHostList(list);
  REQUIRE_FALSE(hostfile.ok());
  CHECK(hostfile.status().code() == StatusCode::kInvalidArgument);
  return hostfile.status().message();
}

TEST_CASE("OpenMPI hostfile forms: slots, max_slots, defaults, comments, blank lines") {
  StatusOr<Hostfile> hostfile = ParseHostfile(
      "# the cluster\n"
      "node1 slots=4\n"
      "\n"
      "node2 slots=4 max_slots=8   # may oversubscribe\n"
      "   node3\n"
      "node4 slots = 2 max-slots = 2\r\n"
      "localhost slots=2\n"
      "10.0.0.5\tslots=1",  // no final newline, tab separated
      "hosts");
  REQUIRE(hostfile.ok());
  CHECK(hostfile->source == "hosts");
  REQUIRE(hostfile->hosts.size() == 6);
  const auto& h = hostfile->hosts;
  CHECK(h[0].name == "node1");
  CHECK(h[0].slots == 4);
  CHECK_FALSE(h[0].max_slots.has_value());
  CHECK(h[0].line == 2);
  CHECK(h[1].name == "node2");
  CHECK(h[1].slots == 4);
  CHECK(h[1].max_slots == 8);
  CHECK(h[1].line == 4);
  CHECK(h[2].name == "node3");
  CHECK(h[2].slots == 1);  // OpenMPI's default
  CHECK(h[3].name == "node4");
  CHECK(h[3].slots == 2);
  CHECK(h[3].max_slots == 2);
  CHECK(h[4].name == "localhost");
  CHECK(h[5].name == "10.0.0.5");
  CHECK(h[5].line == 8);
  CHECK(hostfile->total_slots() == 14);
  CHECK(hostfile->FindHost("node3") == &h[2]);
  CHECK(hostfile->FindHost("node9") == nullptr);
  CHECK(FormatHostfile(*hostfile) ==
        "node1 slots=4\nnode2 slots=4 max_slots=8\nnode3 slots=1\nnode4 slots=2 max_slots=2\n"
        "localhost slots=2\n10.0.0.5 slots=1\n");
  // The formatted text reads back to the same hosts.
  StatusOr<Hostfile> again = ParseHostfile(FormatHostfile(*hostfile), "again");
  REQUIRE(again.ok());
  CHECK(FormatHostfile(*again) == FormatHostfile(*hostfile));
}

TEST_CASE("hostfile errors name the file and line") {
  CHECK(ErrorOf("node1 slots=4\nnode2 slots=4 slots=2\n") ==
        "hosts:2: node2: 'slots' is given twice");
  CHECK(ErrorOf("node1 slots=-1\n") == "hosts:1: node1: slots must be at least 1, got -1");
  CHECK(ErrorOf("node1 slots=2000\n") == "hosts:1: node1: slots=2000 is over the limit of 1024");
  CHECK(ErrorOf("node1 slots=4 max_slots=0\n") ==
        "hosts:1: node1: max_slots must be 1 to 1048576, got 0");
  CHECK(ErrorOf("= slots=4\n") == "hosts:1: expected a host name first, got '='");
  CHECK(ErrorOf("node1 slots=4 =\n") ==
        "hosts:1: node1: expected keyword=value such as slots=4, got '='");
  CHECK(ErrorOf("node1,node2\n") ==
        "hosts:1: 'node1,node2' is not a valid host name (letters, digits, '.', '-', '_')");
  CHECK(ErrorOf("node1 cores=4\n") ==
        "hosts:1: node1: unknown keyword 'cores' (Parallax reads 'slots' and 'max_slots')");
  CHECK(ErrorOf("node1 slots=4.5\n") == "hosts:1: node1: slots='4.5' is not a number");
}

TEST_CASE("-H lists: node:slots, slots default to 1") {
  StatusOr<Hostfile> list = ParseHostList("node1:4,node2:4,node3");
  REQUIRE(list.ok());
  CHECK(list->source == "-H");
  REQUIRE(list->hosts.size() == 3);
  CHECK(list->hosts[0].name == "node1");
  CHECK(list->hosts[0].slots == 4);
  CHECK(list->hosts[0].line == 0);
  CHECK(list->hosts[2].slots == 1);
  CHECK(list->total_slots() == 9);
  StatusOr<Hostfile> local = ParseHostList("localhost:2");
  REQUIRE(local.ok());
  CHECK(local->total_slots() == 2);

  CHECK(HostListError("") == "-H: no hosts (expected node1:4,node2:4)");
  CHECK(HostListError("node1:4,,node2") == "-H: entry 2 of 'node1:4,,node2' is empty");
  CHECK(HostListError("node1:4,") == "-H: entry 2 of 'node1:4,' is empty");
  CHECK(HostListError("node1:x") == "-H: 'node1:x': slot count 'x' is not a number");
  CHECK(HostListError("node1:") == "-H: 'node1:': slot count '' is not a number");
  CHECK(HostListError("node1:0") == "-H: 'node1:0': slot count must be 1 to 1024, got 0");
  CHECK(HostListError("node1:2,node1:2") == "-H: host 'node1' is listed twice");
  CHECK(HostListError("node 1:2") ==
        "-H: 'node 1' is not a valid host name (letters, digits, '.', '-', '_')");
  StatusOr<Hostfile> long_name = ParseHostList(std::string(254, 'a') + ":2");
  REQUIRE_FALSE(long_name.ok());
  CHECK(long_name.status().message() == "-H: '" + std::string(40, 'a') +
                                            "...' is 254 characters long; a host name has at "
                                            "most 253");
  CHECK(ParseHostList(std::string(253, 'a') + ":2").ok());
}

TEST_CASE("a missing hostfile and a directory are clear errors") {
  StatusOr<Hostfile> missing = LoadHostfile("/nonexistent/hosts");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "/nonexistent/hosts: no such file");
  const std::string dir = testing::TempDir();
  CHECK(LoadHostfile(dir).status().message() == dir + ": is a directory, not a file");
  REQUIRE(WriteFileAtomically(dir + "/hosts", "node1 slots=2\n").ok());
  StatusOr<Hostfile> loaded = LoadHostfile(dir + "/hosts");
  REQUIRE(loaded.ok());
  CHECK(loaded->source == dir + "/hosts");
}

// Lines for *.hosts files are hostfile cases; the rest are cluster specs.
bool IsHostfileCase(const std::string& file) {
  return file.size() > 6 && file.compare(file.size() - 6, 6, ".hosts") == 0;
}

// testdata/bad_cluster/expected_errors.txt: the lines for *.hosts files are hostfiles.
TEST_CASE("every malformed hostfile gives its exact one-line error") {
  const std::vector<testing::ExpectedError> all_cases =
      testing::ReadExpectedErrors(testing::RepoPath("testdata/bad_cluster"));
  REQUIRE_FALSE(all_cases.empty());
  int cases = 0;
  for (const auto& [file, message] : all_cases) {
    if (!IsHostfileCase(file)) continue;
    INFO(file);
    StatusOr<Hostfile> hostfile = LoadHostfile(file);
    REQUIRE_FALSE(hostfile.ok());
    CHECK(hostfile.status().message() == message);
    CHECK(hostfile.status().message().find('\n') == std::string::npos);
    ++cases;
  }
  CHECK(cases >= 6);
}

}  // namespace
}  // namespace parallax
