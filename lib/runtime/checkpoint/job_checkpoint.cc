#include "lib/runtime/checkpoint/job_checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "lib/graph/names.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/safetensors.h"

namespace parallax {
namespace {

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

StatusOr<int64_t> MetadataCount(const SafetensorsContents& contents, const std::string& key,
                                std::string_view path) {
  auto it = contents.metadata.find(key);
  if (it == contents.metadata.end()) {
    return InvalidArgumentError("{}: __metadata__ has no '{}' (not a job checkpoint)", path, key);
  }
  std::optional<int64_t> value = ParseInt(it->second);
  if (!value || *value < 0) {
    return InvalidArgumentError("{}: __metadata__ '{}' is '{}', not a non-negative integer",
                                path, key, it->second);
  }
  return *value;
}

std::string RankFile(const std::string& dir, int64_t rank, int64_t step) {
  return CheckpointPath((std::filesystem::path(dir) / fmt::format("rank-{}", rank)).string(),
                        step);
}

int64_t RowBytes(const Tensor& t) {
  return t.dim(0) == 0 ? 0 : static_cast<int64_t>(t.bytes()) / t.dim(0);
}

TensorShape RowShape(const Tensor& t) {
  TensorShape shape = t.shape();
  shape.RemoveDim(0);
  return shape;
}

// The layout a job file's metadata names; kLayoutEveryRank when it names none.
StatusOr<std::string_view> LayoutOf(const std::map<std::string, std::string>& metadata,
                                    std::string_view path) {
  auto it = metadata.find(std::string(kJobLayoutKey));
  if (it == metadata.end() || it->second == kLayoutEveryRank) return kLayoutEveryRank;
  if (it->second == kLayoutReplicatedOnce) return kLayoutReplicatedOnce;
  return InvalidArgumentError("{}: __metadata__ '{}' is '{}', expected '{}' or '{}'", path,
                              kJobLayoutKey, it->second, kLayoutReplicatedOnce, kLayoutEveryRank);
}

// One file's rows of a partitioned tensor.
struct Piece {
  std::string file;
  Tensor tensor;
  std::vector<RowRange> ranges;
};

}  // namespace

StatusOr<std::vector<RowRange>> ParseRowRanges(std::string_view text) {
  std::vector<RowRange> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view part = text.substr(start, comma - start);
    const size_t dash = part.find('-');
    std::optional<int64_t> begin, end;
    if (dash != std::string_view::npos) {
      begin = ParseInt(part.substr(0, dash));
      end = ParseInt(part.substr(dash + 1));
    }
    if (!begin || !end || *begin < 0 || *end <= *begin) {
      return InvalidArgumentError("row ranges '{}': '{}' is not BEGIN-END with 0 <= BEGIN < END",
                                  QuoteForMessage(text), QuoteForMessage(part));
    }
    out.push_back({*begin, *end});
    start = comma + 1;
  }
  return out;
}

std::string FormatRowRanges(std::span<const RowRange> ranges) {
  std::string out;
  for (const RowRange& r : ranges) {
    out += fmt::format("{}{}-{}", out.empty() ? "" : ",", r.begin, r.end);
  }
  return out;
}

StatusOr<Tensor> SliceRows(const Tensor& full, std::span<const RowRange> ranges) {
  if (full.rank() < 1) {
    return InvalidArgumentError("cannot take rows of a scalar ({})", full.shape().DebugString());
  }
  int64_t rows = 0;
  for (const RowRange& r : ranges) {
    if (r.begin < 0 || r.end > full.dim(0) || r.end < r.begin) {
      return InvalidArgumentError("rows {}-{} are outside the tensor's {} rows", r.begin, r.end,
                                  full.dim(0));
    }
    rows += r.rows();
  }
  TensorShape shape = full.shape();
  shape.set_dim(0, rows);
  Tensor out(full.dtype(), shape);
  const int64_t row_bytes = RowBytes(full);
  auto* dst = static_cast<char*>(out.raw_data());
  const auto* src = static_cast<const char*>(full.raw_data());
  for (const RowRange& r : ranges) {
    if (r.rows() == 0 || row_bytes == 0) continue;
    std::memcpy(dst, src + r.begin * row_bytes, static_cast<size_t>(r.rows() * row_bytes));
    dst += r.rows() * row_bytes;
  }
  return out;
}

