#include "lib/runtime/checkpoint/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/safetensors.h"

namespace parallax {
namespace {

constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".safetensors";

std::optional<int64_t> StepOfFileName(std::string_view name) {
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  name.remove_suffix(kSuffix.size());
  if (name.empty() || name.size() > 18) return std::nullopt;
  int64_t step = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

StatusOr<int64_t> MetadataInt(const std::map<std::string, std::string>& metadata,
                              const std::string& key, std::string_view path) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    return InvalidArgumentError("{}: __metadata__ has no '{}' (not a parallax checkpoint?)", path, key);
  }
  int64_t value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    return InvalidArgumentError("{}: __metadata__ '{}' is '{}', not a non-negative integer", path,
                                key, it->second);
  }
  return value;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += (i ? "," : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  }
  return out + "]";
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  return (std::filesystem::path(dir) / fmt::format("{}{}{}", kPrefix, step, kSuffix)).string();
}

StatusOr<std::vector<std::pair<int64_t, std::string>>> ListCheckpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return out;
  if (!std::filesystem::is_directory(dir, ec)) {
    return InvalidArgumentError("{}: checkpoint directory is not a directory", dir);
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    if (auto step = StepOfFileName(entry.path().filename().string())) {
      out.emplace_back(*step, entry.path().string());
    }
  }
  if (ec) return InvalidArgumentError("{}: cannot list: {}", dir, ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<std::optional<std::string>> LatestCheckpoint(const std::string& dir) {
  PX_ASSIGN_OR_RETURN(auto checkpoints, ListCheckpoints(dir));
  if (checkpoints.empty()) return std::optional<std::string>();
  return std::optional<std::string>(checkpoints.back().second);
}

StatusOr<std::string> SaveCheckpoint(const std::string& dir,
                                     const std::vector<CheckpointVariable>& variables,
                                     VariableStore& store, const CheckpointState& state, int keep) {
  SafetensorsContents contents;
  for (const CheckpointVariable& v : variables) {
    Tensor* value = store.Find(v.store_key);
    if (value == nullptr || !value->initialized()) {
      return FailedPreconditionError("checkpoint: variable '{}' is not initialised (the init op "
                                     "does not initialise it)",
                                     v.name);
    }
    PX_ASSIGN_OR_RETURN(Tensor on_host, value->CopiedTo(nullptr));  // a GPU's variable
    contents.tensors.emplace(v.name, std::move(on_host));
  }
  contents.metadata = {
      {"format", std::string(kCheckpointFormat)},
      {"step", std::to_string(state.step)},
      {"data_epoch", std::to_string(state.position.epoch)},
      {"data_index", std::to_string(state.position.index)},
      {"shuffle_seed", std::to_string(state.shuffle_seed)},
      {"shuffle", state.shuffle ? "true" : "false"},
      {"graph_fingerprint", state.graph_fingerprint},
  };
  for (const auto& [key, value] : state.extra) contents.metadata.emplace(key, value);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError("{}: cannot create the checkpoint directory: {}", dir, ec.message());
  const std::string path = CheckpointPath(dir, state.step);
  PX_RETURN_IF_ERROR(WriteSafetensors(path, contents));
  // A process killed while writing leaves its temporary file (`NAME.tmp.<pid>`); the
  // directory is this writer's, so what is left there now is nobody's.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t tmp = name.find(".tmp.");
    if (entry.is_regular_file() && tmp != std::string::npos && StepOfFileName(name.substr(0, tmp))) {
      std::filesystem::remove(entry.path(), ec);  // best effort, as below
    }
  }
  if (keep > 0) {
    PX_ASSIGN_OR_RETURN(auto checkpoints, ListCheckpoints(dir));
    for (size_t i = 0; i + static_cast<size_t>(keep) < checkpoints.size(); ++i) {
      std::filesystem::remove(checkpoints[i].second, ec);  // best effort: a leftover is harmless
    }
  }
  return path;
}

