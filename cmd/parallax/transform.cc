// `parallax transform GRAPH --cluster C.yaml -o DIR`: the single-device training graph
// rewritten into one graph per rank, with the plan, a report, a hostfile, launch.sh and
// the graph and cluster spec the plan was made from
// (docs/transform.md). Load -> verify -> analyse -> plan -> passes -> verify -> write;
// the output directory appears only when complete. Ops without a CPU kernel (what
// `parallax run` would stop at, as `parallax inspect` lists them) are a warning, and
// under --strict an error. With --search (the parameter-server partition count) and
// --bucket-mb auto (the bucket limit), the setting is measured first (measured_search.h):
// each probe is this job with one value, written to a scratch directory and run by
// `parallax launch` for a few steps; the partition count first, then the bucket limit
// with it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "cmd/parallax/inspect_report.h"
#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/launch/child_process.h"
#include "lib/runtime/checkpoint/json_value.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/measured_search.h"
#include "lib/transform/pipelines.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/report.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"
#include "lib/transform/write_job.h"
#include "lib/runtime/device.h"

namespace parallax::cli {

namespace {

struct TransformFlags {
  std::string graph;
  std::string cluster;
  std::string output;
  std::string strategy;  // "" = the cluster spec's
  std::string sparse;    // "" = as the settings decide
  bool json = false;
  bool strict = false;
  bool force = false;
  bool print_passes = false;
  std::vector<std::string> disabled_passes;
  std::string dump_after;
  std::string dump_dir = ".";
  int stop_after = -1;
  int threads = 0;
  std::string bucket_mb;       // MiB, or "auto"; "": kDefaultBucketBytes
  std::string allreduce = "auto";  // auto | flat | hierarchical
  bool search = false;
  double search_budget_s = 0;  // 0: not given (300)
  int search_steps = 0;        // 0: not given (30)
  std::string search_launch;   // words for each probe's `parallax launch`
};

// The median step time of a probe's metrics (JSON lines with "step" and "elapsed", one
// per step), leaving out the steps up to `warmup`.
StatusOr<double> MedianStepSeconds(const std::string& metrics_path, int warmup) {
  PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(metrics_path, int64_t{64} << 20));
  std::vector<std::pair<int64_t, double>> points;  // (step, elapsed)
  std::istringstream lines(text);
  int line_number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    StatusOr<JsonValue> value = ParseJson(line);
    if (!value.ok()) return value.status().WithPrefix(fmt::format("{}:{}", metrics_path, line_number));
    const JsonValue* step = value->Find("step");
    const JsonValue* elapsed = value->Find("elapsed");
    if (step == nullptr || elapsed == nullptr || step->kind != JsonValue::Kind::kNumber ||
        elapsed->kind != JsonValue::Kind::kNumber) {
      continue;  // the evaluation's line
    }
    points.emplace_back(static_cast<int64_t>(step->number), elapsed->number);
  }
  std::vector<double> steps;
  for (size_t i = 1; i < points.size(); ++i) {
    const int64_t count = points[i].first - points[i - 1].first;
    if (points[i - 1].first < warmup || count <= 0) continue;
    steps.push_back((points[i].second - points[i - 1].second) / static_cast<double>(count));
  }
  if (steps.empty()) {
    return FailedPreconditionError("{}: no timed steps after step {} (the probe trained too few steps)",
                         metrics_path, warmup);
  }
  std::nth_element(steps.begin(), steps.begin() + static_cast<ptrdiff_t>(steps.size() / 2), steps.end());
  return steps[steps.size() / 2];
}

struct SearchInputs {
  const Graph* graph = nullptr;
  const TrainingAnalysis* analysis = nullptr;
  const RankLayout* layout = nullptr;
  const std::string* cluster_text = nullptr;
  const PipelineOptions* pipeline = nullptr;
};

// Times plans for the measured searches: each probe is the plan's job, written to a
// scratch directory and run by `parallax launch` with --search-launch's words.
class Prober {
 public:
  static StatusOr<Prober> Make(const TransformFlags& flags, const SearchInputs& in) {
    PX_ASSIGN_OR_RETURN(TempDir scratch, TempDir::Make("parallax-search"));
    Prober prober(flags, in, std::move(scratch));
    std::istringstream words(flags.search_launch);
    for (std::string word; words >> word;) prober.launch_words_.push_back(word);
    return prober;
  }

