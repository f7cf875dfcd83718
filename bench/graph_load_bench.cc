// Benchmark: loading a ~1,000,000-node TensorFlow training graph.
//
// Generates a deterministic, TF1-style training graph (repeated residual MLP layers:
// VariableV2 + read/Assign + initializers, MatMul/BiasAdd/Relu/Add forward; the
// `gradients/` scope TensorFlow's tf.gradients writes; GradientDescent updates) as a
// binary GraphDef in a temporary directory, then times, each in its own forked child
// process so that peak memory does not mix between variants (best of --runs):
//   parse_protobuf        tensorflow::GraphDef::ParseFromString of the file bytes, the
//                         bytes already in memory (the baseline);
//   load                  parallax::LoadGraph(path), reading the file included;
//   load_verify           + VerifyGraph;
//   load_verify_analyse   + AnalyzeTraining.
// Targets (from the issue): the full pipeline in at most 2x the parse time, and peak
// memory of at most 3x the file size, both for load_verify_analyse.
//
// Output lines follow scripts/bench.sh: `graph_load.<metric>: <value> <unit> (<note>)`,
// with an indented `target: ...` line after each held to a target.
//
// Usage: graph_load_bench [--nodes N] [--runs R] [--seed S] [--keep DIR] [--file PATH]
//        graph_load_bench --file PATH --profile   (one in-process run of the full
//        pipeline, no fork: for `heaptrack` or `perf record`)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/training_graph_generator.h"
#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/analysis/training_analysis.h"
#include "lib/graph/graph.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "protos/graph.pb.h"