StatusOr<CheckpointState> RestoreCheckpoint(const std::string& path,
                                            const std::vector<CheckpointVariable>& variables,
                                            VariableStore& store) {
  PX_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(path));
  return RestoreCheckpointFrom(contents, path, variables, store);
}

StatusOr<CheckpointState> RestoreCheckpointFrom(const SafetensorsContents& contents,
                                                std::string_view path,
                                                const std::vector<CheckpointVariable>& variables,
                                                VariableStore& store) {
  CheckpointState state;
  auto format = contents.metadata.find("format");
  if (format == contents.metadata.end() || format->second != kCheckpointFormat) {
    return InvalidArgumentError("{}: not a parallax checkpoint (__metadata__ 'format' is not '{}')",
                                path, kCheckpointFormat);
  }
  PX_ASSIGN_OR_RETURN(state.step, MetadataInt(contents.metadata, "step", path));
  PX_ASSIGN_OR_RETURN(state.position.epoch, MetadataInt(contents.metadata, "data_epoch", path));
  PX_ASSIGN_OR_RETURN(state.position.index, MetadataInt(contents.metadata, "data_index", path));
  auto seed = contents.metadata.find("shuffle_seed");
  if (seed == contents.metadata.end()) {
    return InvalidArgumentError("{}: __metadata__ has no 'shuffle_seed'", path);
  }
  {
    const char* end = seed->second.data() + seed->second.size();
    auto [ptr, ec] = std::from_chars(seed->second.data(), end, state.shuffle_seed);
    if (ec != std::errc() || ptr != end) {
      return InvalidArgumentError("{}: __metadata__ 'shuffle_seed' is '{}', not an integer", path,
                                  seed->second);
    }
  }
  auto shuffle = contents.metadata.find("shuffle");
  state.shuffle = shuffle == contents.metadata.end() || shuffle->second != "false";
  auto fingerprint = contents.metadata.find("graph_fingerprint");
  if (fingerprint != contents.metadata.end()) state.graph_fingerprint = fingerprint->second;
  for (const auto& [key, value] : contents.metadata) {
    if (key != "format" && key != "step" && key != "data_epoch" && key != "data_index" &&
        key != "shuffle_seed" && key != "shuffle" && key != "graph_fingerprint") {
      state.extra.emplace(key, value);
    }
  }

  for (const CheckpointVariable& v : variables) {
    auto it = contents.tensors.find(v.name);
    if (it == contents.tensors.end()) {
      return InvalidArgumentError("{}: variable '{}' is missing from the checkpoint", path, v.name);
    }
    const Tensor& t = it->second;
    bool shape_ok = !v.known_shape || static_cast<size_t>(t.rank()) == v.dims.size();
    for (size_t i = 0; shape_ok && v.known_shape && i < v.dims.size(); ++i) {
      if (v.dims[i] >= 0 && v.dims[i] != t.dim(static_cast<int>(i))) shape_ok = false;
    }
    if (t.dtype() != v.dtype || !shape_ok) {
      return InvalidArgumentError(
          "{}: variable '{}' is {} {} in the checkpoint, the graph declares {} {}", path, v.name,
          SafetensorsDtypeName(t.dtype()), t.shape().DebugString(), DataTypeShortName(v.dtype),
          v.known_shape ? ShapeText(v.dims) : "<unknown>");
    }
  }
  for (const CheckpointVariable& v : variables) {
    *store.Slot(v.store_key) = contents.tensors.at(v.name);
  }
  return state;
}

std::map<std::string, uint64_t> RandomPositionsOf(const std::map<std::string, std::string>& metadata) {
  std::map<std::string, uint64_t> positions;
  for (auto it = metadata.lower_bound(std::string(kRandomMetadataPrefix));
       it != metadata.end() && it->first.starts_with(kRandomMetadataPrefix); ++it) {
    uint64_t value = 0;
    const char* end = it->second.data() + it->second.size();
    auto [ptr, error] = std::from_chars(it->second.data(), end, value);
    if (error != std::errc() || ptr != end) continue;
    positions.emplace(it->first.substr(kRandomMetadataPrefix.size()), value);
  }
  return positions;
}


}  // namespace parallax
