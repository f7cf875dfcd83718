// Benchmark: reading TFRecord files of tf.train.Examples, as TFRecordDataset +
// ParseExample do in an input pipeline.
//
// Data: a generated file of MNIST-like examples (default 100,000): `image_floats`, 784
// floats in [-0.5, 0.5), and `image_class`, an int64 — the features and sizes of TFX's
// MNIST TFRecords (about 3.2 KB a record, 320 MB in all).
//
// Baseline: `cat FILE > /dev/null` on the same file in the same run, i.e. what this
// machine's page cache and read(2) give without any framing or parsing. Every MB/s line
// is compared to it.
//   read          TFRecordReader over the file: framing and both CRCs of every record;
//   read_parse    the same plus a tensorflow::Example protobuf parse of every record;
//   read_gzip     a GZIP-compressed copy (of the first --gzip-records records), MB/s of
//                 decompressed bytes;
//   write         TFRecordWriter writing the same records (to the page cache; no fsync).
// Each figure is the best of --runs rounds (the machine is shared; the best round is the
// least disturbed). The file is written first, so every round reads from the page cache.
//
// Output lines follow scripts/bench.sh: `tfrecord.<metric>: <value> <unit> (<note>)`.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/base/status.h"
#include "lib/runtime/data/tfrecord.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

constexpr double kMB = 1e6;

struct Options {
  int64_t records = 100000;
  int64_t gzip_records = 20000;
  int runs = 3;
  uint64_t seed = 20240601;
  std::string file;  // measure this (uncompressed) TFRecord file instead of generating one
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

// One MNIST-like tf.train.Example, serialized.
std::string MakeExample(std::mt19937_64& rng) {
  std::uniform_real_distribution<float> pixel(-0.5f, 0.5f);
  tensorflow::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  tensorflow::FloatList* floats = features["image_floats"].mutable_float_list();
  floats->mutable_value()->Reserve(784);
  for (int i = 0; i < 784; ++i) floats->add_value(pixel(rng));
  features["image_class"].mutable_int64_list()->add_value(static_cast<int64_t>(rng() % 10));
  return example.SerializeAsString();
}

// Reads every record of `path`; counts records and data bytes; parses each as an Example
// when `parse`.
Status ReadAll(const std::string& path, TFRecordCompression compression, bool parse,
               int64_t* records, uint64_t* bytes) {
  PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordReader> reader,
                      TFRecordReader::Open(path, compression));
  std::string record;
  tensorflow::Example example;
  *records = 0;
  while (true) {
    PX_ASSIGN_OR_RETURN(const bool more, reader->Next(&record));
    if (!more) break;
    if (parse && !example.ParseFromString(record)) {
      return InvalidArgumentError("{}: record {} is not a tf.train.Example", path, *records);
    }
    ++*records;
  }
  *bytes = reader->offset();  // the framed stream's length
  return Status::Ok();
}

