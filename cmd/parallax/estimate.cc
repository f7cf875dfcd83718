// `parallax estimate GRAPH --cluster C.yaml`: what a training step of GRAPH would take on
// a cluster one may not have — the step time and its parts, throughput, bytes per rank
// and per host link, scaling against one rank, the bottleneck — from a profile of the
// graph's nodes on one device (lib/estimate/op_profile.h) and the plan's collectives
// priced by the cluster's network (lib/estimate/step_estimate.h).
//
// The profile: --profile FILE, else the cache ($PARALLAX_CACHE_DIR, else
// $XDG_CACHE_HOME/parallax, else ~/.cache/parallax: profiles/<graph fingerprint>-b<batch>
// -t<threads>-p<ranks per host>.json), else measured now on this machine with the threads
// each rank of the cluster would have here (this machine's cores over the most ranks on
// one host; --threads): `parallax run GRAPH --synthetic --steps K --timeline` for one
// rank per host, else a job of that many ranks on this machine through `parallax launch`
// (MeasureProfile); the steps after the first third averaged, and the memory copy
// bandwidth measured here. docs/estimate.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cmd/parallax/command.h"
#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/base/json_writer.h"
#include "lib/base/machine.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/estimate/device_model.h"
#include "lib/estimate/op_profile.h"
#include "lib/estimate/step_estimate.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/launch/child_process.h"
#include "lib/launch/mpirun.h"
#include "lib/runtime/trace_summary.h"
#include "lib/transform/pipelines.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"
#include "lib/transform/write_job.h"

namespace parallax::cli {
namespace {

struct EstimateFlags {
  std::string graph;
  std::string cluster;
  int64_t batch = 0;  // 0: the graph's
  int threads = 0;    // 0: this machine's cores over the most ranks on one host
  bool overlap = false;
  std::string profile;
  std::string save_profile;
  std::string device;  // a device model file: node times from the profile's work
  int profile_steps = 30;
  std::string strategy;
  std::string sparse;
  std::string allreduce = "auto";
  double bucket_mb = -1;  // < 0: the default
  bool json = false;
};

std::string CacheDir() {
  auto set = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  if (const char* dir = set("PARALLAX_CACHE_DIR")) return dir;
  if (const char* dir = set("XDG_CACHE_HOME")) return std::string(dir) + "/parallax";
  const char* home = set("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/parallax";
}

// The best of a few 64 MiB copies, in bytes per second.
double MeasureCopyBandwidth() {
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<char[]> from(new char[kBytes]), to(new char[kBytes]);
  std::memset(from.get(), 1, kBytes);
  std::memset(to.get(), 0, kBytes);
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.get(), from.get(), kBytes);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds);
  }
  return static_cast<double>(kBytes) / best;
}

// What the profile is measured on: the graph, and for ranks that share a host, the plan
// of a job of that many ranks on one host.
struct ProfileSource {
  const Graph* graph = nullptr;
  const TrainingAnalysis* analysis = nullptr;
  const TransformOptions* options = nullptr;
  std::string fingerprint;
};

// The run's batch: its first line says "batch B".
StatusOr<int64_t> RunBatch(const std::string& log, const std::string& graph) {
  PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(log, int64_t{64} << 20));
  std::smatch match;
  if (!std::regex_search(text, match, std::regex("batch ([0-9]+)"))) {
    return InternalError("profiling {}: the run did not say its batch ({})", graph, log);
  }
  return std::stoll(match[1].str());
}

