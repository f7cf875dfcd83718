#include "lib/cluster/cluster_spec.h"


#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/cluster/rank_layout.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

ClusterSpec Parse(const std::string& text) {
  StatusOr<ClusterSpec> spec = ParseClusterSpec(text, "cluster.yaml");
  if (!spec.ok()) FAIL(spec.status().message());
  return std::move(spec).value();
}

std::string ErrorOf(const std::string& text) {
  StatusOr<ClusterSpec> spec = ParseClusterSpec(text, "cluster.yaml");
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().code() == StatusCode::kInvalidArgument);
  return spec.status().message();
}

TEST_CASE("the full example of the schema parses into exactly what it says") {
  const ClusterSpec spec = Parse(R"yaml(
hosts:
  - name: node1
    gpus: [0, 1, 2, 3]
  - name: node2
    gpus: [3, 2]
  - name: cpu-box
    cpus: 2
network:
  bandwidth_gbps: 100
  intra_host_bandwidth_gbps: 2.5e2
strategy:
  default: hybrid
  dense: allreduce
  sparse: ps
  partitions: 8
  average: false
  variables:
    "embedding/*": {sparse: allgather, partitions: 4}
    "dense/kernel": {dense: ps}
    "emb?": {partitions: auto}
)yaml");
  CHECK(spec.source == "cluster.yaml");
  REQUIRE(spec.hosts.size() == 3);
  CHECK(spec.hosts[0].name == "node1");
  CHECK(spec.hosts[0].device == DeviceKind::kGpu);
  CHECK(spec.hosts[0].gpus == std::vector<int>{0, 1, 2, 3});
  CHECK(spec.hosts[0].line == 3);
  CHECK(spec.hosts[1].gpus == std::vector<int>{3, 2});  // listed order is kept
  CHECK(spec.hosts[2].device == DeviceKind::kCpu);
  CHECK(spec.hosts[2].cpus == 2);
  CHECK(spec.hosts[2].gpus.empty());
  CHECK(spec.num_ranks() == 8);
  CHECK(spec.num_hosts() == 3);
  CHECK(spec.FindHost("node2") == &spec.hosts[1]);
  CHECK(spec.FindHost("node9") == nullptr);
  CHECK(spec.network.bandwidth_gbps == 100.0);
  CHECK(spec.network.intra_host_bandwidth_gbps == 250.0);
  CHECK(spec.strategy.default_strategy == StrategyKind::kHybrid);
  CHECK(spec.strategy.dense == DenseMethod::kAllReduce);
  CHECK(spec.strategy.sparse == SparseMethod::kPs);
  CHECK(spec.strategy.partitions == 8);
  CHECK_FALSE(spec.strategy.average);
  REQUIRE(spec.strategy.variables.size() == 3);
  const VariableOverride& embedding = spec.strategy.variables[0];
  CHECK(embedding.pattern == "embedding/*");
  CHECK(embedding.is_glob());
  CHECK_FALSE(embedding.dense.has_value());
  CHECK(embedding.sparse == SparseMethod::kAllGather);
  CHECK(embedding.partitions == 4);
  CHECK(embedding.line == 19);
  const VariableOverride& kernel = spec.strategy.variables[1];
  CHECK(kernel.pattern == "dense/kernel");
  CHECK_FALSE(kernel.is_glob());
  CHECK(kernel.dense == DenseMethod::kPs);
  CHECK_FALSE(kernel.sparse.has_value());
  CHECK_FALSE(kernel.partitions.has_value());
  CHECK(spec.strategy.variables[2].partitions == kAutoPartitions);
}

