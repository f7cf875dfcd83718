// Binding a plan's hosts (roles) to an allocation's, in order: 1, 2 and 3 hosts mapped to
// names of this machine, scheduler allocations, and the one-line errors.
#include "lib/launch/host_binding.h"

#include <catch2/catch.hpp>

#include "lib/cluster/scheduler_hosts.h"
#include "lib/launch/testing/plan_on_hosts.h"

namespace parallax {
namespace {

using testing::PlanOnHosts;

Hostfile Hosts(std::string_view list) { return *ParseHostList(list); }

TEST_CASE("plan hosts are roles in rank order") {
  const std::vector<PlanHostRole> roles =
      PlanHostRoles(PlanOnHosts({{"node1", 4}, {"node2", 2}}, DeviceKind::kGpu));
  REQUIRE(roles.size() == 2);
  CHECK(roles[1].index == 1);
  CHECK(roles[1].name == "node2");
  CHECK(roles[1].first_rank == 4);
  CHECK(roles[1].ranks == 2);
  CHECK(roles[1].gpu_ranks == 2);
  CHECK(roles[1].gpus == 2);
  // Ranks sharing a GPU (ranks_per_gpu) count it once.
  Plan shared = PlanOnHosts({{"node1", 4}}, DeviceKind::kGpu);
  for (RankPlacement& r : shared.ranks) r.device_index = r.local_rank / 2;
  CHECK(PlanHostRoles(shared)[0].gpu_ranks == 4);
  CHECK(PlanHostRoles(shared)[0].gpus == 2);
}

TEST_CASE("1, 2 and 3 plan hosts bound in order to names of this machine") {
  // One host: a plan made for node1 runs on localhost.
  StatusOr<HostBinding> one = BindPlanHosts(PlanOnHosts({{"node1", 2}}), Hosts("localhost:2"));
  REQUIRE(one.ok());
  CHECK(one->Describe() ==
        std::vector<std::string>{"host 0 (node1) -> localhost: ranks 0-1 (2 of 2 slots)"});
  CHECK(FormatHostfile(one->BoundHostfile()) == "localhost slots=2\n");
  // Two hosts, the allocation's with more slots than needed.
  StatusOr<HostBinding> two =
      BindPlanHosts(PlanOnHosts({{"node1", 2}, {"node2", 1}}), Hosts("127.0.0.1:4,localhost:2"));
  REQUIRE(two.ok());
  CHECK(two->Describe() == std::vector<std::string>{
                               "host 0 (node1) -> 127.0.0.1: ranks 0-1 (2 of 4 slots)",
                               "host 1 (node2) -> localhost: rank 2 (1 of 2 slots)"});
  CHECK(FormatHostfile(two->BoundHostfile()) == "127.0.0.1 slots=2\nlocalhost slots=1\n");
  CHECK(two->world_size() == 3);
  // Three hosts from a SLURM node list (names mapped to this machine in /etc/hosts on a
  // test cluster), one left over.
  auto slurm = SlurmAllocation([](std::string_view name) -> std::optional<std::string> {
    if (name == "SLURM_JOB_NODELIST") return "px-node[1-4]";
    if (name == "SLURM_TASKS_PER_NODE") return "1(x4)";
    return std::nullopt;
  });
  REQUIRE(slurm.ok());
  StatusOr<HostBinding> three = BindPlanHosts(PlanOnHosts({{"a", 1}, {"b", 1}, {"c", 1}}), **slurm);
  REQUIRE(three.ok());
  CHECK(three->source == "SLURM_JOB_NODELIST");
  CHECK(three->Describe() == std::vector<std::string>{
                                 "host 0 (a) -> px-node1: rank 0 (1 of 1 slot)",
                                 "host 1 (b) -> px-node2: rank 1 (1 of 1 slot)",
                                 "host 2 (c) -> px-node3: rank 2 (1 of 1 slot)",
                                 "unused: px-node4"});
  CHECK(FormatHostfile(three->BoundHostfile()) ==
        "px-node1 slots=1\npx-node2 slots=1\npx-node3 slots=1\n");
}

TEST_CASE("max_slots counts as room; GPUs are checked where the allocation knows them") {
  StatusOr<Hostfile> file = ParseHostfile("node1 slots=2 max_slots=4\n", "hosts");
  REQUIRE(file.ok());
  CHECK(BindPlanHosts(PlanOnHosts({{"x", 4}}), *file).ok());
  Hostfile gpus = Hosts("g1:8,g2:8");
  gpus.source = "SLURM_JOB_NODELIST";
  gpus.hosts[0].gpus = 4;
  gpus.hosts[1].gpus = 2;
  const Plan plan = PlanOnHosts({{"node1", 4}, {"node2", 4}}, DeviceKind::kGpu);
  CHECK(BindPlanHosts(plan, gpus).status().message() ==
        "SLURM_JOB_NODELIST: host 'g2' has 2 GPUs but plan host 1 (node2) puts 4 ranks on 4 GPUs");
  gpus.hosts[1].gpus = 4;
  StatusOr<HostBinding> bound = BindPlanHosts(plan, gpus);
  REQUIRE(bound.ok());
  CHECK(bound->Describe()[0] == "host 0 (node1) -> g1: ranks 0-3 (4 of 8 slots, 4 of 4 GPUs)");
}

TEST_CASE("binding errors name the allocation's source and the host") {
  const Plan plan = PlanOnHosts({{"node1", 4}, {"node2", 4}});
  CHECK(BindPlanHosts(plan, Hosts("n1:4,n2:2")).status().message() ==
        "-H: host 'n2' has 2 slots but plan host 1 (node2) has 4 ranks");
  CHECK(BindPlanHosts(plan, Hosts("n1:8")).status().message() ==
        "-H: 1 host (n1) for the plan's 2 hosts; give as many hosts, or transform the job for "
        "1 host");
  const Plan wide = PlanOnHosts({{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}, {"f", 1}});
  CHECK(BindPlanHosts(wide, Hosts("n1,n2,n3,n4,n5")).status().message() ==
        "-H: 5 hosts (n1, n2, n3, n4, ... (5 hosts)) for the plan's 6 hosts; give as many "
        "hosts, or transform the job for 5 hosts");
}

}  // namespace
}  // namespace parallax
