// `parallax launch DIR [--hostfile H | -H LIST] [--launcher mpirun|srun|auto]
//                  [--restarts K [--min-ranks M]] [--dry-run | --sbatch [FILE]]
//                  [run flags...]
//                  [-- launcher args]`:
// starts a transformed job's ranks, one `parallax run DIR` per rank.
//
//  - Hosts: the plan's hosts are roles bound, in order, to the hosts the job is given
//    (lib/launch/host_binding.h): --hostfile or -H, else the scheduler's allocation
//    (SLURM_JOB_NODELIST, PBS_NODEFILE: lib/cluster/scheduler_hosts.h), else the plan's
//    own hosts. The binding is checked (hosts, slots, GPUs where known) and shown by
//    --dry-run.
//  - Launchers: mpirun (lib/launch/mpirun.h) is given a temporary hostfile of the bound
//    hosts, removed when it exits; srun (lib/launch/srun.h) starts the ranks inside a
//    SLURM allocation on the bound nodes. `auto` (the default) is srun when SLURM_JOB_ID
//    is set, else mpirun. --sbatch writes a batch script that runs this command with
//    srun in the allocation SLURM gives (to FILE, or stdout).
//  - Restarts: with --restarts K a failed job is relaunched up to K times from the
//    newest complete checkpoint (lib/launch/restarts.h), one warning line per restart.
//    Under mpirun the hosts are probed first (lib/launch/host_probe.h): lost hosts are
//    replaced by spare hosts of the allocation, or, down to --min-ranks ranks, the job is
//    re-planned on the hosts left (lib/transform/replan.h: JOB/restart-N).
//
// Flags that `launch` does not know (--steps 100, --feed x=...) are passed on to every
// rank's `parallax run`; words after `--` go to the launcher. The exit status is the
// job's: 0, or 3 when a rank failed (after the last restart); a SIGINT (Ctrl-C) or
// SIGTERM stops the launcher and every rank, and exits 130 or 143.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/cluster/hostfile.h"
#include "lib/cluster/scheduler_hosts.h"
#include "lib/launch/host_binding.h"
#include "lib/launch/host_probe.h"
#include "lib/launch/mpirun.h"
#include "lib/launch/restarts.h"
#include "lib/launch/srun.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/replan.h"
#include "lib/base/machine.h"
#include "lib/runtime/device.h"