// Everything but lines and sources: what FormatClusterSpec must keep.
void CheckSameSpec(const ClusterSpec& a, const ClusterSpec& b) {
  REQUIRE(a.hosts.size() == b.hosts.size());
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    CHECK(a.hosts[i].name == b.hosts[i].name);
    CHECK(a.hosts[i].device == b.hosts[i].device);
    CHECK(a.hosts[i].gpus == b.hosts[i].gpus);
    CHECK(a.hosts[i].cpus == b.hosts[i].cpus);
    CHECK(a.hosts[i].memory_gb == b.hosts[i].memory_gb);
    CHECK(a.hosts[i].gpu_memory_gb == b.hosts[i].gpu_memory_gb);
    CHECK(a.hosts[i].ranks_per_gpu == b.hosts[i].ranks_per_gpu);
  }
  CHECK(a.network.bandwidth_gbps == b.network.bandwidth_gbps);
  CHECK(a.network.intra_host_bandwidth_gbps == b.network.intra_host_bandwidth_gbps);
  CHECK(a.network.latency_us == b.network.latency_us);
  CHECK(a.network.intra_host_latency_us == b.network.intra_host_latency_us);
  CHECK(a.strategy.default_strategy == b.strategy.default_strategy);
  CHECK(a.strategy.dense == b.strategy.dense);
  CHECK(a.strategy.sparse == b.strategy.sparse);
  CHECK(a.strategy.partitions == b.strategy.partitions);
  CHECK(a.strategy.average == b.strategy.average);
  REQUIRE(a.strategy.variables.size() == b.strategy.variables.size());
  for (size_t i = 0; i < a.strategy.variables.size(); ++i) {
    CHECK(a.strategy.variables[i].pattern == b.strategy.variables[i].pattern);
    CHECK(a.strategy.variables[i].dense == b.strategy.variables[i].dense);
    CHECK(a.strategy.variables[i].sparse == b.strategy.variables[i].sparse);
    CHECK(a.strategy.variables[i].partitions == b.strategy.variables[i].partitions);
  }
}

TEST_CASE("FormatClusterSpec writes what ParseClusterSpec reads back to the same spec") {
  const ClusterSpec full = Parse(R"yaml(
hosts:
  - name: node1
    gpus: [0, 1, 2, 3]
    gpu_memory_gb: 141
  - name: node2
    gpus: [1]
    ranks_per_gpu: 3
  - name: cpu-box
    cpus: 2
    memory_gb: 12.8
network:
  bandwidth_gbps: 12.5
  intra_host_bandwidth_gbps: 2.5e2
  latency_us: 2.5
  intra_host_latency_us: 1
strategy:
  default: hybrid
  sparse: allgather
  partitions: 8
  average: false
  variables:
    "embedding/*": {sparse: dense, partitions: 4}
    "dense/kernel": {dense: ps}
    "we\"ird\\name": {partitions: auto}
    "line\nbreak\ttab\x01": {dense: ps}
)yaml");
  const std::string text = FormatClusterSpec(full);
  INFO(text);
  StatusOr<ClusterSpec> again = ParseClusterSpec(text, "formatted.yaml");
  REQUIRE(again.ok());
  CheckSameSpec(full, *again);
  CHECK(again->strategy.variables[2].pattern == "we\"ird\\name");
  // Control characters are escaped, not written as they are (found by
  // fuzz/cluster_spec_fuzzer.cc: a newline ended the line and the spec did not parse).
  CHECK(again->strategy.variables[3].pattern == "line\nbreak\ttab\x01");
  CHECK(text.find(R"("line\nbreak\x09tab\x01")") != std::string::npos);
  CHECK(FormatClusterSpec(*again) == text);

  // A pattern longer than YAML's 1024-character limit on implicit keys is written as an
  // explicit key (found by fuzz/cluster_spec_fuzzer.cc: the output did not parse).
  ClusterSpec long_pattern = full;
  long_pattern.strategy.variables[0].pattern = "embedding/" + std::string(1100, 'x');
  const std::string long_text = FormatClusterSpec(long_pattern);
  INFO(long_text);
  CHECK(long_text.find("    ? \"embedding/xxx") != std::string::npos);
  StatusOr<ClusterSpec> long_again = ParseClusterSpec(long_text, "long.yaml");
  REQUIRE(long_again.ok());
  CheckSameSpec(long_pattern, *long_again);

  CHECK(again->hosts[0].gpu_memory_gb == 141);
  CHECK(again->hosts[2].memory_gb == 12.8);
  CHECK(again->hosts[0].memory_gb == 0);  // not given
  CHECK(again->hosts[1].ranks_per_gpu == 3);
  CHECK(again->hosts[1].num_ranks() == 3);

  const ClusterSpec minimal = Parse("hosts:\n  - {name: localhost, cpus: 1}\n");
  StatusOr<ClusterSpec> minimal_again = ParseClusterSpec(FormatClusterSpec(minimal), "m.yaml");
  REQUIRE(minimal_again.ok());
  CheckSameSpec(minimal, *minimal_again);
}

