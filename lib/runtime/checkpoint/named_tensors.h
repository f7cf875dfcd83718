// A checkpoint as named tensors, whatever its format: what `parallax run
// --init-checkpoint` restores from and what `parallax checkpoint ls` lists.
//
// ResolveCheckpoint turns what a user names into one checkpoint, trying in order:
//   - a directory holding a `checkpoint` file (tf.train.Saver, CheckpointManager,
//     Estimator model_dir): the prefix its model_checkpoint_path names;
//   - a SavedModel directory (D/variables/variables.index) or its variables/ directory;
//   - a directory of `parallax run` checkpoints (checkpoint-<step>.safetensors): the newest;
//   - a job's checkpoint directory (DIR/rank-R/checkpoint-<step>.safetensors): the newest
//     step every rank wrote, read as the full single-device variables (job_checkpoint.h);
//   - a TensorFlow prefix P (P.index exists), or the file P.index or P.data-* itself;
//   - a `checkpoint` state file: the prefix it names;
//   - a safetensors file, recognised by its content (an 8-byte header length, then '{').
// Errors are one line naming the path and what it is not.
//
// NamedTensorReader lists the tensors (name, dtype, shape, stored bytes), sorted by name,
// and reads one by name. TensorFlow checkpoints read a tensor's bytes when asked (a
// sliced tensor assembled); safetensors files are read whole when opened.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_NAMED_TENSORS_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_NAMED_TENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

// kJob: a job checkpoint directory, its ranks' safetensors files read as one.
enum class CheckpointFormat { kTensorFlow, kSafetensors, kJob };

// "tensorflow", "safetensors", "job".
std::string_view CheckpointFormatName(CheckpointFormat format);

struct CheckpointLocation {
  CheckpointFormat format = CheckpointFormat::kTensorFlow;
  std::string path;  // the TF prefix, the safetensors file, or the job checkpoint directory
  // How `path` was found from what the user named, for messages and `checkpoint ls`:
  // "" when named directly, else e.g. "from ck/checkpoint".
  std::string found;
};

StatusOr<CheckpointLocation> ResolveCheckpoint(const std::string& path);

struct NamedTensorInfo {
  std::string name;
  DataType dtype = tensorflow::DT_INVALID;
  TensorShape shape;
  uint64_t bytes = 0;  // as stored in the file (strings with their lengths)
};

class NamedTensorReader {
 public:
  virtual ~NamedTensorReader() = default;

  const CheckpointLocation& location() const { return location_; }
  // Sorted by name.
  const std::vector<NamedTensorInfo>& tensors() const { return tensors_; }
  const NamedTensorInfo* Find(std::string_view name) const;
  // A safetensors file's __metadata__ (e.g. a `parallax run` checkpoint's step); empty
  // for TensorFlow checkpoints.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The tensor, checked (crc32c for TensorFlow checkpoints). Errors: no such name (the
  // message names the checkpoint), a corrupt or missing file.
  virtual StatusOr<Tensor> Read(std::string_view name) const = 0;

 protected:
  CheckpointLocation location_;
  std::vector<NamedTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

StatusOr<std::unique_ptr<NamedTensorReader>> OpenNamedTensors(const CheckpointLocation& location);
// ResolveCheckpoint, then OpenNamedTensors.
StatusOr<std::unique_ptr<NamedTensorReader>> OpenNamedTensors(const std::string& path);

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_NAMED_TENSORS_H_
