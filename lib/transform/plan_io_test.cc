// plan.yaml: round trip, names that look like other YAML types, and exact errors.
#include "lib/transform/plan_io.h"

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Plan SamplePlan() {
  Plan plan;
  plan.source_graph = "models/graph.pb";
  plan.source_fingerprint = "0123456789012345";  // all digits: must stay a string
  plan.strategy = "hybrid";
  plan.average = false;
  for (int r = 0; r < 3; ++r) {
    RankPlacement p;
    p.rank = r;
    p.host = r < 2 ? "node1" : "node2";
    p.local_rank = r < 2 ? r : 0;
    p.local_size = r < 2 ? 2 : 1;
    p.device = r < 2 ? DeviceKind::kGpu : DeviceKind::kCpu;
    p.device_index = r < 2 ? r + 4 : 0;
    plan.ranks.push_back(p);
    plan.rank_devices.push_back("/job:worker/replica:0/task:" + std::to_string(r) +
                                (r < 2 ? "/device:GPU:0" : "/device:CPU:0"));
  }
  VariablePlan emb;
  emb.name = "true";  // a valid TF node name that YAML would read as a bool unquoted
  emb.method = SyncMethod::kParameterServer;
  emb.sparse = true;
  emb.shape = {1000, 16};
  emb.dtype = "float";
  emb.bytes = 64000;
  emb.slots = {"true/Adam", "true/Adam_1"};
  emb.partitions = {{0, 500, 0}, {500, 1000, 2}};
  emb.bytes_sent_per_rank_per_step = 3808;
  emb.reason = "sparse gradient: ps: \"quoted\", colon: and # hash";
  VariablePlan w;
  w.name = "1e3";
  w.method = SyncMethod::kAllReduce;
  w.shape = {-1, 10};
  w.dtype = "half";
  w.bytes = -1;
  w.reason = "";
  VariablePlan step;
  step.name = "global_step";
  step.method = SyncMethod::kLocal;
  step.dtype = "int64";
  step.bytes = 8;
  plan.variables = {emb, w, step};
  plan.feeds = {"ids", "null"};
  plan.fetches = {"loss:0"};
  plan.train_op = "Adam";
  plan.init_op = "";
  plan.warnings = {"input pipeline 'batch' (QueueDequeueManyV2) is not sharded: ..."};
  return plan;
}

TEST_CASE("plan.yaml round trip") {
  const Plan plan = SamplePlan();
  const std::string yaml = PlanToYaml(plan);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  INFO(yaml);
  REQUIRE(back.ok());
  CHECK(PlanToYaml(*back) == yaml);
  CHECK(back->source_fingerprint == "0123456789012345");
  CHECK(back->strategy == "hybrid");
  CHECK_FALSE(back->average);
  REQUIRE(back->ranks.size() == 3);
  CHECK(back->ranks == plan.ranks);
  CHECK(back->rank_devices == plan.rank_devices);
  REQUIRE(back->variables.size() == 3);
  CHECK(back->variables[0].name == "true");
  CHECK(back->variables[0].partitions == plan.variables[0].partitions);
  CHECK(back->variables[0].reason == plan.variables[0].reason);
  CHECK(back->variables[0].slots == plan.variables[0].slots);
  CHECK(back->variables[1].name == "1e3");
  CHECK(back->variables[1].shape == std::vector<int64_t>{-1, 10});
  CHECK(back->variables[1].bytes == -1);
  CHECK(back->variables[2].shape.empty());
  CHECK(back->feeds == plan.feeds);
  CHECK(back->init_op.empty());
  CHECK(back->warnings == plan.warnings);
}

TEST_CASE("LoadPlan reads a file or a job directory") {
  const std::string dir = testing::TempDir();
  REQUIRE(WriteFileAtomically(dir + "/plan.yaml", PlanToYaml(SamplePlan())).ok());
  CHECK(LoadPlan(dir).ok());
  CHECK(LoadPlan(dir + "/plan.yaml").ok());
  StatusOr<Plan> missing = LoadPlan(dir + "/nothing.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == dir + "/nothing.yaml: no such file");
}

// The YAML of SamplePlan with `from` replaced by `to`.
std::string Edited(const std::string& from, const std::string& to) {
  std::string yaml = PlanToYaml(SamplePlan());
  const size_t at = yaml.find(from);
  REQUIRE(at != std::string::npos);
  return yaml.replace(at, from.size(), to);
}

// The error ParsePlanYaml gives for `yaml` with its last `from` replaced by `to`, without
// its "plan.yaml:<line>: " prefix.
std::string ErrorAfterEdit(std::string yaml, const std::string& from, const std::string& to) {
  const size_t at = yaml.rfind(from);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, from.size(), to);
  INFO(yaml);
  StatusOr<Plan> plan = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE_FALSE(plan.ok());
  const std::string message = plan.status().message();
  return message.substr(message.find(": ") + 2);
}