  // The median step time of `plan`'s job; `what` names it on stderr ("4 partitions").
  StatusOr<double> Time(const Plan& plan, const std::string& what) {
    const int probe = ++probes_;
    const std::string job = scratch_.Sub(fmt::format("job-{}", probe));
    PX_RETURN_IF_ERROR(WriteTransformedJob(job, false,
                                           JobToWrite{.source = in_.graph,
                                                      .plan = &plan,
                                                      .pipeline = *in_.pipeline,
                                                      .run = TransformRunOptions{.threads = flags_.threads},
                                                      .cluster_yaml = *in_.cluster_text,
                                                      .launch = launch_})
                           .status());
    const std::string metrics = scratch_.Sub(fmt::format("metrics-{}.jsonl", probe));
    const std::string log = scratch_.Sub(fmt::format("probe-{}.log", probe));
    // Launch's own flags first, then the run flags; words after "--" go to the launcher.
    std::vector<std::string> argv = {launch_.parallax, "launch", job};
    const auto dashes = std::find(launch_words_.begin(), launch_words_.end(), "--");
    argv.insert(argv.end(), launch_words_.begin(), dashes);
    for (const std::string& w : std::vector<std::string>{
             "--steps", std::to_string(flags_.search_steps), "--log-every", "1", "--metrics",
             metrics, "--progress", "lines"}) {
      argv.push_back(w);
    }
    const bool has_data = std::any_of(launch_words_.begin(), dashes, [](const std::string& w) {
      return w == "--feed" || w.starts_with("--feed=") || w == "--synthetic";
    });
    if (!has_data) argv.push_back("--synthetic");
    argv.insert(argv.end(), dashes, launch_words_.end());
    // On stderr whatever the verbosity: a search takes minutes (stdout is the report's).
    fmt::print(stderr, "parallax: search: probing {} ({} steps)\n", what, flags_.search_steps);
    PX_ASSIGN_OR_RETURN(pid_t pid, StartChild(argv, ChildIo{.output_path = log, .stdin_null = true}));
    PX_ASSIGN_OR_RETURN(int status, WaitChild(pid, "parallax launch"));
    if (status != 0) return UnavailableError("parallax launch exited {}: {}", status, LastLine(log));
    PX_ASSIGN_OR_RETURN(double seconds,
                        MedianStepSeconds(metrics, std::max(2, flags_.search_steps / 3)));
    fmt::print(stderr, "parallax: search: {}: {:.3f} ms per step\n", what, seconds * 1e3);
    return seconds;
  }

 private:
  Prober(const TransformFlags& flags, const SearchInputs& in, TempDir scratch)
      : flags_(flags), in_(in), scratch_(std::move(scratch)) {}
  const TransformFlags& flags_;
  SearchInputs in_;
  const MpirunOptions launch_ = MpirunOptionsForThisMachine();  // the probe jobs' and this binary
  TempDir scratch_;
  std::vector<std::string> launch_words_;
  int probes_ = 0;
};

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string DescribePartitions(int64_t count) { return fmt::format("{} partitions", count); }
std::string DescribeBucketLimit(int64_t bytes) {
  return bytes == 0 ? std::string("no buckets")
                    : fmt::format("buckets of {}", HumanBytes(static_cast<uint64_t>(bytes)));
}

