// `parallax run GRAPH [--feed NAME=SRC]... [--synthetic] [--steps N|--epochs E] ...`:
// trains a graph in this process (lib/runtime/trainer.h does the work; docs/run.md has
// every flag). `parallax run JOB_DIR ...` (a directory with plan.yaml) runs one rank of
// a transformed job, normally under mpirun (`parallax launch`): rank and size come from
// the Communicator, the graph is JOB_DIR/rank-R.pb, the train op, init op and loss come
// from the plan, and any error ends the whole job (Communicator::Abort, exit status 3).
// Output (rank 0 of a job, or the process): where the run starts and what it writes, a
// progress line per --log-every steps on stdout (or one live line redrawn on stderr:
// --progress) with the job's examples/s, epoch, elapsed time and ETA, then a summary.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "lib/base/file.h"
#include "lib/base/machine.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/trainer.h"
#include "lib/transform/plan_io.h"
#include "lib/runtime/device.h"

namespace parallax::cli {
namespace {

std::string LossText(const std::optional<double>& loss) {
  return loss ? fmt::format("{:.4f}", *loss) : std::string("-");
}

// "300", or "?" when the run trains until its input pipeline ends.
std::string TotalText(int64_t total) { return total < 0 ? "?" : std::to_string(total); }

// "1h02m05s", "2m05s", "5.3s".
std::string DurationText(double seconds) {
  if (seconds < 59.95) return fmt::format("{:.1f}s", seconds);
  const int64_t total = static_cast<int64_t>(seconds + 0.5);
  const int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m{:02}s", h, m, s);
  if (m > 0) return fmt::format("{}m{:02}s", m, s);
  return fmt::format("{}s", s);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

struct RunOutput {
  bool live = false;   // one redrawn progress line on stderr instead of lines on stdout
  bool quiet = false;  // a job rank other than 0 without -v
  std::string prefix;  // "rank R: " on the other ranks of a job
};

// Where the run starts and what it writes, once initialised (rank 0 of a job, or the
// process).
void PrintStart(const Trainer& trainer, const TrainerOptions& options) {
  const int64_t batch = trainer.batch_size();
  const std::string batch_text =
      batch > 0 ? std::to_string(batch) : std::string("the input pipeline's");
  const std::string target = trainer.total_steps() < 0 ? std::string("the input pipeline's end")
                                                       : std::to_string(trainer.total_steps());
  if (trainer.world_size() > 1) {
    std::printf("training steps %lld -> %s on %d ranks: batch %s per rank, global batch %s\n",
                static_cast<long long>(trainer.step()), target.c_str(), trainer.world_size(),
                batch_text.c_str(),
                batch > 0 ? std::to_string(batch * trainer.world_size()).c_str()
                          : "the pipelines'");
  } else {
    std::printf("training steps %lld -> %s: batch %s\n", static_cast<long long>(trainer.step()),
                target.c_str(), batch_text.c_str());
  }
  if (!trainer.resumed_from().empty()) {
    std::printf("resumed from %s (step %lld)\n", trainer.resumed_from().c_str(),
                static_cast<long long>(trainer.step()));
  }
  std::vector<std::string> outputs;
  if (!options.checkpoint_dir.empty()) {
    const std::string when =
        options.checkpoint_every > 0
            ? fmt::format("every {} steps and at the end", options.checkpoint_every)
            : std::string("at the end");
    const std::string kept = options.keep_checkpoints > 0
                                 ? fmt::format(", newest {} kept", options.keep_checkpoints)
                                 : std::string();
    outputs.push_back(fmt::format("checkpoints to {} ({}{})", AbsolutePath(options.checkpoint_dir),
                                  when, kept));
  }
  if (!options.metrics_path.empty()) {
    outputs.push_back(fmt::format("metrics to {}", AbsolutePath(options.metrics_path)));
  }
  if (!options.summary_dir.empty()) {
    outputs.push_back(fmt::format("TensorBoard events to {}", AbsolutePath(options.summary_dir)));
  }
  if (!outputs.empty()) std::printf("writing %s\n", fmt::format("{}", fmt::join(outputs, "; ")).c_str());
  std::fflush(stdout);
}

// One progress line: "step 300/1000  loss 0.4123  2560.0 examples/s (4 ranks)  epoch 1.27
// 30%  elapsed 1m02s  ETA 2m25s". Rank 0 of a job shows every rank's examples/s; another
// rank (-v) its own.
std::string ProgressLine(const StepReport& r, const std::string& prefix) {
  const bool rank0 = prefix.empty();
  std::string line = fmt::format("{}step {}/{}  loss {}  {:.1f} examples/s", prefix, r.step,
                                 TotalText(r.total_steps), LossText(r.loss),
                                 rank0 ? r.global_examples_per_sec : r.examples_per_sec);
  if (rank0 && r.world_size > 1) line += fmt::format(" ({} ranks)", r.world_size);
  if (r.epochs_done >= 0) line += fmt::format("  epoch {:.2f}", r.epochs_done);
  if (r.total_steps > 0) {
    line += fmt::format("  {}%", r.step * 100 / r.total_steps);
  }
  line += fmt::format("  elapsed {}", DurationText(r.elapsed_seconds));
  if (r.total_steps > 0 && r.step > r.start_step) {
    const double per_step = r.elapsed_seconds / static_cast<double>(r.step - r.start_step);
    line += fmt::format("  ETA {}",
                        DurationText(per_step * static_cast<double>(r.total_steps - r.step)));
  }
  return line;
}

Status TrainAndReport(const Graph& graph, const TrainerOptions& options, const RunOutput& out) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(graph, options));
  spdlog::info("{}train op '{}', init op '{}', loss '{}', batch {}, {} steps", out.prefix,
               trainer->train_op(), trainer->init_op(), trainer->loss(),
               trainer->batch_size() > 0 ? std::to_string(trainer->batch_size())
                                         : std::string("the pipeline's"),
               TotalText(trainer->total_steps()));
  if (!trainer->pipeline_outputs().empty()) {
    spdlog::info("{}input pipeline in the graph: {}", out.prefix,
                 fmt::join(trainer->pipeline_outputs(), ", "));
  }
  for (const std::string& line : trainer->DescribeFeeds()) {
    spdlog::info("{}feed {}", out.prefix, line);
  }

