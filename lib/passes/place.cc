#include "lib/passes/place.h"

#include <cctype>
#include <string>
#include <vector>

#include "lib/plan/plan.h"

namespace parallax {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The device type of one '/'-separated component: "device:XLA_CPU:0" -> "xla_cpu",
// "cpu:0" -> "cpu" (the legacy form); "" for job/replica/task components.
std::string DeviceType(std::string_view component) {
  std::string lower = Lower(component);
  std::string_view rest = lower;
  if (rest.starts_with("device:")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("job:") || rest.starts_with("replica:") ||
             rest.starts_with("task:")) {
    return "";
  }
  return std::string(rest.substr(0, rest.find(':')));
}

// "/job:worker/replica:0/task:3/device:GPU:0" -> "/job:worker/replica:0/task:3/device:CPU:0".
std::string CpuDeviceOf(std::string_view rank_device, int rank) {
  const size_t device = rank_device.find("/device:");
  if (device == std::string_view::npos) {
    return "/job:worker/replica:0/task:" + std::to_string(rank) + "/device:CPU:0";
  }
  return std::string(rank_device.substr(0, device)) + "/device:CPU:0";
}

}  // namespace

bool DeviceNamesCpu(std::string_view device) {
  if (device.empty() || device.front() == '@') return false;
  size_t begin = 0;
  while (begin <= device.size()) {
    size_t end = device.find('/', begin);
    if (end == std::string_view::npos) end = device.size();
    const std::string_view component = device.substr(begin, end - begin);
    if (!component.empty() && DeviceType(component).find("cpu") != std::string::npos) {
      return true;
    }
    begin = end + 1;
  }
  return false;
}

StatusOr<bool> PlacePass::RunImpl(Graph& graph, PassContext& context) {
  const Plan* plan = context.plan;
  if (plan == nullptr) return InternalError("no plan in the pass context");
  const int rank = context.rank;
  if (rank < 0 || rank >= plan->world_size() ||
      rank >= static_cast<int>(plan->rank_devices.size())) {
    return InternalError("rank {} is not a rank of the plan ({} ranks, {} devices)", rank,
                         plan->world_size(), plan->rank_devices.size());
  }
  const std::string& rank_device = plan->rank_devices[static_cast<size_t>(rank)];
  const bool gpu_rank = plan->ranks[static_cast<size_t>(rank)].device == DeviceKind::kGpu;
  const std::string cpu_device = gpu_rank ? CpuDeviceOf(rank_device, rank) : rank_device;

  // Decide every node's device from the source devices first, then apply, so that
  // `@other` resolves against the input graph whatever the node order.
  const std::vector<NodeId> ids = graph.NodeIds();
  std::vector<std::string_view> targets;
  targets.reserve(ids.size());
  for (NodeId id : ids) {
    std::string_view device = graph.node(id).device();
    // Follow `@other` chains; a chain longer than the graph is a cycle.
    for (size_t hops = 0; !device.empty() && device.front() == '@'; ++hops) {
      const NodeId other = graph.FindNode(device.substr(1));
      if (other == kNoNode || hops > ids.size()) {
        device = {};
        break;
      }
      device = graph.node(other).device();
    }
    targets.push_back(DeviceNamesCpu(device) ? std::string_view(cpu_device)
                                             : std::string_view(rank_device));
  }
  bool changed = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (graph.node(ids[i]).device() == targets[i]) continue;
    graph.SetDevice(ids[i], targets[i]);
    changed = true;
  }
  return changed;
}

std::unique_ptr<Pass> CreatePlacePass() { return std::make_unique<PlacePass>(); }

}  // namespace parallax