// transform --search: probes partition counts; on success `cluster`'s strategy.partitions
// is the fastest count.
StatusOr<MeasuredSearch> SearchPartitionCount(const TransformFlags& flags, const SearchInputs& in,
                                              const TransformOptions& options,
                                              const Plan& rule_plan, Prober& prober,
                                              ClusterSpec& cluster) {
  // The variables searched: on parameter servers, partitions not fixed per variable.
  int64_t min_rows = std::numeric_limits<int64_t>::max();
  bool any = false;
  for (const VariablePlan& v : rule_plan.variables) {
    if (v.method != SyncMethod::kParameterServer || rule_plan.FindSlotOwner(v.name) != nullptr) continue;
    const VariableStrategy strategy = cluster.strategy.Resolve(v.name);
    if (strategy.override_used != nullptr && strategy.override_used->partitions &&
        *strategy.override_used->partitions != kAutoPartitions) {
      continue;
    }
    any = true;
    if (!v.shape.empty()) min_rows = std::min(min_rows, v.shape[0]);
  }
  if (!any) {
    return InvalidArgumentError(
        "transform --search: no variable of {} is on parameter servers with its partitions left "
        "to the search (nothing to search; see the plan's reasons)",
        flags.graph);
  }
  if (cluster.strategy.partitions != kAutoPartitions) {
    spdlog::warn("{}: strategy.partitions: {} is replaced by the search (--search)", flags.cluster,
                 cluster.strategy.partitions);
  }
  ProbeFn probe = [&](int64_t partitions) -> StatusOr<double> {
    ClusterSpec probed = cluster;
    probed.strategy.partitions = static_cast<int>(partitions);
    PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(*in.graph, *in.analysis, probed, *in.layout, options));
    return prober.Time(plan, DescribePartitions(partitions));
  };
  PX_ASSIGN_OR_RETURN(
      MeasuredSearch search,
      SearchByProbes(PartitionCandidates(rule_plan.world_size(), in.layout->num_hosts(), min_rows),
                     SearchBudget{.seconds = flags.search_budget_s, .steps = flags.search_steps},
                     probe, NowSeconds, DescribePartitions));
  cluster.strategy.partitions = static_cast<int>(search.chosen);
  return search;
}

// --bucket-mb auto: probes bucket limits; on success `options.bucket_bytes` is the
// fastest limit.
StatusOr<MeasuredSearch> SearchBucketLimit(const TransformFlags& flags, const SearchInputs& in,
                                           const ClusterSpec& cluster, const Plan& plan,
                                           Prober& prober, TransformOptions& options) {
  if (plan.world_size() < 2) {
    return InvalidArgumentError("--bucket-mb auto: the job has one rank, which all-reduces nothing");
  }
  const std::vector<int64_t> candidates = BucketLimitCandidates(*in.analysis, plan.variables);
  if (candidates.size() < 2) {
    return InvalidArgumentError(
        "--bucket-mb auto: no two gradients of {} can share a bucket (nothing to tune)",
        flags.graph);
  }
  ProbeFn probe = [&](int64_t limit) -> StatusOr<double> {
    TransformOptions probed = options;
    probed.bucket_bytes = limit;
    PX_ASSIGN_OR_RETURN(Plan probed_plan, BuildPlan(*in.graph, *in.analysis, cluster, *in.layout, probed));
    return prober.Time(probed_plan, DescribeBucketLimit(limit));
  };
  PX_ASSIGN_OR_RETURN(
      MeasuredSearch search,
      SearchByProbes(candidates,
                     SearchBudget{.seconds = flags.search_budget_s, .steps = flags.search_steps},
                     probe, NowSeconds, DescribeBucketLimit));
  options.bucket_bytes = search.chosen;
  return search;
}