// Runs the graph here and profiles it (the file comment). One process: `parallax run
// GRAPH`. Several (a host's ranks): the job of that many ranks on this machine, planned
// with the same flags, through `parallax launch`, so the profile holds the nodes the
// transform adds and the ranks' contention for cores and memory; its ranks' times are
// averaged, their collectives left out.
StatusOr<OpProfile> MeasureProfile(const EstimateFlags& flags, const ProfileSource& source,
                                   int threads, int processes) {
  PX_ASSIGN_OR_RETURN(TempDir scratch, TempDir::Make("parallax-estimate"));
  fmt::print(stderr, "parallax: estimate: profiling {} here ({} steps, {} thread{}{})\n",
             flags.graph, flags.profile_steps, threads, threads == 1 ? "" : "s",
             processes > 1 ? fmt::format(", a job of {} ranks", processes) : "");
  const MpirunOptions launch = MpirunOptionsForThisMachine();
  std::vector<std::string> argv = {launch.parallax};
  std::vector<std::string> traces;
  if (processes == 1) {
    argv.insert(argv.end(), {"run", flags.graph, "--timeline", scratch.Sub("trace.json")});
    traces.push_back(scratch.Sub("trace.json"));
  } else {
    const std::string yaml =
        fmt::format("hosts:\n  - name: localhost\n    cpus: {}\n", processes);
    PX_ASSIGN_OR_RETURN(const ClusterSpec cluster, ParseClusterSpec(yaml, "profile cluster"));
    PX_ASSIGN_OR_RETURN(const RankLayout layout, LayoutRanks(cluster));
    PX_ASSIGN_OR_RETURN(const Plan plan, BuildPlan(*source.graph, *source.analysis, cluster,
                                                   layout, *source.options));
    PX_ASSIGN_OR_RETURN(const std::string job,
                        WriteTransformedJob(scratch.Sub("job"), false,
                                            JobToWrite{.source = source.graph,
                                                       .plan = &plan,
                                                       .cluster_yaml = yaml,
                                                       .launch = launch}));
    argv.insert(argv.end(), {"launch", job, "--timeline", scratch.Sub("traces")});
    for (int r = 0; r < processes; ++r) {
      traces.push_back(scratch.Sub(fmt::format("traces/rank-{}.trace.json", r)));
    }
  }
  argv.insert(argv.end(), {"--synthetic", "--steps", std::to_string(flags.profile_steps),
                           "--log-every", std::to_string(flags.profile_steps), "--threads",
                           std::to_string(threads), "--progress", "lines"});
  if (flags.batch > 0) argv.insert(argv.end(), {"--batch", std::to_string(flags.batch)});
  const std::string log = scratch.Sub("run.log");
  PX_ASSIGN_OR_RETURN(pid_t pid, StartChild(argv, ChildIo{.output_path = log, .stdin_null = true}));
  PX_ASSIGN_OR_RETURN(int status, WaitChild(pid, argv[1]));
  if (status != 0) {
    return UnavailableError("profiling {}: parallax {} exited {}: {}", flags.graph, argv[1], status,
                            LastLine(log));
  }
  OpProfile profile;
  const double n = static_cast<double>(traces.size());
  for (const std::string& path : traces) {
    PX_ASSIGN_OR_RETURN(const Trace trace, ReadTrace(path));
    PX_ASSIGN_OR_RETURN(const OpProfile one,
                        ProfileFromTrace(trace, std::max(2, flags.profile_steps / 3)));
    profile.steps += one.steps;
    profile.step_us += one.step_us / n;
    profile.overhead_us += one.overhead_us / n;
    for (const auto& [name, us] : one.node_us) profile.node_us[name] += us / n;
    for (const auto& [name, work] : one.node_work) {
      OpWorkPerStep& mean = profile.node_work[name];
      mean.flops += work.flops / n;
      mean.memory_bytes += work.memory_bytes / n;
      mean.runs += work.runs / n;
    }
  }
  PX_ASSIGN_OR_RETURN(profile.batch, RunBatch(log, flags.graph));
  profile.device = fmt::format("{} ({} core{})", MachineCpuModel(), MachineCores(),
                               MachineCores() == 1 ? "" : "s");
  profile.graph_fingerprint = source.fingerprint;
  profile.threads = threads;
  profile.processes = processes;
  profile.copy_bytes_per_s = MeasureCopyBandwidth();
  return profile;
}

