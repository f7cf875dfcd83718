// The cluster spec: the YAML file that says which hosts a job runs on, their GPUs (or
// CPU slots), the network between them, and optional strategy choices (docs/cluster.md
// is the schema; configs/ holds examples).
//
// Terms:
//  - a *host* is one machine, named as mpirun knows it ("node1", "localhost");
//  - a *rank* is one process of the job; a GPU host runs one rank per listed GPU (or
//    `ranks_per_gpu` of them), a CPU host one rank per CPU slot (`cpus: N`). Ranks are
//    numbered host by host (rank_layout.h);
//  - the *strategy* is how each variable's gradient is synchronised: *allreduce* (dense
//    gradients), *ps* (partitioned parameter servers), *allgather* (sparse gradients
//    gathered on every rank), *dense* (a sparse gradient densified, then all-reduced);
//    the presets *allreduce*, *ps* and *hybrid* fix the choices for all variables and
//    *auto* leaves what nothing else fixes to the cost model;
//  - a *setting* is what fixed a variable's method: an override, a command-line flag, a
//    key of the strategy section or its preset (StrategySpec::Resolve has the order);
//  - a *variable override* applies to the variables whose name equals its key, or
//    matches it as a glob ('*' any run of characters, '/' included; '?' one character).
//
// Parsing validates every field. Errors are one-line kInvalidArgument statuses naming
// the file, the 1-based line and the key path (`cluster.yaml:7: hosts[1].gpus[2]: GPU id
// 1 is listed twice`); YAML syntax errors carry the column too (`cluster.yaml:4:7: ...`).
// yaml-cpp's exceptions never leave this module.
#ifndef PARALLAX_LIB_CLUSTER_CLUSTER_SPEC_H_
#define PARALLAX_LIB_CLUSTER_CLUSTER_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

// What a rank computes on.
enum class DeviceKind { kGpu, kCpu };
std::string_view DeviceKindName(DeviceKind kind);  // "GPU", "CPU" (as in device strings)

// Limits that keep a typo (`cpus: 40000`) from becoming a job of absurd size.
inline constexpr int kMaxRanksPerHost = 1024;
inline constexpr int kMaxGpuId = 1023;
inline constexpr int kMaxPartitions = 1 << 20;

// Defaults of the `network` section, in Gb/s. 10 Gb/s Ethernet is the common floor of
// a cluster network; 100 Gb/s is what a PCIe 3.0 x16 link moves in practice, the slowest
// path between two GPUs of one machine.
inline constexpr double kDefaultBandwidthGbps = 10.0;
inline constexpr double kDefaultIntraHostBandwidthGbps = 100.0;
// Latency of one MPI call round, for `parallax estimate`: TCP over Ethernet between
// hosts, shared memory inside one.
inline constexpr double kDefaultLatencyUs = 30.0;
inline constexpr double kDefaultIntraHostLatencyUs = 5.0;

struct HostSpec {
  std::string name;
  DeviceKind device = DeviceKind::kGpu;  // kGpu when `gpus` is given, kCpu for `cpus`
  std::vector<int> gpus;                 // GPU ids in the order listed (kGpu only)
  // Ranks on each GPU (kGpu only; `ranks_per_gpu`, 1 unless given): more than one shares
  // the GPU (a test of a multi-rank job on one GPU; their collectives go through the host).
  int ranks_per_gpu = 1;
  int cpus = 0;                          // CPU ranks (kCpu only)
  int line = 0;                          // 1-based line of the entry; 0 when built in code
  // The host's memory in GB (10^9 bytes), which its CPU ranks share, and each GPU's (a GPU
  // rank's state lives there); 0 when the spec does not say. The transform refuses a plan
  // whose ranks would not fit (lib/transform/memory_estimate.h).
  double memory_gb = 0;
  double gpu_memory_gb = 0;

  // Ranks this host runs: ranks_per_gpu per GPU, or `cpus`.
  int num_ranks() const {
    return device == DeviceKind::kGpu ? static_cast<int>(gpus.size()) * ranks_per_gpu : cpus;
  }
};

struct NetworkSpec {
  double bandwidth_gbps = kDefaultBandwidthGbps;                        // between hosts
  double intra_host_bandwidth_gbps = kDefaultIntraHostBandwidthGbps;    // between ranks of a host
  double latency_us = kDefaultLatencyUs;                                // between hosts
  double intra_host_latency_us = kDefaultIntraHostLatencyUs;            // between ranks of a host
};

// `strategy.default` (and the CLI's --strategy).
enum class StrategyKind { kAuto, kAllReduce, kPs, kHybrid };
// How a dense gradient is synchronised.
enum class DenseMethod { kAllReduce, kPs };
// How a sparse gradient (IndexedSlices) is synchronised.
enum class SparseMethod { kPs, kAllGather, kDense };

std::string_view StrategyKindName(StrategyKind kind);  // "auto", "allreduce", "ps", "hybrid"
std::string_view DenseMethodName(DenseMethod method);  // "allreduce", "ps"
std::string_view SparseMethodName(SparseMethod method);  // "ps", "allgather", "dense"
std::optional<StrategyKind> ParseStrategyKind(std::string_view word);  // for --strategy
std::optional<DenseMethod> ParseDenseMethod(std::string_view word);
std::optional<SparseMethod> ParseSparseMethod(std::string_view word);  // for --sparse

// "unknown strategy 'WORD' (expected auto, allreduce, ps or hybrid)", the error for a
// word that names no preset (--strategy, strategy.default). A method for sparse gradients
// given as a preset ('allgather', 'dense', 'densify') gets a hint to the setting that
// takes it: `sparse_setting` is "--sparse" or "strategy.sparse:".
std::string UnknownStrategyMessage(std::string_view word, std::string_view sparse_setting);

