// Re-planning a job for fewer hosts: what `parallax launch --restarts K --min-ranks M`
// does when hosts of a failed job no longer answer (docs/run.md, Restarts).
//
// A job directory keeps what its plan was made from: graph.pb (the single-device graph as
// analysed) and cluster.yaml (the cluster spec). ReplanOnFewerHosts plans that graph again
// for the first `hosts` of the plan's hosts (the roles of lib/launch/host_binding.h, each
// with its ranks), with every synchronised variable pinned to the method the job's plan
// gave it (an exact-name override in the new cluster.yaml, keeping the partition setting
// the variable had), so that only what the rank count decides changes: parameter-server
// partitions and owners, the collectives' group size. The new job is written whole
// (job_writer.h) to `output`, which is replaced if it exists; it is a job like any other
// (graph.pb, cluster.yaml, plan.yaml, rank graphs, launch.sh) and resumes the old job's
// checkpoints, which are read on any rank count (checkpoint/job_checkpoint.h).
//
// Errors (one line naming the file): graph.pb or cluster.yaml missing (a job written
// before cluster.yaml was: transform the graph again), the cluster spec's hosts not the
// plan's, `hosts` not in 1 .. the plan's hosts, a variable that does not get its old
// method again, and any error of planning, transforming or writing.
#ifndef PARALLAX_LIB_TRANSFORM_REPLAN_H_
#define PARALLAX_LIB_TRANSFORM_REPLAN_H_

#include <string>

#include "lib/base/status.h"
#include "lib/launch/mpirun.h"
#include "lib/plan/plan.h"

namespace parallax {

// Plans `job` again on its first `hosts` hosts and writes the new job to `output`; returns
// its plan.
StatusOr<Plan> ReplanOnFewerHosts(const std::string& job, int hosts, const std::string& output,
                                  const MpirunOptions& launch);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_REPLAN_H_