StatusOr<int64_t> JobSizeOfStep(const std::string& dir, int64_t step) {
  const std::string path = RankFile(dir, 0, step);
  PX_ASSIGN_OR_RETURN(const auto metadata, ReadSafetensorsMetadata(path));
  auto it = metadata.find("job_size");
  if (it == metadata.end()) return 1;
  std::optional<int64_t> size = ParseInt(it->second);
  if (!size || *size < 1) {
    return InvalidArgumentError("{}: __metadata__ 'job_size' is '{}', not a rank count", path,
                                it->second);
  }
  return *size;
}

StatusOr<CompleteJobSteps> FindCompleteJobSteps(const std::string& dir) {
  CompleteJobSteps out;
  PX_ASSIGN_OR_RETURN(auto steps,
                      ListCheckpoints((std::filesystem::path(dir) / "rank-0").string()));
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const int64_t step = it->first;
    StatusOr<int64_t> size = JobSizeOfStep(dir, step);
    if (!size.ok()) {
      out.incomplete.push_back({step, 0, size.status().message()});
      continue;
    }
    std::string missing;
    for (int64_t r = 1; r < *size && missing.empty(); ++r) {
      const std::string file = RankFile(dir, r, step);
      if (!std::filesystem::exists(file)) missing = file;
    }
    if (missing.empty()) {
      out.complete.push_back({step, *size});
    } else {
      out.incomplete.push_back({step, *size, fmt::format("{} is missing", missing)});
    }
  }
  return out;
}

StatusOr<std::optional<JobStep>> NewestCompleteJobStep(const std::string& dir) {
  PX_ASSIGN_OR_RETURN(const CompleteJobSteps steps, FindCompleteJobSteps(dir));
  if (!steps.complete.empty()) return std::optional<JobStep>(steps.complete.front());
  if (steps.incomplete.empty()) return std::optional<JobStep>();
  const IncompleteJobStep& newest = steps.incomplete.front();
  if (newest.job_size == 0) {
    return FailedPreconditionError("{}: no checkpoint step is complete (the newest: {})", dir,
                                   newest.problem);
  }
  return FailedPreconditionError("{}: no checkpoint step is on every one of the {} ranks that "
                                 "wrote it ({})",
                                 dir, newest.job_size, newest.problem);
}

StatusOr<RankFileContents> ReadRankFile(const std::string& path) {
  RankFileContents out{.source = path};
  PX_ASSIGN_OR_RETURN(out.contents, ReadSafetensors(path));
  if (!out.contents.metadata.contains("job_size")) return out;  // not a job's
  PX_ASSIGN_OR_RETURN(const std::string_view layout, LayoutOf(out.contents.metadata, path));
  PX_ASSIGN_OR_RETURN(const int64_t rank, MetadataCount(out.contents, "job_rank", path));
  if (layout != kLayoutReplicatedOnce || rank == 0) return out;
  PX_ASSIGN_OR_RETURN(const int64_t job_size, MetadataCount(out.contents, "job_size", path));

  // DIR/rank-R/checkpoint-S.safetensors -> DIR/rank-0/checkpoint-S.safetensors
  const std::filesystem::path file(path);
  const std::filesystem::path rank_dir =
      file.has_parent_path() ? file.parent_path() : std::filesystem::current_path();
  const std::string first = (rank_dir.parent_path() / "rank-0" / file.filename()).string();
  if (!std::filesystem::exists(first)) {
    return FailedPreconditionError("{}: missing: {} ({} '{}') leaves its replicated tensors to "
                                   "rank 0's file of the same step",
                                   first, path, kJobLayoutKey, kLayoutReplicatedOnce);
  }
  PX_ASSIGN_OR_RETURN(SafetensorsContents rank0, ReadSafetensors(first));
  PX_ASSIGN_OR_RETURN(const int64_t rank0_rank, MetadataCount(rank0, "job_rank", first));
  PX_ASSIGN_OR_RETURN(const int64_t rank0_size, MetadataCount(rank0, "job_size", first));
  if (rank0_rank != 0 || rank0_size != job_size) {
    return InvalidArgumentError("{}: __metadata__ 'job_rank' {} and 'job_size' {}: not rank 0 of "
                                "the {}-rank job that wrote {}",
                                first, rank0_rank, rank0_size, job_size, path);
  }
  for (auto& [name, tensor] : rank0.tensors) {
    // Rank 0's partitions are its own rows, never another rank's.
    if (rank0.metadata.contains(std::string(kRowsMetadataPrefix) + name)) continue;
    out.contents.tensors.emplace(name, std::move(tensor));  // the rank's own copy wins
  }
  out.source = fmt::format("{} (replicated tensors: {})", path, first);
  return out;
}

StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir) {
  PX_ASSIGN_OR_RETURN(std::optional<JobStep> newest, NewestCompleteJobStep(dir));
  if (!newest) {
    return FailedPreconditionError("{}: no job checkpoint (no file in {}/rank-0)", dir, dir);
  }
  return ReadJobCheckpoint(dir, newest->step);
}

StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir, int64_t step) {
  JobCheckpoint out;
  out.dir = dir;
  out.step = step;
  const std::string first = RankFile(dir, 0, step);
  if (!std::filesystem::exists(first)) {
    return FailedPreconditionError("{}: missing: the job checkpoint of step {} has no rank 0 "
                                   "file",
                                   first, step);
  }
  PX_ASSIGN_OR_RETURN(SafetensorsContents rank0, ReadSafetensors(first));
  PX_ASSIGN_OR_RETURN(out.job_size, MetadataCount(rank0, "job_size", first));
  if (out.job_size < 1) {
    return InvalidArgumentError("{}: __metadata__ 'job_size' is 0, not a rank count", first);
  }
  // Partitioned tensors by their full name V, each file's piece in rank order.
  std::map<std::string, std::vector<Piece>> pieces;
  for (int64_t r = 0; r < out.job_size; ++r) {
    const std::string path = RankFile(dir, r, step);
    out.files.push_back(path);
    SafetensorsContents contents;
    if (r == 0) {
      contents = std::move(rank0);
    } else {
      if (!std::filesystem::exists(path)) {
        return FailedPreconditionError("{}: missing: the job checkpoint of step {} was written "
                                       "by {} ranks (rank 0's job_size) but rank {} has no file",
                                       path, step, out.job_size, r);
      }
      PX_ASSIGN_OR_RETURN(contents, ReadSafetensors(path));
      PX_ASSIGN_OR_RETURN(int64_t size, MetadataCount(contents, "job_size", path));
      if (size != out.job_size) {
        return InvalidArgumentError("{}: __metadata__ 'job_size' is {}, rank 0's file says {}",
                                    path, size, out.job_size);
      }
    }
    PX_ASSIGN_OR_RETURN(int64_t job_rank, MetadataCount(contents, "job_rank", path));
    if (job_rank != r) {
      return InvalidArgumentError("{}: __metadata__ 'job_rank' is {}, expected {} (the rank of "
                                  "its directory)",
                                  path, job_rank, r);
    }
    PX_RETURN_IF_ERROR(LayoutOf(contents.metadata, path).status());
    for (const auto& [key, value] : contents.metadata) {
      if (!key.starts_with(kRowsMetadataPrefix)) continue;
      const std::string local = key.substr(kRowsMetadataPrefix.size());
      if (!std::string_view(local).ends_with(kLocalStorageSuffix)) {
        return InvalidArgumentError("{}: __metadata__ '{}': '{}' is not a parameter server's "
                                    "local storage (<var>{})",
                                    path, key, local, kLocalStorageSuffix);
      }
      StatusOr<std::vector<RowRange>> ranges = ParseRowRanges(value);
      if (!ranges.ok()) return ranges.status().WithPrefix(fmt::format("{}: {}", path, key));
      auto tensor = contents.tensors.find(local);
      if (tensor == contents.tensors.end()) {
        if (ranges->empty()) continue;  // owns nothing
        return InvalidArgumentError("{}: variable '{}' is missing (its rows '{}' are named in "
                                    "the metadata)",
                                    path, local, value);
      }
      const Tensor& t = tensor->second;
      int64_t rows = 0;
      for (const RowRange& range : *ranges) rows += range.rows();
      if (t.rank() < 1 || t.dim(0) != rows) {
        return InvalidArgumentError("{}: variable '{}' is {}, its row ranges '{}' hold {} rows",
                                    path, local, t.shape().DebugString(), value, rows);
      }
      const std::string name = local.substr(0, local.size() - kLocalStorageSuffix.size());
      pieces[name].push_back({path, t, std::move(ranges).value()});
    }
    if (r == 0) {
      out.metadata = contents.metadata;
      for (auto& [name, tensor] : contents.tensors) {
        if (!contents.metadata.contains(std::string(kRowsMetadataPrefix) + name)) {
          out.variables.emplace(name, tensor);
        }
      }
    }
  }

  for (auto& [name, list] : pieces) {
    if (out.variables.contains(name)) {
      return InvalidArgumentError("{}: variable '{}' is both replicated (in rank 0's file) and "
                                  "partitioned ('{}{}' in {})",
                                  out.files[0], name, name, kLocalStorageSuffix, list[0].file);
    }
    const Tensor& model = list[0].tensor;
    // Which file holds each row range; checked to cover [0, rows) exactly once.
    std::vector<std::pair<RowRange, const Piece*>> ranges;
    for (const Piece& piece : list) {
      if (piece.tensor.dtype() != model.dtype() || RowShape(piece.tensor) != RowShape(model)) {
        return InvalidArgumentError(
            "{}: variable '{}{}' is {} with rows {}, {} holds {} with rows {}", piece.file, name,
            kLocalStorageSuffix, SafetensorsDtypeName(piece.tensor.dtype()),
            RowShape(piece.tensor).DebugString(), list[0].file,
            SafetensorsDtypeName(model.dtype()), RowShape(model).DebugString());
      }
      for (const RowRange& range : piece.ranges) ranges.push_back({range, &piece});
    }
    std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
      return a.first.begin < b.first.begin;
    });
    int64_t next = 0;
    const std::string* previous_file = nullptr;
    for (const auto& [range, piece] : ranges) {
      if (range.begin > next) {
        return InvalidArgumentError("{}: variable '{}': no file of step {} holds rows {}-{} (the "
                                    "row ranges have a gap)",
                                    dir, name, step, next, range.begin);
      }
      if (range.begin < next) {
        return InvalidArgumentError("{}: variable '{}{}': rows {}-{} are also in {}", piece->file,
                                    name, kLocalStorageSuffix, range.begin,
                                    std::min(next, range.end), *previous_file);
      }
      next = range.end;
      previous_file = &piece->file;
    }
    TensorShape shape = model.shape();
    shape.set_dim(0, next);
    Tensor full(model.dtype(), shape);
    const int64_t row_bytes = RowBytes(model);
    for (const Piece& piece : list) {
      const auto* src = static_cast<const char*>(piece.tensor.raw_data());
      for (const RowRange& range : piece.ranges) {
        if (row_bytes > 0) {
          std::memcpy(static_cast<char*>(full.raw_data()) + range.begin * row_bytes, src,
                      static_cast<size_t>(range.rows() * row_bytes));
        }
        src += range.rows() * row_bytes;
      }
    }
    out.variables.emplace(name, std::move(full));
    out.partitioned.insert(name);
  }
  return out;
}

}  // namespace parallax
