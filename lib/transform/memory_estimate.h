// The memory estimate: what each rank of a plan holds, from the plan's methods, and the
// check that the ranks of each host fit in its memory — so that a job that cannot fit
// (densify's full-size gradients of a large table, every rank's replica of it under
// all-gather) is refused by the transform with the figures, not killed mid-launch.
//
// A rank holds, summed over the plan's variables of known size:
//  - *state*: a replicated variable or slot (all-reduce, all-gather, densify, local,
//    none): its bytes; a parameter-server variable or slot: the bytes of the rows of the
//    partitions the rank owns;
//  - *gradient buffers* of a step, for each trainable variable, as its method makes them:
//    all-reduce: the gradient and the copy the all-reduce writes (2 x bytes); densify: the
//    dense gradient and its all-reduced copy (2 x bytes) and the touched-row counts and
//    theirs (2 x rows x 4); parameter servers and all-gather: the rows exchanged, twice
//    the bytes the rank sends per step (what it sends and what it receives). A job of
//    one rank runs the single-device graph: a dense gradient's bytes, once.
// Activations (which grow with the batch), the runtime's own buffers and initialisation
// temporaries are not counted: the estimate is a floor, and a plan refused by it cannot
// run. A CPU host's ranks share its memory; a GPU rank's state lives on its GPU.
//
// The memory of a host: its `memory_gb` (CPU ranks) or `gpu_memory_gb` (per GPU) in the
// cluster spec; for a CPU host that is this machine (named localhost, 127.0.0.1 or this
// machine's host name) without memory_gb, this machine's total memory (machine.h).
// Hosts whose memory is unknown are not checked.
#ifndef PARALLAX_LIB_TRANSFORM_MEMORY_ESTIMATE_H_
#define PARALLAX_LIB_TRANSFORM_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/plan/plan.h"

namespace parallax {

// Every rank's estimate, in rank order.
std::vector<RankMemory> EstimateRankMemory(const Plan& plan);

// The variable (or slot) that takes the most of `rank`'s estimate ("emb (densify)"), and
// its bytes there.
std::pair<std::string, int64_t> LargestOnRank(const Plan& plan, int rank);

// The memory a host offers its ranks (see the file comment) and where that figure came
// from ("memory_gb in c.yaml", "this machine's memory"); nullopt when unknown.
struct HostMemory {
  int64_t bytes = 0;
  bool per_rank = false;  // GPU memory: each rank has `bytes`
  std::string source;
};
std::optional<HostMemory> MemoryOfHost(const HostSpec& host, const std::string& spec_source);

// OK when the ranks of every host fit in its memory by plan.memory; else ResourceExhausted
// naming the host, its memory, what its ranks need and the variable that takes the most,
// with what to change.
Status CheckPlanFitsMemory(const Plan& plan, const ClusterSpec& cluster);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_MEMORY_ESTIMATE_H_