// `partitions: auto`: the cost model picks the count.
inline constexpr int kAutoPartitions = 0;

// One entry of `strategy.variables`: each unset field falls back to the strategy.
struct VariableOverride {
  std::string pattern;  // a variable name, or a glob when it holds '*' or '?'
  std::optional<DenseMethod> dense;
  std::optional<SparseMethod> sparse;
  std::optional<int> partitions;  // a count, or kAutoPartitions
  int line = 0;

  bool is_glob() const;
  // Whether the key names `variable`: equal to it, or a glob that matches it.
  bool Matches(std::string_view variable) const;
};

// The strategy choices of a command line (transform's and verify's flags).
struct StrategyFlags {
  std::optional<StrategyKind> preset;  // --strategy; replaces strategy.default
  std::optional<SparseMethod> sparse;  // --sparse
};

// The strategy one variable gets. Unset methods are auto's: dense gradients all-reduced,
// sparse ones as the cost model finds cheapest.
struct VariableStrategy {
  std::optional<DenseMethod> dense;
  std::optional<SparseMethod> sparse;
  int partitions = kAutoPartitions;
  const VariableOverride* override_used = nullptr;  // the entry that matched, if any
  // The setting that decided each method, as the user wrote it: "--strategy ps",
  // "--sparse allgather", "strategy.sparse: ps in c.yaml", "strategy.default: hybrid in
  // c.yaml", "strategy.variables["emb*"] in c.yaml"; "auto" when the method is unset.
  std::string dense_setting = "auto";
  std::string sparse_setting = "auto";
  bool dense_from_override = false;   // the variable's override decided `dense`
  bool sparse_from_override = false;  // ... `sparse`
  // When the command line and the spec ask for different methods for this variable: a
  // warning naming both and which wins ("c.yaml:5: strategy.sparse: allgather is
  // overruled by --strategy ps (sparse: ps): ..."); "" when they agree.
  std::string dense_conflict;
  std::string sparse_conflict;
};

struct StrategySpec {
  std::string source;  // the spec's file, for settings named in reasons and warnings
  StrategyKind default_strategy = StrategyKind::kAuto;
  std::optional<DenseMethod> dense;    // unset: what default_strategy implies
  std::optional<SparseMethod> sparse;  // unset: what default_strategy implies
  int partitions = kAutoPartitions;
  bool average = true;  // mean (not sum) of the ranks' gradients
  std::vector<VariableOverride> variables;  // in file order
  // 1-based lines of `default`, `dense` and `sparse`; 0 when not written.
  int default_line = 0;
  int dense_line = 0;
  int sparse_line = 0;

  // The override for `variable`: an entry whose key is exactly its name, else the first
  // glob (in file order) that matches it; nullptr when none does.
  const VariableOverride* FindOverride(std::string_view variable) const;

  // The choice for `variable`, each method decided by the strongest setting that has
  // one to give, strongest first:
  //  1. the variable's override (strategy.variables): it names the variable, so it is
  //     more specific than anything else;
  //  2. the command line: --sparse, then the preset of --strategy;
  //  3. strategy.dense / strategy.sparse of this section;
  //  4. the preset of strategy.default.
  // A preset fixes both methods: allreduce = dense allreduce + sparse allgather
  // (Horovod), ps = ps for both, hybrid = dense allreduce + sparse ps (Parallax), auto =
  // neither (--strategy auto thus hands the methods back to auto). When the command line
  // and 1. or 3. disagree, the result carries a warning saying which wins.
  VariableStrategy Resolve(std::string_view variable, const StrategyFlags& flags = {}) const;
};

struct ClusterSpec {
  std::string source;  // the file name as given, for messages
  std::vector<HostSpec> hosts;
  NetworkSpec network;
  StrategySpec strategy;

  int num_ranks() const;
  int num_hosts() const { return static_cast<int>(hosts.size()); }
  const HostSpec* FindHost(std::string_view name) const;
};

// Parses the YAML text of a cluster spec; `source` names it in messages.
StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml_text, std::string_view source);

// A cluster spec is a few lines; a larger file is a mistake (a graph passed as --cluster).
inline constexpr uint64_t kMaxClusterSpecBytes = 16 << 20;

// Reads and parses a cluster spec file; errors name `path` as given.
StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);

// The spec as YAML that ParseClusterSpec reads back to the same hosts, network and
// strategy (lines and sources aside): every host, the network, and of the strategy
// `default`, `average`, `partitions` and what else is set. Comments of the file it came
// from are not kept. For cluster specs written by a program (a job re-planned on fewer
// hosts: lib/transform/replan.h).
std::string FormatClusterSpec(const ClusterSpec& spec);

// Whether `name` matches the glob `pattern`: '*' matches any run of characters ('/'
// included), '?' exactly one; every other character itself.
bool GlobMatch(std::string_view pattern, std::string_view name);

// Whether `name` can name a host for mpirun: letters, digits, '.', '-', '_', starting
// with a letter or digit (no ':' or ',' which `-H` uses, no whitespace, no user@).
bool IsValidHostName(std::string_view name);
// Longest host name (DNS's limit).
inline constexpr size_t kMaxHostNameLength = 253;
// Why `name` cannot name a host, for messages; "" when IsValidHostName(name):
// "'node 1' is not a valid host name (letters, digits, '.', '-', '_')", "'aaaa...' is
// 300 characters long; a host name has at most 253", or, for user@host, a hint to
// ~/.ssh/config.
std::string HostNameProblem(std::string_view name);

}  // namespace parallax

#endif  // PARALLAX_LIB_CLUSTER_CLUSTER_SPEC_H_
