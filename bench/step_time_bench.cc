// Benchmark: a whole training step of the zoo's mlp, lenet and lstm in Parallax against
// the same model in PyTorch eager mode, side by side in one run.
//
// Parallax: the zoo graph (mlp 784-512-512-10, batch 256, SGD; lenet, batch 64, Adam;
// lstm (`--models lstm`): dynamic_rnn's while loop and its gradient loop, batch 32,
// 20 steps of 32 inputs, 128 units, Adam; PyTorch runs nn.LSTM, batch_first),
// init op once, then the train op with the loss fetched on one fixed synthetic batch
// (x uniform in [0, 1), y the zoo's argmax_prefix label), as `parallax run` steps it but
// without the data pipeline. PyTorch: bench/step_time_torch.py (same architectures and
// optimizers, torch.set_num_threads(threads)) under /usr/bin/python3.
//
// A value is the median step time of --steps steps after --warmup steps; --rounds rounds
// alternate the two frameworks and the best round's median counts (the machine is shared;
// the best round is the least disturbed). Also reported for Parallax: the p90 step time
// (spread: thread contention shows up here), and system CPU time and minor page faults
// per step (allocation cost: fresh pages for large tensors show up here).
//
// PyTorch runs with OPENBLAS_CORETYPE set to the OpenBLAS core Parallax selected (Debian's
// OpenBLAS falls back to generic kernels on this CPU; blas_gemm.h) and
// OMP_WAIT_POLICY=PASSIVE (without it PyTorch's spinning OpenMP workers starve
// OpenBLAS's threads on 2 cores: mlp 150 ms instead of 5 ms per step), and inherits this
// process's OPENBLAS_THREAD_TIMEOUT (lib/runtime/thread_policy.h), i.e. it runs in its
// best configuration on this machine, with the same thread policy as Parallax.
//
// Output lines follow scripts/bench.sh: `step_time.<metric>: <value> <unit> (<note>)`,
// with the target `Parallax <= 1.1x PyTorch` (1.2x for lstm: a TF1 while loop runs its
// cell as ~20 separate ops per step, forward and backward, where nn.LSTM calls fused
// kernels).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/models/zoo.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/blas_gemm.h"
#include "lib/runtime/tensor.h"
#include "lib/runtime/thread_policy.h"

namespace parallax {
namespace {

double TargetRatio(const std::string& model) { return model == "lstm" ? 1.2 : 1.1; }

struct Options {
  int threads = 0;
  int warmup = 10;
  int steps = 50;
  int rounds = 3;
  std::string python = "/usr/bin/python3";
  std::string torch_script;
  bool no_torch = false;
  std::vector<std::string> models = {"mlp", "lenet"};
};

struct ParallaxTimes {
  double median_ms = 0;
  double p90_ms = 0;
  double sys_ms_per_step = 0;
  double minor_faults_per_step = 0;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

double RusageSysSeconds(const rusage& r) {
  return static_cast<double>(r.ru_stime.tv_sec) + static_cast<double>(r.ru_stime.tv_usec) * 1e-6;
}

models::ModelOptions OptionsFor(const std::string& name) {
  models::ModelOptions o;
  if (name == "mlp") {
    o.optimizer = models::OptimizerKind::kSgd;
    o.learning_rate = 0.1;
  } else {
    o.optimizer = models::OptimizerKind::kAdam;
    o.learning_rate = 0.001;
  }
  return o;
}

// Fixed feeds following the zoo's synthetic rules.
std::vector<std::pair<std::string, Tensor>> Feeds(const models::Model& m) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  Tensor x;
  for (const models::FeedSpec& f : m.feeds) {
    TensorShape shape(f.shape.dims);
    if (f.name == "x") {
      x = Tensor(tensorflow::DT_FLOAT, shape);
      std::mt19937 gen(7);
      std::uniform_real_distribution<float> uniform(0, 1);
      for (float& v : x.flat<float>()) v = uniform(gen);
      feeds.emplace_back("x:0", x);
    } else if (f.name == "y") {
      Tensor y(tensorflow::DT_INT64, shape);
      const int64_t rows = shape.dim(0), per_row = x.num_elements() / rows;
      for (int64_t r = 0; r < rows; ++r) {
        y.data<int64_t>()[r] = models::ArgmaxPrefixLabel(
            x.flat<float>().subspan(static_cast<size_t>(r * per_row), static_cast<size_t>(per_row)),
            models::kNumClasses);
      }
      feeds.emplace_back("y:0", y);
    }
  }
  return feeds;
}

StatusOr<ParallaxTimes> TimeParallax(const std::string& name, const Options& options) {
  PX_ASSIGN_OR_RETURN(models::Model m, models::BuildModel(name, OptionsFor(name)));
  CpuDevice device(options.threads);
  Executor executor(m.graph, device);
  RunRequest init;
  init.targets = {m.init_op};
  PX_RETURN_IF_ERROR(executor.Run(init).status());
  RunRequest step;
  step.feeds = Feeds(m);
  step.fetches = {m.loss + ":0"};
  step.targets = {m.train_op};
  for (int i = 0; i < options.warmup; ++i) PX_RETURN_IF_ERROR(executor.Run(step).status());
  std::vector<double> times;
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (int i = 0; i < options.steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<std::vector<Tensor>> out = executor.Run(step);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              start).count());
    PX_RETURN_IF_ERROR(out.status());
  }
  getrusage(RUSAGE_SELF, &after);
  ParallaxTimes t;
  t.median_ms = Percentile(times, 0.5);
  t.p90_ms = Percentile(times, 0.9);
  t.sys_ms_per_step = (RusageSysSeconds(after) - RusageSysSeconds(before)) * 1e3 / options.steps;
  t.minor_faults_per_step =
      static_cast<double>(after.ru_minflt - before.ru_minflt) / options.steps;
  return t;
}

