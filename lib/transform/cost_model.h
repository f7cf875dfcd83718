// The communication cost model: how many bytes each rank sends per training step for
// one variable under each sync method, and how long that takes on the cluster's
// network. BuildPlan (strategy.h) uses it to choose between methods, and records the
// chosen method's bytes in the plan and the report.
//
// Terms:
//  - N is the world size (ranks), H the number of hosts, L the most ranks on one host;
//  - a *row* is one slice along dimension 0 of a variable; row_bytes is the size of the
//    rest of its shape (a [V, D] float table has row_bytes = 4·D);
//  - *touched rows* are the distinct rows one rank's step reads and updates (its ids);
//  - *bytes sent per rank per step* is what one rank puts on the wire in one step,
//    summed over the collectives that synchronise the variable.
//
// Formulas (docs/strategy.md has the derivations):
//  - allreduce (ring):   2·(N−1)/N · bytes
//  - allgather (ring):   (N−1) · touched · (row_bytes + index_bytes)
//  - densify:            two ring all-reduces, of rows·row_bytes (the dense gradient)
//                        and rows·4 (a float count of contributions per row):
//                        2·(N−1)/N · rows · (row_bytes + 4)
//  - ps:                 a push of (indices, values) and a pull (indices out, rows back)
//                        of the touched rows, of which (N−1)/N live on other ranks:
//                        2·(N−1)/N · touched · (row_bytes + index_bytes)
// Time: a ring moves in lock step, so it goes at the speed of its slowest link: the
// network between hosts when H > 1, else the link inside a host. Parameter-server
// traffic is point to point: the share bound for ranks of the same host moves at the
// intra-host bandwidth; the rest leaves through the host's network link, which the
// host's L ranks share.
// All-reduce algorithms (the communicator's flat and hierarchical all-reduce, hosts of L
// ranks), per step for `bytes` all-reduced:
//  - flat: each rank sends 2(N-1)/N·bytes, its share for each other rank: 2(L-1)/N·bytes
//    inside its host and 2(N-L)/N·bytes to other hosts, so each host's network link
//    carries 2·L·(N-L)/N·bytes;
//  - hierarchical: 2(L-1)/L·bytes per rank inside the host (reduce to the slice holders,
//    gather back) and 2(H-1)/H·bytes per host on its network link (the slices among the
//    hosts): 1/L of flat's.
// Time: the intra-host bytes at the intra-host bandwidth plus the host link's bytes at
// the network bandwidth. The job takes the faster (ChooseAllReduceAlgorithm); with one
// host or one rank per host both are the same and it stays flat.
// Limits: latency, compute overlap and contention at hot rows are not modelled; the
// model ranks methods, it does not predict step times.
#ifndef PARALLAX_LIB_TRANSFORM_COST_MODEL_H_
#define PARALLAX_LIB_TRANSFORM_COST_MODEL_H_

#include <cstdint>

#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"

namespace parallax {

// densify's second all-reduce: one float count per row.
inline constexpr int64_t kDensifyCountBytesPerRow = 4;

// The network as the cost model sees it.
struct NetworkModel {
  int world_size = 1;           // N
  int num_hosts = 1;            // H
  int max_ranks_per_host = 1;   // L
  double inter_host_bytes_per_s = kDefaultBandwidthGbps * 1e9 / 8;
  double intra_host_bytes_per_s = kDefaultIntraHostBandwidthGbps * 1e9 / 8;
  // Seconds per MPI call round (the spec's latency_us), for `parallax estimate`; the
  // cost model's choices do not use them.
  double inter_host_latency_s = kDefaultLatencyUs * 1e-6;
  double intra_host_latency_s = kDefaultIntraHostLatencyUs * 1e-6;

  static NetworkModel From(const NetworkSpec& network, const RankLayout& layout);
};

// Bytes one rank sends per step, and the time that takes.
struct CommCost {
  int64_t bytes = 0;
  double seconds = 0;
};

// The shape of a sparse variable's traffic.
struct SparseTraffic {
  int64_t rows = 0;          // rows of the table
  int64_t row_bytes = 0;     // bytes of one row
  int64_t touched_rows = 0;  // distinct rows one rank touches per step (<= rows)
  int64_t index_bytes = 4;   // 4 for int32 ids, 8 for int64
};

// One all-reduce algorithm's cost per step: the bytes that leave each host, and the time.
struct AllReduceOnHosts {
  int64_t off_host_bytes = 0;
  double seconds = 0;
};

class CostModel {
 public:
  explicit CostModel(NetworkModel network) : network_(network) {}
  const NetworkModel& network() const { return network_; }

  CommCost AllReduce(int64_t bytes) const;
  CommCost AllGather(const SparseTraffic& traffic) const;
  CommCost Densify(const SparseTraffic& traffic) const;
  CommCost ParameterServer(const SparseTraffic& traffic) const;
  // The time one rank takes to send `bytes` spread evenly over the other ranks, point to
  // point (the parameter-server rule above).
  double PointToPointSeconds(double bytes) const;
  // The time of a ring collective that sends `bytes` per rank (its slowest link).
  double RingSeconds(int64_t bytes) const;
  // All-reduces of `bytes` in all per step, by each algorithm (the file comment).
  AllReduceOnHosts FlatAllReduce(int64_t bytes) const;
  AllReduceOnHosts HierarchicalAllReduce(int64_t bytes) const;

 private:
  NetworkModel network_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_COST_MODEL_H_
