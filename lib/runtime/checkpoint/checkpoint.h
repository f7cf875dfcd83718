// Checkpoints of `parallax run`: every variable of the graph (trainable variables,
// optimizer slots and state such as global_step or Adam's beta powers) by its graph
// name, plus the training state needed to continue exactly where a run stopped.
//
// Files: DIR/checkpoint-<step>.safetensors, written atomically (a temporary sibling
// renamed into place), the newest `keep` kept. Metadata (all strings, as safetensors
// requires):
//   format             "parallax-checkpoint-1"
//   step               train steps completed
//   data_epoch         the data position: epoch ...
//   data_index         ... and examples of it already read (see data/sampler.h)
//   shuffle_seed       the seed of the epoch orders
//   shuffle            "true" / "false"
//   graph_fingerprint  16 hex digits of FNV-1a over the graph's canonical bytes
//   random:<op>@<i>    the position (next Philox block) of random op <op>'s stream i
//                      (lib/runtime/random.h), so a resumed run draws what an
//                      uninterrupted one would
//   ... and CheckpointState::extra, e.g. a job rank's "job_rank", "job_size",
//   "job_layout" and "rows:<tensor>" (the plan's row ranges that a parameter-server
//   variable's local storage holds, "begin-end[,begin-end...]" in the order they are
//   concatenated). A job rank R >= 1 saves only some of its variables, the others being
//   in rank 0's file (job_checkpoint.h).
//
// Restore requires every variable of the graph, with the dtype and shape the graph
// declares; a missing or mismatched variable, or a corrupt file, is one line naming the
// file and the variable. Extra tensors in the file are ignored.
#ifndef PARALLAX_LIB_RUNTIME_CHECKPOINT_CHECKPOINT_H_
#define PARALLAX_LIB_RUNTIME_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/data/sampler.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/tensor.h"

namespace parallax {

inline constexpr std::string_view kCheckpointFormat = "parallax-checkpoint-1";
inline constexpr int kDefaultKeepCheckpoints = 3;
inline constexpr std::string_view kRandomMetadataPrefix = "random:";

struct CheckpointState {
  int64_t step = 0;
  DataPosition position;
  uint64_t shuffle_seed = 0;
  bool shuffle = true;
  std::string graph_fingerprint;
  // Further metadata, written as is; a restore returns every key not listed above.
  std::map<std::string, std::string> extra;
};

// A variable as the graph declares it.
struct CheckpointVariable {
  std::string name;       // the graph name, the key in the file
  std::string store_key;  // its slot in the VariableStore (shared_name, else the name)
  DataType dtype = tensorflow::DT_INVALID;
  bool known_shape = false;  // false: any shape is accepted
  std::vector<int64_t> dims;  // -1 for unknown dimensions
};

// DIR/checkpoint-<step>.safetensors
std::string CheckpointPath(const std::string& dir, int64_t step);

// The checkpoints in `dir` by step, oldest first (temporary files are ignored).
// A missing directory has none.
StatusOr<std::vector<std::pair<int64_t, std::string>>> ListCheckpoints(const std::string& dir);
// The newest checkpoint's path, or nullopt.
StatusOr<std::optional<std::string>> LatestCheckpoint(const std::string& dir);

// Writes the variables and state to CheckpointPath(dir, state.step) (creating `dir`),
// then deletes the temporary files of checkpoints a killed writer left in `dir`
// (checkpoint-S.safetensors.tmp.<pid>: one process writes a directory) and all but the
// newest `keep` checkpoints (keep <= 0 keeps all). Errors: a variable that is not
// initialised, an unwritable directory. Returns the path.
StatusOr<std::string> SaveCheckpoint(const std::string& dir,
                                     const std::vector<CheckpointVariable>& variables,
                                     VariableStore& store, const CheckpointState& state,
                                     int keep = kDefaultKeepCheckpoints);

// Reads `path`, checks every variable and puts the values into `store`. The store is
// changed only when the whole checkpoint is valid.
StatusOr<CheckpointState> RestoreCheckpoint(const std::string& path,
                                            const std::vector<CheckpointVariable>& variables,
                                            VariableStore& store);
// The same for contents already read (e.g. assembled from a job checkpoint of another
// rank count, job_checkpoint.h); `path` names them in messages.
StatusOr<CheckpointState> RestoreCheckpointFrom(const SafetensorsContents& contents,
                                                std::string_view path,
                                                const std::vector<CheckpointVariable>& variables,
                                                VariableStore& store);

// The random streams' positions among a checkpoint's metadata ("random:<stream>"
// entries; values that are not numbers are skipped), by stream.
std::map<std::string, uint64_t> RandomPositionsOf(const std::map<std::string, std::string>& metadata);


}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_CHECKPOINT_CHECKPOINT_H_
