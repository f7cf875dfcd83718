#include "lib/cluster/rank_layout.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "lib/testing/testdata.h"

namespace parallax {
namespace {

RankLayout Layout(const std::string& yaml) {
  StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, "cluster.yaml");
  if (!spec.ok()) FAIL(spec.status().message());
  StatusOr<RankLayout> layout = LayoutRanks(*spec);
  if (!layout.ok()) FAIL(layout.status().message());
  return std::move(layout).value();
}

TEST_CASE("ranks are laid out host by host, one per GPU in the listed order") {
  const RankLayout layout = Layout(R"yaml(
hosts:
  - name: node1
    gpus: [0, 1]
  - name: node2
    gpus: [3, 1, 2]
  - name: cpu1
    cpus: 2
)yaml");
  CHECK(layout.world_size() == 7);
  CHECK(layout.num_hosts() == 3);
  CHECK(layout.hosts() == std::vector<std::string>{"node1", "node2", "cpu1"});
  const std::vector<RankPlacement> expected = {
      {0, "node1", 0, 2, DeviceKind::kGpu, 0},
      {1, "node1", 1, 2, DeviceKind::kGpu, 1},
      {2, "node2", 0, 3, DeviceKind::kGpu, 3},
      {3, "node2", 1, 3, DeviceKind::kGpu, 1},
      {4, "node2", 2, 3, DeviceKind::kGpu, 2},
      {5, "cpu1", 0, 2, DeviceKind::kCpu, 0},
      {6, "cpu1", 1, 2, DeviceKind::kCpu, 1},
  };
  CHECK(layout.ranks() == expected);
  CHECK(layout.rank(3).device_index == 1);
  CHECK(layout.RanksOnHost("node2") == std::vector<int>{2, 3, 4});
  CHECK(layout.RanksOnHost("cpu1") == std::vector<int>{5, 6});
  CHECK(layout.RanksOnHost("nowhere").empty());
  CHECK(layout.DeviceString(0) == "/job:worker/replica:0/task:0/device:GPU:0");
  CHECK(layout.DeviceString(4) == "/job:worker/replica:0/task:4/device:GPU:0");
  CHECK(layout.DeviceString(6) == "/job:worker/replica:0/task:6/device:CPU:0");
  CHECK(layout.Summary() ==
        "7 ranks on 3 hosts: node1 (2 GPUs: 0,1), node2 (3 GPUs: 3,1,2), cpu1 (2 CPUs)");
}

TEST_CASE("ranks_per_gpu puts consecutive ranks on each GPU") {
  const RankLayout layout = Layout(R"yaml(
hosts:
  - name: node1
    gpus: [2, 0]
    ranks_per_gpu: 2
)yaml");
  const std::vector<RankPlacement> expected = {
      {0, "node1", 0, 4, DeviceKind::kGpu, 2},
      {1, "node1", 1, 4, DeviceKind::kGpu, 2},
      {2, "node1", 2, 4, DeviceKind::kGpu, 0},
      {3, "node1", 3, 4, DeviceKind::kGpu, 0},
  };
  CHECK(layout.ranks() == expected);
  CHECK(layout.Summary() == "4 ranks on 1 host: node1 (4 ranks on 2 GPUs: 2,2,0,0)");
}

TEST_CASE("the example clusters lay out as their comments say") {
  StatusOr<ClusterSpec> local = LoadClusterSpec(testing::RepoPath("configs/local-2cpu.yaml"));
  REQUIRE(local.ok());
  StatusOr<RankLayout> local_layout = LayoutRanks(*local);
  REQUIRE(local_layout.ok());
  CHECK(local_layout->Summary() == "2 ranks on 1 host: localhost (2 CPUs)");
  CHECK(local_layout->DeviceString(1) == "/job:worker/replica:0/task:1/device:CPU:0");

  StatusOr<ClusterSpec> paper = LoadClusterSpec(testing::RepoPath("configs/paper-3x4gpu.yaml"));
  REQUIRE(paper.ok());
  StatusOr<RankLayout> layout = LayoutRanks(*paper);
  REQUIRE(layout.ok());
  CHECK(layout->world_size() == 12);
  CHECK(layout->RanksOnHost("node2") == std::vector<int>{4, 5, 6, 7});
  CHECK(layout->rank(11) == RankPlacement{11, "node3", 3, 4, DeviceKind::kGpu, 3});

  StatusOr<ClusterSpec> big = LoadClusterSpec(testing::RepoPath("configs/8x8gpu.yaml"));
  REQUIRE(big.ok());
  StatusOr<RankLayout> big_layout = LayoutRanks(*big);
  REQUIRE(big_layout.ok());
  CHECK(big_layout->world_size() == 64);
  CHECK(big_layout->rank(63).host == "gpu08");
  CHECK(big_layout->rank(63).local_rank == 7);
}

TEST_CASE("a hostfile lays out slots per host on the device asked for") {
  StatusOr<Hostfile> hostfile = ParseHostfile("node1 slots=2\nnode2 slots=1 max_slots=4\n", "hosts");
  REQUIRE(hostfile.ok());
  StatusOr<RankLayout> gpus = LayoutRanks(*hostfile, DeviceKind::kGpu);
  REQUIRE(gpus.ok());
  const std::vector<RankPlacement> expected = {
      {0, "node1", 0, 2, DeviceKind::kGpu, 0},
      {1, "node1", 1, 2, DeviceKind::kGpu, 1},
      {2, "node2", 0, 1, DeviceKind::kGpu, 0},
  };
  CHECK(gpus->ranks() == expected);
  StatusOr<RankLayout> cpus = LayoutRanks(*hostfile, DeviceKind::kCpu);
  REQUIRE(cpus.ok());
  CHECK(cpus->rank(2).device == DeviceKind::kCpu);
  CHECK(cpus->DeviceString(2) == "/job:worker/replica:0/task:2/device:CPU:0");
  CHECK(cpus->Summary() == "3 ranks on 2 hosts: node1 (2 CPUs), node2 (1 CPU)");

  StatusOr<Hostfile> list = ParseHostList("localhost:2");
  REQUIRE(list.ok());
  StatusOr<RankLayout> local = LayoutRanks(*list, DeviceKind::kCpu);
  REQUIRE(local.ok());
  CHECK(local->world_size() == 2);
  CHECK(local->RanksOnHost("localhost") == std::vector<int>{0, 1});
}

TEST_CASE("a spec built in code is checked before it is laid out") {
  ClusterSpec spec;
  spec.source = "code";
  CHECK(LayoutRanks(spec).status().message() == "code: no hosts");
  HostSpec a;
  a.name = "a";
  a.gpus = {0, 0};
  spec.hosts = {a};
  CHECK(LayoutRanks(spec).status().message() == "code: host 'a': GPU 0 is listed twice");
  a.gpus = {};
  spec.hosts = {a};
  CHECK(LayoutRanks(spec).status().message() == "code: host 'a' has no ranks");
  a.gpus = {0};
  spec.hosts = {a, a};
  CHECK(LayoutRanks(spec).status().message() == "code: host 'a' is listed twice");
  HostSpec cpu;
  cpu.name = "b";
  cpu.device = DeviceKind::kCpu;
  cpu.cpus = -3;
  spec.hosts = {cpu};
  CHECK(LayoutRanks(spec).status().message() == "code: host 'b' has no ranks");
  cpu.cpus = 1;
  spec.hosts = {cpu};
  StatusOr<RankLayout> one = LayoutRanks(spec);
  REQUIRE(one.ok());
  CHECK(one->Summary() == "1 rank on 1 host: b (1 CPU)");
}

}  // namespace
}  // namespace parallax
