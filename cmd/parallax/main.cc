// `parallax`: the command-line entry point. Parses flags with CLI11, sets up logging
// (quiet by default, -v for info, -vv for debug), runs the chosen subcommand and maps
// its Status to the exit code documented in command.h.
#include <charconv>
#include <new>
#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/base/version.h"
#include "lib/passes/strip_horovod.h"
#include "lib/transform/job_writer.h"
#include "lib/runtime/device.h"

namespace parallax::cli {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
    case StatusCode::kResourceExhausted:
    case StatusCode::kOutOfRange: return kExitBadInput;  // e.g. an input pipeline with no data
    case StatusCode::kAborted:
    case StatusCode::kUnavailable:  // the run failed: a full disk is not bad input
    case StatusCode::kDeadlineExceeded: return kExitJobFailed;
    case StatusCode::kInternal: return kExitInternal;
  }
  return kExitInternal;
}

CLI::Validator AtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [at, error] = std::from_chars(text.data(), end, value);
        if (error != std::errc() || at != end) return "";  // the conversion reports it
        return value < min ? fmt::format("must be at least {}, not {}", min, text) : "";
      },
      "");
}

CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "";
        return value > 0 ? "" : fmt::format("must be greater than 0, not {}", text);
      },
      "");
}

Status StripHorovodAndReport(Graph& graph) {
  PX_ASSIGN_OR_RETURN(HorovodStrip horovod, StripHorovod(graph));
  if (horovod.total() == 0) return Status::Ok();
  spdlog::info("{}: a Horovod graph: removed {}; Parallax synchronises the single-device graph",
               graph.source(), horovod.Summary());
  if (!horovod.summed.empty()) {
    spdlog::warn("{}: Horovod summed {} gradient{} ({}, ...) instead of averaging; set the "
                 "cluster's strategy `average: false` to keep summing",
                 graph.source(), horovod.summed.size(), horovod.summed.size() == 1 ? "" : "s",
                 horovod.summed[0]);
  }
  return Status::Ok();
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ParseInputMap(
    const std::vector<std::string>& texts) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& text : texts) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--input-map '{}': expected OLD=NEW (file name prefixes)", text);
    }
    pairs.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  }
  return pairs;
}

StatusOr<std::string> ParseAllReduceFlag(const std::string& allreduce) {
  if (allreduce == "auto") return std::string();
  if (allreduce != "flat" && allreduce != "hierarchical") {
    return InvalidArgumentError("--allreduce: '{}' is not auto, flat or hierarchical",
                                WithControlsShown(allreduce));
  }
  return allreduce;
}

std::string LastLine(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path, int64_t{16} << 20);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
}

StatusOr<StrategyFlags> ParseStrategyFlags(const std::string& strategy,
                                           const std::string& sparse) {
  StrategyFlags flags;
  if (!strategy.empty()) {
    flags.preset = ParseStrategyKind(strategy);
    if (!flags.preset) {
      return InvalidArgumentError("--strategy: {}", UnknownStrategyMessage(strategy, "--sparse"));
    }
  }
  if (!sparse.empty()) {
    flags.sparse = ParseSparseMethod(sparse);
    if (!flags.sparse) {
      return InvalidArgumentError("--sparse: unknown method '{}' (expected ps, allgather or dense)",
                                  sparse);
    }
  }
  return flags;
}

bool IsJobDir(const std::string& path) {
  return std::filesystem::is_directory(path) &&
         std::filesystem::exists(std::filesystem::path(path) / kPlanFile);
}

std::string GpuPlacementText(const RankPlacement& rank) {
  return fmt::format("GPU {} of host {}", rank.device_index, rank.host);
}

StatusOr<int> ParseDeviceFlag(const std::string& text) {
  if (text == "cpu") return -1;
  if (text == "gpu") return 0;
  if (text.starts_with("gpu:")) {
    const std::string index = text.substr(4);
    if (!index.empty() && index.size() < 6 &&
        std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::stoi(index);
    }
  }
  return InvalidArgumentError("--device {}: expected cpu, gpu or gpu:N", text);
}

