// Session: what the kernels of one graph's run share beyond their inputs — its variables,
// its resources (queues, readers, iterators, ...), its function library, the options of
// its in-graph input pipelines, and a way to run other nodes of the graph. One Session
// per run of a graph (a `parallax run`, one rank of a job); the executors of the graph's
// functions (tf.data map functions, ...) share their graph's Session.
//
// Terms:
//  - the *root* executor runs the graph itself; RunNodes runs nodes of the root graph
//    as a nested step, which is how queue runners fill a queue on demand (pipeline/
//    queue.h): deterministic, on the calling thread.
//  - *input options*: this rank's shard of the in-graph input pipelines, where the file
//    names a graph holds are found (--input-dir, --input-map), the checkpoint that
//    `checkpoint_initializer` restores read when the graph's own path is missing
//    (--init-checkpoint), and the seed of ops whose graph seed is 0.
#ifndef PARALLAX_LIB_RUNTIME_SESSION_H_
#define PARALLAX_LIB_RUNTIME_SESSION_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/runtime/device.h"
#include "lib/runtime/random.h"
#include "lib/runtime/resource.h"
#include "lib/runtime/tensor.h"

namespace parallax {

class Executor;
class FunctionLibrary;
class FunctionRunner;
struct RunRequest;
class Timeline;

// Variables (ref and resource) live here across steps, by name.
class VariableStore {
 public:
  // The slot for `name`, created uninitialised on first use. Pointers stay valid.
  Tensor* Slot(const std::string& name);
  // nullptr when no such variable was ever created.
  Tensor* Find(const std::string& name);
  const std::map<std::string, std::unique_ptr<Tensor>>& all() const { return slots_; }

 private:
  std::map<std::string, std::unique_ptr<Tensor>> slots_;
};

struct InputOptions {
  // In a job: rank `shard_index` of `shard_count` reads its own part of every in-graph
  // input pipeline (docs/pipelines.md says which examples).
  int shard_index = 0;
  int shard_count = 1;
  // A file name the graph holds that does not exist is looked up here: the first
  // `input_map` entry whose OLD is a prefix of it is replaced by NEW; else, with
  // `input_dir`, DIR/<the name's last component>.
  std::string input_dir;
  std::vector<std::pair<std::string, std::string>> input_map;
  // Read by checkpoint_initializer restores (RestoreV2 in an initializer) whose own
  // prefix does not exist.
  std::string init_checkpoint;
  // Mixed into the seeds of random ops whose seeds are 0 (the input pipeline's and the
  // model's: random.h).
  uint64_t seed = 0;
};

class Session {
 public:
  Session(const Graph& root_graph, Device& device, InputOptions input = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Device& device() { return device_; }
  const Graph& root_graph() const { return root_graph_; }
  VariableStore& variables() { return variables_; }
  ResourceStore& resources() { return resources_; }
  // The random ops' streams (random.h), seeded from InputOptions::seed.
  RandomStreams& random() { return random_; }
  const InputOptions& input() const { return input_; }
  void set_input(InputOptions input) {
    input_ = std::move(input);
    random_.set_run_seed(input_.seed);
  }

  // Where the file `name` (as the graph holds it) is found: itself when it exists, else
  // as InputOptions says; unchanged when nothing matches (the reader's error names it).
  std::string ResolveInputPath(const std::string& name) const;

  // The function `func` (a FunctionDef of the root graph's library, with `func.attr`
  // instantiating its attr placeholders), built once and kept. Errors: no library, no
  // such function, a body that does not load.
  StatusOr<FunctionRunner*> Function(const tensorflow::NameAttrList& func);

  // Runs `request` on the root graph as a nested step (the caller's step goes on after).
  // It sees the feeds of the root run in progress too, as the ops of one TF
  // `session.run` see one feed_dict: a queue or staging area filled by its runner during
  // a step (IMPALA's Stage op, run with the train op) reads the step's fed inputs.
  StatusOr<std::vector<Tensor>> RunRoot(const RunRequest& request);
  void set_root(Executor* root) { root_ = root; }
  // The feeds of the root executor's outermost run while it runs; null otherwise.
  const std::vector<std::pair<std::string, Tensor>>* step_feeds() const { return step_feeds_; }
  void set_step_feeds(const std::vector<std::pair<std::string, Tensor>>* feeds) {
    step_feeds_ = feeds;
  }

  // Where the executors of this run record a span per kernel (timeline.h); null: nothing
  // is recorded. Not owned: it must outlive the runs that record into it.
  Timeline* timeline() const { return timeline_; }
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  const Graph& root_graph_;
  Device& device_;
  InputOptions input_;
  VariableStore variables_;
  ResourceStore resources_;
  RandomStreams random_;
  Executor* root_ = nullptr;
  const std::vector<std::pair<std::string, Tensor>>* step_feeds_ = nullptr;
  Timeline* timeline_ = nullptr;
  std::mutex functions_mu_;
  std::unique_ptr<FunctionLibrary> library_;  // parsed on first use
  std::map<std::string, std::unique_ptr<FunctionRunner>> functions_;  // by instantiation key
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_SESSION_H_