// The profile: --profile, the cache, or measured now (and cached).
StatusOr<OpProfile> GetProfile(const EstimateFlags& flags, const ProfileSource& source,
                               int threads, int processes, std::string* where) {
  const std::string& fingerprint = source.fingerprint;
  if (!flags.profile.empty()) {
    PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(flags.profile, int64_t{256} << 20));
    PX_ASSIGN_OR_RETURN(OpProfile profile, ParseOpProfile(text, flags.profile));
    if (flags.batch > 0 && profile.batch != flags.batch) {
      return InvalidArgumentError("--profile {}: measured at batch {}, not --batch {}", flags.profile,
                                  profile.batch, flags.batch);
    }
    if (profile.graph_fingerprint != fingerprint) {
      return InvalidArgumentError("--profile {}: measured on another graph file (fingerprint {}; "
                                  "{} has {})",
                                  flags.profile, profile.graph_fingerprint, flags.graph,
                                  fingerprint);
    }
    *where = flags.profile;
    return profile;
  }
  const std::string cache =
      fmt::format("{}/profiles/{}-b{}-t{}-p{}.json", CacheDir(), fingerprint,
                  flags.batch > 0 ? std::to_string(flags.batch) : "graph", threads, processes);
  if (std::filesystem::exists(cache)) {
    StatusOr<std::string> text = ReadFileToString(cache, int64_t{256} << 20);
    StatusOr<OpProfile> profile =
        text.ok() ? ParseOpProfile(*text, cache) : StatusOr<OpProfile>(text.status());
    if (profile.ok() && !flags.device.empty() && profile->node_work.empty()) {
      spdlog::warn("{}: the cached profile records no work per node (an older parallax wrote "
                   "it); measuring the profile again",
                   cache);
    } else if (profile.ok()) {
      *where = cache + " (cached)";
      return profile;
    } else {
      spdlog::warn("{}; measuring the profile again", profile.status().message());
    }
  }
  PX_ASSIGN_OR_RETURN(OpProfile profile, MeasureProfile(flags, source, threads, processes));
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
  if (const Status saved = WriteFileAtomically(cache, OpProfileToJson(profile)); !saved.ok()) {
    spdlog::warn("the profile is not cached: {}", saved.message());
    *where = "measured now";
  } else {
    *where = cache + " (measured now)";
  }
  return profile;
}

std::string Ms(double seconds) { return fmt::format("{:.2f} ms", seconds * 1e3); }

