// Benchmark: `parallax transform` at scale, against loading and saving its output.
//
// Two cases, each the whole command as `parallax transform` runs it (read, fingerprint,
// parse, verify, analyse, plan, rewrite every rank, write the job directory) against
// the baseline of loading and saving the same per-rank graphs alone (LoadGraph +
// SerializeGraphDef + a plain file write per rank, as the job writer writes them), both
// on the same number of threads:
//   model   the largest zoo model (by node count), exported by lib/models
//           (or --graph) — for 1,024 ranks (128 hosts x 8 GPUs);
//   large   a synthetic ~1,000,000-node training graph (bench/training_graph_generator.h)
//           for 8 ranks (1 host x 8 GPUs).
// Target: transform <= 2x the baseline. Also printed: the rewrite alone (no file I/O),
// and the process's peak RSS.
//
// Output lines follow scripts/bench.sh: `transform.<case>.<metric>: <value> <unit>
// (<note>)`, with a `target:` line after each ratio held to a target.
//
// Usage: transform_bench [--graph PATH] [--nodes N] [--runs R] [--threads T]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/training_graph_generator.h"
#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/base/status.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/models/zoo.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/plan_io.h"
#include "lib/transform/report.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Options {
  std::string graph;       // the model case's graph; "" = the largest zoo model
  int64_t nodes = 1000000;
  int runs = 2;
  int threads = 0;         // 0 = every core
};

// `hosts` hosts of `per_host` GPUs.
StatusOr<ClusterSpec> GpuCluster(int hosts, int per_host) {
  std::string yaml = "hosts:\n";
  std::string gpus;
  for (int g = 0; g < per_host; ++g) gpus += (g ? ", " : "") + std::to_string(g);
  for (int h = 0; h < hosts; ++h) {
    yaml += "  - name: node" + std::to_string(h) + "\n    gpus: [" + gpus + "]\n";
  }
  yaml += "network:\n  bandwidth_gbps: 100\n";
  return ParseClusterSpec(yaml, "bench-cluster.yaml");
}

int Threads(const Options& options, int ranks) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::clamp(options.threads > 0 ? options.threads : hardware, 1, ranks);
}

struct TransformTimes {
  double total = 0, load = 0, plan = 0, rewrite_and_write = 0, rewrite_only = 0;
  int64_t nodes = 0, rank0_nodes = 0;
};

// What `parallax transform GRAPH --cluster C -o DIR` does (cmd/parallax/transform.cc).
StatusOr<TransformTimes> RunTransform(const std::string& path, const ClusterSpec& cluster,
                                      const std::string& dir, int threads) {
  TransformTimes times;
  const auto start = Clock::now();
  PX_ASSIGN_OR_RETURN(RankLayout layout, LayoutRanks(cluster));
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, kMaxGraphFileBytes));
  TransformOptions options;
  options.source_fingerprint = Fnv1a64Hex(bytes);
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(std::move(bytes), path));
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  times.load = SecondsSince(start);
  times.nodes = graph.num_nodes();
  auto mark = Clock::now();
  PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(graph, analysis, cluster, layout, options));
  times.plan = SecondsSince(mark);
  mark = Clock::now();
  PX_ASSIGN_OR_RETURN(std::unique_ptr<JobWriter> writer, JobWriter::Begin(dir, /*force=*/true));
  std::atomic<int64_t> rank0_nodes{0};
  PX_RETURN_IF_ERROR(TransformEach(graph, plan, PipelineOptions{}, TransformRunOptions{threads},
                                   [&](int rank, Graph&& rank_graph) {
                                     if (rank == 0) rank0_nodes = rank_graph.num_nodes();
                                     return writer->WriteRankGraph(rank, rank_graph);
                                   }));
  times.rewrite_and_write = SecondsSince(mark);
  PX_RETURN_IF_ERROR(writer->WriteJobFiles(plan, MpirunOptions{}));
  PX_RETURN_IF_ERROR(writer->Commit());
  times.total = SecondsSince(start);
  times.rank0_nodes = rank0_nodes;

  // The rewrite alone, every rank graph dropped as soon as it is made.
  mark = Clock::now();
  PX_RETURN_IF_ERROR(TransformEach(graph, plan, PipelineOptions{}, TransformRunOptions{threads},
                                   [](int, Graph&&) { return Status::Ok(); }));
  times.rewrite_only = SecondsSince(mark);
  return times;
}