Status Run(const Options& options) {
  // Everything written goes to a fresh temporary directory, removed at the end.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/tfrecord_bench.XXXXXX";
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
  std::string path = options.file;
  std::vector<std::string> records;
  if (path.empty()) {
    path = dir + "/mnist_like.tfrecord";
    const auto start = std::chrono::steady_clock::now();
    std::mt19937_64 rng(options.seed);
    records.reserve(static_cast<size_t>(options.records));
    for (int64_t i = 0; i < options.records; ++i) records.push_back(MakeExample(rng));
    PX_RETURN_IF_ERROR(WriteTFRecordFile(path, records));
    std::printf("generated %" PRId64 " MNIST-like examples in %.1f s\n", options.records,
                SecondsSince(start));
  } else {
    PX_ASSIGN_OR_RETURN(records, ReadTFRecordFile(path));
  }
  const double file_bytes = static_cast<double>(std::filesystem::file_size(path));
  const auto n = static_cast<double>(records.size());
  std::printf("tfrecord.file_size: %.1f MB (%zu records, %.0f bytes each on average)\n",
              file_bytes / kMB, records.size(), file_bytes / n);

  // Baseline: cat. Once untimed, so that every variant reads from the page cache.
  const std::string cat = "cat '" + path + "' > /dev/null";
  const auto run_cat = [&]() -> Status {
    if (std::system(cat.c_str()) != 0) return InternalError("'{}' failed", cat);
    return Status::Ok();
  };
  PX_RETURN_IF_ERROR(run_cat());
  PX_ASSIGN_OR_RETURN(const double cat_s, Best(options.runs, run_cat));
  const double cat_mbs = file_bytes / kMB / cat_s;
  std::printf("tfrecord.cat: %.0f MB/s (baseline)\n", cat_mbs);

  int64_t count = 0;
  uint64_t bytes = 0;
  PX_ASSIGN_OR_RETURN(const double read_s, Best(options.runs, [&] {
    return ReadAll(path, TFRecordCompression::kNone, false, &count, &bytes);
  }));
  if (count != static_cast<int64_t>(records.size())) {
    return InternalError("read {} records, expected {}", count, records.size());
  }
  std::printf("tfrecord.read: %.0f MB/s (%.2fx cat)\n", file_bytes / kMB / read_s,
              cat_s / read_s);
  std::printf("tfrecord.read_records: %.0f records/s (%.2fx cat)\n", n / read_s, cat_s / read_s);

  PX_ASSIGN_OR_RETURN(const double parse_s, Best(options.runs, [&] {
    return ReadAll(path, TFRecordCompression::kNone, true, &count, &bytes);
  }));
  std::printf("tfrecord.read_parse: %.0f MB/s (%.2fx cat)\n", file_bytes / kMB / parse_s,
              cat_s / parse_s);
  std::printf("tfrecord.read_parse_records: %.0f records/s (%.2fx cat)\n", n / parse_s,
              cat_s / parse_s);

  // GZIP: a compressed copy of the first records.
  const size_t gz_count = std::min(records.size(), static_cast<size_t>(options.gzip_records));
  const std::string gz_path = dir + "/compressed.tfrecord.gz";
  {
    const std::vector<std::string> head(records.begin(), records.begin() + gz_count);
    PX_RETURN_IF_ERROR(WriteTFRecordFile(gz_path, head, TFRecordCompression::kGzip));
  }
  PX_ASSIGN_OR_RETURN(const double gz_s, Best(options.runs, [&] {
    return ReadAll(gz_path, TFRecordCompression::kGzip, false, &count, &bytes);
  }));
  std::printf("tfrecord.read_gzip: %.0f MB/s (%.2fx cat; decompressed bytes, %zu records, "
              "%.1fx compression)\n",
              static_cast<double>(bytes) / kMB / gz_s,
              static_cast<double>(bytes) / kMB / gz_s / cat_mbs, gz_count,
              static_cast<double>(bytes) /
                  static_cast<double>(std::filesystem::file_size(gz_path)));

  // Writing the same records.
  const std::string out_path = dir + "/copy.tfrecord";
  PX_ASSIGN_OR_RETURN(const double write_s, Best(options.runs, [&]() -> Status {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<TFRecordWriter> writer, TFRecordWriter::Open(out_path));
    for (const std::string& r : records) PX_RETURN_IF_ERROR(writer->Write(r));
    return writer->Close();
  }));
  std::printf("tfrecord.write: %.0f MB/s (%.2fx cat)\n", file_bytes / kMB / write_s,
              cat_s / write_s);
  return Status::Ok();
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) {
  parallax::Options options;
  CLI::App app{"Times TFRecord reading (+ tf.Example parsing) against cat."};
  app.allow_extras();  // scripts/bench.sh passes BENCH_ARGS to every benchmark
  app.add_option("--records", options.records, "examples in the generated file")
      ->check(CLI::PositiveNumber);
  app.add_option("--gzip-records", options.gzip_records,
                 "examples in the GZIP-compressed copy")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", options.runs, "rounds per variant; the best is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "seed of the generated examples");
  app.add_option("--file", options.file,
                 "measure this uncompressed TFRecord file instead of generating one");
  CLI11_PARSE(app, argc, argv);
  const parallax::Status status = parallax::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "tfrecord_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
