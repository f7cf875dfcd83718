// Job checkpoints read as a whole: the rank files of one step, with every
// parameter-server variable reassembled to its full size — for resuming a job on another
// rank count (trainer.cc), for `parallax verify` and for checkpoint_diff --job.
//
// Terms:
//  - a *job checkpoint* of step S in DIR is the set of files
//    DIR/rank-R/checkpoint-S.safetensors for R = 0 .. job_size-1 (checkpoint.h), written
//    by the ranks of one job; each has the metadata `job_rank` and `job_size`.
//  - a *partitioned* tensor is a parameter server's local storage `V/parallax/local` (a
//    variable or one of its optimizer slots): in each file that holds it, metadata
//    `rows:V/parallax/local` = "b0-e0,b1-e1,..." names the rows of the full V it holds,
//    concatenated in that order (a rank that owns no rows of V has neither). Reassembly
//    puts each range's rows at [b, e) of a tensor [rows, ...] named `V`, rows being the
//    largest e.
//  - every other tensor is *replicated* (all-reduced, local state): identical on every
//    rank, taken from rank 0's file.
// A 1-rank job's checkpoint, or an all-reduce job's, has no partitioned tensors: its full
// variables are rank 0's file. Files without `job_size` are not job checkpoints (a
// single-process run's DIR/checkpoint-S.safetensors).
//
// Validation (errors are one line naming the file and the tensor, InvalidArgument unless
// said): every rank file of the step present (FailedPrecondition naming the first missing
// file); `job_size`/`job_rank` consistent; ranges well formed, within the tensor's rows
// and adding up to them; the pieces of one V agreeing in dtype and row shape; the ranges
// of V over all files covering [0, rows) exactly once (a gap or an overlap names the
// rows and the files); V not also present as a replicated tensor.
//
// Cost: reads all job_size files whole (the full variables are held in memory once).
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_JOB_CHECKPOINT_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_JOB_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// The suffix of a parameter server's local storage: "V/parallax/local".
inline constexpr std::string_view kLocalStorageSuffix = "/parallax/local";
// The metadata key prefix of a local storage's row ranges: "rows:V/parallax/local".
inline constexpr std::string_view kRowsMetadataPrefix = "rows:";

struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t rows() const { return end - begin; }
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

// "0-500,700-1000" -> {{0,500},{700,1000}}; "" -> {}. Errors: anything else, an empty or
// reversed range ("500-200").
StatusOr<std::vector<RowRange>> ParseRowRanges(std::string_view text);
std::string FormatRowRanges(std::span<const RowRange> ranges);  // the inverse

// The rows of `full` (rank >= 1) in `ranges`, concatenated in order: an owner's local
// storage. Errors: a range outside [0, full.dim(0)).
StatusOr<Tensor> SliceRows(const Tensor& full, std::span<const RowRange> ranges);

struct JobCheckpoint {
  std::string dir;
  int64_t step = 0;
  int64_t job_size = 0;
  std::vector<std::string> files;  // by rank
  // Every tensor at full size by its single-device name: the replicated ones from rank
  // 0's file, each partitioned `V/parallax/local` reassembled as `V`.
  std::map<std::string, Tensor> variables;
  // The names in `variables` that were reassembled from row ranges.
  std::set<std::string> partitioned;
  // Rank 0's metadata (format, step, data position, shuffling, fingerprint, job_*, rows:*).
  std::map<std::string, std::string> metadata;
};

// The job_size of the newest file in DIR/rank-0; nullopt when there is none or it is not
// a job's (no `job_size`).
StatusOr<std::optional<int64_t>> JobSizeOfNewestCheckpoint(const std::string& dir);

// The newest step of which every rank 0 .. job_size-1 of the job that wrote rank 0's
// newest file has a file; nullopt when DIR/rank-0 has no checkpoint.
// FailedPrecondition when no step is complete.
StatusOr<std::optional<int64_t>> NewestCompleteJobStep(const std::string& dir);

// Reads and reassembles the job checkpoint of `step` in `dir` (see the file comment).
StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir, int64_t step);
// ... of NewestCompleteJobStep(dir); FailedPrecondition when there is none.
StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_JOB_CHECKPOINT_H_