Status RunEstimate(const EstimateFlags& flags) {
  if (flags.graph.empty()) return InvalidArgumentError("estimate: GRAPH is required");
  if (flags.cluster.empty()) return InvalidArgumentError("estimate: --cluster is required");
  TransformOptions options;
  PX_ASSIGN_OR_RETURN(const StrategyFlags strategy, ParseStrategyFlags(flags.strategy, flags.sparse));
  options.strategy = strategy.preset;
  options.sparse = strategy.sparse;
  PX_ASSIGN_OR_RETURN(options.allreduce_algorithm, ParseAllReduceFlag(flags.allreduce));
  if (flags.bucket_mb >= 0) options.bucket_bytes = static_cast<int64_t>(flags.bucket_mb * (1 << 20));

  PX_ASSIGN_OR_RETURN(const std::string cluster_text,
                      ReadFileToString(flags.cluster, kMaxClusterSpecBytes));
  PX_ASSIGN_OR_RETURN(const ClusterSpec cluster, ParseClusterSpec(cluster_text, flags.cluster));
  PX_ASSIGN_OR_RETURN(const RankLayout layout, LayoutRanks(cluster));
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(flags.graph, kMaxGraphFileBytes));
  const std::string fingerprint = Fnv1a64Hex(bytes);
  options.source_fingerprint = fingerprint;
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(std::move(bytes), flags.graph));
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  PX_RETURN_IF_ERROR(StripHorovodAndReport(graph));
  PX_ASSIGN_OR_RETURN(const TrainingAnalysis analysis, AnalyzeTraining(graph));
  PX_ASSIGN_OR_RETURN(const Plan plan, BuildPlan(graph, analysis, cluster, layout, options));
  NetworkModel network = NetworkModel::From(cluster.network, layout);

  const int threads =
      flags.threads > 0 ? flags.threads : std::max(1, MachineCores() / network.max_ranks_per_host);
  // A host's ranks share its cores and memory: profiled side by side (at most as many as
  // this machine has cores).
  const int processes = std::clamp(network.max_ranks_per_host, 1, MachineCores());
  std::optional<DeviceModel> device;
  if (!flags.device.empty()) {
    PX_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(flags.device, int64_t{1} << 20));
    PX_ASSIGN_OR_RETURN(device, ParseDeviceModel(text, flags.device));
  }
  std::string where;
  PX_ASSIGN_OR_RETURN(const OpProfile measured,
                      GetProfile(flags,
                                 ProfileSource{.graph = &graph,
                                               .analysis = &analysis,
                                               .options = &options,
                                               .fingerprint = fingerprint},
                                 threads, processes, &where));
  OpProfile profile = measured;
  if (device.has_value()) {
    PX_ASSIGN_OR_RETURN(profile, ProfileOnDevice(measured, where, *device));
  }
  // CPU ranks of one host pass data through shared memory: each byte is copied in and
  // out, at half the copy bandwidth when that is slower than the spec's link.
  const bool cpu_ranks = std::all_of(layout.ranks().begin(), layout.ranks().end(),
                                     [](const RankPlacement& r) { return r.device == DeviceKind::kCpu; });
  if (cpu_ranks && profile.copy_bytes_per_s > 0) {
    network.intra_host_bytes_per_s =
        std::min(network.intra_host_bytes_per_s, profile.copy_bytes_per_s / 2);
  }
  if (!flags.save_profile.empty()) {
    PX_RETURN_IF_ERROR(WriteFileAtomically(flags.save_profile, OpProfileToJson(measured)));
  }

  // Rank 0's graph stands for every rank's (step_estimate.h).
  PX_ASSIGN_OR_RETURN(const TransformResult ranks,
                      Transform(graph, plan, PipelineOptions{}, TransformRunOptions{.rank_limit = 1}));
  PX_ASSIGN_OR_RETURN(const StepEstimate step,
                      EstimateStep(StepInputs{&ranks.ranks[0], &plan, &profile, network, flags.overlap}));

  // Bytes per step: what each rank sends (the plan's figures), and what leaves each host.
  const int n = network.world_size, local = network.max_ranks_per_host;
  int64_t sent_per_rank = 0, point_to_point = 0;
  for (const VariablePlan& v : plan.variables) {
    sent_per_rank += v.bytes_sent_per_rank_per_step;
    if (v.method == SyncMethod::kParameterServer || v.method == SyncMethod::kAllGather) {
      point_to_point += v.bytes_sent_per_rank_per_step;
    }
  }
  const int64_t off_host =
      n > 1 && network.num_hosts > 1
          ? plan.allreduce.off_host_bytes_per_step +
                static_cast<int64_t>(static_cast<double>(point_to_point) * local * (n - local) / (n - 1))
          : 0;
  const double one_rank = step.compute_seconds + step.overhead_seconds;
  const double throughput = static_cast<double>(n * profile.batch) / step.step_seconds;
  const double efficiency = one_rank / step.step_seconds;

  std::string out;
  if (flags.json) {
    JsonWriter json;
    json.BeginObject();
    json.Field("graph", flags.graph).Field("cluster", flags.cluster);
    json.Field("ranks", n).Field("hosts", network.num_hosts);
    json.Field("batch_per_rank", profile.batch).Field("threads_per_rank", profile.threads);
    json.Field("profile", where).Field("device", profile.device);
    json.Field("device_file", flags.device);
    json.Field("overlap", flags.overlap);
    json.Key("step_seconds").Double(step.step_seconds);
    json.Key("compute_seconds").Double(step.compute_seconds);
    json.Key("overhead_seconds").Double(step.overhead_seconds);
    json.Key("communication_seconds").Double(step.communication_seconds);
    json.Key("exposed_communication_seconds").Double(step.exposed_communication_seconds);
    json.Key("one_rank_step_seconds").Double(one_rank);
    json.Key("examples_per_second").Double(throughput);
    json.Key("scaling_efficiency").Double(efficiency);
    json.Field("bytes_sent_per_rank_per_step", sent_per_rank);
    json.Field("off_host_bytes_per_host_per_step", off_host);
    json.Field("allreduce", plan.allreduce.algorithm);
    json.Field("bottleneck", step.bottleneck);
    json.Field("nodes", step.nodes).Field("profiled_nodes", step.profiled_nodes);
    json.Key("collectives").BeginArray();
    for (const CollectiveEstimate& c : step.collectives) {
      json.BeginObject().Field("node", c.node).Field("kind", c.kind).Field("bytes", c.bytes);
      json.Key("seconds").Double(c.seconds);
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    out = json.str() + "\n";
  } else {
    const std::string per_rank =
        device.has_value()
            ? fmt::format("one {} per rank", device->name)
            : fmt::format("{} thread{} per rank", profile.threads, profile.threads == 1 ? "" : "s");
    out += fmt::format("estimate: {} on {} rank{} ({} host{}, up to {} per host), batch {} per "
                       "rank, {}{}\n",
                       flags.graph, n, n == 1 ? "" : "s", network.num_hosts,
                       network.num_hosts == 1 ? "" : "s", local, profile.batch, per_rank,
                       flags.overlap ? ", --overlap" : "");
    if (device.has_value()) {
      out += fmt::format("profile: {} ({}): each node's work, measured in {}, at the device's "
                         "figures; {} of the step's {} nodes profiled\n",
                         device->name, flags.device, where, step.profiled_nodes, step.nodes);
    } else {
      out += fmt::format("profile: {}: {}; {} of the step's {} nodes profiled\n", profile.device,
                         where, step.profiled_nodes, step.nodes);
    }
    out += fmt::format("  step          {}  (compute {}, overhead {}, communication {} of which "
                       "exposed {})\n",
                       Ms(step.step_seconds), Ms(step.compute_seconds), Ms(step.overhead_seconds),
                       Ms(step.communication_seconds), Ms(step.exposed_communication_seconds));
    out += fmt::format("  throughput    {:.0f} examples/s ({} x {})\n", throughput, n, profile.batch);
    out += fmt::format("  scaling       {:.2f} of {} x one rank ({} per step alone)\n", efficiency, n,
                       Ms(one_rank));
    out += fmt::format("  bytes         {} sent per rank per step; {} leave each host per step "
                       "(all-reduce {})\n",
                       HumanBytes(static_cast<uint64_t>(sent_per_rank)),
                       HumanBytes(static_cast<uint64_t>(off_host)), plan.allreduce.algorithm);
    out += fmt::format("  bottleneck    {}\n", step.bottleneck);
    if (!step.collectives.empty()) {
      out += "collectives per step, in the order they run:\n";
      for (const CollectiveEstimate& c : step.collectives) {
        out += fmt::format("  {:<10} {:>10}  {:>9}  {}\n", c.kind,
                           HumanBytes(static_cast<uint64_t>(c.bytes)), Ms(c.seconds), c.node);
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return Status::Ok();
}

}  // namespace

Command AddEstimateCommand(CLI::App& app) {
  auto flags = std::make_shared<EstimateFlags>();
  CLI::App* sub = app.add_subcommand(
      "estimate",
      "Predict a training step of GRAPH on a cluster (docs/estimate.md): step time, "
      "throughput, bytes per rank and per host link, scaling against one rank and the "
      "bottleneck, from a profile of the graph's nodes (measured here on first use and "
      "cached) and the cluster spec's network.");
  sub->add_option("graph", flags->graph, "GraphDef, MetaGraphDef or SavedModel (binary or text)");
  sub->add_option("--cluster", flags->cluster, "cluster spec YAML (docs/cluster.md)");
  sub->add_option("--batch", flags->batch, "examples per rank and step (default: the graph's)")
      ->check(AtLeast(1));
  sub->add_option("--threads", flags->threads,
                  "kernel threads per rank for the profile (default: this machine's cores over "
                  "the most ranks on one host)")
      ->check(AtLeast(1));
  sub->add_flag("--overlap", flags->overlap,
                "schedule as run --overlap: collectives on a thread of their own");
  sub->add_option("--profile", flags->profile, "a profile file to use instead of measuring here");
  sub->add_option("--save-profile", flags->save_profile,
                  "also write the profile used (as measured) to this file");
  sub->add_option("--device", flags->device,
                  "a device model (YAML: peak FLOP/s, memory bandwidth, docs/estimate.md): each "
                  "node takes the time its measured work takes there");
  sub->add_option("--profile-steps", flags->profile_steps,
                  "steps of the profiling run; the first third are not timed (default 30)")
      ->check(AtLeast(4));
  sub->add_option("--strategy", flags->strategy, "as transform's --strategy");
  sub->add_option("--sparse", flags->sparse, "as transform's --sparse");
  sub->add_option("--allreduce", flags->allreduce, "as transform's --allreduce");
  sub->add_option("--bucket-mb", flags->bucket_mb, "as transform's --bucket-mb (a size)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", flags->json, "print the estimate as JSON (docs/estimate.md)");
  return Command{sub, [flags]() { return RunEstimate(*flags); }};
}

}  // namespace parallax::cli