Status RunTransform(TransformFlags flags) {
  PipelineOptions pipeline;
  pipeline.disabled_passes.insert(flags.disabled_passes.begin(), flags.disabled_passes.end());
  pipeline.dump_after = flags.dump_after;
  pipeline.dump_dir = flags.dump_dir;
  pipeline.stop_after = flags.stop_after;
  {
    std::unique_ptr<Pipeline> full = BuildTransformPipeline(pipeline);
    PX_RETURN_IF_ERROR(full->ValidateOptions());
    if (flags.print_passes) {
      std::string out = full->Describe();
      std::fwrite(out.data(), 1, out.size(), stdout);
      return Status::Ok();
    }
  }
  if (flags.graph.empty()) return InvalidArgumentError("transform: GRAPH is required");
  if (flags.cluster.empty()) return InvalidArgumentError("transform: --cluster is required");
  if (flags.output.empty()) return InvalidArgumentError("transform: -o (the output directory) is required");

  TransformOptions options;
  PX_ASSIGN_OR_RETURN(const StrategyFlags strategy, ParseStrategyFlags(flags.strategy, flags.sparse));
  options.strategy = strategy.preset;
  options.sparse = strategy.sparse;
  options.strict = flags.strict;
  const bool bucket_auto = flags.bucket_mb == "auto";
  if (!flags.bucket_mb.empty() && !bucket_auto) {
    char* end = nullptr;
    const double mib = std::strtod(flags.bucket_mb.c_str(), &end);
    if (end == flags.bucket_mb.c_str() || *end != '\0' || !(mib >= 0) || mib > (1 << 20)) {
      return InvalidArgumentError("--bucket-mb: '{}' is not a size in MiB (0 to 1048576) or auto",
                                  flags.bucket_mb);
    }
    options.bucket_bytes = static_cast<int64_t>(mib * (1 << 20));
  }
  PX_ASSIGN_OR_RETURN(options.allreduce_algorithm, ParseAllReduceFlag(flags.allreduce));
  if (!flags.search && !bucket_auto &&
      (flags.search_budget_s > 0 || flags.search_steps > 0 || !flags.search_launch.empty())) {
    return InvalidArgumentError(
        "--search-budget, --search-steps and --search-launch need --search or --bucket-mb auto");
  }
  if (flags.search_budget_s == 0) flags.search_budget_s = 300;
  if (flags.search_steps == 0) flags.search_steps = 30;

  // Inputs first, so that bad input never creates anything.
  PX_RETURN_IF_ERROR(JobWriter::CheckTarget(flags.output, flags.force));
  PX_ASSIGN_OR_RETURN(const std::string cluster_text,
                      ReadFileToString(flags.cluster, kMaxClusterSpecBytes));
  PX_ASSIGN_OR_RETURN(ClusterSpec cluster, ParseClusterSpec(cluster_text, flags.cluster));
  PX_ASSIGN_OR_RETURN(RankLayout layout, LayoutRanks(cluster));
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(flags.graph, kMaxGraphFileBytes));
  options.source_fingerprint = Fnv1a64Hex(bytes);
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(std::move(bytes), flags.graph));
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  PX_RETURN_IF_ERROR(StripHorovodAndReport(graph));
  if (const std::string missing = DescribeOpsWithoutKernel(OpsWithoutKernel(graph, DeviceType::kCpu),
                                                            DeviceType::kCpu);
      !missing.empty()) {
    if (flags.strict) return InvalidArgumentError("{}: --strict: {}", graph.source(), missing);
    spdlog::warn("{}: {}; parallax run cannot run this job", graph.source(), missing);
  }
  // A GPU job's ranks run the ops without a GPU kernel on their hosts (said where this
  // build knows its GPU kernels: a build with CUDA).
  const bool gpu_ranks = std::any_of(layout.ranks().begin(), layout.ranks().end(),
                                     [](const RankPlacement& r) { return r.device == DeviceKind::kGpu; });
  if (GpuSupportBuiltIn() && gpu_ranks) {
    if (const std::string host = DescribeOpsWithoutKernel(OpsWithoutKernel(graph, DeviceType::kCuda),
                                                          DeviceType::kCuda);
        !host.empty()) {
      spdlog::info("{}: {}: the GPU ranks run them on their hosts, copying their values across",
                   graph.source(), host);
    }
  }
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  spdlog::info("loaded {}: {} nodes, {} variables; {}", flags.graph, graph.num_nodes(),
               analysis.variables.size(), layout.Summary());
  PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(graph, analysis, cluster, layout, options));
  if (flags.search || bucket_auto) {
    const SearchInputs inputs{.graph = &graph,
                              .analysis = &analysis,
                              .layout = &layout,
                              .cluster_text = &cluster_text,
                              .pipeline = &pipeline};
    PX_ASSIGN_OR_RETURN(Prober prober, Prober::Make(flags, inputs));
    std::optional<MeasuredSearch> partitions, buckets;
    if (flags.search) {
      PX_ASSIGN_OR_RETURN(partitions,
                          SearchPartitionCount(flags, inputs, options, plan, prober, cluster));
    }
    if (bucket_auto) {
      PX_ASSIGN_OR_RETURN(buckets, SearchBucketLimit(flags, inputs, cluster, plan, prober, options));
    }
    PX_ASSIGN_OR_RETURN(plan, BuildPlan(graph, analysis, cluster, layout, options));
    plan.partition_search = std::move(partitions);
    plan.bucket_search = std::move(buckets);
  }
  for (const std::string& warning : plan.warnings) spdlog::warn("{}", warning);

  PX_ASSIGN_OR_RETURN(const std::string job_dir,
                      WriteTransformedJob(flags.output, flags.force,
                                          JobToWrite{.source = &graph,
                                                     .plan = &plan,
                                                     .pipeline = pipeline,
                                                     .run = TransformRunOptions{.threads = flags.threads},
                                                     .cluster_yaml = cluster_text,
                                                     .launch = MpirunOptionsForThisMachine()}));
  spdlog::info("wrote {} ({} rank graphs)", job_dir, plan.world_size());
  if (flags.stop_after >= 0 || !flags.disabled_passes.empty()) {
    spdlog::warn("{}: passes were skipped (--stop-after/--disable-pass): the rank graphs are a "
                 "debugging aid, not a runnable job",
                 job_dir);
  }

  const std::string out = flags.json ? PlanToJson(plan, job_dir) : RenderReport(plan, job_dir);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::Ok();
}

}  // namespace