// The baseline: load every rank graph of `job` and save it to `out`, on `threads` threads.
StatusOr<double> LoadAndSave(const std::string& job, const std::string& out, int ranks, int threads) {
  fs::remove_all(out);
  fs::create_directories(out);
  const auto start = Clock::now();
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  Status error;
  std::mutex mutex;
  auto work = [&]() {
    for (int r = next++; r < ranks && !failed; r = next++) {
      StatusOr<Graph> graph = LoadGraph(job + "/" + RankGraphFile(r));
      Status status = graph.status();
      if (status.ok()) {
        const std::string bytes = SerializeGraphDef(*graph);
        std::ofstream file(out + "/" + RankGraphFile(r), std::ios::binary);
        file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        file.close();
        if (!file) status = InternalError("{}: write failed", out);
      }
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        error = status;
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  PX_RETURN_IF_ERROR(error);
  return SecondsSince(start);
}

Status RunCase(const std::string& name, const std::string& path, int hosts, int per_host,
               const std::string& tmp, const Options& options) {
  PX_ASSIGN_OR_RETURN(ClusterSpec cluster, GpuCluster(hosts, per_host));
  const int ranks = hosts * per_host;
  const int threads = Threads(options, ranks);
  const std::string job = tmp + "/" + name + "-job";
  TransformTimes best;
  best.total = std::numeric_limits<double>::infinity();
  double baseline = std::numeric_limits<double>::infinity();
  for (int run = 0; run < options.runs; ++run) {
    PX_ASSIGN_OR_RETURN(TransformTimes times, RunTransform(path, cluster, job, threads));
    if (times.total < best.total) best = times;
    PX_ASSIGN_OR_RETURN(double seconds, LoadAndSave(job, tmp + "/" + name + "-baseline", ranks, threads));
    baseline = std::min(baseline, seconds);
  }
  uint64_t job_bytes = 0;
  for (const auto& entry : fs::directory_iterator(job)) job_bytes += entry.file_size();
  const std::string p = "transform." + name;
  std::printf("%s.input: %lld nodes (%s, %d ranks on %d hosts, %d threads)\n", p.c_str(),
              static_cast<long long>(best.nodes), fs::path(path).filename().c_str(), ranks, hosts,
              threads);
  std::printf("%s.job_size: %.1f MiB (%lld nodes in rank 0's graph)\n", p.c_str(),
              static_cast<double>(job_bytes) / (1 << 20), static_cast<long long>(best.rank0_nodes));
  std::printf("%s.load_save_baseline: %.3f s (baseline)\n", p.c_str(), baseline);
  std::printf("%s.transform: %.3f s (%.2fx load + save)\n", p.c_str(), best.total, best.total / baseline);
  std::printf("  target: <= 2x load + save: %s\n", best.total <= 2 * baseline ? "target met" : "TARGET MISSED");
  std::printf("%s.phase_load_verify_analyse: %.3f s (%.2fx load + save)\n", p.c_str(), best.load,
              best.load / baseline);
  std::printf("%s.phase_plan: %.3f s (%.2fx load + save)\n", p.c_str(), best.plan, best.plan / baseline);
  std::printf("%s.phase_rewrite_and_write_ranks: %.3f s (%.2fx load + save)\n", p.c_str(),
              best.rewrite_and_write, best.rewrite_and_write / baseline);
  std::printf("%s.rewrite_only: %.3f s (%.2fx load + save; no file I/O)\n", p.c_str(),
              best.rewrite_only, best.rewrite_only / baseline);
  fs::remove_all(job);
  fs::remove_all(tmp + "/" + name + "-baseline");
  return Status::Ok();
}

// The zoo model with the most nodes, written to `dir`; its path.
StatusOr<std::string> LargestZooModel(const std::string& dir) {
  std::string best_path;
  int best_nodes = -1;
  for (const models::ModelSpec& spec : models::ModelSpecs()) {
    PX_ASSIGN_OR_RETURN(models::Model model, models::BuildModel(spec.name));
    if (model.graph.num_nodes() <= best_nodes) continue;
    best_nodes = model.graph.num_nodes();
    best_path = dir + "/zoo-" + spec.name + ".pb";
    PX_RETURN_IF_ERROR(SaveGraph(model.graph, best_path, GraphFileFormat::kBinary));
  }
  return best_path;
}

Status Run(const Options& options) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/transform_bench.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return InternalError("mkdtemp {} failed", pattern);
  const std::string tmp = pattern;
  std::string model = options.graph;
  if (model.empty()) {
    PX_ASSIGN_OR_RETURN(model, LargestZooModel(tmp));
  }

  Status status = RunCase("model", model, 128, 8, tmp, options);
  if (status.ok()) {
    const std::string large = tmp + "/train_graph.pb";
    {
      bench::TrainingGraphGenerator generator(options.nodes, 20240601);
      std::string bytes;
      if (!generator.Generate().SerializeToString(&bytes)) {
        status = InternalError("serializing the generated graph failed");
      } else {
        status = WriteFileAtomically(large, bytes);
      }
    }
    if (status.ok()) status = RunCase("large", large, 1, 8, tmp, options);
  }
  struct rusage usage = {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("transform.peak_rss: %.0f MiB (whole process, both cases)\n",
              static_cast<double>(usage.ru_maxrss) / 1024);
  fs::remove_all(tmp);
  return status;
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) {
  parallax::Options options;
  CLI::App app{"Times parallax transform (1,024 ranks of a model graph; 8 ranks of a 1M-node "
               "graph) against loading and saving the rank graphs."};
  app.add_option("--graph", options.graph, "the model case's graph (default: the largest zoo model)");
  app.add_option("--nodes", options.nodes, "nodes in the large generated graph")
      ->check(CLI::Range(int64_t{50}, int64_t{20000000}));
  app.add_option("--runs", options.runs, "runs per case; the best time is reported")
      ->check(CLI::Range(1, 100));
  app.add_option("--threads", options.threads, "threads for both sides (0: every core)");
  CLI11_PARSE(app, argc, argv);
  parallax::Status status = parallax::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "transform_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
