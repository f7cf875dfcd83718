#include "lib/launch/host_binding.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace parallax {

namespace {

std::string Plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// "node1, node2, node3" or "node1, node2, ... (40 hosts)" for long lists.
std::string NameList(const std::vector<std::string>& names) {
  constexpr size_t kShown = 4;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  if (names.size() > kShown) text += fmt::format(", ... ({} hosts)", names.size());
  return text;
}

// "ranks 0-3" or "rank 4".
std::string RankRange(const PlanHostRole& role) {
  if (role.ranks == 1) return fmt::format("rank {}", role.first_rank);
  return fmt::format("ranks {}-{}", role.first_rank, role.first_rank + role.ranks - 1);
}

}  // namespace

std::vector<PlanHostRole> PlanHostRoles(const Plan& plan) {
  std::vector<PlanHostRole> roles;
  std::set<int> gpus;  // of the last role
  for (const RankPlacement& r : plan.ranks) {
    if (roles.empty() || roles.back().name != r.host) {
      PlanHostRole role;
      role.index = static_cast<int>(roles.size());
      role.name = r.host;
      role.first_rank = r.rank;
      roles.push_back(role);
      gpus.clear();
    }
    ++roles.back().ranks;
    if (r.device == DeviceKind::kGpu) {
      ++roles.back().gpu_ranks;
      gpus.insert(r.device_index);
      roles.back().gpus = static_cast<int>(gpus.size());
    }
  }
  return roles;
}

int HostBinding::world_size() const {
  int total = 0;
  for (const BoundHost& bound : hosts) total += bound.role.ranks;
  return total;
}

Hostfile HostBinding::BoundHostfile() const {
  Hostfile hostfile;
  hostfile.source = source;
  for (const BoundHost& bound : hosts) {
    HostfileEntry entry;
    entry.name = bound.host.name;
    entry.slots = bound.role.ranks;
    hostfile.hosts.push_back(entry);
  }
  return hostfile;
}

std::vector<std::string> HostBinding::Describe() const {
  std::vector<std::string> lines;
  for (const BoundHost& bound : hosts) {
    const int capacity = std::max(bound.host.slots, bound.host.max_slots.value_or(0));
    std::string gpus;
    if (bound.role.gpus > 0) {
      gpus = bound.host.gpus ? fmt::format(", {} of {} GPUs", bound.role.gpus, *bound.host.gpus)
                             : fmt::format(", {}", Plural(bound.role.gpus, "GPU"));
    }
    lines.push_back(fmt::format("host {} ({}) -> {}: {} ({} of {} slot{}{})", bound.role.index,
                                bound.role.name, bound.host.name, RankRange(bound.role),
                                bound.role.ranks, capacity, capacity == 1 ? "" : "s", gpus));
  }
  if (!unused.empty()) lines.push_back("unused: " + NameList(unused));
  return lines;
}

StatusOr<HostBinding> BindPlanHosts(const Plan& plan, const Hostfile& allocation) {
  const std::vector<PlanHostRole> roles = PlanHostRoles(plan);
  if (allocation.hosts.size() < roles.size()) {
    std::vector<std::string> names;
    for (const HostfileEntry& host : allocation.hosts) names.push_back(host.name);
    return InvalidArgumentError(
        "{}: {} ({}) for the plan's {}; give as many hosts, or transform the job for {}",
        allocation.source, Plural(static_cast<int>(names.size()), "host"), NameList(names),
        Plural(static_cast<int>(roles.size()), "host"),
        Plural(static_cast<int>(names.size()), "host"));
  }
  HostBinding binding;
  binding.source = allocation.source;
  for (size_t i = 0; i < allocation.hosts.size(); ++i) {
    const HostfileEntry& host = allocation.hosts[i];
    if (i >= roles.size()) {
      binding.unused.push_back(host.name);
      continue;
    }
    const PlanHostRole& role = roles[i];
    const int capacity = std::max(host.slots, host.max_slots.value_or(0));
    if (capacity < role.ranks) {
      return InvalidArgumentError("{}: host '{}' has {} but plan host {} ({}) has {}",
                                  allocation.source, host.name, Plural(capacity, "slot"),
                                  role.index, role.name, Plural(role.ranks, "rank"));
    }
    if (host.gpus && *host.gpus < role.gpus) {
      return InvalidArgumentError("{}: host '{}' has {} but plan host {} ({}) puts {} on {}",
                                  allocation.source, host.name, Plural(*host.gpus, "GPU"),
                                  role.index, role.name, Plural(role.gpu_ranks, "rank"),
                                  Plural(role.gpus, "GPU"));
    }
    binding.hosts.push_back(BoundHost{.role = role, .host = host});
  }
  return binding;
}

}  // namespace parallax