Command AddTransformCommand(CLI::App& app) {
  auto flags = std::make_shared<TransformFlags>();
  CLI::App* sub = app.add_subcommand(
      "transform",
      "Rewrite a single-device training graph into one graph per rank (all-reduce for dense "
      "gradients, parameter servers / allgather / densify for sparse ones) and write the job "
      "directory: plan.yaml, rank-N.pb, report.txt, hostfile, launch.sh.");
  sub->add_option("graph", flags->graph, "GraphDef, MetaGraphDef or SavedModel (binary or text)");
  sub->add_option("--cluster", flags->cluster, "cluster spec YAML (docs/cluster.md)");
  sub->add_option("-o,--output", flags->output, "the job directory to write (must not exist)");
  sub->add_option("--strategy", flags->strategy,
                  "auto, allreduce, ps or hybrid; replaces the cluster spec's strategy.default "
                  "and wins over its strategy.dense/sparse (docs/strategy.md)");
  sub->add_option("--sparse", flags->sparse,
                  "ps, allgather or dense: how sparse gradients are synchronised; wins over "
                  "--strategy and the spec's strategy.sparse");
  sub->add_option("--bucket-mb", flags->bucket_mb,
                  "fuse dense gradients into all-reduce buckets of up to this many MiB, in "
                  "backprop order (default 25, as PyTorch DDP; 0: one all-reduce per gradient; "
                  "auto: the fastest limit measured by short runs of the job, as --search)");
  sub->add_option("--allreduce", flags->allreduce,
                  "auto, flat or hierarchical: how all-reduces cross hosts (hierarchical: "
                  "within each host, among hosts, within each host again); auto: the cost "
                  "model's choice, hierarchical when the job spans hosts of several ranks and "
                  "the host links are the bottleneck (docs/strategy.md)");
  sub->add_flag("--search", flags->search,
                "measure the partition count of the parameter-server variables: short runs "
                "of the job (through parallax launch) with each candidate count, the fastest "
                "kept (docs/transform.md)");
  sub->add_option("--search-budget", flags->search_budget_s,
                  "seconds each measured search's probes may take (default 300)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--search-steps", flags->search_steps,
                  "steps each probe trains; the first third (at least 2) are not timed "
                  "(default 30)")
      ->check(CLI::Range(4, 1000000));
  sub->add_option("--search-launch", flags->search_launch,
                  "words for each probe's `parallax launch`: hosts, feeds, run flags, and "
                  "after -- the launcher's (default: the plan's hosts, --synthetic data)");
  sub->add_flag("--json", flags->json, "print the plan as JSON (docs/transform.md) instead of the report");
  sub->add_flag("--strict", flags->strict,
                "fail (exit 2) on any warning, and on ops without a CPU kernel");
  sub->add_flag("--force", flags->force, "replace the output directory if it exists");
  sub->add_flag("--print-passes", flags->print_passes, "list the passes in order and exit");
  sub->add_option("--disable-pass", flags->disabled_passes, "skip this pass (repeatable)");
  sub->add_option("--dump-after", flags->dump_after,
                  "write the graph as text after this pass (<dump-dir>/<graph>.after-<pass>.pbtxt)");
  sub->add_option("--dump-dir", flags->dump_dir, "where --dump-after writes")->default_str(".");
  sub->add_option("--stop-after", flags->stop_after, "run only the first N passes (bisecting)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--threads", flags->threads, "ranks rewritten in parallel (0: one per core)")
      ->check(CLI::NonNegativeNumber)
      ->default_str("0");
  return Command{sub, [flags]() { return RunTransform(*flags); }};
}

}  // namespace parallax::cli
