// The memory estimate: each method's state and gradient buffers per rank, the host check
// (CPU ranks share a host's memory, a GPU rank has its own), its error line, and where a
// host's memory comes from.
#include "lib/transform/memory_estimate.h"

#include <catch2/catch.hpp>

#include "lib/base/machine.h"

namespace parallax {
namespace {

VariablePlan Variable(std::string name, SyncMethod method, std::vector<int64_t> shape,
                      int64_t bytes) {
  VariablePlan v;
  v.name = std::move(name);
  v.method = method;
  v.shape = std::move(shape);
  v.dtype = "float";
  v.bytes = bytes;
  return v;
}

// Two ranks on `host`: a dense all-reduced w, a table on parameter servers (rows [0, 60)
// on rank 0, [60, 100) on rank 1) with an Adagrad slot, a densified table, an
// all-gathered one, a local step counter and a variable of unknown size.
Plan TwoRankPlan(const std::string& host) {
  Plan plan;
  plan.source_graph = "lm.pb";
  plan.ranks = {RankPlacement{0, host, 0, 2, DeviceKind::kCpu, 0},
                RankPlacement{1, host, 1, 2, DeviceKind::kCpu, 1}};
  plan.variables.push_back(Variable("w", SyncMethod::kAllReduce, {10, 20}, 800));
  VariablePlan emb = Variable("emb", SyncMethod::kParameterServer, {100, 10}, 4000);
  emb.partitions = {Partition{0, 60, 0}, Partition{60, 100, 1}};
  emb.slots = {"emb/Adagrad"};
  emb.bytes_sent_per_rank_per_step = 300;
  plan.variables.push_back(emb);
  VariablePlan slot = Variable("emb/Adagrad", SyncMethod::kParameterServer, {100, 10}, 4000);
  slot.partitions = emb.partitions;
  plan.variables.push_back(slot);
  plan.variables.push_back(Variable("table", SyncMethod::kDensify, {20, 10}, 800));
  VariablePlan gathered = Variable("words", SyncMethod::kAllGather, {50, 4}, 800);
  gathered.bytes_sent_per_rank_per_step = 96;
  plan.variables.push_back(gathered);
  plan.variables.push_back(Variable("step", SyncMethod::kLocal, {}, 8));
  plan.variables.push_back(Variable("unknown", SyncMethod::kAllReduce, {-1, 4}, -1));
  return plan;
}

ClusterSpec Spec(const std::string& yaml) {
  StatusOr<ClusterSpec> spec = ParseClusterSpec(yaml, "c.yaml");
  INFO(spec.status().ToString());
  REQUIRE(spec.ok());
  return *spec;
}

TEST_CASE("each method's state and gradient buffers, per rank") {
  const std::vector<RankMemory> ranks = EstimateRankMemory(TwoRankPlan("node"));
  REQUIRE(ranks.size() == 2);
  // w 800 + emb 60 rows of 40 B and its slot's + table 800 + words 800 + step 8.
  CHECK(ranks[0].state_bytes == 800 + 2400 + 2400 + 800 + 800 + 8);
  CHECK(ranks[1].state_bytes == 800 + 1600 + 1600 + 800 + 800 + 8);
  // w: 2 x 800; emb: 2 x 300 sent (the slot none); table: 2 x 800 + 2 x 20 rows x 4;
  // words: 2 x 96.
  const int64_t gradients = 1600 + 600 + 1600 + 160 + 192;
  CHECK(ranks[0].gradient_bytes == gradients);
  CHECK(ranks[1].gradient_bytes == gradients);
  CHECK(ranks[0].total() == ranks[0].state_bytes + gradients);

  const auto [name, bytes] = LargestOnRank(TwoRankPlan("node"), 0);
  CHECK(name == "emb (ps)");
  CHECK(bytes == 2400 + 600);
}

TEST_CASE("a CPU host's ranks share its memory_gb; the error names host, figures and fix") {
  Plan plan = TwoRankPlan("node");
  plan.memory = EstimateRankMemory(plan);
  REQUIRE(plan.memory[0].total() + plan.memory[1].total() == 21120);
  CHECK(CheckPlanFitsMemory(plan, Spec("hosts:\n  - name: node\n    cpus: 2\n    "
                                       "memory_gb: 0.000022\n"))
            .ok());
  const Status refused = CheckPlanFitsMemory(
      plan, Spec("hosts:\n  - name: node\n    cpus: 2\n    memory_gb: 0.00002\n"));
  CHECK(refused.code() == StatusCode::kResourceExhausted);
  CHECK(refused.message() ==
        "lm.pb: the plan does not fit in memory: the 2 ranks of host 'node' need 20.6 KiB by "
        "the transform's estimate, more than the 19.5 KiB it has (memory_gb in c.yaml); rank 0 "
        "holds 7.0 KiB of state and 4.1 KiB of gradient buffers, most of it emb (ps) with 2.9 "
        "KiB; use --sparse ps (tables partitioned over the ranks), fewer ranks per host, or "
        "set the host's memory_gb if the figure is wrong");
  // A host whose memory is not known is not checked.
  CHECK(CheckPlanFitsMemory(plan, Spec("hosts:\n  - name: node\n    cpus: 2\n")).ok());
}

TEST_CASE("a GPU rank has its GPU's memory to itself") {
  Plan plan = TwoRankPlan("gpu-node");
  plan.ranks[0].device = plan.ranks[1].device = DeviceKind::kGpu;
  plan.memory = EstimateRankMemory(plan);
  // Rank 0 needs 11,360 B: fits in 0.000012 GB each, though both together would not.
  CHECK(CheckPlanFitsMemory(plan, Spec("hosts:\n  - name: gpu-node\n    gpus: [0, 1]\n    "
                                       "gpu_memory_gb: 0.000012\n"))
            .ok());
  const Status refused = CheckPlanFitsMemory(
      plan, Spec("hosts:\n  - name: gpu-node\n    gpus: [0, 1]\n    gpu_memory_gb: 0.00001\n"));
  CHECK(refused.code() == StatusCode::kResourceExhausted);
  CHECK(refused.message().find("a rank of host 'gpu-node' needs 11.1 KiB by the transform's "
                               "estimate, more than the 9.8 KiB it has (gpu_memory_gb in "
                               "c.yaml)") != std::string::npos);
  CHECK(refused.message().find("set the host's gpu_memory_gb") != std::string::npos);
}

TEST_CASE("a host's memory: the spec's, else this machine's for its own name") {
  HostSpec local{.name = "localhost", .device = DeviceKind::kCpu, .cpus = 2};
  std::optional<HostMemory> memory = MemoryOfHost(local, "c.yaml");
  REQUIRE(memory.has_value());
  CHECK(memory->bytes == TotalMemoryBytes());
  CHECK(memory->source == "this machine's memory");
  CHECK_FALSE(memory->per_rank);

  local.memory_gb = 1.5;
  memory = MemoryOfHost(local, "c.yaml");
  REQUIRE(memory.has_value());
  CHECK(memory->bytes == 1500000000);
  CHECK(memory->source == "memory_gb in c.yaml");

  CHECK_FALSE(MemoryOfHost(HostSpec{.name = "far-away-node", .device = DeviceKind::kCpu,
                                    .cpus = 2},
                           "c.yaml")
                  .has_value());
  HostSpec gpu{.name = "localhost", .device = DeviceKind::kGpu, .gpus = {0}};
  CHECK_FALSE(MemoryOfHost(gpu, "c.yaml").has_value());  // GPU memory is never guessed
  gpu.gpu_memory_gb = 141;
  memory = MemoryOfHost(gpu, "c.yaml");
  REQUIRE(memory.has_value());
  CHECK(memory->per_rank);
  CHECK(memory->bytes == 141000000000);
}

}  // namespace
}  // namespace parallax
