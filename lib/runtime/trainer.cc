#include "lib/runtime/trainer.h"

#include <csignal>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lib/analysis/training_analysis.h"
#include "lib/base/json_writer.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/comm/communicator.h"

namespace parallax {
namespace {

bool IsPlaceholder(std::string_view op) { return op == "Placeholder" || op == "PlaceholderV2"; }

// Input-pipeline ops whose outputs are the model's input (fed instead of run).
bool IsPipelineOutput(std::string_view op) {
  return op == "QueueDequeueManyV2" || op == "QueueDequeueMany" || op == "QueueDequeueUpToV2" ||
         op == "QueueDequeueUpTo" || op == "QueueDequeueV2" || op == "QueueDequeue" ||
         op == "IteratorGetNext" || op == "IteratorGetNextSync";
}

bool IsSoftmaxXent(std::string_view op) {
  return op == "SoftmaxCrossEntropyWithLogits" || op == "SoftmaxCrossEntropyWithLogitsV2" ||
         op == "SparseSoftmaxCrossEntropyWithLogits";
}

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The mean of a numeric tensor's elements (the loss is normally a scalar).
std::optional<double> MeanValue(const Tensor& t) {
  if (t.num_elements() == 0) return std::nullopt;
  double sum = 0;
  if (t.dtype() == tensorflow::DT_FLOAT) {
    for (float v : t.flat<float>()) sum += v;
  } else if (t.dtype() == tensorflow::DT_DOUBLE) {
    for (double v : t.flat<double>()) sum += v;
  } else {
    return std::nullopt;
  }
  return sum / static_cast<double>(t.num_elements());
}

// Row-wise argmax of a [n, K] float/double tensor.
std::vector<int64_t> ArgMaxRows(const Tensor& t) {
  std::vector<int64_t> out;
  if (t.rank() != 2) return out;
  const int64_t n = t.dim(0), k = t.dim(1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    double best_value = -INFINITY;
    for (int64_t j = 0; j < k; ++j) {
      const double v = t.dtype() == tensorflow::DT_FLOAT ? t.data<float>()[i * k + j]
                                                         : t.data<double>()[i * k + j];
      if (v > best_value) {
        best_value = v;
        best = j;
      }
    }
    out.push_back(best);
  }
  return out;
}

struct Bindings {
  std::vector<Feeder::Binding> list;
  std::set<std::pair<NodeId, int>> fed;  // (node, port)
};

// Binds synthetic columns to `targets`: first those whose `_parallax_synthetic` rule
// stands alone, then those that read another input (labels), so that they read the
// column bound to it (file or synthetic) and agree with what the step is fed.
Status AddSyntheticColumns(const Graph& graph, const std::vector<FeedTarget>& targets,
                           uint64_t seed, std::vector<Feeder::Binding>* list) {
  const ColumnLookup lookup = [list](OutputRef tensor) -> std::shared_ptr<const Column> {
    for (const Feeder::Binding& b : *list) {
      if (b.target.ref == tensor) return b.column;
    }
    return nullptr;
  };
  for (bool reads_input : {false, true}) {
    for (const FeedTarget& target : targets) {
      PX_ASSIGN_OR_RETURN(std::optional<SyntheticRule> rule, FindSyntheticRule(graph, target));
      if ((rule && rule->reads_input()) != reads_input) continue;
      PX_ASSIGN_OR_RETURN(std::shared_ptr<const Column> column,
                          MakeSyntheticColumn(graph, target, seed, lookup));
      list->push_back({target, std::move(column)});
    }
  }
  return Status::Ok();
}

StatusOr<Bindings> BindFeeds(const Graph& graph, const std::vector<FeedSpec>& specs,
                             uint64_t seed, std::string_view flag) {
  Bindings out;
  std::vector<FeedTarget> synthetic;
  for (const FeedSpec& spec : specs) {
    StatusOr<FeedTarget> target = DescribeFeedTarget(graph, spec.name);
    if (!target.ok()) return target.status().WithPrefix(fmt::format("{} {}", flag, spec.name));
    if (!out.fed.insert({target->ref.node, target->ref.port}).second) {
      return InvalidArgumentError("{}: '{}' is fed twice", flag, spec.name);
    }
    if (spec.source == "synthetic") {
      synthetic.push_back(std::move(target).value());
      continue;
    }
    PX_ASSIGN_OR_RETURN(std::shared_ptr<const Column> column, LoadColumnFromFile(spec.source));
    out.list.push_back({std::move(target).value(), std::move(column)});
  }
  PX_RETURN_IF_ERROR(AddSyntheticColumns(graph, synthetic, seed, &out.list));
  return out;
}

StatusOr<Dataset> DatasetOf(const std::vector<Feeder::Binding>& bindings) {
  Dataset dataset;
  for (const Feeder::Binding& b : bindings) PX_RETURN_IF_ERROR(dataset.AddColumn(b.target.tensor, b.column));
  return dataset;
}

// PARALLAX_TEST_FAIL_AT_STEP=R:S[:error] -> S when this is rank R, else -1; `error`
// says whether to fail with an error instead of SIGKILL.
int64_t FailAtStep(int rank, bool* error) {
  const char* text = std::getenv("PARALLAX_TEST_FAIL_AT_STEP");
  if (text == nullptr) return -1;
  int r = -1;
  long long s = -1;
  char mode[16] = {};
  const int n = std::sscanf(text, "%d:%lld:%15s", &r, &s, mode);
  if (n < 2 || r != rank) return -1;
  *error = n == 3 && std::strcmp(mode, "error") == 0;
  return s;
}

// The rows of the full variable that `rank` holds in the local storage `local`
// ("<var or slot>/parallax/local"): the plan's partitions it owns, in partition order;
// nullopt when `local` is not a partitioned variable of the plan.
std::optional<std::vector<RowRange>> OwnedRows(const Plan& plan, int rank,
                                               std::string_view local) {
  if (!local.ends_with(kLocalStorageSuffix)) return std::nullopt;
  const std::string_view base = local.substr(0, local.size() - kLocalStorageSuffix.size());
  for (const VariablePlan& v : plan.variables) {
    if (v.name != base && std::find(v.slots.begin(), v.slots.end(), base) == v.slots.end()) {
      continue;
    }
    std::vector<RowRange> ranges;
    for (const Partition& p : v.partitions) {
      if (p.owner == rank) ranges.push_back({p.row_begin, p.row_end});
    }
    return ranges;
  }
  return std::nullopt;
}

// "rows:<name>" metadata of a job rank's checkpoint: the row ranges of the plan's
// partitions that `rank` owns, for the local storage "<var or slot>/parallax/local".
std::map<std::string, std::string> RowRanges(const Plan& plan, int rank,
                                             const std::vector<CheckpointVariable>& variables) {
  std::map<std::string, std::string> out;
  for (const CheckpointVariable& cv : variables) {
    if (auto ranges = OwnedRows(plan, rank, cv.name)) {
      out.emplace(std::string(kRowsMetadataPrefix) + cv.name, FormatRowRanges(*ranges));
    }
  }
  return out;
}

// PARALLAX_TEST_SAVE_RESTORED=DIR (tests only): the directory into which a resumed run
// writes the checkpoint it restored, as it holds it (DIR/rank-R in a job); "" when unset.
std::string SaveRestoredDir() {
  const char* text = std::getenv("PARALLAX_TEST_SAVE_RESTORED");
  return text == nullptr ? "" : text;
}

}  // namespace

StatusOr<FeedSpec> ParseFeedSpec(std::string_view text, std::string_view flag) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgumentError("{} '{}': expected NAME=SRC (SRC: a .npy or IDX file, or synthetic)",
                                flag, text);
  }
  return FeedSpec{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Trainer::Trainer(const Graph& graph, TrainerOptions options)
    : graph_(graph), options_(std::move(options)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const Graph& graph, TrainerOptions options) {
  std::unique_ptr<Trainer> trainer(new Trainer(graph, std::move(options)));
  PX_RETURN_IF_ERROR(trainer->Plan());
  return trainer;
}

Status Trainer::Plan() {
  const TrainerOptions& o = options_;
  if (o.steps >= 0 && o.epochs >= 0) return InvalidArgumentError("--steps and --epochs exclude each other");
  if (o.log_every < 1) return InvalidArgumentError("--log-every must be at least 1, not {}", o.log_every);
  if (o.checkpoint_every < 0) return InvalidArgumentError("--checkpoint-every must not be negative");
  if (o.resume && o.checkpoint_dir.empty()) return InvalidArgumentError("--resume needs --checkpoint-dir");
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph_));

  // What to run.
  if (!o.train_op.empty()) {
    if (graph_.FindNode(o.train_op) == kNoNode) {
      return NotFoundError("--train-op '{}' names no node in {}", o.train_op, graph_.source());
    }
    train_op_ = o.train_op;
  } else if (analysis.train_ops.empty()) {
    return InvalidArgumentError("{}: no train op found (no node runs a gradient update); name one "
                                "with --train-op",
                                graph_.source());
  } else {
    train_op_ = std::string(graph_.node(analysis.train_ops[0].node).name());
  }
  if (!o.init_op.empty()) {
    if (graph_.FindNode(o.init_op) == kNoNode) {
      return NotFoundError("--init-op '{}' names no node in {}", o.init_op, graph_.source());
    }
    init_op_ = o.init_op;
  } else if (analysis.init_op.node == kNoNode) {
    // Not an error yet: a resumed run restores every variable instead (Initialize).
  } else {
    init_op_ = std::string(graph_.node(analysis.init_op.node).name());
  }
  OutputRef loss_ref;
  if (!o.loss.empty()) {
    StatusOr<OutputRef> ref = ResolveTensorName(graph_, o.loss);
    if (!ref.ok()) return ref.status().WithPrefix("--loss");
    loss_ = o.loss;
    loss_ref = *ref;
  } else if (!analysis.losses.empty()) {
    loss_ref = {analysis.losses[0].node, 0};
    loss_ = graph_.TensorName(loss_ref);
  } else {
    spdlog::warn("{}: no loss found; steps are run without one (name it with --loss)", graph_.source());
  }

  // Variables, by graph name, in their VariableStore slots.
  for (const Variable& v : analysis.variables) {
    if (v.kind == VariableKind::kFrozen) continue;
    CheckpointVariable cv;
    cv.name = v.name;
    cv.store_key = v.name;
    if (auto shared = graph_.node(v.node).FindAttr("shared_name"); shared && !shared->s().empty()) {
      cv.store_key = shared->s();
    }
    cv.dtype = v.dtype;
    cv.known_shape = v.shape.known_rank;
    cv.dims = v.shape.dims;
    variables_.push_back(std::move(cv));
  }
  fingerprint_ = Fingerprint(SerializeGraphDef(graph_));

  // Feeds given, then the inputs the step needs that nothing feeds yet.
  PX_ASSIGN_OR_RETURN(Bindings bindings, BindFeeds(graph_, o.feeds, o.seed, "--feed"));
  std::set<NodeId> fed_nodes;
  for (const auto& [node, port] : bindings.fed) fed_nodes.insert(node);
  std::vector<bool> seen(static_cast<size_t>(graph_.id_limit()), false);
  std::vector<NodeId> stack = {graph_.FindNode(train_op_)};
  if (!loss_.empty()) stack.push_back(loss_ref.node);
  std::vector<std::pair<NodeId, int>> needs;  // unfed (node, port) the step reads
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    const Node& node = graph_.node(id);
    if (IsPipelineOutput(node.op()) || (fed_nodes.contains(id) && !IsPlaceholder(node.op()))) {
      // Every output port that someone reads must be fed.
      std::set<int> ports;
      for (const InputRef& use : node.fanout()) {
        const OutputRef in = graph_.node(use.node).input(use.index);
        if (!in.is_control()) ports.insert(in.port);
      }
      for (int port : ports) {
        if (!bindings.fed.contains({id, port})) needs.emplace_back(id, port);
      }
      continue;
    }
    if (fed_nodes.contains(id)) continue;
    if (IsPlaceholder(node.op())) {
      needs.emplace_back(id, 0);
      continue;
    }
    for (const OutputRef& in : node.inputs()) stack.push_back(in.node);
  }
  std::sort(needs.begin(), needs.end());
  std::vector<std::string> missing;
  std::vector<FeedTarget> synthetic;
  for (const auto& [node, port] : needs) {
    const std::string name = port == 0 && IsPlaceholder(graph_.node(node).op())
                                 ? std::string(graph_.node(node).name())
                                 : graph_.TensorName({node, port});
    PX_ASSIGN_OR_RETURN(FeedTarget target, DescribeFeedTarget(graph_, name));
    if (!o.synthetic) {
      missing.push_back(target.DebugString());
      continue;
    }
    synthetic.push_back(std::move(target));
  }
  if (missing.empty()) {
    PX_RETURN_IF_ERROR(AddSyntheticColumns(graph_, synthetic, o.seed, &bindings.list));
  }
  if (!missing.empty()) {
    return InvalidArgumentError("{} input{} of the train step {} no data: {}; pass --feed NAME=FILE "
                                "(.npy or IDX) for each, or --synthetic",
                                missing.size(), missing.size() == 1 ? "" : "s",
                                missing.size() == 1 ? "has" : "have", fmt::join(missing, ", "));
  }

  PX_ASSIGN_OR_RETURN(Dataset dataset, DatasetOf(bindings.list));
  PX_ASSIGN_OR_RETURN(Feeder feeder, Feeder::Create(std::move(bindings.list), o.batch));
  feeder_.emplace(std::move(feeder));
  PX_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(dataset.num_examples(), o.seed, o.shuffle, o.shard));
  sampler_.emplace(std::move(sampler));
  num_examples_ = dataset.num_examples();

  const int64_t batch = feeder_->batch_size();
  const int64_t per_epoch = sampler_->examples_per_epoch();
  if (o.steps >= 0) {
    total_steps_ = o.steps;
  } else if (o.epochs >= 0) {
    if (!dataset.bounded()) {
      return InvalidArgumentError("--epochs needs data from files; synthetic data has no epochs "
                                  "(use --steps)");
    }
    total_steps_ = static_cast<int64_t>(std::ceil(o.epochs * static_cast<double>(per_epoch) /
                                                  static_cast<double>(batch)));
  } else {
    total_steps_ = dataset.bounded() ? (per_epoch + batch - 1) / batch : kDefaultSyntheticSteps;
  }

  device_ = std::make_unique<CpuDevice>(o.threads);
  device_->set_communicator(o.communicator);
  executor_ = std::make_unique<Executor>(graph_, *device_);
  return Status::Ok();
}

