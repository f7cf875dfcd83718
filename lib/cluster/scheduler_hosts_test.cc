// SLURM hostlists and count lists, SLURM and PBS allocations from the environment, and
// their one-line errors.
#include "lib/cluster/scheduler_hosts.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

using Names = std::vector<std::string>;

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string HostfileText(const Hostfile& hostfile) {
  std::string text;
  for (const HostfileEntry& host : hostfile.hosts) {
    text += fmt::format("{}:{}{} ", host.name, host.slots,
                        host.gpus ? fmt::format("/{}gpu", *host.gpus) : "");
  }
  return text;
}

TEST_CASE("SLURM hostlists: names, bracket ranges with their widths, several brackets") {
  CHECK(*ExpandSlurmHostlist("node1", "L") == Names{"node1"});
  CHECK(*ExpandSlurmHostlist("node[01-03,07],gpu5", "L") ==
        Names{"node01", "node02", "node03", "node07", "gpu5"});
  CHECK(*ExpandSlurmHostlist("n[8-10]", "L") == Names{"n8", "n9", "n10"});
  CHECK(*ExpandSlurmHostlist("rack[1-2]-n[1,3]", "L") ==
        Names{"rack1-n1", "rack1-n3", "rack2-n1", "rack2-n3"});
  CHECK(*ExpandSlurmHostlist("a[1]b,c", "L") == Names{"a1b", "c"});
  CHECK(*ExpandSlurmHostlist("10.0.0.[5-6]", "L") == Names{"10.0.0.5", "10.0.0.6"});
}

TEST_CASE("SLURM hostlists: errors name the variable and the bad part") {
  auto error = [](std::string_view list) {
    return ExpandSlurmHostlist(list, "SLURM_JOB_NODELIST").status().message();
  };
  CHECK(error("node[3-1]") == "SLURM_JOB_NODELIST: 'node[3-1]': range 3-1 runs backwards");
  CHECK(error("node[1-3") == "SLURM_JOB_NODELIST: 'node[1-3': '[' is not closed");
  CHECK(error("node1-3]") == "SLURM_JOB_NODELIST: 'node1-3]': ']' without '['");
  CHECK(error("n[1[2]]") == "SLURM_JOB_NODELIST: 'n[1[2]]': '[' inside '['");
  CHECK(error("node[a-b]") ==
        "SLURM_JOB_NODELIST: 'node[a-b]': 'a-b' is not a number or a range such as 01-03");
  CHECK(error("node[1,]") ==
        "SLURM_JOB_NODELIST: 'node[1,]': '' is not a number or a range such as 01-03");
  CHECK(error("a,,b") == "SLURM_JOB_NODELIST: 'a,,b' has an empty entry");
  CHECK(error("") == "SLURM_JOB_NODELIST: no hosts (expected a list such as node[01-03],gpu5)");
  CHECK(error("node[1-2],node2") == "SLURM_JOB_NODELIST: host 'node2' is listed twice");
  CHECK(error("user@node") == "SLURM_JOB_NODELIST: 'user@node' is not a valid host name "
                              "(user@host is not supported; set the user in ~/.ssh/config)");
  CHECK(error(std::string(300, 'n')) ==
        "SLURM_JOB_NODELIST: '" + std::string(40, 'n') +
            "...' is 300 characters long; a host name has at most 253");
  CHECK(error("n[0-99999999]") ==
        "SLURM_JOB_NODELIST: 'n[0-99999999]' names more than 65536 hosts");
}

TEST_CASE("SLURM count lists") {
  CHECK(*ExpandSlurmCounts("4", "C") == std::vector<int>{4});
  CHECK(*ExpandSlurmCounts("2(x3),1", "C") == std::vector<int>{2, 2, 2, 1});
  CHECK(*ExpandSlurmCounts("1,8(x2)", "C") == std::vector<int>{1, 8, 8});
  auto error = [](std::string_view text) {
    return ExpandSlurmCounts(text, "SLURM_TASKS_PER_NODE").status().message();
  };
  CHECK(error("2(x3") == "SLURM_TASKS_PER_NODE: '2(x3' is not a count such as 4 or 2(x3)");
  CHECK(error("0") == "SLURM_TASKS_PER_NODE: '0' is not a count such as 4 or 2(x3)");
  CHECK(error("x") == "SLURM_TASKS_PER_NODE: 'x' is not a count such as 4 or 2(x3)");
  CHECK(error("2(x0)") == "SLURM_TASKS_PER_NODE: '2(x0)' is not a count such as 4 or 2(x3)");
  CHECK(error("") == "SLURM_TASKS_PER_NODE: '' is not a count such as 4 or 2(x3)");
}

