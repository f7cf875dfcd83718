// Trainer: the logic of `parallax run` for one process — find what to run, feed it,
// step it, log it, checkpoint it, resume it.
//
// Terms:
//  - the *train op*, *init op* and *loss* come from the training analysis (best
//    candidate each) unless named by options; the loss is fetched as "<node>:0".
//  - the *inputs* of the train step are the placeholders without defaults that the
//    train op and loss depend on, and the outputs of in-graph input pipelines
//    (QueueDequeueMany, IteratorGetNext, ...) that they read. A placeholder needs a
//    source: `--feed NAME=SRC` (NAME any tensor name: "x", "x:0", "queue/DequeueMany:1";
//    SRC a data file, FILE:COLUMN of a CSV or TFRecord file, a literal value fed at every
//    step, or `synthetic`), or --synthetic for all of them. An input pipeline runs in
//    the graph (pipeline/): each step first runs it alone (the *input run*: its
//    outputs are fetched) and then feeds what it produced to the train step; feeding
//    its outputs with --feed, or --synthetic, replaces it instead.
//  - a *step* feeds one batch (data/feeder.h and the input run), runs the train op and
//    fetches the loss. `steps` is the total the run trains to, counted from the first
//    step of training, so rerunning the same command with --resume finishes an
//    interrupted run. Without --steps a run with an in-graph pipeline trains until the
//    pipeline ends (its OutOfRange); in a job every rank stops at the first step that
//    any rank's pipeline cannot fill (one integer all-reduce per step agrees on it).
//  - *initialisation*: the init op, then the initializer of every variable it left
//    uninitialised (the Assign of its initial value; a graph without an init op has
//    only those), in dependency order, then the initializers of the in-graph pipeline
//    (MakeIterator).
//  - *resume* restores every variable and the data position from the newest checkpoint
//    that reads back (a corrupt newer one is skipped with a warning naming it) instead
//    of running the init op; an in-graph pipeline is initialised and replayed:
//    its input run is repeated once per step already trained, so it continues exactly
//    where it was. The random streams continue from the checkpoint's positions (random.h),
//    so with deterministic kernels the resumed run is bit-identical to an uninterrupted
//    one, dropout included.
//  - *random streams*: initialisation draws from stream 0 on every rank (the initial
//    values one device draws); the steps of rank r draw from stream r.
//  - sharding: ShardSpec picks this rank's part of each epoch (data/sampler.h).
//  - a *job rank* (options.communicator set, `parallax run job/`): the device gets the
//    communicator (the rank graph's collectives use it), the loss reported is the mean
//    over ranks (one scalar all-reduce at report, first and last steps), and checkpoints
//    go to CHECKPOINT_DIR/rank-R/ in the "replicated-once" layout (job_checkpoint.h): the
//    variables every rank holds identically (all-reduced, all-gathered, densified, and
//    their optimizer slots: Plan::IdenticalOnEveryRank) in rank 0's file only; every
//    rank's file has its parameter-server rows, its other variables (local state) and
//    its own training state, with job_rank, job_size, job_layout and the row ranges in
//    the metadata. A resume restores the newest step that every rank has and reads back
//    (each step judged by the job size that wrote it; a corrupt newer file is skipped
//    with a warning naming it; a rank without any file while others have files is an
//    error naming it, not a fresh start), each rank from its own file and what that file
//    lacks from rank 0's (ReadRankFile: the directory must be readable by every rank).
//    A checkpoint of another rank count is restored from
//    all the old ranks' files (job_checkpoint.h): replicated variables from rank 0's,
//    parameter-server variables reassembled and re-sliced for this job's plan, the data
//    position converted between shard sizes.
//  - test hook: PARALLAX_TEST_SAVE_RESTORED=DIR makes a resumed run write the checkpoint
//    it just restored, as this rank holds it, to DIR (DIR/rank-R in a job), so tests can
//    compare a re-sliced restore bit for bit.
//  - test hook: PARALLAX_TEST_SHARED_RANDOM_STREAM=1 makes every rank of a job draw rank
//    0's random numbers (a planted bug for verify's tests).
//  - test hook: PARALLAX_TEST_FAIL_AT_STEP=R:S makes rank R (0 when not a job) kill
//    itself with SIGKILL before step S; R:S:error makes Run return an error there
//    instead, R:S:stop stops the process with SIGSTOP (for failure tests; never set it
//    otherwise).
#ifndef PARALLAX_LIB_RUNTIME_TRAINER_H_
#define PARALLAX_LIB_RUNTIME_TRAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/base/json_writer.h"
#include "lib/base/status.h"
#include "lib/graph/graph.h"
#include "lib/plan/plan.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/data/feeder.h"
#include "lib/runtime/data/sampler.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/summary/event_file.h"
#include "lib/runtime/timeline.h"

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