// bench/step_time_torch.py: from --torch-script, `bazel run`'s workspace, the current
// directory (scripts/bench.sh runs from the repository root) or the runfiles.
std::string FindTorchScript(const Options& options, const char* argv0) {
  if (!options.torch_script.empty()) return options.torch_script;
  std::vector<std::filesystem::path> candidates;
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    candidates.push_back(std::filesystem::path(ws) / "bench/step_time_torch.py");
  }
  candidates.push_back("bench/step_time_torch.py");
  candidates.push_back(std::string(argv0) + ".runfiles/parallax/bench/step_time_torch.py");
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c)) return c.string();
  }
  return "";
}

// Median ms per step by model, from one run of the PyTorch script; empty on failure.
std::map<std::string, double> TimeTorch(const Options& options, const std::string& script) {
  std::string command = fmt::format(
      "env OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE={} {} {} --threads {} --warmup {} --steps {}",
      BlasCoreName(), options.python, script, options.threads, options.warmup, options.steps);
  for (const std::string& m : options.models) command += " " + m;
  std::map<std::string, double> result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char line[256];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    char model[64];
    double ms = 0;
    if (std::sscanf(line, "%63[^:]: %lf", model, &ms) == 2) result[model] = ms;
  }
  if (pclose(pipe) != 0) result.clear();
  return result;
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app{"Times a training step of the zoo's mlp, lenet and lstm in Parallax and PyTorch."};
  app.add_option("--threads", options.threads, "kernel threads in both (default: one per core)");
  app.add_option("--warmup", options.warmup, "untimed steps first")->check(CLI::Range(0, 10000));
  app.add_option("--steps", options.steps, "timed steps per round")->check(CLI::Range(1, 100000));
  app.add_option("--rounds", options.rounds, "alternating rounds; the best counts")
      ->check(CLI::Range(1, 100));
  app.add_option("--python", options.python, "the Python with torch");
  app.add_option("--torch-script", options.torch_script, "bench/step_time_torch.py");
  app.add_flag("--no-torch", options.no_torch, "time Parallax only");
  app.add_option("--models", options.models, "mlp, lenet, lstm");
  CLI11_PARSE(app, argc, argv);
  if (options.threads <= 0) options.threads = static_cast<int>(std::thread::hardware_concurrency());
  SetBlasThreads(options.threads);  // selects the OpenBLAS core that PyTorch is given too

  const std::string script = options.no_torch ? "" : FindTorchScript(options, argv[0]);
  if (!options.no_torch && script.empty()) {
    std::fprintf(stderr, "step_time_bench: bench/step_time_torch.py not found; run from the "
                         "repository root, or pass --torch-script or --no-torch\n");
    return 1;
  }
  std::map<std::string, ParallaxTimes> best;
  std::map<std::string, double> best_torch;
  for (int round = 0; round < options.rounds; ++round) {
    for (const std::string& name : options.models) {
      StatusOr<ParallaxTimes> t = TimeParallax(name, options);
      if (!t.ok()) {
        std::fprintf(stderr, "step_time_bench: %s: %s\n", name.c_str(),
                     t.status().ToString().c_str());
        return 1;
      }
      auto it = best.find(name);
      if (it == best.end() || t->median_ms < it->second.median_ms) best[name] = *t;
    }
    if (options.no_torch) continue;
    const std::map<std::string, double> torch = TimeTorch(options, script);
    if (torch.size() != options.models.size()) {
      std::fprintf(stderr, "step_time_bench: %s %s failed (is torch installed?)\n",
                   options.python.c_str(), script.c_str());
      return 1;
    }
    for (const auto& [name, ms] : torch) {
      auto it = best_torch.find(name);
      if (it == best_torch.end() || ms < it->second) best_torch[name] = ms;
    }
  }

  std::printf("OpenBLAS core %s, %d threads, median of %d steps after %d, best of %d rounds; "
              "%s\n",
              BlasCoreName(), options.threads, options.steps, options.warmup, options.rounds,
              DescribeThreadPolicy().c_str());
  bool all_met = true;
  for (const std::string& name : options.models) {
    const ParallaxTimes& p = best[name];
    if (!options.no_torch) {
      std::printf("step_time.%s_pytorch: %.3f ms (baseline; torch eager, %d threads)\n",
                  name.c_str(), best_torch[name], options.threads);
      const double ratio = p.median_ms / best_torch[name];
      std::printf("step_time.%s_parallax: %.3f ms (%.2fx vs baseline)\n", name.c_str(),
                  p.median_ms, ratio);
      const bool met = ratio <= TargetRatio(name);
      all_met &= met;
      std::printf("  target: <= %.1fx PyTorch: %s\n", TargetRatio(name),
                  met ? "target met" : "TARGET MISSED");
    } else {
      std::printf("step_time.%s_parallax: %.3f ms (no PyTorch run)\n", name.c_str(), p.median_ms);
    }
    std::printf("step_time.%s_parallax_p90: %.3f ms (%.2fx the median)\n", name.c_str(), p.p90_ms,
                p.p90_ms / p.median_ms);
    std::printf("step_time.%s_parallax_sys: %.3f ms/step (system CPU time; %.0f minor page "
                "faults per step)\n",
                name.c_str(), p.sys_ms_per_step, p.minor_faults_per_step);
  }
  if (!options.no_torch) std::printf("step time: %s\n", all_met ? "target met" : "TARGET MISSED");
  return 0;
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) { return parallax::Main(argc, argv); }