TEST_CASE("optional sections take their documented defaults") {
  const ClusterSpec spec = Parse("hosts:\n  - {name: localhost, cpus: 1}\n");
  CHECK(spec.network.bandwidth_gbps == kDefaultBandwidthGbps);
  CHECK(spec.network.bandwidth_gbps == 10.0);
  CHECK(spec.network.intra_host_bandwidth_gbps == kDefaultIntraHostBandwidthGbps);
  CHECK(spec.network.latency_us == 30.0);
  CHECK(spec.network.intra_host_latency_us == 5.0);
  CHECK(spec.strategy.default_strategy == StrategyKind::kAuto);
  CHECK_FALSE(spec.strategy.dense.has_value());
  CHECK_FALSE(spec.strategy.sparse.has_value());
  CHECK(spec.strategy.partitions == kAutoPartitions);
  CHECK(spec.strategy.average);
  CHECK(spec.strategy.variables.empty());

  // Empty sections (`network:` alone) mean the defaults too.
  const ClusterSpec empty_sections =
      Parse("hosts:\n  - {name: localhost, cpus: 1}\nnetwork:\nstrategy:\n");
  CHECK(empty_sections.network.bandwidth_gbps == 10.0);
  CHECK(empty_sections.strategy.default_strategy == StrategyKind::kAuto);
}

TEST_CASE("resolving a variable's strategy: override, then flags, then section, then preset") {
  const ClusterSpec spec = Parse(R"yaml(
hosts: [{name: n, gpus: [0]}]
strategy:
  sparse: dense
  partitions: 3
  variables:
    "embedding/*": {sparse: allgather, partitions: 4}
    "embedding/special": {sparse: ps}
    "*kernel": {dense: ps}
)yaml");
  const StrategySpec& strategy = spec.strategy;

  // auto: only what the file fixes.
  VariableStrategy plain = strategy.Resolve("bias");
  CHECK_FALSE(plain.dense.has_value());
  CHECK(plain.sparse == SparseMethod::kDense);
  CHECK(plain.partitions == 3);
  CHECK(plain.override_used == nullptr);

  // An exact name beats a pattern listed before it.
  VariableStrategy special = strategy.Resolve("embedding/special");
  CHECK(special.sparse == SparseMethod::kPs);
  CHECK(special.partitions == 3);
  REQUIRE(special.override_used != nullptr);
  CHECK(special.override_used->pattern == "embedding/special");

  VariableStrategy table = strategy.Resolve("embedding/table");
  CHECK(table.sparse == SparseMethod::kAllGather);
  CHECK(table.partitions == 4);
  CHECK(table.sparse_setting == "strategy.variables[\"embedding/*\"] in cluster.yaml");
  CHECK(table.sparse_from_override);
  CHECK(plain.sparse_setting == "strategy.sparse: dense in cluster.yaml");
  CHECK(plain.dense_setting == "auto");
  CHECK(plain.sparse_conflict.empty());

  // Presets, as --strategy would choose them: the flag wins over the section's sparse
  // (with a warning), the override over the flag (with a warning).
  VariableStrategy hybrid = strategy.Resolve("dense/kernel", {StrategyKind::kHybrid});
  CHECK(hybrid.dense == DenseMethod::kPs);          // the override
  CHECK(hybrid.dense_conflict ==
        "cluster.yaml:9: strategy.variables[\"*kernel\"] (dense: ps) wins over --strategy "
        "hybrid (dense: allreduce): a per-variable override is more specific than the command "
        "line");
  CHECK(hybrid.sparse == SparseMethod::kPs);  // the flag, over the section's dense
  CHECK(hybrid.sparse_setting == "--strategy hybrid");
  CHECK(hybrid.sparse_conflict ==
        "cluster.yaml:4: strategy.sparse: dense is overruled by --strategy hybrid (sparse: ps): "
        "the command line wins over the spec's strategy section");
  VariableStrategy gathered = strategy.Resolve("bias", {StrategyKind::kPs, SparseMethod::kAllGather});
  CHECK(gathered.sparse == SparseMethod::kAllGather);  // --sparse over --strategy
  CHECK(gathered.sparse_setting == "--sparse allgather");
  CHECK(gathered.dense == DenseMethod::kPs);
  VariableStrategy automatic = strategy.Resolve("bias", {StrategyKind::kAuto});
  CHECK_FALSE(automatic.sparse.has_value());  // --strategy auto hands it back to the cost model
  CHECK(automatic.sparse_setting == "auto");
  CHECK_FALSE(automatic.sparse_conflict.empty());
  VariableStrategy allreduce = StrategySpec().Resolve("w", {StrategyKind::kAllReduce});
  CHECK(allreduce.dense == DenseMethod::kAllReduce);
  CHECK(allreduce.sparse == SparseMethod::kAllGather);
  VariableStrategy ps = StrategySpec().Resolve("w", {StrategyKind::kPs});
  CHECK(ps.dense == DenseMethod::kPs);
  CHECK(ps.sparse == SparseMethod::kPs);
  VariableStrategy parallax = StrategySpec().Resolve("w", {StrategyKind::kHybrid});
  CHECK(parallax.dense == DenseMethod::kAllReduce);
  CHECK(parallax.sparse == SparseMethod::kPs);
  CHECK(parallax.partitions == kAutoPartitions);
  CHECK(parallax.sparse_conflict.empty());  // strategy.default never conflicts with --strategy

  // The preset of strategy.default, named with its file.
  const ClusterSpec preset = Parse("hosts: [{name: n, gpus: [0]}]\nstrategy: {default: hybrid}\n");
  CHECK(preset.strategy.Resolve("w").sparse_setting == "strategy.default: hybrid in cluster.yaml");
}