// Kernel threads per core beyond which --threads is refused.
inline constexpr int kMaxThreadsPerCore = 4;

enum class BatchOrder {
  kAsRead,
  kReversed,     // the last example first
  kRotatedHalf,  // the second half first, then the first half
};

struct TrainerOptions {
  std::vector<FeedSpec> feeds;
  std::vector<FeedSpec> eval_feeds;
  bool synthetic = false;      // every input without a --feed gets synthetic data
  int64_t batch = 0;           // <= 0: the graph's, else kDefaultBatchSize
  int64_t steps = -1;          // total steps; < 0: from epochs, else one epoch (files),
                               // until an in-graph pipeline ends, or kDefaultSyntheticSteps
  double epochs = -1;          // total epochs; < 0: not given
  uint64_t seed = 0;           // shuffling and synthetic data
  bool shuffle = true;
  std::string train_op, loss, init_op;  // overrides of the analysis's choice
  std::string metrics_path;    // JSON lines; appended to on resume
  // TensorBoard event files here (rank 0 of a job only): every log_every steps the
  // graph's summaries (its MergeSummary outputs, else its summary ops) and Parallax's
  // scalars parallax/loss, parallax/examples_per_sec (and parallax/bytes_sent in a job).
  std::string summary_dir;
  int64_t log_every = 10;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: only at the end
  int keep_checkpoints = kDefaultKeepCheckpoints;
  // In a job, every rank writes its own copy of every variable (job_layout "every-rank")
  // instead of leaving what every rank holds identically to rank 0: for `parallax verify`,
  // which compares every rank's copy.
  bool checkpoint_every_rank = false;
  bool resume = false;          // a checkpoint to resume must exist ...
  bool resume_if_exists = false;  // ... unless this is set (then: the init op)
  // Start from this checkpoint (a TF prefix or directory with a `checkpoint` file, or
  // safetensors) instead of the initial values: when the graph's initializers restore a
  // checkpoint themselves (a fine-tuning graph's checkpoint_initializer), they read it
  // where the path they name is missing; otherwise every variable is restored from it
  // by name after initialisation, and a missing or mis-shaped one is an error.
  std::string init_checkpoint;
  std::string init_checkpoint_flag = "--init-checkpoint";  // names it in messages
  int threads = 0;             // <= 0: one per core
  // Train on this GPU (0-based, of those the process sees); -1: the CPU. The GPU runs the
  // ops it has kernels for, the host the rest (executor.h, Placement); `threads` is then
  // the host's.
  int gpu = -1;
  // The GPU's float matrix products and convolutions (device.h): fp32 unless tf32 or bf16
  // is asked for; anything but fp32 needs a GPU.
  GpuPrecision precision = GpuPrecision::kFp32;
  // In a job of several ranks: collectives run on a communication thread of their own,
  // overlapping the compute of the step (executor.h, Concurrency). Off (the default: on
  // 2 shared cores the waiting thread slowed steps by 1.07-1.18x, bench/bucket_bench.sh):
  // one node at a time. The results are the same bits either way.
  bool overlap = false;
  // A Chrome trace of the run (timeline.h) is written here when it ends: a file, or in a
  // job a directory (made when missing) with one file per rank, rank-R.trace.json.
  std::string timeline;
  ShardSpec shard;
  // The order of each batch's examples of the fed columns: as read, or permuted — the
  // same examples, summed in another order (`parallax verify` measures the reference's
  // own float noise with it).
  BatchOrder batch_order = BatchOrder::kAsRead;
  InputOptions input;          // in-graph pipelines: --input-dir/--input-map (shard: set here)
  // Set when the job's plan put this rank on a GPU and it trains on the CPU instead
  // (`--cpu-fallback`): "GPU 0 of host-a". Every metrics line then says
  // "cpu_fallback_from".
  std::string cpu_fallback_from;
  Communicator* communicator = nullptr;  // set: this trainer is one rank of a job
  const Plan* plan = nullptr;            // the job's plan (row ranges in checkpoints)
};