namespace parallax {
namespace {

using tensorflow::AttrValue;
using tensorflow::DataType;
using tensorflow::GraphDef;
using tensorflow::NodeDef;

constexpr double kMiB = 1024.0 * 1024.0;

using bench::TrainingGraphGenerator;

// ---------------------------------------------------------------------------------
// Child processes: each measurement runs in a fork so its peak RSS is its own.
// ---------------------------------------------------------------------------------

// What a child reports back through a pipe.
struct ChildReport {
  bool ok = false;
  double seconds = 0;
  int64_t nodes = 0;
  uint64_t ir_bytes = 0;  // Graph::ApproximateBytes(), 0 where not applicable
  // What AnalyzeTraining found (a check that the generated graph looks like training).
  int64_t variables = 0, updates = 0, train_ops = 0, problems = 0;
  char error[512] = {};
};

struct ChildResult {
  ChildReport report;
  uint64_t peak_rss_bytes = 0;
};

// Runs `work` in a child process; returns its report and peak RSS (from wait4).
StatusOr<ChildResult> RunInChild(const std::function<ChildReport()>& work) {
  int fds[2];
  if (pipe(fds) != 0) return InternalError("pipe: {}", std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return InternalError("fork: {}", std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    ChildReport report = work();
    const char* p = reinterpret_cast<const char*>(&report);
    size_t left = sizeof(report);
    while (left > 0) {
      ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    std::fflush(stdout);
    _exit(0);  // skip destructors: a tool that is done exits without freeing
  }
  close(fds[1]);
  ChildResult result;
  char* p = reinterpret_cast<char*>(&result.report);
  size_t got = 0;
  while (got < sizeof(ChildReport)) {
    ssize_t n = read(fds[0], p + got, sizeof(ChildReport) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  struct rusage usage = {};
  if (wait4(pid, &status, 0, &usage) < 0) return InternalError("wait4: {}", std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != sizeof(ChildReport)) {
    return InternalError("child process died (status {:#x})", status);
  }
  result.report.error[sizeof(result.report.error) - 1] = '\0';
  if (!result.report.ok) return InternalError("{}", result.report.error);
  result.peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  return result;
}

ChildReport Fail(const Status& status) {
  ChildReport report;
  std::snprintf(report.error, sizeof(report.error), "%s", status.ToString().c_str());
  return report;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The variants measured; each runs in a fresh child.
ChildReport ParseProtobuf(const std::string& path) {
  StatusOr<std::string> bytes = ReadFileToString(path, kMaxGraphFileBytes);
  if (!bytes.ok()) return Fail(bytes.status());
  auto* graph = new GraphDef();  // leaked on purpose: freed by _exit, not timed
  auto start = std::chrono::steady_clock::now();
  bool ok = graph->ParseFromString(*bytes);
  ChildReport report;
  report.seconds = SecondsSince(start);
  if (!ok) return Fail(InvalidArgumentError("{}: ParseFromString failed", path));
  report.ok = true;
  report.nodes = graph->node_size();
  return report;
}

enum class Stage { kLoad, kVerify, kAnalyse };

ChildReport LoadPipeline(const std::string& path, Stage last) {
  auto start = std::chrono::steady_clock::now();
  StatusOr<Graph> graph = LoadGraph(path);
  if (!graph.ok()) return Fail(graph.status());
  if (last >= Stage::kVerify) {
    Status verified = VerifyGraph(*graph);
    if (!verified.ok()) return Fail(verified);
  }
  StatusOr<TrainingAnalysis> analysis = TrainingAnalysis();
  if (last >= Stage::kAnalyse) {
    analysis = AnalyzeTraining(*graph);
    if (!analysis.ok()) return Fail(analysis.status());
  }
  ChildReport report;
  report.seconds = SecondsSince(start);
  report.variables = static_cast<int64_t>(analysis->variables.size());
  report.updates = static_cast<int64_t>(analysis->updates.size());
  report.train_ops = static_cast<int64_t>(analysis->train_ops.size());
  report.problems = static_cast<int64_t>(analysis->problems.size());
  (void)new TrainingAnalysis(std::move(*analysis));  // leaked on purpose, as below
  report.ok = true;
  report.nodes = graph->num_nodes();
  report.ir_bytes = graph->ApproximateBytes();
  (void)new Graph(std::move(*graph));  // leaked on purpose: freed by _exit, not timed
  return report;
}

// Best (lowest) time of `runs` children; peak RSS is the highest of them.
StatusOr<ChildResult> BestOf(int runs, const std::function<ChildReport()>& work) {
  ChildResult best;
  best.report.seconds = std::numeric_limits<double>::infinity();
  for (int r = 0; r < runs; ++r) {
    PX_ASSIGN_OR_RETURN(ChildResult result, RunInChild(work));
    uint64_t peak = std::max(best.peak_rss_bytes, result.peak_rss_bytes);
    if (result.report.seconds < best.report.seconds) best = result;
    best.peak_rss_bytes = peak;
  }
  return best;
}

void PrintTarget(const std::string& what, bool met) {
  std::printf("  target: %s: %s\n", what.c_str(), met ? "target met" : "TARGET MISSED");
}

struct Options {
  int64_t nodes = 1000000;
  int runs = 3;
  uint64_t seed = 20240601;
  std::string keep_dir;   // write the graph here and keep it
  std::string file;       // measure this GraphDef instead of generating one
  bool profile = false;   // run the full pipeline once in this process and stop
};

// Generates the graph file in a child (so the parent stays small for later forks).
Status GenerateFile(const Options& options, const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  PX_ASSIGN_OR_RETURN(ChildResult result, RunInChild([&]() -> ChildReport {
    TrainingGraphGenerator generator(options.nodes, options.seed);
    GraphDef graph = generator.Generate();
    size_t name_bytes = 0, min_name = SIZE_MAX, max_name = 0;
    for (const NodeDef& node : graph.node()) {
      name_bytes += node.name().size();
      min_name = std::min(min_name, node.name().size());
      max_name = std::max(max_name, node.name().size());
    }
    std::string bytes;
    if (!graph.SerializeToString(&bytes)) {
      return Fail(InternalError("serializing the generated GraphDef failed"));
    }
    Status written = WriteFileAtomically(path, bytes);
    if (!written.ok()) return Fail(written);
    std::printf("generated %d nodes (%" PRId64 " layers), names %zu-%zu chars (mean %.1f)\n",
                graph.node_size(), generator.layers(), min_name, max_name,
                static_cast<double>(name_bytes) / graph.node_size());
    ChildReport report;
    report.ok = true;
    report.nodes = graph.node_size();
    return report;
  }));
  std::printf("generation took %.1f s, peak %.0f MiB\n", SecondsSince(start),
              static_cast<double>(result.peak_rss_bytes) / kMiB);
  return Status::Ok();
}

Status Run(const Options& options) {
  std::string dir;
  std::string path = options.file;
  if (path.empty()) {
    if (!options.keep_dir.empty()) {
      dir = options.keep_dir;
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) return InvalidArgumentError("--keep {}: {}", dir, ec.message());
    } else {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/graph_load_bench.XXXXXX";
      if (mkdtemp(pattern.data()) == nullptr) {
        return InternalError("mkdtemp {}: {}", pattern, std::strerror(errno));
      }
      dir = pattern;
    }
    path = dir + "/train_graph.pb";
    PX_RETURN_IF_ERROR(GenerateFile(options, path));
  }
  struct stat st = {};
  if (stat(path.c_str(), &st) != 0) return NotFoundError("{}: {}", path, std::strerror(errno));
  const double file_bytes = static_cast<double>(st.st_size);
  if (options.profile) {
    ChildReport report = LoadPipeline(path, Stage::kAnalyse);
    if (!report.ok) return InternalError("{}", report.error);
    std::printf("profile run: %.3f s, %" PRId64 " nodes\n", report.seconds, report.nodes);
    if (!dir.empty() && options.keep_dir.empty()) std::filesystem::remove_all(dir);
    return Status::Ok();
  }

  PX_ASSIGN_OR_RETURN(ChildResult idle, RunInChild([] {
    ChildReport report;
    report.ok = true;
    return report;
  }));
  PX_ASSIGN_OR_RETURN(ChildResult parse,
                      BestOf(options.runs, [&] { return ParseProtobuf(path); }));
  PX_ASSIGN_OR_RETURN(ChildResult load,
                      BestOf(options.runs, [&] { return LoadPipeline(path, Stage::kLoad); }));
  PX_ASSIGN_OR_RETURN(ChildResult verify,
                      BestOf(options.runs, [&] { return LoadPipeline(path, Stage::kVerify); }));
  PX_ASSIGN_OR_RETURN(ChildResult full,
                      BestOf(options.runs, [&] { return LoadPipeline(path, Stage::kAnalyse); }));
  if (load.report.nodes != parse.report.nodes) {
    return InternalError("LoadGraph saw {} nodes, protobuf {}", load.report.nodes,
                         parse.report.nodes);
  }

  const double base = parse.report.seconds;
  std::printf("graph_load.file_size: %.1f MiB (%" PRId64 " nodes)\n", file_bytes / kMiB,
              parse.report.nodes);
  std::printf("graph_load.parse_protobuf: %.3f s (baseline)\n", base);
  std::printf("graph_load.load: %.3f s (%.2fx protobuf parse)\n", load.report.seconds,
              load.report.seconds / base);
  std::printf("graph_load.load_verify: %.3f s (%.2fx protobuf parse)\n",
              verify.report.seconds, verify.report.seconds / base);
  std::printf("graph_load.load_verify_analyse: %.3f s (%.2fx protobuf parse)\n",
              full.report.seconds, full.report.seconds / base);
  PrintTarget("<= 2x protobuf parse", full.report.seconds <= 2 * base);
  std::printf("graph_load.peak_rss_parse_protobuf: %.0f MiB (%.2fx file size)\n",
              static_cast<double>(parse.peak_rss_bytes) / kMiB,
              static_cast<double>(parse.peak_rss_bytes) / file_bytes);
  std::printf("graph_load.peak_rss_load: %.0f MiB (%.2fx file size)\n",
              static_cast<double>(load.peak_rss_bytes) / kMiB,
              static_cast<double>(load.peak_rss_bytes) / file_bytes);
  std::printf("graph_load.peak_rss_load_verify: %.0f MiB (%.2fx file size)\n",
              static_cast<double>(verify.peak_rss_bytes) / kMiB,
              static_cast<double>(verify.peak_rss_bytes) / file_bytes);
  std::printf("graph_load.peak_rss: %.0f MiB (%.2fx file size)\n",
              static_cast<double>(full.peak_rss_bytes) / kMiB,
              static_cast<double>(full.peak_rss_bytes) / file_bytes);
  PrintTarget("<= 3x file size",
              static_cast<double>(full.peak_rss_bytes) <= 3 * file_bytes);
  std::printf("graph_load.ir_bytes: %.0f MiB (%.2fx file size; Graph::ApproximateBytes, "
              "file bytes excluded)\n",
              static_cast<double>(load.report.ir_bytes) / kMiB,
              static_cast<double>(load.report.ir_bytes) / file_bytes);
  std::printf("(peak RSS includes %.0f MiB that an idle forked child already has)\n",
              static_cast<double>(idle.peak_rss_bytes) / kMiB);
  std::printf("analysis found %" PRId64 " variables, %" PRId64 " updates, %" PRId64
              " train ops, %" PRId64 " problems\n",
              full.report.variables, full.report.updates, full.report.train_ops,
              full.report.problems);

  if (!dir.empty() && options.keep_dir.empty()) std::filesystem::remove_all(dir);
  return Status::Ok();
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) {
  parallax::Options options;
  CLI::App app{"Times loading a large TensorFlow training graph against a protobuf parse."};
  app.add_option("--nodes", options.nodes, "nodes in the generated graph")
      ->check(CLI::Range(int64_t{50}, int64_t{20000000}));
  app.add_option("--runs", options.runs, "runs per variant; the best time is reported")
      ->check(CLI::Range(1, 100));
  app.add_option("--seed", options.seed, "seed of the generated graph");
  app.add_option("--keep", options.keep_dir, "write the graph into this directory and keep it");
  app.add_option("--file", options.file, "measure this GraphDef file instead of generating one");
  app.add_flag("--profile", options.profile,
               "run the full pipeline once, in this process, for a profiler");
  CLI11_PARSE(app, argc, argv);

  parallax::Status status = parallax::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "graph_load_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