TEST_CASE("a sync method given as a preset: the error points to the setting that takes it") {
  CHECK(UnknownStrategyMessage("allgather", "--sparse") ==
        "unknown strategy 'allgather' (expected auto, allreduce, ps or hybrid); 'allgather' is a "
        "method for sparse gradients, not a preset: use --sparse allgather");
  CHECK(UnknownStrategyMessage("densify", "--sparse").ends_with("use --sparse dense"));
  CHECK(UnknownStrategyMessage("fast", "--sparse") ==
        "unknown strategy 'fast' (expected auto, allreduce, ps or hybrid)");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy: {default: allgather}\n") ==
        "cluster.yaml:2: strategy.default: unknown strategy 'allgather' (expected auto, "
        "allreduce, ps or hybrid); 'allgather' is a method for sparse gradients, not a preset: "
        "use strategy.sparse: allgather");
  CHECK(ParseSparseMethod("dense") == SparseMethod::kDense);
  CHECK_FALSE(ParseSparseMethod("densify").has_value());
  CHECK(ParseDenseMethod("ps") == DenseMethod::kPs);
}

TEST_CASE("glob patterns: '*' spans '/', '?' is one character") {
  CHECK(GlobMatch("embedding/*", "embedding/weights"));
  CHECK(GlobMatch("embedding/*", "embedding/"));
  CHECK(GlobMatch("*", ""));
  CHECK(GlobMatch("*/kernel", "layer1/dense/kernel"));
  CHECK(GlobMatch("a*b*c", "aXXbYYbZc"));
  CHECK(GlobMatch("w?", "w1"));
  CHECK_FALSE(GlobMatch("w?", "w"));
  CHECK_FALSE(GlobMatch("w?", "w12"));
  CHECK_FALSE(GlobMatch("embedding/*", "my_embedding/weights"));
  CHECK_FALSE(GlobMatch("dense/kernel", "dense/kernel/Adam"));
  CHECK(GlobMatch("dense/kernel*", "dense/kernel/Adam"));
  // Never exponential: a long near-miss answers at once.
  CHECK_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*b", std::string(200, 'a')));
}

TEST_CASE("names of strategies and methods round-trip") {
  for (StrategyKind kind : {StrategyKind::kAuto, StrategyKind::kAllReduce, StrategyKind::kPs,
                            StrategyKind::kHybrid}) {
    CHECK(ParseStrategyKind(StrategyKindName(kind)) == kind);
  }
  CHECK_FALSE(ParseStrategyKind("Hybrid").has_value());
  CHECK(DenseMethodName(DenseMethod::kPs) == "ps");
  CHECK(SparseMethodName(SparseMethod::kAllGather) == "allgather");
  CHECK(DeviceKindName(DeviceKind::kCpu) == "CPU");
}

