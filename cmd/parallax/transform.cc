// `parallax transform GRAPH --cluster C.yaml -o DIR`: the single-device training graph
// rewritten into one graph per rank, with the plan, a report, a hostfile, launch.sh and
// the graph and cluster spec the plan was made from
// (docs/transform.md). Load -> verify -> analyse -> plan -> passes -> verify -> write;
// the output directory appears only when complete. Ops without a CPU kernel (what
// `parallax run` would stop at, as `parallax inspect` lists them) are a warning, and
// under --strict an error.
#include <cstdio>
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
#include "lib/transform/job_writer.h"
#include "lib/transform/pipelines.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/report.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"
#include "lib/transform/write_job.h"

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
  double bucket_mb = static_cast<double>(kDefaultBucketBytes) / (1 << 20);
};

Status RunTransform(const TransformFlags& flags) {
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
  options.bucket_bytes = static_cast<int64_t>(flags.bucket_mb * (1 << 20));

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
  if (const std::string missing = DescribeOpsWithoutCpuKernel(OpsWithoutCpuKernel(graph));
      !missing.empty()) {
    if (flags.strict) return InvalidArgumentError("{}: --strict: {}", graph.source(), missing);
    spdlog::warn("{}: {}; parallax run cannot run this job", graph.source(), missing);
  }
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  spdlog::info("loaded {}: {} nodes, {} variables; {}", flags.graph, graph.num_nodes(),
               analysis.variables.size(), layout.Summary());
  PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(graph, analysis, cluster, layout, options));
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
                  "backprop order (default 25, as PyTorch DDP; 0: one all-reduce per gradient)")
      ->check(CLI::NonNegativeNumber);
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