// `--resume` found no checkpoint in `dir` (NotFound, naming it and --resume=if-exists).
Status NoCheckpointToResume(const std::string& dir);

struct StepReport {
  int64_t step = 0;         // steps completed
  int64_t total_steps = 0;  // < 0: until the in-graph pipeline ends
  int64_t start_step = 0;   // the step this run started at (a resumed run's checkpoint)
  std::optional<double> loss;  // in a job: the mean over ranks
  double examples_per_sec = 0;  // this rank's, over the steps since the previous report
  // Every rank's: examples_per_sec × world_size (the ranks step in lockstep with the same
  // batch).
  double global_examples_per_sec = 0;
  int world_size = 1;
  double elapsed_seconds = 0;   // since this run started (initialisation excluded)
  double wall_time = 0;         // seconds since the Unix epoch
  DataPosition position;        // this rank's position in its shard of the --feed data
  // Epochs of the --feed data read so far, with the fraction of the current one (every
  // shard advances alike); < 0 when the data comes from an in-graph pipeline.
  double epochs_done = -1;
};

struct EvalResult {
  int64_t examples = 0;
  std::optional<double> accuracy;  // when logits and labels were identified
  std::optional<double> loss;      // mean over examples, when a loss is known
  std::string prediction;          // "argmax of 'logits:0' vs 'y:0'"
  // Per class (the label's index, 0 .. the logits' width - 1), when accuracy is known:
  // examples whose label is the class, and how many of those were predicted right.
  std::vector<int64_t> class_examples, class_correct;
};

struct TrainSummary {
  int64_t start_step = 0;
  int64_t end_step = 0;
  std::optional<double> first_loss, last_loss;
  double examples_per_sec = 0;         // this rank's
  double global_examples_per_sec = 0;  // every rank's
  double elapsed_seconds = 0;
  std::string resumed_from;     // the checkpoint restored, if any
  std::string last_checkpoint;  // the checkpoint written last, if any
  std::optional<EvalResult> eval;
};