Status Trainer::Initialize() {
  if (options_.resume) {
    Communicator* comm = options_.communicator;
    // A job checkpoint written by another number of ranks (rank 0's newest file says):
    // every rank reads all the old ranks' files of the newest step that they all wrote,
    // reassembles the parameter-server variables from their row ranges and takes the rows
    // it owns in this job's plan (job_checkpoint.h; the directory must be shared between
    // the hosts); the replicated variables are rank 0's. The data position is converted
    // between shard sizes below.
    int64_t old_job_size = 0;
    std::optional<SafetensorsContents> resliced;
    std::optional<std::string> latest;
    if (comm != nullptr) {
      PX_ASSIGN_OR_RETURN(std::optional<int64_t> size,
                          JobSizeOfNewestCheckpoint(options_.checkpoint_dir));
      old_job_size = size.value_or(0);
      if (old_job_size > 0 && old_job_size != comm->size()) {
        PX_ASSIGN_OR_RETURN(JobCheckpoint job, ReadJobCheckpoint(options_.checkpoint_dir));
        PX_ASSIGN_OR_RETURN(resliced, ContentsForThisRank(job));
        old_job_size = job.job_size;
        latest = job.files[0];
      }
    }
    if (!resliced) {
      PX_ASSIGN_OR_RETURN(latest, LatestCheckpoint(RankCheckpointDir()));
    }
    if (!resliced && comm != nullptr) {
      // One consistent job checkpoint: the newest step that every rank has (a rank that
      // died while the others wrote step k leaves k incomplete; k is then skipped).
      PX_ASSIGN_OR_RETURN(auto list, ListCheckpoints(RankCheckpointDir()));
      const int64_t mine = list.empty() ? -1 : list.back().first;
      Communicator::ScopedLabel label(comm, "the checkpoint step to resume from");
      Tensor common = Tensor::Scalar<int64_t>(mine);
      PX_RETURN_IF_ERROR(comm->AllReduce(common, ReduceOp::kMin));
      const int64_t step = common.data<int64_t>()[0];
      const bool have = step < 0 || std::any_of(list.begin(), list.end(),
                                                [&](const auto& c) { return c.first == step; });
      Tensor everyone = Tensor::Scalar<int64_t>(have ? 1 : 0);
      PX_RETURN_IF_ERROR(comm->AllReduce(everyone, ReduceOp::kMin));
      if (everyone.data<int64_t>()[0] == 0) {
        return FailedPreconditionError("{}: no checkpoint step is on every rank (step {} is "
                                       "the newest of one rank but missing on another)",
                                       options_.checkpoint_dir, step);
      }
      if (step < 0) {
        if (mine >= 0) {
          spdlog::warn("rank {}: ignoring {} (another rank has no checkpoint)", comm->rank(),
                       list.back().second);
        }
        latest.reset();
      } else {
        latest = CheckpointPath(RankCheckpointDir(), step);
        if (step != mine) {
          spdlog::warn("rank {}: resuming from step {}, the newest checkpoint every rank has "
                       "(this rank also has step {})",
                       comm->rank(), step, mine);
        }
      }
    }
    if (latest) {
      PX_ASSIGN_OR_RETURN(CheckpointState state,
                          resliced ? RestoreCheckpointFrom(*resliced, *latest, variables_,
                                                           executor_->variables())
                                   : RestoreCheckpoint(*latest, variables_,
                                                       executor_->variables()));
      if (auto size = state.extra.find("job_size");
          !resliced && options_.communicator != nullptr && size != state.extra.end() &&
          size->second != std::to_string(options_.communicator->size())) {
        return FailedPreconditionError("{}: written by a job of {} ranks, this job has {}",
                                       *latest, size->second, options_.communicator->size());
      }
      if (resliced) {
        // The examples of the epoch read so far, over all shards, in the new shard size.
        const int64_t read = state.position.index * old_job_size;
        const int64_t size = options_.communicator->size();
        if (read % size != 0) {
          spdlog::warn("{}: {} examples of epoch {} were read by {} ranks; {} ranks continue "
                       "after {} of them",
                       *latest, read, state.position.epoch, old_job_size, size,
                       read / size * size);
        }
        state.position.index = read / size;
        spdlog::info("{}: written by {} ranks, restored on {}", *latest, old_job_size, size);
      }
      if (!resliced && !state.graph_fingerprint.empty() &&
          state.graph_fingerprint != fingerprint_) {
        spdlog::warn("{}: written for a graph with fingerprint {}, this graph's is {}; variables "
                     "match by name, dtype and shape",
                     *latest, state.graph_fingerprint, fingerprint_);
      }
      if (state.shuffle_seed != sampler_->seed() || state.shuffle != sampler_->shuffle()) {
        spdlog::info("{}: continuing with the checkpoint's shuffling (seed {}, {})", *latest,
                     state.shuffle_seed, state.shuffle ? "shuffled" : "file order");
        PX_ASSIGN_OR_RETURN(Sampler sampler,
                            Sampler::Create(num_examples_, state.shuffle_seed, state.shuffle,
                                            options_.shard));
        sampler_.emplace(std::move(sampler));
      }
      Status seek = sampler_->Seek(state.position);
      if (!seek.ok()) return seek.WithPrefix(*latest);
      step_ = state.step;
      resumed_from_ = *latest;
      spdlog::info("restored {} variables from {} (step {}, epoch {}, index {})", variables_.size(),
                   *latest, state.step, state.position.epoch, state.position.index);
      if (const std::string dir = SaveRestoredDir(); !dir.empty()) {
        PX_RETURN_IF_ERROR(CheckpointTo(RankDir(dir)).status());
      }
      return Status::Ok();
    }
    spdlog::warn("{}: no checkpoint to resume from; starting from the init op",
                 RankCheckpointDir());
  }
  if (init_op_.empty()) {
    return InvalidArgumentError("{}: no init op found (no node initialises the variables); name "
                                "one with --init-op, or --resume from a checkpoint",
                                graph_.source());
  }
  StatusOr<std::vector<Tensor>> init = executor_->Run({.targets = {init_op_}});
  if (!init.ok()) return init.status().WithPrefix(fmt::format("init op '{}'", init_op_));
  return Status::Ok();
}

