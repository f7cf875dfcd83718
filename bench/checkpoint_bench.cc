// Benchmark: writing and reading a TensorFlow V2 checkpoint of a realistic size.
//
// Data: float tensors of mixed sizes, like a model's variables and their optimizer
// slots (default about 300 MB): --large tensors of 16 MiB, 64 of 1 MiB, 512 of 64 KiB and
// 1024 of 1 KiB (weights, embeddings, biases), values deterministic per --seed.
//
// Baselines, on the same bytes in the same run: `cp` of the checkpoint's data file (its
// read side from the page cache, like every read here), `cp` followed by `sync` of the
// copy, since the writer flushes its files to disk (fsync) before renaming them into
// place, and `cat FILE > /dev/null` (reading alone, a tighter bound for reads than cp).
//   write   WriteTfCheckpoint: the data file (crc32c of every tensor), the index,
//           fsync of both, renames; compared to cp + sync;
//   read    TfCheckpointReader::Open and Read of every tensor, crc32c checked, from the
//           page cache; compared to cp and to cat.
// MB/s are of the data file's bytes (1 MB = 10^6 bytes). Each figure is the best of --runs
// rounds (the machine is shared; the best round is the least disturbed).
//
// Output lines follow scripts/bench.sh: `checkpoint.<metric>: <value> <unit> (<note>)`.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>

#include <CLI/CLI.hpp>

#include "lib/base/status.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/runtime/tensor.h"

namespace parallax {
namespace {

constexpr double kMB = 1e6;

struct Options {
  int large = 12;  // 16 MiB tensors
  int runs = 3;
  uint64_t seed = 20240601;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `runs` timings of fn (seconds); fn's errors end the benchmark.
StatusOr<double> Best(int runs, const std::function<Status()>& fn) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    PX_RETURN_IF_ERROR(fn());
    best = std::min(best, SecondsSince(start));
  }
  return best;
}

Status Shell(const std::string& command) {
  if (std::system(command.c_str()) != 0) return InternalError("'{}' failed", command);
  return Status::Ok();
}

std::map<std::string, Tensor> MakeTensors(const Options& options) {
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::map<std::string, Tensor> tensors;
  const auto add = [&](const std::string& scope, int count, int64_t rows, int64_t cols) {
    for (int i = 0; i < count; ++i) {
      Tensor t(tensorflow::DT_FLOAT, TensorShape({rows, cols}));
      for (float& x : t.flat<float>()) x = normal(rng);
      tensors.emplace(fmt::format("{}/layer_{:04d}/kernel", scope, i), std::move(t));
    }
  };
  add("embeddings", options.large, 4096, 1024);  // 16 MiB each
  add("dense", 64, 512, 512);                    // 1 MiB
  add("conv", 512, 128, 128);                    // 64 KiB
  add("bias", 1024, 1, 256);                     // 1 KiB
  return tensors;
}

Status Run(const Options& options) {
  // Everything written goes to a fresh temporary directory, removed at the end.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/checkpoint_bench.XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    return InternalError("mkdtemp {}: {}", dir, std::strerror(errno));
  }
  struct RemoveOnExit {
    std::string dir;
    ~RemoveOnExit() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{dir};

  const std::map<std::string, Tensor> tensors = MakeTensors(options);
  uint64_t tensor_bytes = 0;
  for (const auto& [name, t] : tensors) tensor_bytes += t.bytes();
  const std::string prefix = dir + "/model.ckpt-1000";
  const std::string data = TfCheckpointDataPath(prefix, 0, 1);

  // write: WriteTfCheckpoint (the first round also leaves the files the rest reads).
  PX_ASSIGN_OR_RETURN(const double write_s,
                      Best(options.runs, [&] { return WriteTfCheckpoint(prefix, tensors); }));
  const double file_bytes = static_cast<double>(std::filesystem::file_size(data));
  std::printf("checkpoint.data_size: %.1f MB (%zu float tensors, 1 KiB to 16 MiB; index %ju "
              "bytes)\n",
              file_bytes / kMB, tensors.size(),
              static_cast<uintmax_t>(std::filesystem::file_size(TfCheckpointIndexPath(prefix))));

  // Baselines: cp of the data file, and cp + sync of the copy.
  const std::string copy = dir + "/copy";
  const std::string cp = "cp '" + data + "' '" + copy + "'";
  const std::string cp_sync = cp + " && sync '" + copy + "'";
  PX_RETURN_IF_ERROR(Shell(cp));  // untimed: the source is in the page cache from here on
  PX_ASSIGN_OR_RETURN(const double cp_s, Best(options.runs, [&] {
    std::filesystem::remove(copy);
    return Shell(cp);
  }));
  PX_ASSIGN_OR_RETURN(const double cp_sync_s, Best(options.runs, [&] {
    std::filesystem::remove(copy);
    return Shell(cp_sync);
  }));
  std::filesystem::remove(copy);
  const std::string cat = "cat '" + data + "' > /dev/null";
  PX_ASSIGN_OR_RETURN(const double cat_s, Best(options.runs, [&] { return Shell(cat); }));
  std::printf("checkpoint.cp: %.0f MB/s (baseline: cp of the data file, from the page cache)\n",
              file_bytes / kMB / cp_s);
  std::printf("checkpoint.cat: %.0f MB/s (cat of the data file to /dev/null: reading alone)\n",
              file_bytes / kMB / cat_s);
  std::printf("checkpoint.cp_sync: %.0f MB/s (baseline: cp, then sync of the copy)\n",
              file_bytes / kMB / cp_sync_s);
  std::printf("checkpoint.write: %.0f MB/s (%.2fx cp + sync; data, index, fsync, rename)\n",
              file_bytes / kMB / write_s, cp_sync_s / write_s);

  // read: every tensor, crc32c checked.
  uint64_t read_bytes = 0;
  PX_ASSIGN_OR_RETURN(const double read_s, Best(options.runs, [&]() -> Status {
    PX_ASSIGN_OR_RETURN(const TfCheckpointReader reader, TfCheckpointReader::Open(prefix));
    read_bytes = 0;
    for (const TfCheckpointEntry& e : reader.entries()) {
      PX_ASSIGN_OR_RETURN(const Tensor t, reader.Read(e.name));
      read_bytes += t.bytes();
    }
    return Status::Ok();
  }));
  if (read_bytes != tensor_bytes) {
    return InternalError("read {} bytes of tensors, wrote {}", read_bytes, tensor_bytes);
  }
  std::printf("checkpoint.read: %.0f MB/s (%.2fx cp, %.2fx cat; every tensor, crc32c checked, "
              "page cache)\n",
              file_bytes / kMB / read_s, cp_s / read_s, cat_s / read_s);
  return Status::Ok();
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) {
  parallax::Options options;
  CLI::App app{"Times writing and reading a TensorFlow V2 checkpoint against cp."};
  app.allow_extras();  // scripts/bench.sh passes BENCH_ARGS to every benchmark
  app.add_option("--large", options.large, "16 MiB tensors (12: about 300 MB in all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--runs", options.runs, "rounds per variant; the best is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "seed of the tensor values");
  CLI11_PARSE(app, argc, argv);
  const parallax::Status status = parallax::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "checkpoint_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
