// Writes the job directory of `parallax transform` (DESIGN §3), atomically:
//
//   job/plan.yaml    the Plan (plan_io.h)
//   job/rank-R.pb    one binary GraphDef per rank
//   job/graph.pb     the single-device graph the plan was made from, as analysed (Horovod
//                    ops stripped): what `parallax eval JOB` evaluates a checkpoint with
//   job/cluster.yaml the cluster spec the plan was made for (what a re-plan on fewer hosts
//                    starts from: replan.h)
//   job/report.txt   the decisions for people (report.h)
//   job/hostfile     the cluster's hosts in OpenMPI's format, one rank per slot
//   job/launch.sh    the exact mpirun command line (executable)
//
// Atomicity: everything is written into a temporary sibling, `<job>.tmp.<pid>`, and
// renamed into place only when complete. An existing output is never touched unless
// `force`, and then only when it is a job (it has plan.yaml) or empty, so that a mistyped
// -o never deletes other work: the old directory is renamed aside (`<job>.old.<pid>`), the
// new one renamed in, and the old one deleted. On any error, or when the JobWriter is destroyed
// without Commit, the temporary directory is removed: a failed run leaves nothing.
// Files inside the temporary directory are written plainly (no fsync each): the rename
// of the directory is what makes the job visible.
//
// launch.sh runs, from any working directory, the argv that `parallax launch` would run
// on this machine (lib/launch/mpirun.h: mpirun -np N --hostfile <job>/hostfile ...
// parallax run <job> "$@"), with <job> the directory the script lives in (resolved when
// it runs, so the job can be copied to the cluster).
#ifndef PARALLAX_LIB_TRANSFORM_JOB_WRITER_H_
#define PARALLAX_LIB_TRANSFORM_JOB_WRITER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/launch/mpirun.h"
#include "lib/plan/plan.h"

namespace parallax {

// The names of the files in a job directory.
inline constexpr std::string_view kPlanFile = "plan.yaml";
inline constexpr std::string_view kReportFile = "report.txt";
inline constexpr std::string_view kHostfileFile = "hostfile";
inline constexpr std::string_view kLaunchFile = "launch.sh";
inline constexpr std::string_view kSourceGraphFile = "graph.pb";
inline constexpr std::string_view kClusterFile = "cluster.yaml";
std::string RankGraphFile(int rank);  // "rank-3.pb"

class JobWriter {
 public:
  // Checks `dir` (it must not exist unless `force`; if it exists it must be a directory;
  // its parent must exist) without creating anything, so a command can fail fast.
  static Status CheckTarget(const std::string& dir, bool force);
  // CheckTarget, then creates the temporary sibling.
  static StatusOr<std::unique_ptr<JobWriter>> Begin(std::string dir, bool force);
  ~JobWriter();  // removes the temporary directory unless committed

  JobWriter(const JobWriter&) = delete;
  JobWriter& operator=(const JobWriter&) = delete;

  const std::string& dir() const { return dir_; }          // the final directory
  const std::string& temp_dir() const { return temp_; }    // where files go until Commit

  // Writes one file (a name, no '/') into the temporary directory. Thread-safe.
  Status WriteFile(std::string_view name, std::string_view contents, bool executable = false);
  // rank-R.pb, the rank's binary GraphDef. Thread-safe.
  Status WriteRankGraph(int rank, const Graph& graph);
  // graph.pb, the single-device graph.
  Status WriteSourceGraph(const Graph& graph);
  // plan.yaml, report.txt, hostfile and launch.sh.
  Status WriteJobFiles(const Plan& plan, const MpirunOptions& launch);

  // Moves the directory into place (see the file comment).
  Status Commit();

  // Tests: WriteFile of `name` fails as a full disk would.
  void InjectFailureFor(std::string name) { fail_name_ = std::move(name); }

 private:
  JobWriter(std::string dir, std::string temp, bool force)
      : dir_(std::move(dir)), temp_(std::move(temp)), force_(force) {}

  std::string dir_, temp_;
  bool force_ = false;
  bool committed_ = false;
  std::string fail_name_;
};

// launch.sh's text.
std::string LaunchScript(const Plan& plan, const MpirunOptions& launch);

// Writes the whole job: plan.yaml, report.txt, hostfile, launch.sh and the rank graphs
// (`graphs[r]` for rank r), then commits.
Status WriteJob(const std::string& dir, bool force, const Plan& plan,
                const std::vector<Graph>& graphs, const MpirunOptions& launch);

}  // namespace parallax

#endif  // PARALLAX_LIB_TRANSFORM_JOB_WRITER_H_