TEST_CASE("plan.yaml errors name the line and key") {
  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {"version: 1", "version: 2",
       "plan.yaml:2: version: plan version 2 is not supported (this parallax reads version 1)"},
      {"owner: 2", "owner: 3",
       "plan.yaml:25: variables[0].partitions[1].owner: rank 3 is not a rank of the job (3 ranks)"},
      {"rows: [500, 1000]", "rows: [400, 1000]",
       "plan.yaml:25: variables[0].partitions[1].rows: rows [400, 1000) do not continue the "
       "partitions before (next row 500)"},
      {"method: allreduce", "method: allreduc",
       "plan.yaml:29: variables[1].method: unknown method 'allreduc' (expected allreduce, ps, "
       "allgather, densify, local or none)"},
      {"average: false", "average: maybe", "plan.yaml:8: average: expected true or false"},
      {"strategy: \"hybrid\"", "strategy: \"hybrid\"\nextra: 1", "plan.yaml:8: extra: unknown key"},
      {"bytes: 64000", "bytes: lots",
       "plan.yaml:19: variables[0].bytes: expected an integer, got 'lots'"},
      {"{rank: 1,", "{rank: 2,", "plan.yaml:11: ranks[1].rank: expected rank 1, got 2"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    StatusOr<Plan> plan = ParsePlanYaml(Edited(c.from, c.to), "plan.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message() == c.error);
  }
  StatusOr<Plan> syntax = ParsePlanYaml("ranks: [", "plan.yaml");
  REQUIRE_FALSE(syntax.ok());
  CHECK(syntax.status().message().starts_with("plan.yaml:1:"));
  StatusOr<Plan> list = ParsePlanYaml("- 1\n", "plan.yaml");
  REQUIRE_FALSE(list.ok());
  CHECK(list.status().message() == "plan.yaml:1: plan: expected a mapping (a plan.yaml file)");
  // yaml-cpp's message for a NUL byte ends in the newline after it; the error stays one
  // line (found by fuzz/cluster_spec_fuzzer.cc in the same parser).
  StatusOr<Plan> nul = ParsePlanYaml(std::string("t/\0\n", 4), "plan.yaml");
  CHECK(nul.status().message() == "plan.yaml:2:1: unknown escape character: ?");
  // A key from the file in the key path, on one line (found by fuzz/plan_yaml_fuzzer.cc).
  StatusOr<Plan> key = ParsePlanYaml("version: 1\n\"trai\\n_op\": x\n", "plan.yaml");
  CHECK(key.status().message() == "plan.yaml:2: trai?_op: unknown key");
}

// SamplePlan with two all-reduced float variables in a gradient bucket.
Plan BucketedPlan() {
  Plan plan = SamplePlan();
  for (const char* name : {"dense/kernel", "dense/bias"}) {
    VariablePlan v;
    v.name = name;
    v.method = SyncMethod::kAllReduce;
    v.shape = {4};
    v.dtype = "float";
    v.bytes = 16;
    plan.variables.push_back(v);
  }
  plan.bucket_bytes = 1 << 20;
  plan.buckets = {GradientBucket{"float", {"dense/bias", "dense/kernel"}, 32}};
  return plan;
}

TEST_CASE("plan.yaml: gradient buckets round trip; plans without them still load") {
  const std::string yaml = PlanToYaml(BucketedPlan());
  INFO(yaml);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE(back.ok());
  CHECK(back->bucket_bytes == 1 << 20);
  CHECK(back->buckets == BucketedPlan().buckets);
  CHECK(PlanToYaml(*back) == yaml);
  CHECK(PlanToJson(*back, "job").find(R"("buckets": [
    {
      "dtype": "float",
      "bytes": 32,
      "variables": [
        "dense/bias",
        "dense/kernel"
      ]
    }
  ])") != std::string::npos);
  // A plan.yaml written before buckets existed has neither key.
  std::string old = PlanToYaml(SamplePlan());
  old = old.substr(0, old.find("bucket_bytes:"));
  StatusOr<Plan> before = ParsePlanYaml(old, "plan.yaml");
  INFO(old);
  REQUIRE(before.ok());
  CHECK(before->bucket_bytes == 0);
  CHECK(before->buckets.empty());
}

TEST_CASE("plan.yaml: the all-reduce algorithm round trips; plans without it are flat") {
  Plan plan = BucketedPlan();
  plan.allreduce = AllReducePlan{"hierarchical", 2678824, "2 hosts of up to 2 ranks: ..."};
  const std::string yaml = PlanToYaml(plan);
  INFO(yaml);
  CHECK(yaml.find("allreduce:\n  algorithm: \"hierarchical\"\n  off_host_bytes_per_step: "
                  "2678824\n  reason: \"2 hosts of up to 2 ranks: ...\"\n") != std::string::npos);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE(back.ok());
  CHECK(back->allreduce.algorithm == "hierarchical");
  CHECK(back->allreduce.off_host_bytes_per_step == 2678824);
  CHECK(back->allreduce.reason == "2 hosts of up to 2 ranks: ...");
  CHECK(PlanToJson(*back, "job").find(R"("allreduce": {
    "algorithm": "hierarchical",
    "off_host_bytes_per_step": 2678824,)") != std::string::npos);
  // Written before the algorithms existed: no allreduce key, flat.
  std::string old = yaml;
  old.erase(old.find("allreduce:"), old.find("\n", old.find("  reason: \"2 hosts")) + 1 -
                                        old.find("allreduce:"));
  INFO(old);
  StatusOr<Plan> before = ParsePlanYaml(old, "plan.yaml");
  REQUIRE(before.ok());
  CHECK(before->allreduce.algorithm == "flat");
}

TEST_CASE("plan.yaml: the memory estimate round trips; bad lists are refused") {
  Plan plan = SamplePlan();
  plan.memory = {RankMemory{64000, 7616}, RankMemory{0, 7616}, RankMemory{32008, 0}};
  const std::string yaml = PlanToYaml(plan);
  INFO(yaml);
  CHECK(yaml.find("memory:\n  state_bytes: [64000, 0, 32008]\n  gradient_bytes: [7616, 7616, "
                  "0]\n") != std::string::npos);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE(back.ok());
  CHECK(back->memory == plan.memory);
  CHECK(PlanToJson(*back, "job").find(R"("memory": [
    {
      "state_bytes": 64000,
      "gradient_bytes": 7616
    },)") != std::string::npos);
  // A plan without the estimate (written before it) loads without one.
  CHECK(ParsePlanYaml(PlanToYaml(SamplePlan()), "plan.yaml")->memory.empty());

  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {"state_bytes: [64000, 0, 32008]", "state_bytes: [64000, 0]",
       "memory.state_bytes: expected a list of 3 byte counts, one per rank"},
      {"gradient_bytes: [7616, 7616, 0]", "gradient_bytes: [7616, -1, 0]",
       "memory.gradient_bytes[1]: must be at least 0, got -1"},
      {"  gradient_bytes:", "  gradients:", "memory.gradients: unknown key"},
  };
  for (const Case& c : cases) CHECK(ErrorAfterEdit(yaml, c.from, c.to) == c.error);
}

TEST_CASE("plan.yaml: bad gradient buckets name the bucket and the variable") {
  const std::string yaml = PlanToYaml(BucketedPlan());
  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {"- \"dense/kernel\"\n", "- \"nope\"\n",
       "buckets[0].variables[1]: no variable 'nope' in the plan"},
      {"- \"dense/kernel\"\n", "- \"true\"\n",
       "buckets[0].variables[1]: variable 'true' is float ps (sparse), not a dense float "
       "all-reduce"},
      {"- \"dense/kernel\"\n", "- \"dense/bias\"\n",
       "buckets[0].variables[1]: variable 'dense/bias' is in two buckets"},
      {"\n      - \"dense/kernel\"\n", "\n",
       "buckets[0].variables: a bucket holds two or more variables"},
      {"algorithm: \"flat\"", "algorithm: \"ring\"",
       "allreduce.algorithm: 'ring' is not flat or hierarchical"},
      {"off_host_bytes_per_step: 0", "off_host_bytes_per_step: -5",
       "allreduce.off_host_bytes_per_step: must be at least 0, got -5"},
      {"bucket_bytes: 1048576", "bucket_bytes: -1",
       "bucket_bytes: must be at least 0, got -1"},
  };
  for (const Case& c : cases) CHECK(ErrorAfterEdit(yaml, c.from, c.to) == c.error);
}

TEST_CASE("plan.yaml: a partition search round trips; a chosen count not probed is refused") {
  Plan plan = SamplePlan();
  plan.partition_search = MeasuredSearch{.candidates = {2, 4, 8},
                                          .probes = {{2, 0.0125}, {4, 0.0101}, {8, 0.0119}},
                                          .chosen = 4,
                                          .budget_seconds = 120,
                                          .used_seconds = 31.5,
                                          .steps = 30,
                                          .stopped = "8 partitions ran 18% slower than 4"};
  const std::string yaml = PlanToYaml(plan);
  INFO(yaml);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE(back.ok());
  REQUIRE(back->partition_search.has_value());
  CHECK(*back->partition_search == *plan.partition_search);
  CHECK(PlanToYaml(*back) == yaml);
  CHECK(PlanToJson(*back, "job").find(R"("chosen": 4)") != std::string::npos);
  CHECK(PlanToJson(SamplePlan(), "job").find(R"("partition_search": null)") != std::string::npos);
  std::string edited = yaml;
  edited.replace(edited.find("chosen: 4"), 9, "chosen: 16");
  StatusOr<Plan> bad = ParsePlanYaml(edited, "plan.yaml");
  REQUIRE_FALSE(bad.ok());
  const std::string message = bad.status().message();
  CHECK(message.substr(message.find(": ") + 2) ==
        "partition_search.chosen: 16 was not probed");
  edited = yaml;
  edited.replace(edited.find("step_seconds: 0.0125"), 20, "step_seconds: -1");
  bad = ParsePlanYaml(edited, "plan.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("partition_search.probes[0].step_seconds: expected seconds") !=
        std::string::npos);
}

TEST_CASE("plan.yaml: a bucket search round trips; its chosen limit is the plan's") {
  Plan plan = BucketedPlan();
  plan.bucket_search = MeasuredSearch{.candidates = {0, 1 << 20, 4 << 20},
                                      .probes = {{0, 0.0066}, {1 << 20, 0.0061}, {4 << 20, 0.0068}},
                                      .chosen = 1 << 20,
                                      .budget_seconds = 60,
                                      .used_seconds = 2.1,
                                      .steps = 20,
                                      .stopped = "the largest candidate reached"};
  const std::string yaml = PlanToYaml(plan);
  INFO(yaml);
  CHECK(yaml.find("- {bucket_bytes: 0, step_seconds: 0.0066}") != std::string::npos);
  StatusOr<Plan> back = ParsePlanYaml(yaml, "plan.yaml");
  REQUIRE(back.ok());
  REQUIRE(back->bucket_search.has_value());
  CHECK(*back->bucket_search == *plan.bucket_search);
  CHECK(PlanToJson(*back, "job").find(R"("bucket_bytes": 0,)") != std::string::npos);
  std::string edited = yaml;
  edited.replace(edited.find("bucket_bytes: 1048576\n"), 21, "bucket_bytes: 4194304\n");
  StatusOr<Plan> bad = ParsePlanYaml(edited, "plan.yaml");
  REQUIRE_FALSE(bad.ok());
  const std::string message = bad.status().message();
  CHECK(message.substr(message.find(": ") + 2) ==
        "bucket_search.chosen: 1048576 is not the plan's bucket_bytes (4194304)");
}

TEST_CASE("the plan as JSON") {
  const std::string json = PlanToJson(SamplePlan(), "job");
  CHECK(json.find("\"schema\": 1") != std::string::npos);
  CHECK(json.find("\"output\": \"job\"") != std::string::npos);
  CHECK(json.find("\"bytes\": null") != std::string::npos);
  CHECK(json.find("\"init_op\": null") != std::string::npos);
  CHECK(json.find("\"bytes_per_step\": 3808") != std::string::npos);
  const PlanTotals totals = ComputeTotals(SamplePlan());
  CHECK(totals.variables == 3);
  CHECK(totals.synchronised == 2);
  CHECK(totals.parameter_bytes == 64000);
  CHECK(totals.bytes_sent_per_rank_per_step == 3808);
}

TEST_CASE("totals: a PS variable's slots count as ps, not as synchronised parameters") {
  Plan plan = SamplePlan();
  for (const char* name : {"true/Adam", "true/Adam_1"}) {
    VariablePlan slot;
    slot.name = name;
    slot.method = SyncMethod::kParameterServer;
    slot.shape = {1000, 16};
    slot.dtype = "float";
    slot.bytes = 64000;
    slot.partitions = plan.variables[0].partitions;
    plan.variables.push_back(slot);
  }
  const PlanTotals totals = ComputeTotals(plan);
  CHECK(totals.variables == 5);
  CHECK(totals.by_method[static_cast<int>(SyncMethod::kParameterServer)] == 3);
  CHECK(totals.synchronised == 2);
  CHECK(totals.parameter_bytes == 64000);
  StatusOr<Plan> back = ParsePlanYaml(PlanToYaml(plan), "plan.yaml");
  REQUIRE(back.ok());
  CHECK(back->variables[4].partitions == plan.variables[0].partitions);
}

}  // namespace
}  // namespace parallax