namespace parallax::cli {
namespace {

enum class Launcher { kMpirun, kSrun };

std::string_view LauncherName(Launcher launcher) {
  return launcher == Launcher::kSrun ? "srun" : "mpirun";
}

StatusOr<Launcher> ChooseLauncher(const std::string& flag, const EnvLookup& env) {
  if (flag == "mpirun") return Launcher::kMpirun;
  if (flag == "srun") return Launcher::kSrun;
  if (flag == "auto") return env("SLURM_JOB_ID") ? Launcher::kSrun : Launcher::kMpirun;
  return InvalidArgumentError("--launcher {}: expected mpirun, srun or auto", flag);
}

// The hosts the plan is bound to: the flags', the scheduler's, or the plan's own.
StatusOr<Hostfile> AllocationFor(const Plan& plan, const std::string& hostfile,
                                 const std::string& hosts, Launcher launcher) {
  if (!hostfile.empty() || !hosts.empty()) {
    if (launcher == Launcher::kSrun) {
      return InvalidArgumentError("{}: --launcher srun runs the ranks on the nodes of the SLURM "
                                  "allocation (SLURM_JOB_NODELIST); --hostfile and -H are for "
                                  "--launcher mpirun",
                                  hostfile.empty() ? "-H" : "--hostfile");
    }
    return hostfile.empty() ? ParseHostList(hosts) : LoadHostfile(hostfile);
  }
  PX_ASSIGN_OR_RETURN(std::optional<Hostfile> scheduler, SchedulerAllocation(ProcessEnv));
  if (launcher == Launcher::kSrun && (!scheduler || !scheduler->source.starts_with("SLURM"))) {
    return InvalidArgumentError("--launcher srun: not inside a SLURM allocation "
                                "(SLURM_JOB_NODELIST is not set); run `parallax launch` under "
                                "salloc or sbatch (--sbatch writes a batch script)");
  }
  if (scheduler) return *std::move(scheduler);
  Hostfile own = PlanHostfile(plan);
  own.source = "the plan";
  return own;
}

// sbatch's --job-name: "parallax-" and the job directory's name in safe characters.
std::string SbatchJobName(const std::filesystem::path& job) {
  std::string name = "parallax-" + job.filename().string();
  for (char& c : name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  return name;
}

// "ck: step 20" or "the init op (ck has no complete checkpoint yet)": where a relaunch
// with --resume=if-exists starts.
std::string RelaunchPoint(const std::string& checkpoint_dir) {
  StatusOr<std::optional<JobStep>> step = NewestCompleteJobStep(checkpoint_dir);
  if (step.ok() && step->has_value()) {
    return fmt::format("the newest complete checkpoint, step {} in {}", (*step)->step,
                       checkpoint_dir);
  }
  return fmt::format("the init op ({} has no complete checkpoint{})", checkpoint_dir,
                     step.ok() ? " yet" : ": " + step.status().message());
}

}  // namespace

Command AddLaunchCommand(CLI::App& app, std::vector<std::string> launcher_args,
                         const int* verbosity, int* interrupted_by) {
  struct Flags {
    std::string job;
    std::string hostfile;
    std::string hosts;
    std::string launcher = "auto";
    std::string sbatch;  // the script's file; "" with --sbatch alone: stdout
    int restarts = 0;
    int min_ranks = 0;  // 0: the plan's ranks (no relaunch on fewer)
    bool dry_run = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "launch", "Start a job written by `parallax transform`: one `parallax run` per rank, "
                "with mpirun or srun. Unknown flags go to `parallax run`; words after -- go to "
                "the launcher.");
  sub->add_option("job", flags->job, "the job directory written by `parallax transform`")
      ->required();
  auto* hostfile = sub->add_option("--hostfile", flags->hostfile,
                                   "OpenMPI hostfile of the hosts to run on; the plan's hosts "
                                   "are bound to them in order (default: the scheduler's "
                                   "allocation, else the plan's hosts)");
  sub->add_option("-H,--hosts", flags->hosts, "hosts as mpirun's -H: node1:4,node2:4")
      ->excludes(hostfile);
  sub->add_option("--launcher", flags->launcher,
                  "mpirun, srun (inside a SLURM allocation) or auto: srun when SLURM_JOB_ID "
                  "is set (default auto)");
  auto* sbatch = sub->add_option("--sbatch", flags->sbatch,
                                 "write a SLURM batch script that runs this job (to FILE, or "
                                 "stdout) instead of starting it")
                     ->expected(0, 1);
  sub->add_option("--restarts", flags->restarts,
                  "relaunch a failed job up to K times from the newest complete checkpoint "
                  "(needs --checkpoint-dir)");
  auto* min_ranks =
      sub->add_option("--min-ranks", flags->min_ranks,
                      "with --restarts and mpirun: when hosts are lost and no spare host can "
                      "take their place, relaunch on the hosts left (the job re-planned) if "
                      "they run at least M ranks (default: the plan's ranks)");
  sub->add_flag("--dry-run", flags->dry_run,
                "print the host binding and the launcher's command line, and exit");
  // Flags `launch` does not know are for the ranks' `parallax run`; main() has already
  // taken the words after `--` (the launcher's) off the command line.
  sub->allow_extras();
  sub->fallthrough(false);
  return Command{sub, [flags, sub, sbatch, min_ranks, launcher_args, verbosity,
                      interrupted_by]() -> Status {
    PX_ASSIGN_OR_RETURN(Plan plan, LoadPlan(flags->job));
    PX_ASSIGN_OR_RETURN(Launcher launcher, ChooseLauncher(flags->launcher, ProcessEnv));
    if (flags->restarts < 0) {
      return InvalidArgumentError("--restarts {}: expected a count >= 0", flags->restarts);
    }
    // The run flags, and `parallax -v launch`'s verbosity, which the ranks share.
    std::vector<std::string> run_args = sub->remaining();
    for (int i = 0; i < *verbosity; ++i) run_args.push_back("-v");
    std::optional<std::string> checkpoint_dir = CheckpointDirOfRunArgs(run_args);
    if (flags->restarts > 0 && !checkpoint_dir) {
      return InvalidArgumentError("--restarts {}: a relaunch resumes from the newest complete "
                                  "checkpoint; pass --checkpoint-dir DIR among the run flags",
                                  flags->restarts);
    }
    const bool min_ranks_given = min_ranks->count() > 0;
    if (min_ranks_given) {
      if (flags->restarts == 0) {
        return InvalidArgumentError("--min-ranks {}: it says how far a relaunch may shrink the "
                                    "job; pass --restarts K too",
                                    flags->min_ranks);
      }
      if (flags->min_ranks < 1 || flags->min_ranks > plan.world_size()) {
        return InvalidArgumentError("--min-ranks {}: expected 1 .. {}, the job's ranks",
                                    flags->min_ranks, plan.world_size());
      }
      if (launcher == Launcher::kSrun || (sbatch->count() > 0 && flags->launcher != "mpirun")) {
        return InvalidArgumentError("--min-ranks {}: a relaunch on fewer hosts needs "
                                    "--launcher mpirun (SLURM ends a job whose node fails)",
                                    flags->min_ranks);
      }
    } else {
      flags->min_ranks = plan.world_size();
    }
    // Absolute, as in launch.sh: the ranks may start in another directory (another host).
    std::filesystem::path job = std::filesystem::absolute(flags->job).lexically_normal();
    if (job.has_relative_path() && job.filename().empty()) job = job.parent_path();  // "job/"
    const MpirunOptions machine = MpirunOptionsForThisMachine();

    if (sbatch->count() > 0) {
      if (!flags->hostfile.empty() || !flags->hosts.empty()) {
        return InvalidArgumentError("--sbatch: the batch job runs on the nodes SLURM gives it; "
                                    "--hostfile and -H are for --launcher mpirun");
      }
      // A mistyped run flag is found now, not when the batch job starts.
      PX_RETURN_IF_ERROR(PreflightJobRun(flags->job, run_args));
      // The script runs this command in the allocation: with srun unless mpirun was asked for.
      std::vector<std::string> argv = {machine.parallax, "launch", job.string(), "--launcher",
                                       flags->launcher == "mpirun" ? "mpirun" : "srun"};
      if (flags->restarts > 0) {
        argv.push_back("--restarts");
        argv.push_back(std::to_string(flags->restarts));
      }
      if (min_ranks_given) {
        argv.push_back("--min-ranks");
        argv.push_back(std::to_string(flags->min_ranks));
      }
      argv.insert(argv.end(), run_args.begin(), run_args.end());
      if (!launcher_args.empty()) {
        argv.push_back("--");
        argv.insert(argv.end(), launcher_args.begin(), launcher_args.end());
      }
      std::error_code error;
      const std::filesystem::path here = std::filesystem::current_path(error);
      if (error) {
        return InvalidArgumentError("--sbatch: cannot read the working directory: {}",
                                    error.message());
      }
      // A #SBATCH line ends at a newline: such a directory cannot be written into one.
      const std::string here_text = here.string();
      if (std::any_of(here_text.begin(), here_text.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
        return InvalidArgumentError("--sbatch: the working directory '{}' holds a control "
                                    "character, which a #SBATCH line cannot; write the script "
                                    "from another directory",
                                    CommentText(here_text));
      }
      const std::string script = SbatchScript(plan, SbatchJobName(job), here.string(), argv);
      if (flags->sbatch.empty()) {
        std::fputs(script.c_str(), stdout);
        return Status::Ok();
      }
      PX_RETURN_IF_ERROR(WriteFileAtomically(flags->sbatch, script));
      std::printf("%s: a batch script for %d rank%s; submit it with `sbatch %s`\n",
                  flags->sbatch.c_str(), plan.world_size(), plan.world_size() == 1 ? "" : "s",
                  ShellQuote(flags->sbatch).c_str());
      return Status::Ok();
    }

    PX_ASSIGN_OR_RETURN(Hostfile allocation,
                        AllocationFor(plan, flags->hostfile, flags->hosts, launcher));
    PX_ASSIGN_OR_RETURN(HostBinding binding, BindPlanHosts(plan, allocation));
    // A relaunch on fewer hosts changes the plan, the job directory and the binding.
    std::filesystem::path running_job = job;
    // The ranks' output reaches this terminal through the launcher's pipes: rank 0 is told
    // to redraw one progress line when this process's stderr is a terminal.
    const bool progress_given = std::any_of(run_args.begin(), run_args.end(), [](const auto& a) {
      return a == "--progress" || a.starts_with("--progress=");
    });
    if (!progress_given && ::isatty(STDERR_FILENO) == 1) {
      run_args.push_back("--progress");
      run_args.push_back("live");
    }
    // GPU ranks that cannot use their GPU are refused before the launcher starts, unless
    // the run flags ask for the CPU (a dry run starts nothing): all of them in a parallax
    // without CUDA, this host's by its GPUs; the others check on their hosts (run.cc).
    const bool cpu_fallback =
        std::find(run_args.begin(), run_args.end(), "--cpu-fallback") != run_args.end();
    for (const RankPlacement& rank : plan.ranks) {
      if (rank.device != DeviceKind::kGpu || cpu_fallback || flags->dry_run) continue;
      if (GpuSupportBuiltIn() && !NamesThisMachine(rank.host)) continue;  // checked on its host
      if (Status usable = UsableGpu(rank.device_index); !usable.ok()) {
        return GpuPlanError(flags->job, rank.rank, GpuPlacementText(rank), usable.message());
      }
    }
    // Mistyped flags, missing data or checkpoints: one line here, not one per rank.
    JobRunBatch batch;
    if (!flags->dry_run) {
      PX_ASSIGN_OR_RETURN(batch, PreflightJobRun(flags->job, run_args));
    }

    Hostfile bound_hosts = binding.BoundHostfile();
    // mpirun started from here, now: it forwards only what is set (it warns about every -x
    // of an unset variable; a relaunch unsets kFirstAttemptOnlyEnv). launch.sh, run later,
    // keeps PATH and LD_LIBRARY_PATH.
    auto started_here = [&machine] {
      MpirunOptions options = machine;
      std::erase_if(options.forward_env,
                    [](const std::string& name) { return std::getenv(name.c_str()) == nullptr; });
      return options;
    };
    constexpr std::string_view kHostfilePrefix = "parallax-hosts";
    // The launcher's argv for `run_args`, mpirun's reading its hosts from `hostfile_path`.
    auto launch_argv = [&](const std::vector<std::string>& args, const std::string& hostfile_path) {
      if (launcher == Launcher::kSrun) {
        SrunOptions options;
        options.parallax = machine.parallax;
        options.extra_srun_args = launcher_args;
        options.run_args = args;
        return SrunArgv(binding, running_job.string(), options);
      }
      MpirunOptions options = started_here();
      options.run_args = args;
      options.extra_mpirun_args = launcher_args;
      return MpirunArgv(bound_hosts, hostfile_path, running_job.string(), options);
    };

    if (flags->dry_run) {
      std::printf("# hosts from %s, bound in order (plan host -> host: ranks)\n",
                  binding.source.c_str());
      for (const std::string& line : binding.Describe()) std::printf("#   %s\n", line.c_str());
      if (launcher == Launcher::kMpirun) {
        std::printf("# mpirun reads them from a temporary hostfile, removed when it exits:\n");
        for (const HostfileEntry& host : bound_hosts.hosts) {
          std::printf("#   %s slots=%d\n", host.name.c_str(), host.slots);
        }
      }
      if (flags->restarts > 0) {
        std::printf("# a failed job is relaunched up to %d time%s with --resume=if-exists\n",
                    flags->restarts, flags->restarts == 1 ? "" : "s");
      }
      if (min_ranks_given && flags->min_ranks < plan.world_size()) {
        std::printf("# hosts that no longer answer are left out; the job is re-planned on the "
                    "hosts left when they run at least %d ranks\n",
                    flags->min_ranks);
      }
      const std::string pattern = TemporaryFile::Pattern(kHostfilePrefix);
      std::printf("%s\n", ShellLine(launch_argv(run_args, pattern)).c_str());
      return Status::Ok();
    }
    for (const std::string& line : binding.Describe()) spdlog::info("hosts: {}", line);

    for (int attempt = 0;; ++attempt) {
      std::optional<TemporaryFile> hostfile;
      std::string hostfile_path;
      if (launcher == Launcher::kMpirun) {
        PX_ASSIGN_OR_RETURN(TemporaryFile file,
                            TemporaryFile::Create(kHostfilePrefix, FormatHostfile(bound_hosts)));
        hostfile_path = file.path();
        hostfile.emplace(std::move(file));
      }
      const std::vector<std::string> argv = launch_argv(run_args, hostfile_path);
      spdlog::info("{}", ShellLine(argv));
      PX_ASSIGN_OR_RETURN(InterruptibleRun run, RunForwardingSignals(argv));
      const int exit_status = run.exit_status;
      if (run.signal != 0) {
        // Ranks write checkpoints to a temporary file and rename it: the newest complete
        // one is intact.
        *interrupted_by = run.signal;
        return Status(StatusCode::kAborted,
                      fmt::format("{}: interrupted by {}: the job was stopped ({} exited with "
                                  "status {}); the newest complete checkpoint is kept",
                                  flags->job, run.signal == SIGINT ? "SIGINT" : "SIGTERM",
                                  LauncherName(launcher), exit_status));
      }
      if (exit_status == 0) return Status::Ok();
      if (attempt == flags->restarts) {
        return Status(StatusCode::kAborted,
                      fmt::format("{}: the job failed{}: {} exited with status {} (the failing "
                                  "rank's error is above)",
                                  flags->job,
                                  attempt == 0 ? "" : fmt::format(" after {} restart{}", attempt,
                                                                  attempt == 1 ? "" : "s"),
                                  LauncherName(launcher), exit_status));
      }
      spdlog::warn("restart {} of {}: the job failed ({} exited with status {}); relaunching "
                   "from {}",
                   attempt + 1, flags->restarts, LauncherName(launcher), exit_status,
                   RelaunchPoint(*checkpoint_dir));
      run_args = RelaunchRunArgs(run_args);
      for (std::string_view name : kFirstAttemptOnlyEnv) ::unsetenv(std::string(name).c_str());
      if (launcher != Launcher::kMpirun) continue;  // SLURM replaces or ends failed nodes

      // Hosts that no longer answer are left out of the relaunch.
      // This machine, where launch runs, answers by definition.
      std::vector<std::string> names;
      for (const BoundHost& host : binding.hosts) {
        const std::vector<std::string>& local = machine.local_hosts;
        if (std::find(local.begin(), local.end(), host.host.name) == local.end()) {
          names.push_back(host.host.name);
        }
      }
      MpirunOptions probe_options = started_here();
      probe_options.extra_mpirun_args = launcher_args;
      PX_ASSIGN_OR_RETURN(std::vector<HostProbe> probes,
                          ProbeHosts(names, probe_options, kHostProbeTimeout));
      std::vector<std::string> lost;
      for (const HostProbe& probe : probes) {
        if (probe.answered) continue;
        spdlog::warn("restart {}: host {} does not answer: {}", attempt + 1, probe.host,
                     probe.problem);
        lost.push_back(probe.host);
      }
      if (lost.empty()) continue;
      // The job failed: what keeps it from being relaunched ends it with its exit status.
      auto cannot_relaunch = [&](const Status& why, std::string_view hint = "") {
        return Status(StatusCode::kAborted,
                      fmt::format("{}: the job failed and cannot be relaunched: {}{}", flags->job,
                                  why.message(), hint));
      };
      StatusOr<RelaunchHosts> relaunch =
          ChooseRelaunchHosts(plan, allocation, lost, flags->min_ranks);
      if (!relaunch.ok()) {
        return cannot_relaunch(relaunch.status(), min_ranks_given ? "" : " (--min-ranks M lets "
                                                                         "it go on with fewer "
                                                                         "ranks)");
      }
      allocation = relaunch->allocation;
      if (relaunch->replanned) {
        const std::filesystem::path replanned = job / fmt::format("restart-{}", attempt + 1);
        StatusOr<Plan> replan = ReplanOnFewerHosts(running_job.string(), relaunch->kept_roles,
                                                   replanned.string(), machine);
        if (!replan.ok()) return cannot_relaunch(replan.status());
        Plan smaller = *std::move(replan);
        std::string batch_note;
        run_args = KeepGlobalBatch(run_args, batch.batch, batch.batch_open, plan.world_size(),
                                   smaller.world_size(), &batch_note);
        spdlog::warn("restart {}: re-planned on {} rank{} ({} host{}) in {}; {}", attempt + 1,
                     smaller.world_size(), smaller.world_size() == 1 ? "" : "s",
                     relaunch->kept_roles, relaunch->kept_roles == 1 ? "" : "s",
                     replanned.string(), batch_note);
        plan = std::move(smaller);
        running_job = replanned;
        StatusOr<JobRunBatch> checked = PreflightJobRun(running_job.string(), run_args);
        if (!checked.ok()) return cannot_relaunch(checked.status());
        batch = *checked;
      }
      StatusOr<HostBinding> rebound = BindPlanHosts(plan, allocation);
      if (!rebound.ok()) return cannot_relaunch(rebound.status());
      binding = *std::move(rebound);
      bound_hosts = binding.BoundHostfile();
      for (const std::string& line : binding.Describe()) {
        spdlog::info("restart {}: hosts: {}", attempt + 1, line);
      }
    }
  }};
}

}  // namespace parallax::cli
