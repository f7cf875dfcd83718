// checkpoint_diff A B [--tolerance T] [--exact]: compares the float tensors of two
// checkpoints, for tests. A and B are each a checkpoint (safetensors) file, a job rank's
// read as that rank holds it (ReadRankFile: what it leaves to rank 0's file is taken from
// there), or a job checkpoint: a directory holding rank-R/ folders (its newest step that
// every rank wrote) or DIR@STEP, read with ReadJobCheckpoint — parameter-server variables
// reassembled to full size under their own names (job_checkpoint.h), so a job can be
// compared with one process or with a job of another rank count. Every tensor of A must
// be in B with the same dtype and shape. Per tensor it prints the max relative difference
//   max_i |a_i - b_i| / max(max_i |a_i|, 1e-30)
// (normalised by the tensor's largest magnitude, so elements near zero do not blow it
// up). Exit status 0 when every tensor is within T (default 1e-5; --exact: bit-identical
// bytes), 1 otherwise, 2 on unreadable files or an invalid job checkpoint.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/safetensors.h"

namespace parallax {
namespace {

// A file, a job checkpoint directory, or DIR@STEP (see the file comment).
StatusOr<SafetensorsContents> ReadAny(const std::string& path) {
  std::string dir = path;
  std::optional<int64_t> step;
  if (const size_t at = path.rfind('@'); at != std::string::npos &&
                                         std::filesystem::is_directory(path.substr(0, at))) {
    dir = path.substr(0, at);
    try {
      step = std::stoll(path.substr(at + 1));
    } catch (...) {
      return InvalidArgumentError("{}: expected DIR@STEP", path);
    }
  }
  if (!std::filesystem::is_directory(dir)) {
    StatusOr<RankFileContents> file = ReadRankFile(path);
    if (!file.ok()) return file.status();
    return std::move(file->contents);
  }
  StatusOr<JobCheckpoint> job = step ? ReadJobCheckpoint(dir, *step) : ReadJobCheckpoint(dir);
  if (!job.ok()) return job.status();
  std::printf("%s: job checkpoint of step %lld, %lld ranks, %zu variables (%zu reassembled)\n",
              path.c_str(), static_cast<long long>(job->step),
              static_cast<long long>(job->job_size), job->variables.size(),
              job->partitioned.size());
  SafetensorsContents out;
  out.tensors = std::move(job->variables);
  out.metadata = std::move(job->metadata);
  return out;
}

double ValueAt(const Tensor& t, int64_t i) {
  if (t.dtype() == tensorflow::DT_FLOAT) return t.data<float>()[i];
  if (t.dtype() == tensorflow::DT_DOUBLE) return t.data<double>()[i];
  if (t.dtype() == tensorflow::DT_INT64) return static_cast<double>(t.data<int64_t>()[i]);
  if (t.dtype() == tensorflow::DT_INT32) return t.data<int32_t>()[i];
  return NAN;
}

int Main(int argc, char** argv) {
  std::string a_path, b_path;
  double tolerance = 1e-5;
  bool exact = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--exact") {
      exact = true;
    } else if (arg == "--tolerance" && i + 1 < argc) {
      tolerance = std::stod(argv[++i]);
    } else if (a_path.empty()) {
      a_path = arg;
    } else {
      b_path = arg;
    }
  }
  if (b_path.empty()) {
    std::fprintf(stderr, "usage: checkpoint_diff A B [--tolerance T] [--exact] (A, B: a file, a job dir or DIR@STEP)\n");
    return 2;
  }
  StatusOr<SafetensorsContents> a = ReadAny(a_path);
  StatusOr<SafetensorsContents> b = ReadAny(b_path);
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "checkpoint_diff: %s\n",
                 (!a.ok() ? a.status() : b.status()).ToString().c_str());
    return 2;
  }
  bool ok = true;
  double worst = 0;
  for (const auto& [name, ta] : a->tensors) {
    auto it = b->tensors.find(name);
    if (it == b->tensors.end()) {
      std::printf("%s: missing from %s\n", name.c_str(), b_path.c_str());
      ok = false;
      continue;
    }
    const Tensor& tb = it->second;
    if (ta.dtype() != tb.dtype() || !(ta.shape() == tb.shape())) {
      std::printf("%s: %s vs %s\n", name.c_str(), ta.shape().DebugString().c_str(),
                  tb.shape().DebugString().c_str());
      ok = false;
      continue;
    }
    const bool identical =
        ta.bytes() == tb.bytes() &&
        std::memcmp(ta.raw_data(), tb.raw_data(), ta.bytes()) == 0;
    double max_abs = 0, max_diff = 0;
    for (int64_t i = 0; i < ta.num_elements(); ++i) {
      const double x = ValueAt(ta, i), y = ValueAt(tb, i);
      max_abs = std::max(max_abs, std::fabs(x));
      max_diff = std::max(max_diff, std::fabs(x - y));
    }
    const double relative = max_diff / std::max(max_abs, 1e-30);
    worst = std::max(worst, relative);
    const bool pass = exact ? identical : relative <= tolerance;
    std::printf("%s %s: max relative difference %.3g (max abs difference %.3g)%s%s\n",
                pass ? "ok  " : "FAIL", name.c_str(), relative, max_diff,
                identical ? ", bit-identical" : "", std::isnan(relative) ? " (NaN)" : "");
    if (!pass) ok = false;
  }
  std::printf("%zu tensors, worst max relative difference %.3g (%s %g)\n", a->tensors.size(),
              worst, exact ? "required: bit-identical, tolerance not used" : "tolerance",
              tolerance);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace parallax

int main(int argc, char** argv) { return parallax::Main(argc, argv); }