TEST_CASE("host names: what mpirun -H and hostfiles can carry") {
  CHECK(IsValidHostName("node1"));
  CHECK(IsValidHostName("localhost"));
  CHECK(IsValidHostName("10.0.0.7"));
  CHECK(IsValidHostName("gpu-01.cluster_a.example.org"));
  CHECK_FALSE(IsValidHostName(""));
  CHECK_FALSE(IsValidHostName("node1:4"));
  CHECK_FALSE(IsValidHostName("a,b"));
  CHECK_FALSE(IsValidHostName("node 1"));
  CHECK_FALSE(IsValidHostName("-H"));
  CHECK_FALSE(IsValidHostName("alice@node1"));
}

TEST_CASE("errors give the file, line and key path on one line") {
  CHECK(ErrorOf("hosts:\n  - name: a\n    cpus: 2\n    ranks_per_gpu: 2\n") ==
        "cluster.yaml:4: hosts[0].ranks_per_gpu: a host of 'cpus' has no GPUs to share");
  CHECK(ErrorOf("hosts:\n  - name: a\n    gpus: [0]\n    ranks_per_gpu: 0\n") ==
        "cluster.yaml:4: hosts[0].ranks_per_gpu: must be at least 1, got 0");
  CHECK(ErrorOf("hosts:\n  - name: a\n    gpus: [0, 1]\n    ranks_per_gpu: 1000\n") ==
        "cluster.yaml:2: hosts[0]: 2 GPUs x ranks_per_gpu 1000 is over the limit of 1024 ranks");
  CHECK(ErrorOf("hosts:\n  - name: a\n    gpus: [0]\n    gpu: [1]\n") ==
        "cluster.yaml:4: hosts[0].gpu: unknown key (did you mean 'gpus'?)");
  CHECK(ErrorOf("hosts:\n  - name: a\n    colour: red\n    gpus: [0]\n") ==
        "cluster.yaml:3: hosts[0].colour: unknown key (expected name, gpus, cpus, memory_gb, "
        "gpu_memory_gb or ranks_per_gpu)");
  CHECK(ErrorOf("hosts:\n  - name:\n    gpus: [0]\n") ==
        "cluster.yaml:2: hosts[0].name: expected a host name, got nothing");
  CHECK(ErrorOf("hosts:\n  - name: [a, b]\n    gpus: [0]\n") ==
        "cluster.yaml:2: hosts[0].name: expected a host name, got a list");
  CHECK(ErrorOf("hosts:\n  - name: a\n    gpus: []\n") ==
        "cluster.yaml:3: hosts[0].gpus: no GPUs; list at least one GPU id, or use 'cpus'");
  CHECK(ErrorOf("hosts:\n  - name: a\n    cpus: 2.5\n") ==
        "cluster.yaml:3: hosts[0].cpus: expected a number of CPU ranks, got '2.5'");
  CHECK(ErrorOf("hosts:\n  - name: a\n    cpus: 5000\n") ==
        "cluster.yaml:3: hosts[0].cpus: 5000 is over the limit of 1024");
  CHECK(ErrorOf("hosts:\n  - name: a\n    gpus: [0, 1024]\n") ==
        "cluster.yaml:3: hosts[0].gpus[1]: GPU id 1024 is out of range (0 to 1023)");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nnetwork: fast\n") ==
        "cluster.yaml:2: network: expected a mapping (bandwidth_gbps, intra_host_bandwidth_gbps, "
        "latency_us, intra_host_latency_us), got 'fast'");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nnetwork: {latency_us: 0}\n") ==
        "cluster.yaml:2: network.latency_us: must be more than 0 microseconds, got 0");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nnetwork: {intra_host_bandwidth_gbps: -1}\n") ==
        "cluster.yaml:2: network.intra_host_bandwidth_gbps: must be more than 0 Gb/s, got -1");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nnetwork: {bandwidth_gbps: .inf}\n") ==
        "cluster.yaml:2: network.bandwidth_gbps: expected a number of Gb/s, got '.inf'");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy: {partitions: many}\n") ==
        "cluster.yaml:2: strategy.partitions: expected 'auto' or a positive number of "
        "partitions, got 'many'");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy: {dense: allgather}\n") ==
        "cluster.yaml:2: strategy.dense: unknown method 'allgather' for dense gradients "
        "(expected allreduce or ps)");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy:\n  variables:\n    w: {}\n") ==
        "cluster.yaml:4: strategy.variables[\"w\"]: expected settings such as {sparse: ps, "
        "partitions: 4} (dense, sparse, partitions), got an empty mapping");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy:\n  variables:\n    w: ps\n") ==
        "cluster.yaml:4: strategy.variables[\"w\"]: expected settings such as {sparse: ps, "
        "partitions: 4} (dense, sparse, partitions), got 'ps'");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy:\n  variables: [w]\n") ==
        "cluster.yaml:3: strategy.variables: expected a mapping from variable names or "
        "patterns to settings, got a list");
  CHECK(ErrorOf("hosts:\n  - {name: a, cpus: 1, memory_gb: 0}\n") ==
        "cluster.yaml:2: hosts[0].memory_gb: must be more than 0 GB, got 0");
  CHECK(ErrorOf("hosts:\n  - {name: a, cpus: 1, memory_gb: 16GB}\n") ==
        "cluster.yaml:2: hosts[0].memory_gb: expected a number of GB, got '16GB'");
  CHECK(ErrorOf("hosts:\n  - {name: a, cpus: 1, gpu_memory_gb: 80}\n") ==
        "cluster.yaml:2: hosts[0].gpu_memory_gb: a host of 'cpus' has no GPU memory; give "
        "'memory_gb'");
  CHECK(ErrorOf("hosts:\n  - node1\n") ==
        "cluster.yaml:2: hosts[0]: expected a mapping with 'name' and 'gpus' or 'cpus', got "
        "'node1'");
  CHECK(ErrorOf("hosts:\n  - {name: a, cpus: 1}\n? [x]\n: 1\n") ==
        "cluster.yaml:3: keys must be words, got a list");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy: {default: ps, default: ps}\n") ==
        "cluster.yaml:2: strategy.default: key given twice (first on line 2)");
}

