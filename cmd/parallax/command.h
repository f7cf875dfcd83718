// Plumbing shared by the subcommands of the `parallax` CLI.
//
// Each subcommand lives in its own file and registers itself on the CLI11 app with an
// Add*Command function returning the Command to run when it was chosen. Commands return
// a Status; main() turns it into the documented exit code and a one-line error:
//   0 ok · 2 bad input (graph, YAML, hostfile, flags) · 3 a job, rank or run failed (a
//   full disk, an I/O error) · 1 internal
//   · 130/143 `launch` stopped by SIGINT/SIGTERM
#ifndef PARALLAX_CMD_PARALLAX_COMMAND_H_
#define PARALLAX_CMD_PARALLAX_COMMAND_H_

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/base/status.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph.h"

namespace parallax::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitJobFailed = 3;

struct Command {
  CLI::App* app = nullptr;      // the subcommand, to see whether it was chosen
  std::function<Status()> run;  // runs it with the parsed flags
};

int ExitCodeFor(const Status& status);

// A flag's check that its number is at least `min` ("--batch: must be at least 1, not 0";
// a value that is not a number is left to the flag's own conversion error).
CLI::Validator AtLeast(int64_t min);
// ... greater than 0, for decimals ("--epochs: must be greater than 0, not -1").
CLI::Validator Positive();

// A graph made data-parallel by hand with Horovod becomes the single-device graph
// underneath (lib/passes/strip_horovod.h) before `run` and `transform` use it; what was
// removed is logged (a warning names gradients Horovod summed rather than averaged).
Status StripHorovodAndReport(Graph& graph);

// `--input-map OLD=NEW` values as (OLD, NEW) pairs; InvalidArgument naming the bad one.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseInputMap(
    const std::vector<std::string>& texts);

// --strategy and --sparse as transform and verify take them; "" leaves a flag unset.
// Errors name the flag; a sparse method given to --strategy gets a hint to --sparse.
StatusOr<StrategyFlags> ParseStrategyFlags(const std::string& strategy,
                                           const std::string& sparse);

// --allreduce as transform and estimate take it: "" for auto (the cost model's choice),
// else "flat" or "hierarchical" (TransformOptions::allreduce_algorithm); an error names
// the flag.
StatusOr<std::string> ParseAllReduceFlag(const std::string& allreduce);

// The last line of a file that has one (a child process's log), for errors; "" when it
// cannot be read.
std::string LastLine(const std::string& path);

// A job directory: `parallax transform`'s output, with its plan.yaml (a directory
// without one is a SavedModel or a checkpoint directory).
bool IsJobDir(const std::string& path);

// "GPU 0 of host gpu-a": where the plan puts a GPU rank.
std::string GpuPlacementText(const RankPlacement& rank);

// --device (run, verify): -1 for the CPU, else the GPU's ordinal; "cpu", "gpu" (GPU 0)
// or "gpu:N", else an error naming the flag.
StatusOr<int> ParseDeviceFlag(const std::string& text);

// OK when this process can use GPU `index`; else why not ("this parallax was built
// without CUDA ...", "no usable GPU: ...", "this host has 1 usable GPU").
Status UsableGpu(int index);

// The refusal of a job rank the plan puts on a GPU it cannot use (FailedPrecondition,
// exit 2). `where`: "GPU 0 of host gpu-a"; `why`: "this parallax was built without
// CUDA ...", "no usable GPU: cudaGetDeviceCount: ...".
Status GpuPlanError(const std::string& job, int rank, const std::string& where,
                    const std::string& why);

// `parallax launch`'s pre-flight: `parallax run JOB RUN_ARGS...` checked once as every
// rank will start it, before mpirun: the flags parse, feeds and eval feeds name data
// that exists and fits rank 0's graph (its trainer is planned), and --resume finds a
// checkpoint. Errors are run's own (exit 2). Returns rank 0's batch as its trainer has it.
struct JobRunBatch {
  int64_t batch = 0;        // examples per rank per step; 0: the input pipeline's
  bool batch_open = false;  // --batch sets it (the graph leaves it open)
};
StatusOr<JobRunBatch> PreflightJobRun(const std::string& job,
                                      const std::vector<std::string>& run_args);

// Prints "parallax: error: <first line>" and any further lines to stderr.
void PrintError(const Status& status);

// Subcommands.
Command AddInspectCommand(CLI::App& app);
Command AddTransformCommand(CLI::App& app);
Command AddRunCommand(CLI::App& app);
Command AddModelsCommand(CLI::App& app);
// `launcher_args`: the words after `--` on a `parallax launch` command line (mpirun's or
// srun's). `*interrupted_by` is set to the signal (SIGINT, SIGTERM) that stopped the job:
// the exit status is then 128 + it (130, 143), as a shell's.
// `*verbosity` (the global -v count, read when the command runs) is passed to the ranks.
Command AddLaunchCommand(CLI::App& app, std::vector<std::string> launcher_args,
                         const int* verbosity, int* interrupted_by);
// `*failed` is set when the comparison ran and failed (exit status 1, no error line).
Command AddVerifyCommand(CLI::App& app, bool* failed);
Command AddCheckpointCommand(CLI::App& app);
Command AddEvalCommand(CLI::App& app);
Command AddTraceCommand(CLI::App& app);
Command AddEstimateCommand(CLI::App& app);

}  // namespace parallax::cli

#endif  // PARALLAX_CMD_PARALLAX_COMMAND_H_
