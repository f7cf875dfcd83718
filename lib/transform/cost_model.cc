#include "lib/transform/cost_model.h"

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {

constexpr double kBitsPerByte = 8.0;

int64_t Round(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

}  // namespace

NetworkModel NetworkModel::From(const NetworkSpec& network, const RankLayout& layout) {
  NetworkModel model;
  model.world_size = std::max(1, layout.world_size());
  model.num_hosts = std::max(1, layout.num_hosts());
  model.max_ranks_per_host = 1;
  for (const RankPlacement& rank : layout.ranks()) {
    model.max_ranks_per_host = std::max(model.max_ranks_per_host, rank.local_size);
  }
  model.inter_host_bytes_per_s = network.bandwidth_gbps * 1e9 / kBitsPerByte;
  model.intra_host_bytes_per_s = network.intra_host_bandwidth_gbps * 1e9 / kBitsPerByte;
  model.inter_host_latency_s = network.latency_us * 1e-6;
  model.intra_host_latency_s = network.intra_host_latency_us * 1e-6;
  return model;
}

double CostModel::RingSeconds(int64_t bytes) const {
  const double bandwidth = network_.num_hosts > 1 ? network_.inter_host_bytes_per_s
                                                  : network_.intra_host_bytes_per_s;
  return static_cast<double>(bytes) / bandwidth;
}

CommCost CostModel::AllReduce(int64_t bytes) const {
  const double n = network_.world_size;
  CommCost cost;
  cost.bytes = Round(2.0 * (n - 1) / n * static_cast<double>(bytes));
  cost.seconds = RingSeconds(cost.bytes);
  return cost;
}

CommCost CostModel::AllGather(const SparseTraffic& t) const {
  const double n = network_.world_size;
  CommCost cost;
  cost.bytes = Round((n - 1) * static_cast<double>(t.touched_rows) *
                     static_cast<double>(t.row_bytes + t.index_bytes));
  cost.seconds = RingSeconds(cost.bytes);
  return cost;
}

CommCost CostModel::Densify(const SparseTraffic& t) const {
  const double n = network_.world_size;
  CommCost cost;
  cost.bytes = Round(2.0 * (n - 1) / n * static_cast<double>(t.rows) *
                     static_cast<double>(t.row_bytes + kDensifyCountBytesPerRow));
  cost.seconds = RingSeconds(cost.bytes);
  return cost;
}

CommCost CostModel::ParameterServer(const SparseTraffic& t) const {
  const double n = network_.world_size;
  CommCost cost;
  const double bytes = 2.0 * (n - 1) / n * static_cast<double>(t.touched_rows) *
                       static_cast<double>(t.row_bytes + t.index_bytes);
  cost.bytes = Round(bytes);
  cost.seconds = PointToPointSeconds(bytes);
  return cost;
}

double CostModel::PointToPointSeconds(double bytes) const {
  if (network_.world_size <= 1) return 0;
  // Of the N-1 other ranks, L-1 share this rank's host; the other N-L are reached
  // through the host's network link, which its L ranks share.
  const double n = network_.world_size, local = network_.max_ranks_per_host;
  const double intra_share = (local - 1) / (n - 1);
  const double inter_share = (n - local) / (n - 1);
  return bytes * intra_share / network_.intra_host_bytes_per_s +
         bytes * inter_share * local / network_.inter_host_bytes_per_s;
}

AllReduceOnHosts CostModel::FlatAllReduce(int64_t bytes) const {
  const double n = network_.world_size, local = network_.max_ranks_per_host;
  const double b = static_cast<double>(bytes);
  AllReduceOnHosts cost;
  const double intra_per_rank = 2.0 * (local - 1) / n * b;
  const double off_host = 2.0 * local * (n - local) / n * b;
  cost.off_host_bytes = Round(off_host);
  cost.seconds = intra_per_rank / network_.intra_host_bytes_per_s +
                 off_host / network_.inter_host_bytes_per_s;
  return cost;
}

AllReduceOnHosts CostModel::HierarchicalAllReduce(int64_t bytes) const {
  const double hosts = network_.num_hosts, local = network_.max_ranks_per_host;
  const double b = static_cast<double>(bytes);
  AllReduceOnHosts cost;
  const double intra_per_rank = 2.0 * (local - 1) / local * b;
  const double off_host = 2.0 * (hosts - 1) / hosts * b;
  cost.off_host_bytes = Round(off_host);
  cost.seconds = intra_per_rank / network_.intra_host_bytes_per_s +
                 off_host / network_.inter_host_bytes_per_s;
  return cost;
}

}  // namespace parallax