TEST_CASE("anything but a cluster spec gives one clear line, never an exception") {
  // A binary graph passed as --cluster by mistake.
  std::string binary("\x0a\x05\x0a\x01x\x12\x00\xff\xfe\x01\x02", 11);
  StatusOr<ClusterSpec> spec = ParseClusterSpec(binary, "model.pb");
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().code() == StatusCode::kInvalidArgument);
  CHECK(spec.status().message().find('\n') == std::string::npos);
  CHECK(spec.status().message().rfind("model.pb:", 0) == 0);

  CHECK(ErrorOf("just some words\n") ==
        "cluster.yaml:1: expected a mapping with 'hosts' (and optionally 'network' and "
        "'strategy'), got 'just some words'");
  CHECK(ErrorOf(std::string(100, 'x')) ==
        "cluster.yaml:1: expected a mapping with 'hosts' (and optionally 'network' and "
        "'strategy'), got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
  CHECK(ErrorOf("---\n...\n") ==
        "cluster.yaml: file holds only comments; expected a cluster spec with a 'hosts' list");
  CHECK(ErrorOf(" \n\t\n") ==
        "cluster.yaml: file is empty; expected a cluster spec with a 'hosts' list");
  // yaml-cpp's LoadAll never returned on a ',' opening a document (found by
  // fuzz/cluster_spec_fuzzer.cc); nor may the parser.
  CHECK(ErrorOf(",") ==
        "cluster.yaml:1:1: unexpected ','; ',' separates items only inside [...] or {...}");
  // YAML is UTF-8 (found by fuzz/cluster_spec_fuzzer.cc: a pattern of other bytes was
  // read, but its quoted form in FormatClusterSpec's output was not).
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy:\n  variables: {\"e\xff\": {}}\n") ==
        "cluster.yaml:3:17: byte 0xff is not valid UTF-8 (a cluster spec is UTF-8 text)");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\nstrategy:\n  variables:\n    \"e\\N\": {}\n") ==
        "cluster.yaml:4: strategy.variables: a variable name that is not valid UTF-8 (yaml-cpp "
        "reads the escapes \\N and \\_ as the bytes 0x85 and 0xa0)");
  CHECK(ErrorOf("hosts: [{name: a, cpus: 1}]\n---\n,\n") ==
        "cluster.yaml:3: a cluster spec is one YAML document; a second one starts here");
  // Deep nesting hits yaml-cpp's depth guard, which throws; it must come back as a Status.
  const std::string deep = "hosts: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
  StatusOr<ClusterSpec> nested = ParseClusterSpec(deep, "deep.yaml");
  REQUIRE_FALSE(nested.ok());
  CHECK(nested.status().message().rfind("deep.yaml:", 0) == 0);
}

