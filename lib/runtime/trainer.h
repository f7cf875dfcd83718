// Trainer: the logic of `parallax run` for one process — find what to run, feed it,
// step it, log it, checkpoint it, resume it.
//
// Terms:
//  - the *train op*, *init op* and *loss* come from the training analysis (best
//    candidate each) unless named by options; the loss is fetched as "<node>:0".
//  - the *inputs* of the train step are the placeholders without defaults that the
//    train op and loss depend on, and the outputs of in-graph input pipelines
//    (QueueDequeueMany, IteratorGetNext, ...) that they read. Each needs a source:
//    `--feed NAME=SRC` (NAME any tensor name: "x", "x:0", "queue/DequeueMany:1"), or
//    `synthetic` data for all of them with --synthetic. Feeding a pipeline's outputs
//    replaces the pipeline: the executor does not run what is fed.
//  - a *step* feeds one batch (data/feeder.h), runs the train op and fetches the loss.
//    `steps` is the total the run trains to, counted from the first step of training,
//    so rerunning the same command with --resume finishes an interrupted run.
//  - *resume* restores every variable and the data position from the newest checkpoint
//    instead of running the init op. With deterministic kernels the resumed run is
//    bit-identical to an uninterrupted one. Not restored: the state of random ops
//    inside the train step (e.g. dropout's generator) — a seeded kernel's Philox counter
//    starts at 0 again in a new process, so it repeats its first draws after a resume, so graphs with in-step random ops continue correctly but not
//    bit-identically. Initialisers' random ops do not matter (their results are
//    overwritten by the checkpoint).
//  - sharding: ShardSpec picks this rank's part of each epoch (data/sampler.h).
//  - a *job rank* (options.communicator set, `parallax run job/`): the device gets the
//    communicator (the rank graph's collectives use it), the loss reported is the mean
//    over ranks (one scalar all-reduce at report, first and last steps), and checkpoints
//    go to CHECKPOINT_DIR/rank-R/ (each rank its own variables, with job_rank, job_size
//    and the row ranges of parameter-server storage in the metadata); a resume restores the
//    newest step that every rank has. A checkpoint of another rank count is restored from
//    all the old ranks' files (job_checkpoint.h): replicated variables from rank 0's,
//    parameter-server variables reassembled and re-sliced for this job's plan, the data
//    position converted between shard sizes.
//  - test hook: PARALLAX_TEST_SAVE_RESTORED=DIR makes a resumed run write the checkpoint
//    it just restored, as this rank holds it, to DIR (DIR/rank-R in a job), so tests can
//    compare a re-sliced restore bit for bit.
//  - test hook: PARALLAX_TEST_FAIL_AT_STEP=R:S makes rank R (0 when not a job) kill
//    itself with SIGKILL before step S; R:S:error makes Run return an error there
//    instead (for failure tests; never set it otherwise).
#ifndef PARALLAX_LIB_RUNTIME_TRAINER_H_
#define PARALLAX_LIB_RUNTIME_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/data/feeder.h"
#include "lib/runtime/data/sampler.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"

namespace parallax {

// Steps of a run over synthetic data only, when neither steps nor epochs are given.
inline constexpr int64_t kDefaultSyntheticSteps = 100;

// One `--feed NAME=SRC`.
struct FeedSpec {
  std::string name;    // tensor name
  std::string source;  // a file path or "synthetic"
};
// Splits at the first '=' (tensor names never contain one): "x=a.npy", "q/Deq:1=y.idx".
// Errors: "--feed 'x': expected NAME=SRC (SRC: a .npy or IDX file, or synthetic)".
StatusOr<FeedSpec> ParseFeedSpec(std::string_view text, std::string_view flag = "--feed");

struct TrainerOptions {
  std::vector<FeedSpec> feeds;
  std::vector<FeedSpec> eval_feeds;
  bool synthetic = false;      // every input without a --feed gets synthetic data
  int64_t batch = 0;           // <= 0: the graph's, else kDefaultBatchSize
  int64_t steps = -1;          // total steps; < 0: from epochs, else one epoch (files) or
                               // kDefaultSyntheticSteps (synthetic only)
  double epochs = -1;          // total epochs; < 0: not given
  uint64_t seed = 0;           // shuffling and synthetic data
  bool shuffle = true;
  std::string train_op, loss, init_op;  // overrides of the analysis's choice
  std::string metrics_path;    // JSON lines; appended to on resume
  int64_t log_every = 10;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: only at the end
  int keep_checkpoints = kDefaultKeepCheckpoints;
  bool resume = false;
  int threads = 0;             // <= 0: one per core
  ShardSpec shard;
  Communicator* communicator = nullptr;  // set: this trainer is one rank of a job
  const Plan* plan = nullptr;            // the job's plan (row ranges in checkpoints)
};

struct StepReport {
  int64_t step = 0;         // steps completed
  int64_t total_steps = 0;
  std::optional<double> loss;
  double examples_per_sec = 0;  // over the steps since the previous report
  double wall_time = 0;         // seconds since the Unix epoch
  DataPosition position;
};

struct EvalResult {
  int64_t examples = 0;
  std::optional<double> accuracy;  // when logits and labels were identified
  std::optional<double> loss;      // mean over batches, when a loss is known
  std::string prediction;          // "argmax of 'logits:0' vs 'y:0'"
};

struct TrainSummary {
  int64_t start_step = 0;
  int64_t end_step = 0;
  std::optional<double> first_loss, last_loss;
  double examples_per_sec = 0;
  std::string resumed_from;     // the checkpoint restored, if any
  std::string last_checkpoint;  // the checkpoint written last, if any
  std::optional<EvalResult> eval;
};

class Trainer {
 public:
  // Analyses `graph` (which must outlive the trainer), loads the data and plans the
  // feeds. Errors: no train op / init op, unknown names, inputs without data, data that
  // cannot be adapted, bad flags.
  static StatusOr<std::unique_ptr<Trainer>> Create(const Graph& graph, TrainerOptions options);
  ~Trainer();