  const bool live = out.live && !out.quiet;
  const bool rank0 = out.prefix.empty();
  // The communicator's traffic counters at the first report: the per-step figure is
  // taken from there to the end, past the initial broadcasts and the first step.
  const Communicator* comm = options.communicator;
  struct Counters {
    int64_t step = -1, bytes = 0, messages = 0;
  } first_report;
  auto on_start = [&]() {
    if (!out.quiet && rank0) PrintStart(*trainer, options);
  };
  StatusOr<TrainSummary> summary = trainer->Run(
      [&](const StepReport& r) {
        if (comm != nullptr && first_report.step < 0) {
          first_report = {r.step, comm->bytes_sent(), comm->messages_sent()};
        }
        if (out.quiet) return;
        const std::string line = ProgressLine(r, out.prefix);
        if (live) {
          std::fprintf(stderr, "\r\033[K%s", line.c_str());
          std::fflush(stderr);
        } else {
          std::printf("%s\n", line.c_str());
          std::fflush(stdout);
        }
      },
      on_start);
  if (live) std::fprintf(stderr, "\r\033[K");
  if (!summary.ok()) return summary.status();
  if (comm != nullptr && spdlog::get_level() <= spdlog::level::info) {
    // -v: what this rank handed to the transport (docs/comm.md, "Traffic counters").
    std::string per_step;
    if (first_report.step >= 0 && summary->end_step > first_report.step) {
      const double steps = static_cast<double>(summary->end_step - first_report.step);
      per_step = fmt::format("; steps {} -> {}: {:.0f} bytes/step, {:.2f} messages/step",
                             first_report.step, summary->end_step,
                             static_cast<double>(comm->bytes_sent() - first_report.bytes) / steps,
                             static_cast<double>(comm->messages_sent() - first_report.messages) /
                                 steps);
    }
    std::printf("traffic: rank %d sent %lld bytes in %lld messages%s\n", comm->rank(),
                static_cast<long long>(comm->bytes_sent()),
                static_cast<long long>(comm->messages_sent()), per_step.c_str());
    std::fflush(stdout);
  }
  // Peak resident memory of every rank: a collective (every rank ends after the same
  // step), gathered even when quiet.
  std::vector<int64_t> peaks = {PeakResidentBytes()};
  if (comm != nullptr && comm->size() > 1) {
    Tensor mine = Tensor::FromVector<int64_t>(peaks, TensorShape({1}));
    Tensor all;
    PX_RETURN_IF_ERROR(options.communicator->AllGatherV(mine, &all));
    peaks.assign(all.data<int64_t>(), all.data<int64_t>() + all.num_elements());
  }
  if (out.quiet) return Status::Ok();

