// Building and running the mpirun command line that starts a job's ranks.
//
// `parallax launch DIR` and the job's launch.sh run the same argv, built here as a vector
// (never a shell string) the way Horovod's horovodrun does:
//
//   mpirun -np N --hostfile HOSTFILE --map-by slot --bind-to none --tag-output
//          -x PATH -x LD_LIBRARY_PATH [-x NCCL_*] [-x each of kRankEnvironment]
//          [--allow-run-as-root] [--oversubscribe] [extra mpirun args]
//          PARALLAX run DIR [run args]
//
// Terms: the plan fixes how many ranks each of its hosts runs, host by host (DESIGN §3);
// HOSTFILE lists the hosts those roles run on with slots = their ranks, in rank order,
// so mpirun's by-slot mapping starts rank r where the plan put it. launch.sh names the
// job's own hostfile (DIR/hostfile: the plan's hosts); `parallax launch` writes the hosts
// the plan is bound to (host_binding.h) into a temporary hostfile. `--allow-run-as-root`
// is added only when running as root, `--oversubscribe` only when this machine hosts
// more ranks than it has cores.
#ifndef PARALLAX_LIB_LAUNCH_MPIRUN_H_
#define PARALLAX_LIB_LAUNCH_MPIRUN_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/hostfile.h"
#include "lib/plan/plan.h"

namespace parallax {

struct MpirunOptions {
  std::string mpirun = "mpirun";        // the launcher program (looked up in PATH)
  std::string parallax = "parallax";    // the parallax binary each rank runs
  bool as_root = false;                 // adds --allow-run-as-root
  int local_cores = 1;                  // cores of this machine (for --oversubscribe)
  std::vector<std::string> local_hosts = {"localhost", "127.0.0.1"};  // names of this machine
  std::vector<std::string> forward_env = {"PATH", "LD_LIBRARY_PATH"};  // passed with -x
  std::vector<std::string> extra_mpirun_args;  // inserted before the program
  std::vector<std::string> run_args;           // appended to `parallax run DIR`
};

// The variables a rank reads that launch forwards to the ranks besides PATH,
// LD_LIBRARY_PATH and NCCL_*: the PARALLAX_* ones (docs/run.md), and the sanitizers'
// options, which a binary built with --config=asan (.bazelrc) reads on every rank. A
// binary that reads test hooks (lib/base/test_hooks.h) forwards those too; the release
// binary does not.
inline constexpr std::string_view kRankEnvironment[] = {
    "PARALLAX_BUFFER_CACHE_MB",      "PARALLAX_COLLECTIVE_TIMEOUT_S",
    "PARALLAX_COLLECTIVE_WAIT",      "PARALLAX_HEARTBEAT_INTERVAL_S",
    "PARALLAX_HEARTBEAT_TIMEOUT_S",  "PARALLAX_THREAD_POLICY",
    "ASAN_OPTIONS",                  "LSAN_OPTIONS",
    "UBSAN_OPTIONS"};

// Whether `name` is a variable launch forwards to the ranks when it is set: NCCL_*, the
// names of kRankEnvironment, and the test hooks in a binary that reads them.
bool ForwardedToRanks(std::string_view name);

// Options for this machine and process: root or not, its cores and host name, the
// running parallax binary (its absolute path), and -x for PATH, LD_LIBRARY_PATH and every
// variable set in the environment that ForwardedToRanks.
MpirunOptions MpirunOptionsForThisMachine();

// The argv for ranks on `hosts` (slots = ranks, in rank order), which mpirun reads from
// the file `hostfile_path`; `job_dir` is used as given (launch.sh passes a placeholder for
// "$job").
std::vector<std::string> MpirunArgv(const Hostfile& hosts, std::string_view hostfile_path,
                                    std::string_view job_dir, const MpirunOptions& options);
// ... for the plan's own hosts, read from the job's hostfile (job_dir/hostfile).
std::vector<std::string> MpirunArgv(const Plan& plan, std::string_view job_dir,
                                    const MpirunOptions& options);

// The job's hostfile: the plan's hosts in rank order, slots = their ranks (source "plan").
Hostfile PlanHostfile(const Plan& plan);

// A file written in $TMPDIR (else /tmp) as PREFIX.XXXXXX, removed when the object is
// destroyed: mpirun's hostfile for the hosts a job is bound to, while the job runs.
class TemporaryFile {
 public:
  static StatusOr<TemporaryFile> Create(std::string_view prefix, std::string_view contents);
  // The path pattern Create uses ("/tmp/parallax-hosts.XXXXXX"), for dry runs.
  static std::string Pattern(std::string_view prefix);

  TemporaryFile(TemporaryFile&& other) noexcept;
  TemporaryFile& operator=(TemporaryFile&&) = delete;
  TemporaryFile(const TemporaryFile&) = delete;
  ~TemporaryFile();

  const std::string& path() const { return path_; }

 private:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// `word` quoted for a POSIX shell when it needs quoting ('it'\''s').
std::string ShellQuote(std::string_view word);
// The argv as one shell-quoted line, for --dry-run and logs.
std::string ShellLine(const std::vector<std::string>& argv);
// `text` safe in a one-line `#` comment of a script: every control character (a newline
// above all, which would end the comment and start a command) written as a C escape
// (\n, \t, \x1b).
std::string CommentText(std::string_view text);

// Runs argv (execvp, inheriting stdin/stdout/stderr) and waits. Returns the exit status,
// or 128 + the signal that ended it; an error when it cannot be started.
StatusOr<int> RunAndWait(const std::vector<std::string>& argv);
// The same with the program's stdout and stderr written to `output_path` (created or
// truncated); errors name the file when it cannot be opened.
StatusOr<int> RunAndWait(const std::vector<std::string>& argv, const std::string& output_path);

// RunAndWait for a job the user may stop: while argv runs, a SIGINT or SIGTERM this
// process receives (Ctrl-C, `kill`, a batch system's time limit) is passed to it as
// SIGTERM — mpirun then stops every rank — and the wait goes on until it has exited.
// Even a SIGINT the shell set to be ignored (a background job) is caught. argv's stderr
// passes through until the signal and is dropped after it (the stopped ranks' teardown
// noise), so the caller's own line is the one the user reads. Returns the exit status
// and the signal received (0 when none); the previous handlers are restored.
struct InterruptibleRun {
  int exit_status = 0;
  int signal = 0;  // SIGINT or SIGTERM when one arrived
};
StatusOr<InterruptibleRun> RunForwardingSignals(const std::vector<std::string>& argv);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_MPIRUN_H_
