// The rank layout: which host and device each rank of a job runs on.
//
// The rule (DESIGN §3, docs/cluster.md): ranks are laid out host by host, in the order
// the hosts are listed, one rank per GPU of a GPU host (in the order its GPU ids are
// listed; `ranks_per_gpu` consecutive ranks per GPU when the spec shares them) and one per
// CPU slot of a CPU host. This is the order in which mpirun's
// default by-slot mapping starts processes from a hostfile, so rank r of the plan is
// rank r of the job.
//
// Terms: the *world size* is the number of ranks; a rank's *local rank* is its index
// among the ranks of its host and the *local size* their number; its *device index* is
// the physical GPU id (the ranks of a host see only their own GPU, through
// CUDA_VISIBLE_DEVICES, as device 0) or, on a CPU host, the CPU slot (= local rank).
// Each rank's graph names its device `/job:worker/replica:0/task:R/device:GPU:0` (or
// CPU:0): one task per rank, one device per task (DESIGN §5).
#ifndef PARALLAX_LIB_CLUSTER_RANK_LAYOUT_H_
#define PARALLAX_LIB_CLUSTER_RANK_LAYOUT_H_

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/hostfile.h"

namespace parallax {

struct RankPlacement {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  int local_size = 0;
  DeviceKind device = DeviceKind::kGpu;
  int device_index = 0;

  friend bool operator==(const RankPlacement&, const RankPlacement&) = default;
};

class RankLayout {
 public:
  int world_size() const { return static_cast<int>(ranks_.size()); }
  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  const std::vector<std::string>& hosts() const { return hosts_; }  // in rank order
  const std::vector<RankPlacement>& ranks() const { return ranks_; }
  const RankPlacement& rank(int r) const { return ranks_.at(static_cast<size_t>(r)); }

  // The ranks on `host`, ascending; empty when the host is not in the layout.
  std::vector<int> RanksOnHost(std::string_view host) const;

  // "/job:worker/replica:0/task:3/device:GPU:0": the device rank r's graph runs on.
  std::string DeviceString(int rank) const;

  // "8 ranks on 2 hosts: node1 (4 GPUs: 0,1,2,3), node2 (4 GPUs: 0,1,2,3)", for reports.
  std::string Summary() const;

 private:
  friend class RankLayoutBuilder;

  std::vector<RankPlacement> ranks_;
  std::vector<std::string> hosts_;
};

// The layout of a cluster spec. Checks what parsing checks (hosts, names, GPU ids, rank
// counts), for specs built in code.
StatusOr<RankLayout> LayoutRanks(const ClusterSpec& spec);

// The layout of a hostfile: `slots` ranks per host, on `device` (for GPUs the device
// index is the local rank, the GPU each rank picks under mpirun, DESIGN §6).
StatusOr<RankLayout> LayoutRanks(const Hostfile& hostfile, DeviceKind device);

}  // namespace parallax

#endif  // PARALLAX_LIB_CLUSTER_RANK_LAYOUT_H_