Status UsableGpu(int index) {
  PX_ASSIGN_OR_RETURN(const int count, GpuDeviceCount());
  if (index < count) return Status::Ok();
  return FailedPreconditionError("this host has {} usable GPU{}", count, count == 1 ? "" : "s");
}

Status GpuPlanError(const std::string& job, int rank, const std::string& where,
                    const std::string& why) {
  return FailedPreconditionError(
      "{}: the plan places rank {} on {}, but {}; transform for CPU ranks (hosts with "
      "`cpus: N` in the cluster spec), or pass --cpu-fallback to train this plan on CPUs",
      job, rank, where, why);
}

void PrintError(const Status& status) {
  std::fprintf(stderr, "parallax: error: %s\n", status.message().c_str());
  if (status.code() == StatusCode::kInternal) {
    std::fprintf(stderr, "This is a bug in Parallax; please report it with the command line.\n");
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"Parallax: turns a single-device TensorFlow training graph into a "
               "data-parallel job (AllReduce for dense, parameter servers for sparse).",
               "parallax"};
  app.set_version_flag("--version", std::string("parallax ") + kParallaxVersion);
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity, "more log output (-v info, -vv debug)");

  // `parallax launch ... -- ARGS`: ARGS belong to the launcher (mpirun or srun); take them
  // off before CLI11 parses (it would treat them as positionals of the wrong command).
  std::vector<char*> args(argv, argv + argc);
  std::vector<std::string> mpirun_args;
  const auto launch = std::find_if(args.begin() + 1, args.end(),
                                   [](const char* a) { return std::string_view(a) == "launch"; });
  if (launch != args.end()) {
    const auto dashes = std::find_if(launch, args.end(),
                                     [](const char* a) { return std::string_view(a) == "--"; });
    if (dashes != args.end()) {
      mpirun_args.assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }

  bool verify_failed = false;  // `parallax verify` compared and found a difference
  int launch_interrupted_by = 0;  // the signal that stopped `parallax launch`'s job
  std::vector<Command> commands = {
      AddInspectCommand(app),
      AddTransformCommand(app),
      AddRunCommand(app),
      AddModelsCommand(app),
      AddLaunchCommand(app, mpirun_args, &verbosity, &launch_interrupted_by),
      AddVerifyCommand(app, &verify_failed),
      AddCheckpointCommand(app),
      AddEvalCommand(app),
      AddTraceCommand(app),
      AddEstimateCommand(app),
  };

  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    PrintError(InvalidArgumentError("{}", e.what()));
    std::fprintf(stderr, "Run 'parallax --help' for usage.\n");
    return kExitBadInput;
  }

  // Logs go to stderr: stdout carries the command's output (tables, JSON) only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("parallax"));
  spdlog::set_pattern("parallax: %l: %v");
  spdlog::set_level(verbosity >= 2   ? spdlog::level::debug
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::warn);

  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    // Memory is checked where it can be estimated first (a batch's feeds); an allocation
    // that still fails (a model too large for this machine) ends in one line, not an abort.
    Status status = Status::Ok();
    try {
      status = command.run();
    } catch (const std::bad_alloc&) {
      status = ResourceExhaustedError("out of memory: the model and batch need more than this "
                                      "machine has (a smaller --batch needs less)");
    }
    if (!status.ok()) PrintError(status);
    if (status.ok() && verify_failed) return kExitInternal;  // FAIL: 1, as documented
    if (launch_interrupted_by != 0) return 128 + launch_interrupted_by;
    return ExitCodeFor(status);
  }
  return kExitInternal;  // unreachable: CLI11 requires one subcommand
}

}  // namespace parallax::cli

int main(int argc, char** argv) { return parallax::cli::Main(argc, argv); }