StatusOr<std::optional<double>> Trainer::Step() {
  const std::vector<int64_t> ids = sampler_->Next(feeder_->batch_size());
  PX_ASSIGN_OR_RETURN(auto feeds, feeder_->Feeds(ids));
  RunRequest request;
  request.feeds = std::move(feeds);
  if (!loss_.empty()) request.fetches.push_back(loss_);
  request.targets.push_back(train_op_);
  StatusOr<std::vector<Tensor>> out = executor_->Run(request);
  if (!out.ok()) return out.status().WithPrefix(fmt::format("step {}", step_ + 1));
  ++step_;
  if (loss_.empty()) return std::optional<double>();
  return MeanValue(out->at(0));
}

StatusOr<std::string> Trainer::Checkpoint() { return CheckpointTo(RankCheckpointDir()); }

StatusOr<std::string> Trainer::CheckpointTo(const std::string& dir) {
  CheckpointState state{.step = step_,
                        .position = sampler_->position(),
                        .shuffle_seed = sampler_->seed(),
                        .shuffle = sampler_->shuffle(),
                        .graph_fingerprint = fingerprint_};
  if (Communicator* comm = options_.communicator) {
    state.extra = {{"job_rank", std::to_string(comm->rank())},
                   {"job_size", std::to_string(comm->size())}};
    if (options_.plan != nullptr) {
      state.extra.merge(RowRanges(*options_.plan, comm->rank(), variables_));
    }
  }
  return SaveCheckpoint(dir, variables_, executor_->variables(), state,
                        options_.keep_checkpoints);
}

