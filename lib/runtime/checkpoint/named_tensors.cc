#include "lib/runtime/checkpoint/named_tensors.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "lib/base/file.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Join(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).string();
}

// The prefix of "P.data-00000-of-00001", or nullopt.
std::optional<std::string> PrefixOfDataFile(const std::string& path) {
  static const std::regex kDataSuffix(R"(\.data-\d{5}-of-\d{5}$)");
  std::smatch match;
  if (!std::regex_search(path, match, kDataSuffix)) return std::nullopt;
  return path.substr(0, static_cast<size_t>(match.position(0)));
}

// Whether a file starts like a safetensors file: a little-endian header length that fits
// the file, then '{'.
bool LooksLikeSafetensors(const std::string& path) {
  StatusOr<std::string> head = ReadFileRange(path, 0, 9);
  if (!head.ok() || head->size() < 9 || (*head)[8] != '{') return false;
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>((*head)[static_cast<size_t>(i)]);
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return !ec && length <= kMaxSafetensorsHeaderBytes && 8 + length <= size;
}

bool LooksLikeCheckpointState(const std::string& path) {
  if (fs::path(path).filename() == kTfCheckpointStateFile) return true;
  StatusOr<std::string> head = ReadFileRange(path, 0, 64);
  return head.ok() && head->find("model_checkpoint_path") != std::string::npos;
}

class TfNamedTensors final : public NamedTensorReader {
 public:
  TfNamedTensors(CheckpointLocation location, TfCheckpointReader reader)
      : reader_(std::move(reader)) {
    location_ = std::move(location);
    for (const TfCheckpointEntry& e : reader_.entries()) {
      tensors_.push_back({e.name, e.dtype, e.shape, static_cast<uint64_t>(e.size)});
    }
  }
  StatusOr<Tensor> Read(std::string_view name) const override { return reader_.Read(name); }

 private:
  TfCheckpointReader reader_;
};

class SafetensorsNamedTensors final : public NamedTensorReader {
 public:
  SafetensorsNamedTensors(CheckpointLocation location, SafetensorsContents contents)
      : contents_(std::move(contents)) {
    location_ = std::move(location);
    metadata_ = contents_.metadata;
    for (const auto& [name, tensor] : contents_.tensors) {
      tensors_.push_back({name, tensor.dtype(), tensor.shape(), tensor.bytes()});
    }
  }
  StatusOr<Tensor> Read(std::string_view name) const override {
    const auto it = contents_.tensors.find(std::string(name));
    if (it == contents_.tensors.end()) {
      return NotFoundError("{}: no tensor '{}' in the checkpoint", location_.path, name);
    }
    return it->second;
  }

 private:
  SafetensorsContents contents_;
};

}  // namespace

std::string_view CheckpointFormatName(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::kTensorFlow: return "tensorflow";
    case CheckpointFormat::kSafetensors: return "safetensors";
    case CheckpointFormat::kJob: return "job";
  }
  return "?";
}

StatusOr<CheckpointLocation> ResolveCheckpoint(const std::string& path) {
  using F = CheckpointFormat;
  if (IsDirectory(path)) {
    const std::string state = Join(path, kTfCheckpointStateFile);
    if (IsFile(state)) {
      PX_ASSIGN_OR_RETURN(std::string prefix, LatestTfCheckpoint(path));
      return CheckpointLocation{F::kTensorFlow, std::move(prefix), "from " + state};
    }
    const std::string saved_model = Join(Join(path, "variables"), "variables");
    if (IsFile(TfCheckpointIndexPath(saved_model))) {
      return CheckpointLocation{F::kTensorFlow, saved_model, "the variables of the SavedModel " + path};
    }
    const std::string variables = Join(path, "variables");
    if (IsFile(TfCheckpointIndexPath(variables))) {
      return CheckpointLocation{F::kTensorFlow, variables, "the SavedModel variables in " + path};
    }
    PX_ASSIGN_OR_RETURN(std::optional<std::string> newest, LatestCheckpoint(path));
    if (newest) {
      return CheckpointLocation{F::kSafetensors, *newest, "the newest checkpoint in " + path};
    }
    PX_ASSIGN_OR_RETURN(std::optional<JobStep> job_step, NewestCompleteJobStep(path));
    if (job_step) {
      return CheckpointLocation{
          F::kJob, path, fmt::format("the job checkpoint of step {} in {}", job_step->step, path)};
    }
    return InvalidArgumentError("{}: a directory without a TensorFlow `checkpoint` file, SavedModel "
                                "variables or `parallax run` checkpoints (of one process or of a "
                                "job's ranks)",
                                path);
  }
  if (IsFile(path)) {
    if (path.ends_with(".index")) {
      return CheckpointLocation{F::kTensorFlow, path.substr(0, path.size() - 6), ""};
    }
    if (std::optional<std::string> prefix = PrefixOfDataFile(path)) {
      return CheckpointLocation{F::kTensorFlow, *prefix, ""};
    }
    if (LooksLikeSafetensors(path)) return CheckpointLocation{F::kSafetensors, path, ""};
    if (LooksLikeCheckpointState(path)) {
      const fs::path parent = fs::path(path).parent_path();
      const std::string dir = parent.empty() ? std::string(".") : parent.string();
      PX_ASSIGN_OR_RETURN(std::string prefix, LatestTfCheckpoint(dir));
      return CheckpointLocation{F::kTensorFlow, std::move(prefix), "from " + path};
    }
    return InvalidArgumentError("{}: not a checkpoint: neither a TensorFlow checkpoint file "
                                "(PREFIX.index, PREFIX.data-*), a `checkpoint` file nor a "
                                "safetensors file",
                                path);
  }
  if (IsFile(TfCheckpointIndexPath(path))) return CheckpointLocation{F::kTensorFlow, path, ""};
  return NotFoundError("{}: no such file, directory or checkpoint prefix ({} does not exist)", path,
                       TfCheckpointIndexPath(path));
}

const NamedTensorInfo* NamedTensorReader::Find(std::string_view name) const {
  const auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const NamedTensorInfo& info, std::string_view n) { return info.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

StatusOr<std::unique_ptr<NamedTensorReader>> OpenNamedTensors(const CheckpointLocation& location) {
  if (location.format == CheckpointFormat::kTensorFlow) {
    PX_ASSIGN_OR_RETURN(TfCheckpointReader reader, TfCheckpointReader::Open(location.path));
    return std::unique_ptr<NamedTensorReader>(
        std::make_unique<TfNamedTensors>(location, std::move(reader)));
  }
  SafetensorsContents contents;
  if (location.format == CheckpointFormat::kJob) {
    PX_ASSIGN_OR_RETURN(JobCheckpoint job, ReadJobCheckpoint(location.path));
    contents.tensors = std::move(job.variables);
    contents.metadata = std::move(job.metadata);
  } else {
    PX_ASSIGN_OR_RETURN(contents, ReadSafetensors(location.path));
  }
  return std::unique_ptr<NamedTensorReader>(
      std::make_unique<SafetensorsNamedTensors>(location, std::move(contents)));
}

StatusOr<std::unique_ptr<NamedTensorReader>> OpenNamedTensors(const std::string& path) {
  PX_ASSIGN_OR_RETURN(const CheckpointLocation location, ResolveCheckpoint(path));
  return OpenNamedTensors(location);
}

}  // namespace parallax
