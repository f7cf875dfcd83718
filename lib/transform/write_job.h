// Writing a transformed job in one go, as `parallax transform` does and as a restart's
// re-plan does: every rank's graph (TransformEach), the source graph, cluster.yaml and
// the job files (plan, hostfile, launch script), committed by JobWriter — on an error
// nothing is left behind.
#ifndef PARALLAX_LIB_TRANSFORM_WRITE_JOB_H_
#define PARALLAX_LIB_TRANSFORM_WRITE_JOB_H_

#include <string>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/launch/mpirun.h"
#include "lib/passes/pipeline.h"
#include "lib/plan/plan.h"
#include "lib/transform/transform.h"

namespace parallax {

struct JobToWrite {
  const Graph* source = nullptr;  // the single-device graph the plan is for
  const Plan* plan = nullptr;
  PipelineOptions pipeline;
  TransformRunOptions run;
  std::string cluster_yaml;       // written as the job's cluster.yaml
  MpirunOptions launch;           // the launch script's mpirun options
};

// Writes `job` into `dir` (`force`: replace a job there, as JobWriter::Begin); returns
// the directory as committed.
StatusOr<std::string> WriteTransformedJob(const std::string& dir, bool force,
                                          const JobToWrite& job);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_WRITE_JOB_H_