StatusOr<SafetensorsContents> Trainer::ContentsForThisRank(const JobCheckpoint& job) const {
  const int rank = options_.communicator->rank();
  const std::string source = fmt::format("{} (step {}, written by {} ranks)", job.dir, job.step,
                                         job.job_size);
  SafetensorsContents out;
  out.metadata = job.metadata;
  std::erase_if(out.metadata, [](const auto& entry) {
    return entry.first.starts_with(kRowsMetadataPrefix);
  });
  for (const CheckpointVariable& v : variables_) {
    if (!std::string_view(v.name).ends_with(kLocalStorageSuffix)) {
      // Replicated here: the full variable (rank 0's, or reassembled when the old job
      // partitioned it). A missing one is reported by RestoreCheckpointFrom.
      if (auto it = job.variables.find(v.name); it != job.variables.end()) {
        out.tensors.emplace(v.name, it->second);
      }
      continue;
    }
    const std::string base = v.name.substr(0, v.name.size() - kLocalStorageSuffix.size());
    std::optional<std::vector<RowRange>> ranges;
    if (options_.plan != nullptr) ranges = OwnedRows(*options_.plan, rank, v.name);
    if (!ranges) {
      return InvalidArgumentError("{}: cannot restore '{}' on another rank count: the job's "
                                  "plan has no partitions for '{}'",
                                  source, v.name, base);
    }
    auto it = job.variables.find(base);
    if (it == job.variables.end()) {
      return InvalidArgumentError("{}: variable '{}' (whose rows '{}' holds) is in no rank's "
                                  "file",
                                  source, base, v.name);
    }
    const Tensor& full = it->second;
    for (const VariablePlan& plan_variable : options_.plan->variables) {
      const bool mine = plan_variable.name == base ||
                        std::find(plan_variable.slots.begin(), plan_variable.slots.end(),
                                  base) != plan_variable.slots.end();
      if (mine && !plan_variable.shape.empty() && plan_variable.shape[0] >= 0 &&
          (full.rank() < 1 || full.dim(0) != plan_variable.shape[0])) {
        return InvalidArgumentError("{}: variable '{}' has {} rows in the checkpoint ({}), the "
                                    "plan's has {}",
                                    source, base, full.rank() < 1 ? 0 : full.dim(0),
                                    full.shape().DebugString(), plan_variable.shape[0]);
      }
    }
    StatusOr<Tensor> rows = SliceRows(full, *ranges);
    if (!rows.ok()) return rows.status().WithPrefix(fmt::format("{}: variable '{}'", source, base));
    out.tensors.emplace(v.name, std::move(rows).value());
  }
  return out;
}