  // Runs the init op, or with `resume` restores the newest checkpoint (a missing one
  // falls back to the init op, with a warning). A graph without an init op can only be
  // resumed.
  Status Initialize();
  // One train step; returns the loss when one is fetched.
  StatusOr<std::optional<double>> Step();
  // Writes a checkpoint of the current step; returns its path.
  StatusOr<std::string> Checkpoint();
  // Initialize(), steps to total_steps() with logs, metrics and checkpoints, then the
  // evaluation when eval feeds were given. `on_report` sees every log_every-th step.
  StatusOr<TrainSummary> Run(const std::function<void(const StepReport&)>& on_report = nullptr);
  // One pass over the eval feeds in file order.
  StatusOr<EvalResult> Evaluate();

  // The feeds of the examples `ids`, as Step() feeds its batch: for callers that pick
  // the examples themselves (`parallax verify --accumulate` reads every rank's shard).
  StatusOr<std::vector<std::pair<std::string, Tensor>>> FeedsFor(
      std::span<const int64_t> ids) const {
    return feeder_->Feeds(ids);
  }
  // Examples per epoch over all shards (the data's, or kSyntheticEpochExamples).
  int64_t examples_per_epoch() const { return num_examples_; }
  const std::string& fingerprint() const { return fingerprint_; }

  Executor& executor() { return *executor_; }
  int64_t step() const { return step_; }
  int64_t total_steps() const { return total_steps_; }
  int64_t batch_size() const { return feeder_->batch_size(); }
  DataPosition position() const { return sampler_->position(); }
  const std::string& train_op() const { return train_op_; }
  const std::string& loss() const { return loss_; }  // "" when none
  const std::string& init_op() const { return init_op_; }  // "" when none was found
  // One line per fed input, for logs: "x <- train.idx: scale uint8 [28,28] to float [784]".
  std::vector<std::string> DescribeFeeds() const { return feeder_->Describe(); }
  const std::vector<CheckpointVariable>& variables() const { return variables_; }

 private:
  Trainer(const Graph& graph, TrainerOptions options);
  Status Plan();
  std::string RankCheckpointDir() const;
  std::string RankDir(const std::string& dir) const;  // dir/rank-R in a job, else dir
  StatusOr<std::string> CheckpointTo(const std::string& dir);
  // This rank's variables from a job checkpoint of another rank count: replicated ones as
  // they are, each local storage "V/parallax/local" the rows of the reassembled V that
  // this rank owns in options_.plan. Errors name the checkpoint and the variable.
  StatusOr<SafetensorsContents> ContentsForThisRank(const JobCheckpoint& job) const;
  // The mean of `loss` over the job's ranks (collective); `loss` itself outside a job.
  StatusOr<std::optional<double>> JobLoss(std::optional<double> loss);

  const Graph& graph_;
  TrainerOptions options_;
  std::string train_op_, init_op_, loss_;
  std::vector<CheckpointVariable> variables_;
  std::string fingerprint_;
  std::vector<FeedTarget> inputs_;  // what the train step needs fed
  std::optional<Feeder> feeder_;
  std::optional<Sampler> sampler_;
  int64_t num_examples_ = 0;  // per epoch, all shards
  int64_t total_steps_ = 0;
  int64_t step_ = 0;
  std::string resumed_from_;
  std::unique_ptr<CpuDevice> device_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_TRAINER_H_
