#include "lib/estimate/step_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "lib/base/file.h"
#include "lib/graph/algorithm.h"
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// The communicator's limits (mpi_communicator.cc): all-reduces go in 4 MiB parts, and
// float parts of up to 256 KiB times the ranks as one all-gather (one MPI call).
constexpr int64_t kPartBytes = int64_t{4} << 20;
constexpr int64_t kGatheredBytes = int64_t{256} << 10;
constexpr int64_t kIndexBytes = 4;

// k of a node the transform named for gradient bucket k ("parallax/bucket_<k>/...") that
// the plan has; -1 for any other node.
int BucketIndex(const Plan& plan, std::string_view name) {
  constexpr std::string_view kPrefix = "parallax/bucket_";
  if (!name.starts_with(kPrefix)) return -1;
  const std::string_view rest = name.substr(kPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return -1;
  const int k = std::atoi(std::string(rest.substr(0, slash)).c_str());
  return k >= 0 && k < static_cast<int>(plan.buckets.size()) ? k : -1;
}

bool IsCollective(const Node& node) {
  const OpSchema* schema = FindOpSchema(node.op());
  return schema != nullptr && schema->is_collective;
}

class CollectivePricer {
 public:
  CollectivePricer(const Plan& plan, const NetworkModel& network, double copy_bytes_per_s)
      : plan_(plan), network_(network), cost_(network), copy_bytes_per_s_(copy_bytes_per_s) {
    const double n = std::max(1, network.world_size);
    rounds_ = std::max(1.0, std::ceil(std::log2(n)));
    latency_ = network.num_hosts > 1 ? network.inter_host_latency_s : network.intra_host_latency_s;
  }

  CollectiveEstimate Price(std::string_view name) const {
    CollectiveEstimate c;
    c.node = std::string(name);
    c.kind = "unpriced";
    c.seconds = latency_ * rounds_;
    const int n = network_.world_size;
    if (n <= 1) {
      c.seconds = 0;
      return c;
    }
    if (const int k = BucketIndex(plan_, name); k >= 0) {
      return AllReduce(std::move(c), plan_.buckets[static_cast<size_t>(k)].bytes);
    }
    const size_t at = name.find("/parallax/");
    if (at == std::string_view::npos) return c;
    const VariablePlan* v = plan_.FindVariable(name.substr(0, at));
    if (v == nullptr || v->bytes <= 0) return c;
    const std::string_view what = name.substr(at + 10);
    if (what.starts_with("allreduce")) return AllReduce(std::move(c), v->bytes);
    if (what.starts_with("touched_allreduce") && !v->shape.empty()) {
      return AllReduce(std::move(c), v->shape[0] * kDensifyCountBytesPerRow);
    }
    if (what.starts_with("pull") || what.starts_with("push")) {
      c.kind = what.starts_with("pull") ? "pull" : "push";
      c.bytes = v->bytes_sent_per_rank_per_step / 2;
      const double calls = network_.num_hosts > 1 ? 8 : 4;
      c.seconds = cost_.PointToPointSeconds(static_cast<double>(c.bytes)) + calls * latency_ * rounds_;
      // The kernel's own passes over the rows: gathered from (pull) or packed into (push)
      // the message, and placed on arrival.
      if (copy_bytes_per_s_ > 0) c.seconds += 2 * static_cast<double>(c.bytes) / copy_bytes_per_s_;
      return c;
    }
    if (what.starts_with("allgather_values") || what.starts_with("allgather_indices")) {
      const int64_t rows = v->shape.empty() ? 1 : std::max<int64_t>(1, v->shape[0]);
      const double row_bytes = static_cast<double>(v->bytes) / static_cast<double>(rows);
      const double per_rank = static_cast<double>(v->bytes_sent_per_rank_per_step) / (n - 1);
      const double share = what.starts_with("allgather_values") ? row_bytes / (row_bytes + kIndexBytes)
                                                                : kIndexBytes / (row_bytes + kIndexBytes);
      c.kind = "all-gather";
      c.bytes = static_cast<int64_t>(std::llround(per_rank * share));
      c.seconds = cost_.RingSeconds(c.bytes * (n - 1)) + 2 * latency_ * rounds_;
      return c;
    }
    return c;
  }

 private:
  CollectiveEstimate AllReduce(CollectiveEstimate c, int64_t bytes) const {
    c.kind = "all-reduce";
    c.bytes = bytes;
    const bool hierarchical = plan_.allreduce.algorithm == "hierarchical" &&
                              network_.num_hosts > 1 && network_.max_ranks_per_host > 1;
    c.seconds = hierarchical ? cost_.HierarchicalAllReduce(bytes).seconds
                             : cost_.FlatAllReduce(bytes).seconds;
    const int64_t parts = std::max<int64_t>(1, (bytes + kPartBytes - 1) / kPartBytes);
    const double calls_per_part =
        (bytes / parts) * network_.world_size <= kGatheredBytes ? 1 : 2;
    c.seconds += static_cast<double>(parts) * (calls_per_part + (hierarchical ? 2 : 0)) *
                 latency_ * rounds_;
    return c;
  }

  const Plan& plan_;
  NetworkModel network_;
  CostModel cost_;
  double copy_bytes_per_s_ = 0;
  double rounds_ = 1;
  double latency_ = 0;
};

// Bytes a bucket's ConcatV2 or SplitV moves: the bucket's (the transform's names:
// "parallax/bucket_<k>/concat", ".../split"); -1 for any other node.
int64_t BucketCopyBytes(const Plan& plan, const Node& node) {
  if (node.op() != "ConcatV2" && node.op() != "SplitV") return -1;
  const int k = BucketIndex(plan, node.name());
  return k >= 0 ? plan.buckets[static_cast<size_t>(k)].bytes : -1;
}

bool HasControlFlow(const Graph& graph, const std::vector<bool>& needed) {
  for (NodeId id : graph.NodeIds()) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const std::string_view op = graph.node(id).op();
    if (op == "Switch" || op == "RefSwitch" || op == "Merge" || op == "RefMerge" ||
        IsEnter(op)) {
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<StepEstimate> EstimateStep(const StepInputs& in) {
  const Graph& graph = *in.rank_graph;
  const Plan& plan = *in.plan;
  const OpProfile& profile = *in.profile;

  // The step's nodes, as the executor chooses them.
  std::vector<NodeId> roots;
  auto add_root = [&](std::string_view tensor_or_node) {
    std::string name(tensor_or_node);
    if (const size_t colon = name.rfind(':'); colon != std::string::npos) name.resize(colon);
    const NodeId id = graph.FindNode(name);
    if (id != kNoNode) roots.push_back(id);
  };
  if (!plan.train_op.empty()) add_root(plan.train_op);
  for (const std::string& fetch : plan.fetches) add_root(fetch);
  if (roots.empty()) {
    return InvalidArgumentError("{}: the plan names no train op or fetch the graph has: nothing "
                                "to estimate",
                                graph.source());
  }
  std::vector<bool> fed(static_cast<size_t>(graph.id_limit()), false);
  for (const std::string& feed : plan.feeds) {
    const NodeId id = graph.FindNode(feed);
    if (id != kNoNode) fed[static_cast<size_t>(id)] = true;
  }
  const std::vector<bool> needed = NeededNodes(graph, roots, fed);
  PX_ASSIGN_OR_RETURN(const std::vector<NodeId> all_order, TopologicalOrder(graph));
  std::vector<NodeId> order;
  for (NodeId id : all_order) {
    if (needed[static_cast<size_t>(id)] && !fed[static_cast<size_t>(id)]) order.push_back(id);
  }

  StepEstimate out;
  const CollectivePricer pricer(plan, in.network, profile.copy_bytes_per_s);
  std::vector<double> duration(static_cast<size_t>(graph.id_limit()), 0);
  std::vector<bool> collective(static_cast<size_t>(graph.id_limit()), false);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    double& d = duration[static_cast<size_t>(id)];
    ++out.nodes;
    if (const auto it = profile.node_us.find(std::string(node.name())); it != profile.node_us.end()) {
      d = it->second * 1e-6;
      ++out.profiled_nodes;
      out.compute_seconds += d;
    } else if (IsCollective(node)) {
      collective[static_cast<size_t>(id)] = true;
      CollectiveEstimate c = pricer.Price(node.name());
      d = c.seconds;
      out.communication_seconds += d;
      out.collectives.push_back(std::move(c));
    } else if (const int64_t bytes = BucketCopyBytes(plan, node);
               bytes > 0 && profile.copy_bytes_per_s > 0) {
      d = static_cast<double>(bytes) / profile.copy_bytes_per_s;
      out.compute_seconds += d;
    }
  }
  out.overhead_seconds = profile.overhead_us * 1e-6;

  const bool overlap = in.overlap && in.network.world_size > 1 && !HasControlFlow(graph, needed);
  if (!overlap) {
    out.step_seconds = out.overhead_seconds + out.compute_seconds + out.communication_seconds;
  } else {
    // Two threads: compute nodes one at a time (the first ready in order), collectives
    // one at a time in their order.
    const size_t count = order.size();
    std::vector<int64_t> position(static_cast<size_t>(graph.id_limit()), -1);
    for (size_t i = 0; i < count; ++i) position[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    std::vector<double> finish(count, -1);
    auto ready_time = [&](size_t i) -> double {  // -1 when an input is not done yet
      double ready = 0;
      for (const OutputRef& input : graph.node(order[i]).inputs()) {
        const int64_t p = position[static_cast<size_t>(input.node)];
        if (p < 0) continue;  // fed, or not in the step
        if (finish[static_cast<size_t>(p)] < 0) return -1;
        ready = std::max(ready, finish[static_cast<size_t>(p)]);
      }
      return ready;
    };
    std::vector<size_t> compute_nodes, collective_nodes;
    for (size_t i = 0; i < count; ++i) {
      (collective[static_cast<size_t>(order[i])] ? collective_nodes : compute_nodes).push_back(i);
    }
    std::vector<bool> started(count, false);
    size_t next_collective = 0, done = 0;
    size_t first_compute = 0;  // compute_nodes before it have all started
    double compute_clock = 0, communication_clock = 0;
    while (done < count) {
      bool progressed = false;
      // The communication thread: the next collective once its inputs are done.
      while (next_collective < collective_nodes.size()) {
        const size_t i = collective_nodes[next_collective];
        const double ready = ready_time(i);
        if (ready < 0) break;
        communication_clock = std::max(communication_clock, ready) + duration[static_cast<size_t>(order[i])];
        finish[i] = communication_clock;
        started[i] = true;
        ++next_collective;
        ++done;
        progressed = true;
      }
      // The compute thread: the first node in order ready by its clock, else the one
      // ready soonest.
      while (first_compute < compute_nodes.size() && started[compute_nodes[first_compute]]) {
        ++first_compute;
      }
      size_t best = count;
      double best_ready = std::numeric_limits<double>::infinity();
      for (size_t k = first_compute; k < compute_nodes.size(); ++k) {
        const size_t i = compute_nodes[k];
        if (started[i]) continue;
        const double ready = ready_time(i);
        if (ready < 0) continue;
        const double start = std::max(compute_clock, ready);
        if (start < best_ready) {
          best_ready = start;
          best = i;
        }
        if (ready <= compute_clock) break;  // the first ready one in order
      }
      if (best < count) {
        compute_clock = best_ready + duration[static_cast<size_t>(order[best])];
        finish[best] = compute_clock;
        started[best] = true;
        ++done;
        progressed = true;
      }
      if (!progressed) {
        return InternalError("{}: the step's simulation found no node to run ({} of {} done)",
                             graph.source(), done, count);
      }
    }
    out.step_seconds = out.overhead_seconds + std::max(compute_clock, communication_clock);
  }
  out.exposed_communication_seconds =
      std::max(0.0, out.step_seconds - out.compute_seconds - out.overhead_seconds);

  // The bottleneck.
  if (out.exposed_communication_seconds <= out.compute_seconds + out.overhead_seconds) {
    out.bottleneck = fmt::format("compute ({:.1f} of {:.1f} ms per step; communication exposed "
                                 "{:.1f} ms)",
                                 (out.compute_seconds + out.overhead_seconds) * 1e3,
                                 out.step_seconds * 1e3, out.exposed_communication_seconds * 1e3);
  } else {
    double ps = 0, dense = 0;
    for (const CollectiveEstimate& c : out.collectives) {
      (c.kind == "pull" || c.kind == "push" ? ps : dense) += c.seconds;
    }
    const std::string link = in.network.num_hosts > 1
                                 ? fmt::format("the network between hosts ({:.0f} Gb/s)",
                                               in.network.inter_host_bytes_per_s * 8 / 1e9)
                                 : fmt::format("the links inside the host ({:.0f} Gb/s)",
                                               in.network.intra_host_bytes_per_s * 8 / 1e9);
    if (ps > dense) {
      // The owner holding the most partitioned bytes.
      std::map<int, double> owned;
      double total = 0;
      for (const VariablePlan& v : plan.variables) {
        if (v.method != SyncMethod::kParameterServer || v.shape.empty() || v.shape[0] <= 0) continue;
        const double row_bytes = static_cast<double>(v.bytes) / static_cast<double>(v.shape[0]);
        for (const Partition& p : v.partitions) {
          owned[p.owner] += row_bytes * static_cast<double>(p.row_end - p.row_begin);
          total += row_bytes * static_cast<double>(p.row_end - p.row_begin);
        }
      }
      auto hottest = std::max_element(owned.begin(), owned.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
      const double fair = total / std::max(1, in.network.world_size);
      if (hottest != owned.end() && hottest->second > 1.5 * fair) {
        out.bottleneck = fmt::format("a hot parameter-server owner: rank {} holds {:.0f}% of the "
                                     "partitioned bytes ({:.1f} ms of pulls and pushes per step)",
                                     hottest->first, 100 * hottest->second / total, ps * 1e3);
      } else {
        out.bottleneck = fmt::format("parameter-server pulls and pushes over {} ({:.1f} ms per step)",
                                     link, ps * 1e3);
      }
    } else {
      out.bottleneck = fmt::format("all-reduces and all-gathers over {} ({:.1f} ms per step)", link,
                                   dense * 1e3);
    }
  }
  return out;
}

}  // namespace parallax
