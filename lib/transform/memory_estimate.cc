#include "lib/transform/memory_estimate.h"

#include <map>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "lib/base/file.h"
#include "lib/base/machine.h"

namespace parallax {
namespace {

// Bytes of `rows` rows of `v` (bytes spread evenly over shape[0]).
int64_t RowsBytes(const VariablePlan& v, int64_t rows) {
  const int64_t all_rows = v.shape.empty() ? 0 : v.shape[0];
  if (all_rows <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(v.bytes) * static_cast<double>(rows) /
                              static_cast<double>(all_rows));
}

// The gradient buffers of trainable variable `v` (not a slot).
int64_t GradientBytes(const Plan& plan, const VariablePlan& v) {
  if (v.bytes <= 0) return 0;
  if (plan.world_size() == 1) {
    // The single-device graph, unchanged: a dense gradient; sparse rows not counted.
    const bool trainable = v.method != SyncMethod::kLocal && v.method != SyncMethod::kNone;
    return trainable && !v.sparse ? v.bytes : 0;
  }
  switch (v.method) {
    case SyncMethod::kAllReduce: return 2 * v.bytes;
    case SyncMethod::kDensify: {
      const int64_t rows = v.shape.empty() ? 0 : std::max<int64_t>(v.shape[0], 0);
      return 2 * v.bytes + 2 * rows * 4;
    }
    case SyncMethod::kParameterServer:
    case SyncMethod::kAllGather: return 2 * v.bytes_sent_per_rank_per_step;
    case SyncMethod::kLocal:
    case SyncMethod::kNone: return 0;
  }
  return 0;
}

// The names of the plan's optimizer slots.
std::unordered_set<std::string_view> SlotNames(const Plan& plan) {
  std::unordered_set<std::string_view> slots;
  for (const VariablePlan& v : plan.variables) slots.insert(v.slots.begin(), v.slots.end());
  return slots;
}

int64_t GigabytesToBytes(double gb) { return static_cast<int64_t>(std::llround(gb * 1e9)); }

// `rank`'s state bytes of `v`: all of it, or its partitions' rows on parameter servers.
int64_t StateBytesOnRank(const VariablePlan& v, int rank) {
  if (v.bytes <= 0) return 0;
  if (v.method != SyncMethod::kParameterServer) return v.bytes;
  int64_t bytes = 0;
  for (const Partition& p : v.partitions) {
    if (p.owner == rank) bytes += RowsBytes(v, p.rows());
  }
  return bytes;
}

}  // namespace

std::vector<RankMemory> EstimateRankMemory(const Plan& plan) {
  const std::unordered_set<std::string_view> slots = SlotNames(plan);
  std::vector<RankMemory> ranks(static_cast<size_t>(plan.world_size()));
  int64_t replicated = 0, gradients = 0;  // the same on every rank
  for (const VariablePlan& v : plan.variables) {
    if (v.bytes <= 0) continue;
    if (v.method == SyncMethod::kParameterServer) {
      for (const Partition& p : v.partitions) {
        if (p.owner >= 0 && p.owner < plan.world_size()) {
          ranks[static_cast<size_t>(p.owner)].state_bytes += RowsBytes(v, p.rows());
        }
      }
    } else {
      replicated += v.bytes;
    }
    if (!slots.contains(v.name)) gradients += GradientBytes(plan, v);
  }
  for (RankMemory& rank : ranks) {
    rank.state_bytes += replicated;
    rank.gradient_bytes = gradients;
  }
  return ranks;
}

std::pair<std::string, int64_t> LargestOnRank(const Plan& plan, int rank) {
  const std::unordered_set<std::string_view> slots = SlotNames(plan);
  std::pair<std::string, int64_t> largest{"", 0};
  for (const VariablePlan& v : plan.variables) {
    const int64_t bytes =
        StateBytesOnRank(v, rank) + (slots.contains(v.name) ? 0 : GradientBytes(plan, v));
    if (bytes > largest.second) {
      largest = {fmt::format("{} ({})", v.name, SyncMethodName(v.method)), bytes};
    }
  }
  return largest;
}

std::optional<HostMemory> MemoryOfHost(const HostSpec& host, const std::string& spec_source) {
  const std::string in = spec_source.empty() ? "" : fmt::format(" in {}", spec_source);
  if (host.device == DeviceKind::kGpu) {
    if (host.gpu_memory_gb <= 0) return std::nullopt;
    return HostMemory{.bytes = GigabytesToBytes(host.gpu_memory_gb),
                      .per_rank = true,
                      .source = fmt::format("gpu_memory_gb{}", in)};
  }
  if (host.memory_gb > 0) {
    return HostMemory{.bytes = GigabytesToBytes(host.memory_gb),
                      .source = fmt::format("memory_gb{}", in)};
  }
  if (!NamesThisMachine(host.name)) return std::nullopt;
  std::optional<int64_t> total = TotalMemoryBytes();
  if (!total) return std::nullopt;
  return HostMemory{.bytes = *total, .source = "this machine's memory"};
}

Status CheckPlanFitsMemory(const Plan& plan, const ClusterSpec& cluster) {
  for (const HostSpec& host : cluster.hosts) {
    std::optional<HostMemory> memory = MemoryOfHost(host, cluster.source);
    if (!memory) continue;
    int64_t need = 0;  // the host's ranks together, or its fullest GPU's (GPU memory)
    int count = 0;
    int largest = -1;
    std::map<int, int64_t> per_gpu;  // ranks sharing a GPU (ranks_per_gpu) add up
    for (size_t r = 0; r < plan.memory.size() && r < plan.ranks.size(); ++r) {
      if (plan.ranks[r].host != host.name) continue;
      const int64_t total = plan.memory[r].total();
      ++count;
      int64_t& on_gpu = per_gpu[plan.ranks[r].device_index];
      on_gpu += total;
      need = memory->per_rank ? std::max(need, on_gpu) : need + total;
      if (largest < 0 || total > plan.memory[static_cast<size_t>(largest)].total()) {
        largest = static_cast<int>(r);
      }
    }
    if (largest < 0 || need <= memory->bytes) continue;
    const RankMemory& rank = plan.memory[static_cast<size_t>(largest)];
    const auto [variable, variable_bytes] = LargestOnRank(plan, largest);
    const std::string whose =
        memory->per_rank ? fmt::format("a rank of host '{}' needs", host.name)
                         : fmt::format("the {} rank{} of host '{}' need", count,
                                       count == 1 ? "" : "s", host.name);
    return ResourceExhaustedError(
        "{}: the plan does not fit in memory: {} {} by the transform's estimate, more than "
        "the {} it has ({}); rank {} holds {} of state and {} of gradient buffers, most of "
        "it {} with {}; use --sparse ps (tables partitioned over the ranks), fewer ranks per "
        "host, or set the host's {} if the figure is wrong",
        plan.source_graph, whose, HumanBytes(static_cast<uint64_t>(need)),
        HumanBytes(static_cast<uint64_t>(memory->bytes)), memory->source, largest,
        HumanBytes(static_cast<uint64_t>(rank.state_bytes)),
        HumanBytes(static_cast<uint64_t>(rank.gradient_bytes)), variable,
        HumanBytes(static_cast<uint64_t>(variable_bytes)),
        memory->per_rank ? "gpu_memory_gb" : "memory_gb");
  }
  return Status::Ok();
}

}  // namespace parallax