  const char* prefix = out.prefix.c_str();
  if (summary->end_step == summary->start_step && summary->start_step >= trainer->total_steps()) {
    std::printf("%snothing to train: the run is at step %lld, the target is step %lld (--steps "
                "counts from step 0; raise it to train more)\n",
                prefix, static_cast<long long>(summary->start_step),
                static_cast<long long>(trainer->total_steps()));
  }
  const int world = trainer->world_size();
  const std::string batch =
      world > 1 && rank0
          ? fmt::format("batch {} per rank, global batch {} on {} ranks", trainer->batch_size(),
                        trainer->batch_size() * world, world)
          : fmt::format("batch {}", trainer->batch_size());
  std::printf("%strained steps %lld -> %lld (%s): loss %s -> %s, %.1f examples/s%s in %s\n",
              prefix, static_cast<long long>(summary->start_step),
              static_cast<long long>(summary->end_step), batch.c_str(),
              LossText(summary->first_loss).c_str(), LossText(summary->last_loss).c_str(),
              rank0 ? summary->global_examples_per_sec : summary->examples_per_sec,
              world > 1 && rank0 ? " over all ranks" : "",
              DurationText(summary->elapsed_seconds).c_str());
  if (rank0) {
    std::string each;
    for (int64_t bytes : peaks) {
      each += (each.empty() ? "" : ", ") + HumanBytes(static_cast<uint64_t>(bytes));
    }
    std::printf("peak memory (resident)%s: %s\n", peaks.size() > 1 ? " per rank" : "",
                each.c_str());
  }
  if (!summary->last_checkpoint.empty()) {
    std::printf("%scheckpoint %s\n", prefix, summary->last_checkpoint.c_str());
  }
  if (summary->eval) {
    const EvalResult& e = *summary->eval;
    std::printf("%seval: %lld examples", prefix, static_cast<long long>(e.examples));
    if (e.accuracy) std::printf(", accuracy %.4f (%s)", *e.accuracy, e.prediction.c_str());
    if (e.loss) std::printf(", loss %.4f", *e.loss);
    std::printf("\n");
  }
  std::fflush(stdout);
  return Status::Ok();
}

// Rank `rank` of `plan`'s job: what the plan names (train op, init op, loss) unless the
// flags did, the rank's shard of the data, the plan itself.
void TakeFromPlan(const Plan& plan, int rank, TrainerOptions* options) {
  if (options->train_op.empty()) options->train_op = plan.train_op;
  if (options->init_op.empty()) options->init_op = plan.init_op;
  if (options->loss.empty() && !plan.fetches.empty()) options->loss = plan.fetches[0];
  options->shard = ShardSpec{.index = rank, .count = plan.world_size()};
  options->plan = &plan;
}

// One rank of the job in `dir`. Returns only on success: every error after the
// communicator exists ends the job through Communicator::Abort (exit status 3).
Status RunJobRank(const std::string& dir, TrainerOptions options, bool threads_given,
                  bool cpu_fallback, bool live) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, Communicator::FromMpi());
  auto run = [&]() -> Status {
    PX_ASSIGN_OR_RETURN(Plan plan, LoadPlan(dir));
    if (comm->size() != plan.world_size()) {
      return FailedPreconditionError(
          "{}: the plan has {} ranks but this job has {} processes ({}); start it with "
          "`parallax launch {}`",
          dir, plan.world_size(), comm->size(), comm->kind(), dir);
    }
    const RankPlacement& placement = plan.ranks[static_cast<size_t>(comm->rank())];
    if (placement.device == DeviceKind::kGpu) {
      // The GPU the plan names (by local rank), when this host has it.
      const std::string gpu = GpuPlacementText(placement);
      const Status usable = UsableGpu(placement.device_index);
      if (usable.ok()) {
        options.gpu = placement.device_index;
      } else if (!cpu_fallback) {
        return GpuPlanError(dir, comm->rank(), gpu, usable.message());
      } else {
        spdlog::warn("rank {}: --cpu-fallback: the plan places this rank on {}, but {}; it "
                     "trains on the CPU",
                     comm->rank(), gpu, usable.message());
        options.cpu_fallback_from = gpu;
        options.precision = GpuPrecision::kFp32;  // the CPU's
      }
    }
    const std::string graph_path =
        (std::filesystem::path(dir) / fmt::format("rank-{}.pb", comm->rank())).string();
    PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(graph_path));
    TakeFromPlan(plan, comm->rank(), &options);
    options.communicator = comm.get();
    if (!threads_given) {
      const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      options.threads = std::max(1, cores / std::max(1, comm->local_size()));
    }
    spdlog::info("rank {}/{} ({}, local rank {}/{}): {}, {} kernel threads", comm->rank(),
                 comm->size(), comm->kind(), comm->local_rank(), comm->local_size(), graph_path,
                 options.threads);
    RunOutput out;
    out.live = live;
    out.quiet = comm->rank() != 0 && spdlog::get_level() > spdlog::level::info;
    if (comm->rank() != 0) out.prefix = fmt::format("rank {}: ", comm->rank());
    return TrainAndReport(graph, options, out);
  };
  Status status = run();
  // One process that no launcher started (`parallax run JOB` by hand): its error is the
  // run's own, with run's exit code (a job of 2 ranks started alone, a bad plan.yaml: 2).
  if (comm->kind() == "local") return status;
  if (!status.ok()) comm->Abort(status, 3);
  // Nobody leaves before everyone is done (a late failure still aborts the others).
  Status barrier = comm->Barrier();
  if (!barrier.ok()) comm->Abort(barrier, 3);
  return Status::Ok();
}