TEST_CASE("a missing file and a directory are clear errors") {
  StatusOr<ClusterSpec> missing = LoadClusterSpec("/nonexistent/cluster.yaml");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "/nonexistent/cluster.yaml: no such file");
  const std::string dir = testing::TempDir();
  StatusOr<ClusterSpec> directory = LoadClusterSpec(dir);
  CHECK(directory.status().message() == dir + ": is a directory, not a file");
}

TEST_CASE("every example in configs/ parses and lays out") {
  struct Example {
    const char* file;
    int ranks;
    int hosts;
    DeviceKind device;
  };
  const Example examples[] = {
      {"local-2cpu.yaml", 2, 1, DeviceKind::kCpu},
      {"paper-3x4gpu.yaml", 12, 3, DeviceKind::kGpu},
      {"8x8gpu.yaml", 64, 8, DeviceKind::kGpu},
      {"paper-8x6-titanxp.yaml", 48, 8, DeviceKind::kGpu},
      {"h100-6x8.yaml", 48, 6, DeviceKind::kGpu},
  };
  for (const Example& example : examples) {
    INFO(example.file);
    StatusOr<ClusterSpec> spec =
        LoadClusterSpec(testing::RepoPath(std::string("configs/") + example.file));
    REQUIRE(spec.ok());
    CHECK(spec->num_ranks() == example.ranks);
    StatusOr<RankLayout> layout = LayoutRanks(*spec);
    REQUIRE(layout.ok());
    CHECK(layout->world_size() == example.ranks);
    CHECK(layout->num_hosts() == example.hosts);
    CHECK(layout->rank(0).device == example.device);
  }
  // ... and nothing in configs/ is left untested.
  int yaml_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::RepoPath("configs"))) {
    if (entry.path().extension() == ".yaml") {
      INFO(entry.path().string());
      CHECK(LoadClusterSpec(entry.path().string()).ok());
      ++yaml_files;
    }
  }
  CHECK(yaml_files == static_cast<int>(std::size(examples)));

  StatusOr<ClusterSpec> paper = LoadClusterSpec(testing::RepoPath("configs/paper-3x4gpu.yaml"));
  REQUIRE(paper.ok());
  CHECK(paper->network.bandwidth_gbps == 100.0);
  CHECK(paper->strategy.default_strategy == StrategyKind::kHybrid);
  StatusOr<ClusterSpec> big = LoadClusterSpec(testing::RepoPath("configs/8x8gpu.yaml"));
  REQUIRE(big.ok());
  VariableStrategy embedding = big->strategy.Resolve("embeddings");
  CHECK(embedding.sparse == SparseMethod::kPs);
  CHECK(embedding.partitions == 16);
}

// Lines for *.hosts files are hostfile cases; the rest are cluster specs.
bool IsHostfileCase(const std::string& file) {
  return file.size() > 6 && file.compare(file.size() - 6, 6, ".hosts") == 0;
}

// testdata/bad_cluster/expected_errors.txt: "file | exact error message" per line; the
// cluster specs are every file not named *.hosts (hostfile_test takes those).
TEST_CASE("every malformed cluster spec gives its exact one-line error") {
  const std::vector<testing::ExpectedError> all_cases =
      testing::ReadExpectedErrors(testing::RepoPath("testdata/bad_cluster"));
  REQUIRE_FALSE(all_cases.empty());
  int cases = 0;
  for (const auto& [file, message] : all_cases) {
    if (IsHostfileCase(file)) continue;
    INFO(file);
    StatusOr<ClusterSpec> spec = LoadClusterSpec(file);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().message() == message);
    CHECK(spec.status().message().find('\n') == std::string::npos);
    ++cases;
  }
  CHECK(cases >= 12);
}

}  // namespace
}  // namespace parallax
