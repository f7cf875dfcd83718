#include "lib/transform/write_job.h"

#include <memory>

#include "lib/transform/job_writer.h"

namespace parallax {

StatusOr<std::string> WriteTransformedJob(const std::string& dir, bool force,
                                          const JobToWrite& job) {
  if (job.source == nullptr || job.plan == nullptr) {
    return InternalError("WriteTransformedJob: no graph or plan");
  }
  PX_ASSIGN_OR_RETURN(std::unique_ptr<JobWriter> writer, JobWriter::Begin(dir, force));
  PX_RETURN_IF_ERROR(TransformEach(*job.source, *job.plan, job.pipeline, job.run,
                                   [&](int rank, Graph&& rank_graph) {
                                     return writer->WriteRankGraph(rank, rank_graph);
                                   }));
  PX_RETURN_IF_ERROR(writer->WriteSourceGraph(*job.source));
  PX_RETURN_IF_ERROR(writer->WriteFile(kClusterFile, job.cluster_yaml));
  PX_RETURN_IF_ERROR(writer->WriteJobFiles(*job.plan, job.launch));
  PX_RETURN_IF_ERROR(writer->Commit());
  return writer->dir();
}

}  // namespace parallax