// `parallax run`'s flags as parsed, before they are checked.
struct RunFlags {
  std::string graph;
  std::vector<std::string> feeds, eval_feeds, input_map;
  TrainerOptions options;
  bool no_shuffle = false;
  std::string resume;  // "" (not given), "always" (--resume), or "if-exists"
  bool cpu_fallback = false;
  std::string progress = "auto";  // auto, live or lines
  std::string device = "cpu";     // cpu, gpu or gpu:N (a graph run alone)
  std::string precision = "fp32";  // fp32, tf32 or bf16 (a GPU's)
};

// Whether progress is one live line on stderr: --progress live, or auto on a terminal.
StatusOr<bool> LiveProgress(const std::string& mode) {
  if (mode == "live") return true;
  if (mode == "lines") return false;
  if (mode == "auto") return ::isatty(STDERR_FILENO) == 1;
  return InvalidArgumentError("--progress {}: expected auto, live or lines", mode);
}

void RegisterRunFlags(CLI::App* sub, RunFlags* flags) {
  TrainerOptions& o = flags->options;
  sub->add_option("graph", flags->graph, "GraphDef or MetaGraphDef (binary or text)")->required();
  sub->add_option("--feed", flags->feeds,
                  "NAME=SRC: feed placeholder or tensor NAME from SRC: a .npy or IDX file (gzip "
                  "or not), FILE:COLUMN of a CSV or TFRecord (tf.Example) file, a literal value "
                  "fed at every step (0.9, true, \"text\", [1,2,3]), or 'synthetic'; repeatable");
  sub->add_option("--input-dir", flags->options.input.input_dir,
                  "where the files a graph's input pipeline names are found when their own "
                  "paths do not exist (DIR/<file name>)");
  sub->add_option("--input-map", flags->input_map,
                  "OLD=NEW: read the graph's file names that start with OLD from NEW... "
                  "instead; repeatable");
  sub->add_flag("--synthetic", o.synthetic, "random data for every input without a --feed");
  sub->add_option("--batch", o.batch, "examples per step where the graph leaves the batch open "
                                      "(default: the graph's, else 32)")
      ->check(AtLeast(1));
  auto* steps = sub->add_option("--steps", o.steps, "total train steps (a resumed run continues "
                                                    "to this step)")
                    ->check(AtLeast(0));
  sub->add_option("--epochs", o.epochs, "total epochs over the data instead of --steps")
      ->excludes(steps)
      ->check(Positive());
  sub->add_option("--seed", o.seed, "seed of the shuffling and of synthetic data (default 0)");
  sub->add_flag("--no-shuffle", flags->no_shuffle, "read examples in file order");
  sub->add_option("--metrics", o.metrics_path, "write JSON lines (step, loss, examples_per_sec, "
                                               "wall_time) to this file");
  sub->add_option("--log-every", o.log_every, "log and record metrics every N steps (default 10)");
  sub->add_option("--summary-dir", o.summary_dir,
                  "write TensorBoard event files here: the graph's summaries and Parallax's "
                  "scalars every --log-every steps (rank 0 of a job)");
  sub->add_option("--checkpoint-dir", o.checkpoint_dir, "write checkpoints here (at the end and "
                                                        "every --checkpoint-every steps)");
  sub->add_option("--checkpoint-every", o.checkpoint_every, "checkpoint every K steps");
  sub->add_flag("--checkpoint-every-rank", o.checkpoint_every_rank,
                "in a job, every rank writes its full copy of every variable (for comparing "
                "the ranks' copies); by default what every rank holds identically is written "
                "by rank 0 alone");
  sub->add_option("--keep-checkpoints", o.keep_checkpoints, "keep the newest K checkpoints "
                                                            "(default 3; 0 keeps all)")
      ->check(AtLeast(0));
  sub->add_option("--progress", flags->progress,
                  "auto, live or lines: progress as one line redrawn on stderr (live) or a "
                  "line per --log-every steps on stdout (lines); auto: live on a terminal")
      ->default_str("auto");
  sub->add_option("--device", flags->device,
                  "cpu, gpu or gpu:N: where a graph run alone trains (a GPU runs the ops it has "
                  "kernels for, the host the rest; needs a build with CUDA). A job's ranks "
                  "train where the plan places them")
      ->default_str("cpu");
  sub->add_option("--precision", flags->precision,
                  "fp32, tf32 or bf16: how a GPU computes float matrix products and "
                  "convolutions: FP32 (GPU results track the CPU's), or operands rounded to "
                  "TF32 or bfloat16 on tensor cores, sums in FP32 (values stay FP32)")
      ->default_str("fp32");
  sub->add_flag("--cpu-fallback", flags->cpu_fallback,
                "a job rank the plan puts on a GPU trains on the CPU instead (warned in the "
                "log and every metrics line); without it such a rank is an error");
  sub->add_flag("--resume{always}", flags->resume,
                "continue from the newest checkpoint in --checkpoint-dir (an error when there "
                "is none); --resume=if-exists starts from the init op then");
  sub->add_option("--init-checkpoint", o.init_checkpoint,
                  "start from this checkpoint: a TF checkpoint (prefix, or a directory with a "
                  "`checkpoint` file) or safetensors; variables by name");
  sub->add_option("--threads", o.threads, "kernel threads (default: one per core; in a job, "
                                          "the cores divided by the ranks on this host)")
      ->check(AtLeast(1));
  sub->add_flag("--overlap,!--no-overlap", o.overlap,
                "in a job, run the collectives on a communication thread of their own, "
                "overlapping the compute (default off; the same results either way)");
  sub->add_option("--timeline", o.timeline,
                  "write a Chrome trace of the run (every op, collective and step) to FILE; in "
                  "a job, a directory with one file per rank (rank-R.trace.json)");
  sub->add_option("--eval-feed", flags->eval_feeds,
                  "NAME=SRC: data for an evaluation pass after training (accuracy and loss)");
  sub->add_option("--train-op", o.train_op, "the node to run each step (default: found)");
  sub->add_option("--loss", o.loss, "the loss tensor to fetch (default: found)");
  sub->add_option("--init-op", o.init_op, "the node that initialises variables (default: found)");

}

