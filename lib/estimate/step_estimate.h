// Step estimate: one rank's training step on a cluster, simulated node by node from an
// op profile (op_profile.h) and the cost model's network (lib/transform/cost_model.h),
// as the executor would run the rank's graph (lib/runtime/executor.h).
//
// The rank graph's step: the nodes its train op and fetches need (the plan's feeds fed).
// Each node takes
//  - its profiled time, when the profile has a node of its name (the transform keeps
//    the single-device graph's names);
//  - a collective (the registry's is_collective ops): its payload per rank, read from
//    the plan by the node's name (the transform's names: "<variable>/parallax/allreduce",
//    "parallax/bucket_<k>/allreduce", ".../pull", ".../push", ".../allgather_values", ...;
//    the table is in docs/estimate.md), priced by the network: the bytes at the
//    bandwidths the cost model uses (all-reduce by the plan's algorithm, all-gather as a
//    ring at the slowest link, pulls and pushes point to point), plus a latency per MPI
//    call (the network's intra_host_latency_s inside one host, inter_host_latency_s across
//    hosts: the spec's latency_us keys) times ceil(log2 N); a collective it cannot read from the plan costs only its latency and
//    is listed as unpriced; pulls and pushes add two passes over their rows at the
//    profile's copy bandwidth (gathering or packing them, placing them on arrival);
//  - ConcatV2 and SplitV the transform added (gradient buckets): their bytes at the
//    profile's copy bandwidth; every other node the profile lacks: nothing.
// Schedule: one node at a time in the executor's order (step = overhead + every node);
// with `overlap` (run --overlap, a job with no conditionals or loops) compute runs one
// node at a time on one thread and collectives in their order on another: a node starts
// when its inputs are done, the compute thread taking the first node in order that is
// ready, the communication thread the next collective once its input is.
// Outputs per step: the step time and its parts, bytes sent per rank and leaving each
// host, and the bottleneck: compute, or the link whose collectives take the most time
// (inside a host, between hosts), or the parameter servers (a hot owner when one rank
// holds more than 1.5 times its share of the partitioned bytes, slots included).
#ifndef PARALLAX_LIB_ESTIMATE_STEP_ESTIMATE_H_
#define PARALLAX_LIB_ESTIMATE_STEP_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/estimate/op_profile.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/transform/cost_model.h"

namespace parallax {


struct CollectiveEstimate {
  std::string node;
  std::string kind;      // "all-reduce", "all-gather", "pull", "push", "unpriced"
  int64_t bytes = 0;     // payload per rank
  double seconds = 0;
};

struct StepEstimate {
  double step_seconds = 0;
  double compute_seconds = 0;        // the nodes' times but collectives'
  double overhead_seconds = 0;       // the profile's
  double communication_seconds = 0;  // the collectives' times
  double exposed_communication_seconds = 0;  // step - compute - overhead
  std::vector<CollectiveEstimate> collectives;  // in the order they run
  int64_t nodes = 0;            // nodes in the step
  int64_t profiled_nodes = 0;   // ... with a profiled time
  std::string bottleneck;
};

struct StepInputs {
  const Graph* rank_graph = nullptr;  // rank 0's
  const Plan* plan = nullptr;
  const OpProfile* profile = nullptr;
  NetworkModel network;
  bool overlap = false;
};

StatusOr<StepEstimate> EstimateStep(const StepInputs& in);

}  // namespace parallax

#endif  // PARALLAX_LIB_ESTIMATE_STEP_ESTIMATE_H_