std::string Trainer::RankCheckpointDir() const { return RankDir(options_.checkpoint_dir); }

std::string Trainer::RankDir(const std::string& dir) const {
  if (options_.communicator == nullptr) return dir;
  return (std::filesystem::path(dir) / fmt::format("rank-{}", options_.communicator->rank()))
      .string();
}

StatusOr<std::optional<double>> Trainer::JobLoss(std::optional<double> loss) {
  Communicator* comm = options_.communicator;
  if (comm == nullptr || comm->size() == 1 || loss_.empty()) return loss;
  // Every rank fetches the loss, so every rank has a value (NaN stands in for none).
  Tensor t = Tensor::Scalar<double>(loss.value_or(std::nan("")));
  Communicator::ScopedLabel label(comm, "the reported loss");
  PX_RETURN_IF_ERROR(comm->AllReduce(t, ReduceOp::kMean));
  return std::optional<double>(t.data<double>()[0]);
}

StatusOr<TrainSummary> Trainer::Run(const std::function<void(const StepReport&)>& on_report) {
  PX_RETURN_IF_ERROR(Initialize());
  TrainSummary summary;
  summary.start_step = step_;
  summary.resumed_from = resumed_from_;

  std::FILE* metrics = nullptr;
  // In a job only rank 0 writes the file (every rank may share it): its losses are the
  // job's means.
  const bool writes_metrics =
      options_.communicator == nullptr || options_.communicator->rank() == 0;
  if (!options_.metrics_path.empty() && writes_metrics) {
    metrics = std::fopen(options_.metrics_path.c_str(), resumed_from_.empty() ? "w" : "a");
    if (metrics == nullptr) {
      return InvalidArgumentError("{}: cannot write metrics: {}", options_.metrics_path,
                                  std::strerror(errno));
    }
  }
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f != nullptr) std::fclose(f);
    }
  } closer{metrics};

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point window_start = start;
  int64_t window_steps = 0;
  int64_t saved_step = -1;
  const auto batch = static_cast<double>(feeder_->batch_size());
  bool fail_with_error = false;
  const int64_t fail_at = FailAtStep(
      options_.communicator != nullptr ? options_.communicator->rank() : 0, &fail_with_error);
  while (step_ < total_steps_) {
    if (step_ + 1 == fail_at) {
      // The time lets failure tests measure how long the job takes to end after this.
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
      std::fprintf(stderr, "parallax: PARALLAX_TEST_FAIL_AT_STEP: %s before step %lld at unix "
                           "ms %lld\n",
                   fail_with_error ? "failing" : "killing this rank",
                   static_cast<long long>(fail_at), static_cast<long long>(ms));
      std::fflush(stderr);
      if (fail_with_error) {
        return InternalError("PARALLAX_TEST_FAIL_AT_STEP: injected failure before step {}",
                             fail_at);
      }
      std::raise(SIGKILL);
    }
    PX_ASSIGN_OR_RETURN(std::optional<double> loss, Step());
    // Collective on every rank at the same steps: the first, the reported, the last.
    const bool report_step = step_ % options_.log_every == 0 || step_ == total_steps_;
    if (report_step || step_ == summary.start_step + 1) {
      PX_ASSIGN_OR_RETURN(loss, JobLoss(loss));
    }
    if (step_ == summary.start_step + 1) summary.first_loss = loss;
    summary.last_loss = loss;
    ++window_steps;
    if (report_step) {
      const Clock::time_point now = Clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      StepReport report{.step = step_,
                        .total_steps = total_steps_,
                        .loss = loss,
                        .examples_per_sec = seconds > 0 ? window_steps * batch / seconds : 0,
                        .wall_time = WallTime(),
                        .position = sampler_->position()};
      if (metrics != nullptr) {
        JsonWriter json(0);
        json.BeginObject().Field("step", report.step).Key("loss");
        if (loss) json.Double(*loss);
        else json.Null();
        json.Key("examples_per_sec").Double(report.examples_per_sec);
        json.Key("wall_time").Double(report.wall_time);
        json.EndObject();
        std::fprintf(metrics, "%s\n", json.str().c_str());
        std::fflush(metrics);
      }
      if (on_report) on_report(report);
      window_start = now;
      window_steps = 0;
    }
    if (!options_.checkpoint_dir.empty() && options_.checkpoint_every > 0 &&
        step_ % options_.checkpoint_every == 0) {
      PX_ASSIGN_OR_RETURN(summary.last_checkpoint, Checkpoint());
      saved_step = step_;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  summary.end_step = step_;
  summary.examples_per_sec =
      seconds > 0 ? static_cast<double>(step_ - summary.start_step) * batch / seconds : 0;
  if (!options_.checkpoint_dir.empty() && saved_step != step_ && step_ > summary.start_step) {
    PX_ASSIGN_OR_RETURN(summary.last_checkpoint, Checkpoint());
  }
  if (!options_.eval_feeds.empty()) {
    PX_ASSIGN_OR_RETURN(summary.eval, Evaluate());
  }
  return summary;
}

StatusOr<EvalResult> Trainer::Evaluate() {
  // The prediction: the softmax cross-entropy behind the loss, if any.
  std::string logits, labels;
  bool sparse = false;
  if (!loss_.empty()) {
    PX_ASSIGN_OR_RETURN(OutputRef loss_ref, ResolveTensorName(graph_, loss_));
    std::vector<NodeId> stack = {loss_ref.node};
    std::set<NodeId> seen;
    while (!stack.empty() && logits.empty() && seen.size() < 256) {
      const NodeId id = stack.back();
      stack.pop_back();
      if (!seen.insert(id).second) continue;
      const Node& node = graph_.node(id);
      if (IsSoftmaxXent(node.op()) && node.num_data_inputs() >= 2) {
        logits = graph_.TensorName(node.input(0));
        labels = graph_.TensorName(node.input(1));
        sparse = node.op() == "SparseSoftmaxCrossEntropyWithLogits";
        break;
      }
      for (const OutputRef& in : node.data_inputs()) stack.push_back(in.node);
    }
  }
  if (loss_.empty() && logits.empty()) {
    return InvalidArgumentError("cannot evaluate: the graph has no loss and no softmax "
                                "cross-entropy to compare predictions with labels");
  }
  PX_ASSIGN_OR_RETURN(Bindings bindings, BindFeeds(graph_, options_.eval_feeds, options_.seed, "--eval-feed"));
  PX_ASSIGN_OR_RETURN(Dataset dataset, DatasetOf(bindings.list));
  PX_ASSIGN_OR_RETURN(Feeder feeder, Feeder::Create(std::move(bindings.list), options_.batch));
  const int64_t n = dataset.num_examples();
  const int64_t batch = feeder.batch_size();

  EvalResult result;
  if (!logits.empty()) result.prediction = fmt::format("argmax of '{}' vs '{}'", logits, labels);
  RunRequest request;
  if (!loss_.empty()) request.fetches.push_back(loss_);
  if (!logits.empty()) {
    request.fetches.push_back(logits);
    request.fetches.push_back(labels);
  }
  int64_t correct = 0, batches = 0;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t end = std::min(n, begin + batch);
    if (end - begin < batch && feeder.batch_fixed()) break;  // a fixed batch cannot be partial
    std::vector<int64_t> ids;
    for (int64_t i = begin; i < end; ++i) ids.push_back(i);
    PX_ASSIGN_OR_RETURN(request.feeds, feeder.Feeds(ids));
    StatusOr<std::vector<Tensor>> out = executor_->Run(request);
    if (!out.ok()) return out.status().WithPrefix("evaluation");
    size_t next = 0;
    if (!loss_.empty()) {
      if (auto l = MeanValue(out->at(next))) loss_sum += *l;
      ++next;
    }
    if (!logits.empty()) {
      const std::vector<int64_t> predicted = ArgMaxRows(out->at(next));
      const Tensor& truth = out->at(next + 1);
      std::vector<int64_t> actual;
      if (sparse) {
        for (int64_t i = 0; i < truth.num_elements(); ++i) {
          actual.push_back(truth.dtype() == tensorflow::DT_INT64 ? truth.data<int64_t>()[i]
                                                                 : truth.data<int32_t>()[i]);
        }
      } else {
        actual = ArgMaxRows(truth);
      }
      for (size_t i = 0; i < predicted.size() && i < actual.size(); ++i) {
        correct += predicted[i] == actual[i] ? 1 : 0;
      }
    }
    result.examples += end - begin;
    ++batches;
  }
  if (batches > 0 && !loss_.empty()) result.loss = loss_sum / static_cast<double>(batches);
  if (!logits.empty() && result.examples > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.examples);
  }
  return result;
}

}  // namespace parallax