// The checked TrainerOptions of `flags`: feeds and eval feeds parsed, --resume's mode,
// --input-map's pairs.
StatusOr<TrainerOptions> OptionsFromFlags(const RunFlags& flags) {
  TrainerOptions options = flags.options;
  PX_ASSIGN_OR_RETURN(options.precision, ParseGpuPrecision(flags.precision));
  options.shuffle = !flags.no_shuffle;
  if (!flags.resume.empty()) {
    if (flags.resume != "always" && flags.resume != "if-exists") {
      return InvalidArgumentError("--resume={}: expected --resume or --resume=if-exists",
                                  flags.resume);
    }
    options.resume = true;
    options.resume_if_exists = flags.resume == "if-exists";
  }
  for (const std::string& text : flags.feeds) {
    PX_ASSIGN_OR_RETURN(FeedSpec spec, ParseFeedSpec(text, "--feed"));
    options.feeds.push_back(std::move(spec));
  }
  for (const std::string& text : flags.eval_feeds) {
    PX_ASSIGN_OR_RETURN(FeedSpec spec, ParseFeedSpec(text, "--eval-feed"));
    options.eval_feeds.push_back(std::move(spec));
  }
  PX_ASSIGN_OR_RETURN(options.input.input_map, ParseInputMap(flags.input_map));
  return options;
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* sub = app.add_subcommand(
      "run", "Train a graph in this process: feed data, run the train op, log the loss, "
             "checkpoint and resume.");
  RegisterRunFlags(sub, flags.get());
  return Command{sub, [flags]() -> Status {
    PX_ASSIGN_OR_RETURN(TrainerOptions options, OptionsFromFlags(*flags));
    PX_ASSIGN_OR_RETURN(const bool live, LiveProgress(flags->progress));
    PX_ASSIGN_OR_RETURN(const int gpu, ParseDeviceFlag(flags->device));
    if (IsJobDir(flags->graph)) {
      if (gpu >= 0) {
        return InvalidArgumentError("--device {}: a job's ranks train where its plan places "
                                    "them (transform with GPUs in the cluster spec)",
                                    flags->device);
      }
      const bool threads_given = options.threads > 0;
      return RunJobRank(flags->graph, std::move(options), threads_given, flags->cpu_fallback,
                        live);
    }
    PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph(flags->graph));
    PX_RETURN_IF_ERROR(StripHorovodAndReport(graph));
    options.gpu = gpu;
    RunOutput out;
    out.live = live;
    return TrainAndReport(graph, options, out);
  }};
}

