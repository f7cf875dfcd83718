// `parallax launch DIR [--hostfile H | -H LIST] [--dry-run] [run flags...] [-- mpirun args]`:
// starts a transformed job's ranks with OpenMPI's mpirun (lib/launch/mpirun.h builds the
// argv; launch.sh in the job directory holds the same line). Flags that `launch` does not
// know (--steps 100, --feed x=...) are passed on to every rank's `parallax run`; words
// after `--` go to mpirun. The exit status is the job's: 0, or 3 when a rank failed; a
// SIGINT (Ctrl-C) or SIGTERM stops mpirun and every rank, and exits 130 or 143.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "lib/cluster/hostfile.h"
#include "lib/launch/mpirun.h"
#include "lib/transform/plan_io.h"

namespace parallax::cli {

Command AddLaunchCommand(CLI::App& app, std::vector<std::string> mpirun_args,
                         const int* verbosity, int* interrupted_by) {
  struct Flags {
    std::string job;
    std::string hostfile;
    std::string hosts;
    bool dry_run = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "launch", "Start a job written by `parallax transform` with mpirun: one `parallax run` "
                "per rank. Unknown flags go to `parallax run`; words after -- go to mpirun.");
  sub->add_option("job", flags->job, "the job directory written by `parallax transform`")
      ->required();
  auto* hostfile = sub->add_option("--hostfile", flags->hostfile,
                                   "OpenMPI hostfile covering the plan's hosts (default: the "
                                   "job's own hostfile)");
  sub->add_option("-H,--hosts", flags->hosts, "hosts as mpirun's -H: node1:4,node2:4")
      ->excludes(hostfile);
  sub->add_flag("--dry-run", flags->dry_run, "print the mpirun command line and exit");
  // Flags `launch` does not know are for the ranks' `parallax run`; main() has already
  // taken the words after `--` (mpirun's) off the command line.
  sub->allow_extras();
  sub->fallthrough(false);
  return Command{sub, [flags, sub, mpirun_args, verbosity, interrupted_by]() -> Status {
    PX_ASSIGN_OR_RETURN(Plan plan, LoadPlan(flags->job));
    if (!flags->hostfile.empty() || !flags->hosts.empty()) {
      PX_ASSIGN_OR_RETURN(Hostfile hosts, flags->hostfile.empty() ? ParseHostList(flags->hosts)
                                                                  : LoadHostfile(flags->hostfile));
      PX_RETURN_IF_ERROR(CheckHostfileCoversPlan(plan, hosts));
    }
    // GPU ranks would train on CPUs: refused before mpirun starts, unless the run flags
    // ask for it (a dry run starts nothing; the ranks refuse too).
    // The run flags, and `parallax -v launch`'s verbosity, which the ranks share.
    std::vector<std::string> run_args = sub->remaining();
    for (int i = 0; i < *verbosity; ++i) run_args.push_back("-v");
    // The ranks' output reaches this terminal through mpirun's pipes: rank 0 is told to
    // redraw one progress line when this process's stderr is a terminal.
    const bool progress_given = std::any_of(run_args.begin(), run_args.end(), [](const auto& a) {
      return a == "--progress" || a.starts_with("--progress=");
    });
    if (!progress_given && ::isatty(STDERR_FILENO) == 1) {
      run_args.push_back("--progress");
      run_args.push_back("live");
    }
    const bool cpu_fallback =
        std::find(run_args.begin(), run_args.end(), "--cpu-fallback") != run_args.end();
    for (const RankPlacement& rank : plan.ranks) {
      if (rank.device != DeviceKind::kGpu || cpu_fallback || flags->dry_run) continue;
      return GpuPlanError(flags->job, rank.rank, GpuPlacementText(rank));
    }
    // Mistyped flags, missing data or checkpoints: one line here, not one per rank.
    if (!flags->dry_run) PX_RETURN_IF_ERROR(PreflightJobRun(flags->job, run_args));
    MpirunOptions options = MpirunOptionsForThisMachine();
    // Started from here, now: forward only what is set (mpirun warns about every -x of an
    // unset variable). launch.sh, run later, keeps PATH and LD_LIBRARY_PATH.
    std::erase_if(options.forward_env,
                  [](const std::string& name) { return std::getenv(name.c_str()) == nullptr; });
    options.run_args = run_args;
    options.extra_mpirun_args = mpirun_args;
    // Absolute, as in launch.sh: the ranks may start in another directory (another host).
    std::filesystem::path job = std::filesystem::absolute(flags->job).lexically_normal();
    if (job.has_relative_path() && job.filename().empty()) job = job.parent_path();  // "job/"
    const std::vector<std::string> argv = MpirunArgv(plan, job.string(), options);
    if (flags->dry_run) {
      std::printf("%s\n", ShellLine(argv).c_str());
      return Status::Ok();
    }
    spdlog::info("{}", ShellLine(argv));
    PX_ASSIGN_OR_RETURN(InterruptibleRun run, RunForwardingSignals(argv));
    const int exit_status = run.exit_status;
    if (run.signal != 0) {
      // Ranks write checkpoints to a temporary file and rename it: the newest complete
      // one is intact.
      *interrupted_by = run.signal;
      return Status(StatusCode::kAborted,
                    fmt::format("{}: interrupted by {}: the job was stopped (mpirun exited with "
                                "status {}); the newest complete checkpoint is kept",
                                flags->job, run.signal == SIGINT ? "SIGINT" : "SIGTERM",
                                exit_status));
    }
    if (exit_status != 0) {
      return Status(StatusCode::kAborted,
                    fmt::format("{}: the job failed: mpirun exited with status {} (the failing "
                                "rank's error is above)",
                                flags->job, exit_status));
    }
    return Status::Ok();
  }};
}

}  // namespace parallax::cli
