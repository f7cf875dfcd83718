// Measured searches: a setting of the plan chosen by timing short runs of the job on the
// cluster instead of by a rule: the partition count of the parameter-server variables
// (`transform --search`, as the seed paper does) and the gradient bucket limit
// (`--bucket-mb auto`, as Horovod's autotune does for its fusion threshold).
//
// Terms:
//  - a *probe* plans the job with one value of the setting, trains it for a few steps and
//    reports the median step time of the steps after the first ones (the caller runs it:
//    `parallax launch` of a job written to a scratch directory);
//  - the *candidates* are the values worth probing, ascending. Partition counts: doubling
//    multiples of the hosts H (H, 2H, 4H, ...: every host's link serves its share) and
//    the multiples of the ranks N up to kMaxPartitionsPerRank·N (every rank serves the
//    same number), capped at the searched variables' fewest rows. Bucket limits: 0 (no
//    buckets) and 1, 2, 4, 8, 16, 25 and 64 MiB, each kept only when it groups the
//    gradients differently from every smaller limit;
//  - the *budget* is the wall time the probes may take, measured as they run.
// The search: probe the candidates that roughly double (each at least twice the last
// probed) from the smallest, while the step time improves (a probe more than 3% slower
// than the best ends the climb: step time is taken as unimodal in the setting); then
// the candidates left between the best's probed neighbours, nearest to the best first.
// Before each probe the budget must hold one more probe as long as the longest so far,
// else the search stops there. The fastest probe wins (ties: the smaller value). The
// first probe always runs.
#ifndef PARALLAX_LIB_TRANSFORM_MEASURED_SEARCH_H_
#define PARALLAX_LIB_TRANSFORM_MEASURED_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/analysis/training_analysis.h"
#include "lib/base/status.h"
#include "lib/plan/plan.h"

namespace parallax {

// The partition counts for N ranks on H hosts and tables of at least `min_rows` rows
// (at least one when min_rows >= 1).
std::vector<int64_t> PartitionCandidates(int world_size, int hosts, int64_t min_rows);

// The bucket limits in bytes for a plan's variables (BucketGradients); {0} alone when no
// limit makes a bucket.
std::vector<int64_t> BucketLimitCandidates(const TrainingAnalysis& analysis,
                                           const std::vector<VariablePlan>& variables);

struct SearchBudget {
  double seconds = 0;  // > 0
  int steps = 0;       // per probe, recorded in the result
};

// Runs one probe: the median step time in seconds with the setting at `value`.
using ProbeFn = std::function<StatusOr<double>(int64_t value)>;

// Searches `candidates` with `probe`, timing the probes with `now` (seconds, monotonic).
// `describe` names a value in messages ("8 partitions", "a 4.0 MiB bucket limit"). A
// probe's error ends the search with it, prefixed with "probe of <description>".
StatusOr<MeasuredSearch> SearchByProbes(const std::vector<int64_t>& candidates,
                                        const SearchBudget& budget, const ProbeFn& probe,
                                        const std::function<double()>& now,
                                        const std::function<std::string(int64_t)>& describe);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_MEASURED_SEARCH_H_