StatusOr<JobRunBatch> PreflightJobRun(const std::string& job,
                                      const std::vector<std::string>& run_args) {
  // The flags, parsed and checked as each rank's `parallax run JOB ...` will.
  CLI::App app;
  RunFlags flags;
  CLI::App* sub = app.add_subcommand("run");
  sub->allow_extras();
  int verbosity = 0;  // the global -v, which a rank takes after `run` too
  sub->add_flag("-v,--verbose", verbosity);
  RegisterRunFlags(sub, &flags);
  std::vector<std::string> words = {"parallax", "run", job};
  words.insert(words.end(), run_args.begin(), run_args.end());
  std::vector<const char*> argv;
  for (const std::string& word : words) argv.push_back(word.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError("run flags: {}", e.what());
  }
  if (!sub->remaining().empty()) {
    return InvalidArgumentError("'{}': not a flag of `parallax run` (the flags launch passes on "
                                "to every rank; see `parallax run --help`)",
                                sub->remaining().front());
  }
  PX_ASSIGN_OR_RETURN(TrainerOptions options, OptionsFromFlags(flags));
  PX_RETURN_IF_ERROR(LiveProgress(flags.progress).status());
  // Rank 0's trainer, planned as RunJobRank plans it (without the communicator): its
  // feeds, eval feeds and data files are checked and loaded here, once.
  PX_ASSIGN_OR_RETURN(Plan plan, LoadPlan(job));
  PX_ASSIGN_OR_RETURN(Graph graph, LoadGraph((std::filesystem::path(job) / "rank-0.pb").string()));
  TakeFromPlan(plan, 0, &options);
  options.threads = 1;
  PX_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(graph, options));
  if (options.resume && !options.resume_if_exists) {
    const std::string rank_dir = (std::filesystem::path(options.checkpoint_dir) / "rank-0").string();
    PX_ASSIGN_OR_RETURN(auto checkpoints, ListCheckpoints(rank_dir));
    if (checkpoints.empty()) return NoCheckpointToResume(rank_dir);
  }
  return JobRunBatch{.batch = trainer->batch_size(), .batch_open = trainer->batch_open()};
}

}  // namespace parallax::cli
