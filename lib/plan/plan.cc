#include "lib/plan/plan.h"

#include <algorithm>

namespace parallax {

std::string_view SyncMethodName(SyncMethod method) {
  switch (method) {
    case SyncMethod::kAllReduce: return "allreduce";
    case SyncMethod::kParameterServer: return "ps";
    case SyncMethod::kAllGather: return "allgather";
    case SyncMethod::kDensify: return "densify";
    case SyncMethod::kLocal: return "local";
    case SyncMethod::kNone: return "none";
  }
  return "none";
}

int VariablePlan::PartitionOfRow(int64_t row) const {
  auto it = std::upper_bound(partitions.begin(), partitions.end(), row,
                             [](int64_t r, const Partition& p) { return r < p.row_end; });
  if (it == partitions.end() || row < it->row_begin) return -1;
  return static_cast<int>(it - partitions.begin());
}

const VariablePlan* Plan::FindVariable(std::string_view name) const {
  for (const VariablePlan& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

const VariablePlan* Plan::FindSlotOwner(std::string_view slot) const {
  for (const VariablePlan& v : variables) {
    if (std::find(v.slots.begin(), v.slots.end(), slot) != v.slots.end()) return &v;
  }
  return nullptr;
}

bool Plan::IdenticalOnEveryRank(std::string_view name) const {
  const VariablePlan* variable = FindSlotOwner(name);
  if (variable == nullptr) variable = FindVariable(name);
  if (variable == nullptr) return false;
  switch (variable->method) {
    case SyncMethod::kAllReduce:
    case SyncMethod::kAllGather:
    case SyncMethod::kDensify:
      return true;
    case SyncMethod::kParameterServer:
    case SyncMethod::kLocal:
    case SyncMethod::kNone:
      return false;
  }
  return false;
}

}  // namespace parallax