// An evaluation's fields, into an open JSON object: examples, accuracy, loss (null when
// unknown), prediction and classes ([{class, examples, correct}], when known).
void WriteEvalFields(const EvalResult& eval, JsonWriter& json);

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
  // evaluation when eval feeds were given. `on_start` is called once initialised (step()
  // and resumed_from() then say where the run starts), `on_report` at every
  // log_every-th step and the last.
  StatusOr<TrainSummary> Run(const std::function<void(const StepReport&)>& on_report = nullptr,
                             const std::function<void()>& on_start = nullptr);
  // One pass over the eval feeds in file order.
  StatusOr<EvalResult> Evaluate();

  // The feeds of the examples `ids`, as Step() feeds its batch: for callers that pick
  // the examples themselves (`parallax verify --accumulate` reads every rank's shard).
  StatusOr<std::vector<std::pair<std::string, Tensor>>> FeedsFor(
      std::span<const int64_t> ids) const {
    return feeder_->Feeds(ids);
  }
  // The feeds of one micro-batch as Step() feeds a step: the examples `ids` of the fed
  // columns (ignored when nothing is fed from columns), the literal feeds, and the next
  // outputs of the in-graph input pipeline as `pipeline` reads it (a trainer of the same
  // graph on another shard: `parallax verify --accumulate` reads every rank's; this
  // trainer's own when null). OutOfRange when the pipeline ended.
  StatusOr<std::vector<std::pair<std::string, Tensor>>> MicroBatchFeeds(
      std::span<const int64_t> ids, Trainer* pipeline = nullptr);
  // Examples per epoch over all shards (the data's, or kSyntheticEpochExamples).
  int64_t examples_per_epoch() const { return num_examples_; }
  const std::string& fingerprint() const { return fingerprint_; }

  Executor& executor() { return *executor_; }
  int world_size() const;  // the job's ranks; 1 outside a job
  // The checkpoint Initialize() restored ("" when it ran the init op).
  const std::string& resumed_from() const { return resumed_from_; }
  int64_t step() const { return step_; }
  // < 0: until the in-graph input pipeline ends.
  int64_t total_steps() const { return total_steps_; }
  // The batch of the feeds, else of the in-graph pipeline (0 until its first step).
  int64_t batch_size() const { return feeds_batch() ? feeder_->batch_size() : pipeline_batch_; }
  // Whether the batch is the options' (the feeds' placeholders leave it open), not fixed
  // by the graph or its input pipeline.
  bool batch_open() const { return feeds_batch() && !feeder_->batch_fixed(); }
  DataPosition position() const { return sampler_->position(); }
  // The tensors the input run fetches each step (empty: no in-graph pipeline).
  const std::vector<std::string>& pipeline_outputs() const { return pipeline_outputs_; }
  const std::string& train_op() const { return train_op_; }
  const std::string& loss() const { return loss_; }  // "" when none
  const std::string& init_op() const { return init_op_; }  // "" when none was found
  // One line per fed input, for logs: "x <- train.idx: scale uint8 [28,28] to float [784]".
  std::vector<std::string> DescribeFeeds() const { return feeder_->Describe(); }
  const std::vector<CheckpointVariable>& variables() const { return variables_; }

 private:
  Trainer(const Graph& graph, TrainerOptions options);
  Status Plan();
  // Makes timeline_ for options_.timeline and hands it to the executor's session; errors
  // name the path (a missing directory, a directory where a file is asked for).
  Status StartTimeline();
  std::string RankCheckpointDir() const;
  std::string RankDir(const std::string& dir) const;  // dir/rank-R in a job, else dir
  StatusOr<std::string> CheckpointTo(const std::string& dir);
  // This rank's variables from a job checkpoint of another rank count: replicated ones as
  // they are, each local storage "V/parallax/local" the rows of the reassembled V that
  // this rank owns in options_.plan. Errors name the checkpoint and the variable.
  StatusOr<SafetensorsContents> ContentsForThisRank(const JobCheckpoint& job) const;
  // After a resume in a job: every variable the plan keeps identical on every rank is
  // compared (a 64-bit fingerprint) with rank 0's copy; FailedPrecondition naming the
  // first that differs on this rank (checkpoint files of different runs, or corrupted
  // in a way no checksum saw).
  Status CheckReplicasAgree(const std::string& restored_from);
  // A checkpoint to resume from, read: its tensors and metadata as this rank restores
  // them.
  struct ResumePoint {
    std::string path;     // this rank's file, or rank 0's of a re-sliced step
    std::string source;   // what messages name (the file, or the files read)
    SafetensorsContents contents;
    int64_t old_job_size = 0;  // re-sliced from a job of this many ranks; 0: not re-sliced
    std::optional<JobCheckpoint> job;  // re-sliced: the job read, until `contents` is taken
  };
  // Outside a job: the newest checkpoint in the directory that reads back, older ones
  // in turn when the newer do not (a warning names each skipped file); nullopt when there
  // is none; the newest's error when none reads.
  StatusOr<std::optional<ResumePoint>> ProcessResumePoint();
  // In a job (collective): the newest complete step that every rank reads back, judged
  // by each step's own job size (FindCompleteJobSteps): this job's size restores each
  // rank's file of that step, another re-slices it. A step that does not read on some
  // rank is skipped with a warning naming the file on that rank. Errors: no complete
  // step (naming the newest step's missing file: the rank and its directory); rank 0
  // without a checkpoint while another rank has some; no complete step that reads back.
  // nullopt when no rank has a checkpoint.
  StatusOr<std::optional<ResumePoint>> JobResumePoint();
  // The mean of `loss` over the job's ranks (collective); `loss` itself outside a job.
  StatusOr<std::optional<double>> JobLoss(std::optional<double> loss);
  // Runs the initializers of the variables still uninitialised, in dependency order.
  Status InitializeRemainingVariables();
  // Every variable from options_.init_checkpoint, by name (see TrainerOptions).
  Status RestoreInitCheckpoint();
  // StepReport::epochs_done at `position`.
  double EpochsDone(const DataPosition& position) const;
  // The random stream index of this trainer's steps: its rank in a job, else 0.
  int StepStreamIndex() const;
  // MakeIterator of the in-graph pipelines; with `replay`, then `step_` input runs.
  Status StartPipeline(bool replay);
  // One input run: the in-graph pipeline's outputs for this step, or OutOfRange at its
  // end (in a job: when any rank's pipeline ended).
  StatusOr<std::vector<Tensor>> InputRun();
  bool feeds_batch() const { return !pipeline_outputs_.empty() ? has_columns_ : true; }
  // The graph's summary tensors the train step can compute (see summary_dir).
  std::vector<std::string> FindSummaries() const;
  // Writes a report's scalars (and flushes) to the event file, when there is one.
  Status WriteReportSummaries(const StepReport& report);

  const Graph& graph_;
  TrainerOptions options_;
  std::string train_op_, init_op_, loss_;
  std::vector<CheckpointVariable> variables_;
  std::string fingerprint_;
  std::vector<NodeId> fed_nodes_;   // what the train step feeds: columns, literals, pipeline
  std::vector<std::pair<std::string, Tensor>> literal_feeds_;  // fed at every step
  std::vector<std::string> pipeline_outputs_;       // fetched by the input run
  std::vector<std::string> pipeline_initializers_;  // MakeIterator nodes
  std::vector<std::pair<std::string, std::string>> initializers_;  // variable, its Assign
  int64_t pipeline_batch_ = 0;  // dim 0 of the last input run's first output
  std::optional<Feeder> eval_feeder_;  // --eval-feed's data, read by Create
  int64_t eval_examples_ = 0;
  bool init_restores_checkpoint_ = false;  // an initializer runs RestoreV2
  std::vector<std::string> summaries_;     // fetched every log_every steps
  std::unique_ptr<EventWriter> events_;    // --summary-dir (rank 0)
  bool has_columns_ = false;    // some input is fed from files or synthetic data
  std::optional<Feeder> feeder_;
  std::optional<Sampler> sampler_;
  int64_t num_examples_ = 0;  // per epoch, all shards
  int64_t total_steps_ = 0;
  int64_t step_ = 0;
  std::string resumed_from_;
  std::unique_ptr<Device> device_;
  // A GPU rank's collectives (NCCL over `options.communicator`); after device_, which it
  // uses, and before executor_, whose kernels use it.
  std::shared_ptr<Communicator> gpu_communicator_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Timeline> timeline_;  // --timeline: recorded by the executor and here
  std::string timeline_path_;           // where timeline_ is written when Run ends
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_TRAINER_H_
