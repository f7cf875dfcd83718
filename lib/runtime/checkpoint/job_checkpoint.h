// Job checkpoints: the rank files of one step, how each rank's file is completed from
// rank 0's, and the whole job read with every parameter-server variable reassembled to
// its full size — for resuming a job (trainer.cc), `parallax checkpoint export`,
// `parallax verify` and checkpoint_diff.
//
// Terms:
//  - a *job checkpoint* of step S in DIR is the set of files
//    DIR/rank-R/checkpoint-S.safetensors for R = 0 .. job_size-1 (checkpoint.h), written
//    by the ranks of one job; each has the metadata `job_rank`, `job_size` and
//    `job_layout`.
//  - a *partitioned* tensor is a parameter server's local storage `V/parallax/local` (a
//    variable or one of its optimizer slots): in each file that holds it, metadata
//    `rows:V/parallax/local` = "b0-e0,b1-e1,..." names the rows of the full V it holds,
//    concatenated in that order (a rank that owns no rows of V has neither). Reassembly
//    puts each range's rows at [b, e) of a tensor [rows, ...] named `V`, rows being the
//    largest e.
//  - every other tensor is *replicated*, a full copy on its rank: *identical* ones are
//    the same on every rank (a variable synchronised by all-reduce, all-gather or
//    densify, and its optimizer slots: Plan::IdenticalOnEveryRank); *per-rank* ones may
//    differ between ranks (local state such as batch-norm moving statistics, `none`
//    variables).
//  - the *layout* (`job_layout`) says where the identical tensors are:
//    "replicated-once": in rank 0's file only; the file of rank R >= 1 holds its
//      partitions, its per-rank tensors and its own metadata (data position, random
//      stream positions), so a job writes its variables about once, not job_size times.
//      What trainer.cc writes when it has the job's plan.
//    "every-rank": every file holds every tensor of its rank graph (a job without a
//      plan; files written before `job_layout` existed have no key and read as this).
//  - a rank file *as its rank holds it* (ReadRankFile): its own tensors and metadata, plus,
//    for a "replicated-once" file of rank R >= 1, every tensor of rank 0's file of the
//    same step that it lacks (except rank 0's partitions). Resume and verify read rank
//    files this way; so does checkpoint_diff given a file.
// A 1-rank job's checkpoint, or an all-reduce job's, has no partitioned tensors: its full
// variables are rank 0's file. Files without `job_size` are not job checkpoints (a
// single-process run's DIR/checkpoint-S.safetensors).
//
// ReadJobCheckpoint takes the replicated tensors (per-rank ones included) from rank 0's
// file and reassembles the partitioned ones from every file. Validation (errors are one
// line naming the file and the tensor, InvalidArgument unless said): every rank file of
// the step present (FailedPrecondition naming the first missing file); `job_size`,
// `job_rank` consistent, `job_layout` known; ranges well formed, within the tensor's rows
// and adding up to them; the pieces of one V agreeing in dtype and row shape; the ranges
// of V over all files covering [0, rows) exactly once (a gap or an overlap names the
// rows and the files); V not also present as a replicated tensor.
//
// Cost: reads all job_size files whole (the full variables are held in memory once);
// ReadRankFile reads the rank's file and, for a "replicated-once" rank R >= 1, rank 0's.
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
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// The suffix of a parameter server's local storage: "V/parallax/local".
inline constexpr std::string_view kLocalStorageSuffix = "/parallax/local";
// The metadata key prefix of a local storage's row ranges: "rows:V/parallax/local".
inline constexpr std::string_view kRowsMetadataPrefix = "rows:";
// The metadata key of a job rank file's layout, and its values (see the file comment).
inline constexpr std::string_view kJobLayoutKey = "job_layout";
inline constexpr std::string_view kLayoutReplicatedOnce = "replicated-once";
inline constexpr std::string_view kLayoutEveryRank = "every-rank";

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

// A step of a job checkpoint and the number of ranks of the job that wrote it.
struct JobStep {
  int64_t step = 0;
  int64_t job_size = 1;
  friend bool operator==(const JobStep&, const JobStep&) = default;
};
struct IncompleteJobStep {
  int64_t step = 0;
  int64_t job_size = 0;  // 0: rank 0's header could not be read
  std::string problem;   // "D/rank-1/checkpoint-40.safetensors is missing", or the read error
};
struct CompleteJobSteps {
  std::vector<JobStep> complete;             // newest first
  std::vector<IncompleteJobStep> incomplete;  // newest first
};

// The job_size of step `step` in DIR: rank 0's file of that step says (its header alone is
// read); 1 for a file without `job_size` (not a job's).
StatusOr<int64_t> JobSizeOfStep(const std::string& dir, int64_t step);

// Every step of DIR/rank-0, each judged by its own job size: complete when every rank
// 0 .. job_size-1 of the job that wrote it has a file of that step. Directories hold
// steps of several jobs after a resume on another rank count (a 3-rank job's incomplete
// step 30 above a 2-rank job's complete step 20). Whether the files read back whole is
// not checked here (the header of rank 0's is read).
StatusOr<CompleteJobSteps> FindCompleteJobSteps(const std::string& dir);

// The newest complete step (FindCompleteJobSteps); nullopt when DIR/rank-0 has no
// checkpoint. FailedPrecondition when no step is complete, naming the newest step's
// problem: `D: no checkpoint step is on every one of the 3 ranks that wrote it
// (D/rank-2/checkpoint-30.safetensors is missing)`.
StatusOr<std::optional<JobStep>> NewestCompleteJobStep(const std::string& dir);

// A checkpoint file as its rank holds it (see the file comment).
struct RankFileContents {
  // The rank's metadata; its tensors and those it leaves to rank 0's file.
  SafetensorsContents contents;
  // The files read, for messages: the file, and when tensors may come from rank 0's,
  // "DIR/rank-2/checkpoint-S.safetensors (replicated tensors:
  // DIR/rank-0/checkpoint-S.safetensors)".
  std::string source;
};

// Reads `path` as its rank holds it. A file that is not a job's (no `job_size`), rank
// 0's, or one of the every-rank layout is returned as read. Errors: a `job_layout` that
// is neither layout; rank 0's file of the step missing (FailedPrecondition naming it);
// rank 0's file of another job (its job_rank or job_size). A tensor in neither
// file is left to the caller (its message names `source`).
StatusOr<RankFileContents> ReadRankFile(const std::string& path);

// Reads and reassembles the job checkpoint of `step` in `dir` (see the file comment).
StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir, int64_t step);
// ... of NewestCompleteJobStep(dir); FailedPrecondition when there is none.
StatusOr<JobCheckpoint> ReadJobCheckpoint(const std::string& dir);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_JOB_CHECKPOINT_H_
