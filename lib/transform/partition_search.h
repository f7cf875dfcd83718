// Partition search (`transform --search`): the number of partitions P of the
// parameter-server variables chosen by timing short runs of the job on the cluster, as
// the seed paper does, instead of by the rule of strategy.h.
//
// Terms:
//  - a *probe* plans the job with P partitions for every searched variable, trains it for
//    a few steps and reports the median step time of the steps after the first ones
//    (the caller runs it: `parallax launch` of a job written to a scratch directory);
//  - the *candidates* are the counts worth probing: multiples of the hosts H that double
//    (H, 2H, 4H, ...: every host's link serves its share) and the multiples of the ranks
//    N up to kMaxPartitionsPerRank·N (every rank serves the same number), capped at the
//    searched variables' fewest rows;
//  - the *budget* is the wall time the probes may take, measured as they run.
// The search: probe the candidates that roughly double (each at least twice the last
// probed) from the smallest, while the step time improves (a probe more than 3% slower
// than the best ends the climb: step time is taken as unimodal in P, fewer messages
// against smaller, less contended partitions); then the candidates left between the
// best's probed neighbours, nearest to the best first. Before each probe the budget must
// hold one more probe as long as the longest so far, else the search stops there. The
// fastest probe wins (ties: fewer partitions). The first probe always runs.
#ifndef PARALLAX_LIB_TRANSFORM_PARTITION_SEARCH_H_
#define PARALLAX_LIB_TRANSFORM_PARTITION_SEARCH_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "lib/base/status.h"
#include "lib/plan/plan.h"

namespace parallax {

// The candidates for N ranks on H hosts and a table of `min_rows` rows (ascending; at
// least one when min_rows >= 1).
std::vector<int> PartitionCandidates(int world_size, int hosts, int64_t min_rows);

struct SearchBudget {
  double seconds = 0;  // > 0
  int steps = 0;       // per probe, recorded in the result
};

// Runs one probe: the median step time in seconds with `partitions` partitions.
using PartitionProbeFn = std::function<StatusOr<double>(int partitions)>;

// Searches `candidates` (PartitionCandidates) with `probe`, timing the probes with `now`
// (seconds, monotonic). A probe's error ends the search with it, prefixed with the count.
StatusOr<PartitionSearch> SearchPartitions(const std::vector<int>& candidates,
                                           const SearchBudget& budget,
                                           const PartitionProbeFn& probe,
                                           const std::function<double()>& now);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_PARTITION_SEARCH_H_