TEST_CASE("a SLURM allocation: nodes with the tasks per node (else CPUs), GPUs per node") {
  CHECK(!SlurmAllocation(Env({}))->has_value());
  auto tasks = SlurmAllocation(Env({{"SLURM_JOB_NODELIST", "node[01-03],gpu5"},
                                    {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                                    {"SLURM_JOB_CPUS_PER_NODE", "64(x4)"}}));
  REQUIRE(tasks.ok());
  REQUIRE(tasks->has_value());
  CHECK((*tasks)->source == "SLURM_JOB_NODELIST");
  CHECK(HostfileText(**tasks) == "node01:2 node02:2 node03:2 gpu5:1 ");
  auto cpus = SlurmAllocation(Env({{"SLURM_NODELIST", "n[1-2]"},
                                   {"SLURM_JOB_CPUS_PER_NODE", "8(x2)"},
                                   {"SLURM_GPUS_PER_NODE", "a100:4"}}));
  REQUIRE(cpus.ok());
  CHECK((*cpus)->source == "SLURM_NODELIST");
  CHECK(HostfileText(**cpus) == "n1:8/4gpu n2:8/4gpu ");
  CHECK(SlurmAllocation(Env({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}}))
            .status()
            .message() == "SLURM_TASKS_PER_NODE='2(x2)' gives 2 counts for the 3 hosts of "
                          "SLURM_JOB_NODELIST");
  CHECK(SlurmAllocation(Env({{"SLURM_JOB_NODELIST", "n1"}})).status().message() ==
        "SLURM_JOB_NODELIST is set but neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE "
        "says how many ranks each node takes");
  CHECK(SlurmAllocation(Env({{"SLURM_JOB_NODELIST", "n1"},
                             {"SLURM_TASKS_PER_NODE", "1"},
                             {"SLURM_GPUS_PER_NODE", "many"}}))
            .status()
            .message() == "SLURM_GPUS_PER_NODE: 'many' is not a GPU count such as 4 or a100:4");
}

TEST_CASE("a PBS node file: one line per slot, hosts in order of first appearance") {
  auto parsed = ParsePbsNodefile("node2\nnode1\nnode2\n\n  node2  \nnode1\nnode3\n", "nodes");
  REQUIRE(parsed.ok());
  CHECK(HostfileText(*parsed) == "node2:3 node1:2 node3:1 ");
  CHECK(ParsePbsNodefile("node1\nnode 2\n", "nodes").status().message() ==
        "nodes:2: 'node 2' is not a valid host name (one host name per line)");
  CHECK(ParsePbsNodefile("\n\n", "nodes").status().message() ==
        "nodes: no hosts (expected one host name per line and slot)");

  char path[] = "/tmp/parallax-pbs-test.XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(path) << "cn7\ncn7\ncn9\ncn9\n";
  auto pbs = SchedulerAllocation(Env({{"PBS_NODEFILE", path}}));
  REQUIRE(pbs.ok());
  REQUIRE(pbs->has_value());
  CHECK((*pbs)->source == std::string("PBS_NODEFILE=") + path);
  CHECK(HostfileText(**pbs) == "cn7:2 cn9:2 ");
  // SLURM's list wins when both are set.
  auto both = SchedulerAllocation(
      Env({{"PBS_NODEFILE", path}, {"SLURM_JOB_NODELIST", "s1"}, {"SLURM_TASKS_PER_NODE", "1"}}));
  CHECK((*both)->source == "SLURM_JOB_NODELIST");
  std::remove(path);
  CHECK(PbsAllocation(Env({{"PBS_NODEFILE", "/nonexistent/nodes"}})).status().message() ==
        "PBS_NODEFILE: /nonexistent/nodes: no such file");
  CHECK(!SchedulerAllocation(Env({}))->has_value());
}

}  // namespace
}  // namespace parallax
