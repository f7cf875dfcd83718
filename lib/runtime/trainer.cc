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
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/base/json_writer.h"
#include "lib/base/machine.h"
#include "lib/base/test_hooks.h"
#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/buffer_cache.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/named_tensors.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/data/literal.h"
#include "lib/runtime/data/record_columns.h"
#include "lib/runtime/pipeline/queue.h"

namespace parallax {
namespace {

bool IsPlaceholder(std::string_view op) { return op == "Placeholder" || op == "PlaceholderV2"; }

// Input-pipeline ops whose outputs are the model's input: run by the input run of each
// step (or fed instead, with --feed or --synthetic).
bool IsPipelineOutput(std::string_view op) {
  return op == "QueueDequeueManyV2" || op == "QueueDequeueMany" || op == "QueueDequeueUpToV2" ||
         op == "QueueDequeueUpTo" || op == "QueueDequeueV2" || op == "QueueDequeue" ||
         op == "IteratorGetNext" || op == "IteratorGetNextSync";
}

// The MakeIterator nodes that initialise the iterator read by `output` (an
// IteratorGetNext); empty for other ops.
std::vector<NodeId> PipelineInitializers(const Graph& graph, NodeId output) {
  const Node& node = graph.node(output);
  if (!node.op().starts_with("IteratorGetNext") || node.num_data_inputs() == 0) return {};
  const NodeId iterator = node.input(0).node;
  std::vector<NodeId> out;
  for (const InputRef& use : graph.node(iterator).fanout()) {
    if (graph.node(use.node).op() == "MakeIterator") out.push_back(use.node);
  }
  return out;
}

// True when the input pipeline that produces `output` (a dequeue or IteratorGetNext) can
// run in this process: every node it needs has a CPU kernel and no unfed placeholder, a
// dequeued queue has an enqueue op that fills it, an iterator has an initializer or makes
// its own dataset. Otherwise *why says what is missing.
bool CanRunInGraph(const Graph& graph, NodeId output, std::string* why) {
  const std::vector<bool> needed = NeededNodes(graph, {output});
  std::set<std::string> no_kernel;
  for (NodeId id = 0; id < graph.id_limit(); ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Node& node = graph.node(id);
    if (!HasKernel(node, DeviceType::kCpu)) no_kernel.insert(std::string(node.op()));
    if (IsPlaceholder(node.op())) {
      *why = fmt::format("its input pipeline reads placeholder '{}'", node.name());
      return false;
    }
  }
  if (!no_kernel.empty()) {
    *why = fmt::format("its input pipeline needs CPU kernels for {}", fmt::join(no_kernel, ", "));
    return false;
  }
  const Node& node = graph.node(output);
  if (node.num_data_inputs() == 0) return true;
  const Node& source = graph.node(node.input(0).node);
  if (node.op().starts_with("QueueDequeue")) {
    if (pipeline::QueueRunners(graph, pipeline::ResourceNameOf(source), false).empty()) {
      *why = fmt::format("no enqueue op of the graph fills queue '{}'", source.name());
      return false;
    }
  } else if (source.op() != "OneShotIterator" && PipelineInitializers(graph, output).empty()) {
    *why = fmt::format("no MakeIterator initialises iterator '{}'", source.name());
    return false;
  }
  return true;
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
  std::vector<Feeder::Binding> list;                   // columns: files, synthetic
  std::vector<std::pair<std::string, Tensor>> literals;  // the same value every step
  std::set<std::pair<NodeId, int>> fed;                // (node, port)
};

// The fed tensor's graph shape for a literal: nullopt when its rank is unknown.
std::optional<std::vector<int64_t>> LiteralDims(const FeedTarget& target) {
  if (!target.shape.known_rank) return std::nullopt;
  return target.shape.dims;
}

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
    StatusOr<std::optional<Literal>> literal = ParseLiteral(spec.source);
    if (!literal.ok()) return literal.status().WithPrefix(fmt::format("{} {}", flag, spec.name));
    if (literal->has_value()) {
      if (target->dtype == tensorflow::DT_INVALID) {
        return InvalidArgumentError("{} {}: the graph does not say the dtype of {}, so a literal "
                                    "cannot be fed to it",
                                    flag, spec.name, target->what);
      }
      PX_ASSIGN_OR_RETURN(Tensor value, LiteralToTensor(**literal, target->dtype,
                                                        LiteralDims(*target),
                                                        fmt::format("{} {}", flag, spec.name)));
      out.literals.emplace_back(target->tensor, std::move(value));
      continue;
    }
    std::shared_ptr<const Column> column;
    if (auto keyed = SplitKeyedSource(spec.source)) {
      PX_ASSIGN_OR_RETURN(column, LoadKeyedColumn(keyed->first, keyed->second));
    } else {
      PX_ASSIGN_OR_RETURN(column, LoadColumnFromFile(spec.source));
    }
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

// How PARALLAX_TEST_FAIL_AT_STEP fails a rank.
enum class InjectedFailure { kKill, kError, kStop };

// PARALLAX_TEST_FAIL_AT_STEP=R:S[:error|:stop] -> S when this is rank R, else -1; *how:
// SIGKILL (no mode), an error, or SIGSTOP.
int64_t FailAtStep(int rank, InjectedFailure* how) {
  const std::optional<std::string> hook = TestHook("PARALLAX_TEST_FAIL_AT_STEP");
  if (!hook) return -1;
  const char* text = hook->c_str();
  int r = -1;
  long long s = -1;
  char mode[16] = {};
  const int n = std::sscanf(text, "%d:%lld:%15s", &r, &s, mode);
  if (n < 2 || r != rank) return -1;
  *how = n < 3                              ? InjectedFailure::kKill
         : std::strcmp(mode, "error") == 0 ? InjectedFailure::kError
         : std::strcmp(mode, "stop") == 0  ? InjectedFailure::kStop
                                           : InjectedFailure::kKill;
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
std::string SaveRestoredDir() { return TestHook("PARALLAX_TEST_SAVE_RESTORED").value_or(""); }

}  // namespace

StatusOr<FeedSpec> ParseFeedSpec(std::string_view text, std::string_view flag) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgumentError("{} '{}': expected NAME=SRC (SRC: a .npy or IDX file, "
                                "FILE:COLUMN of a CSV or TFRecord file, a literal value, or "
                                "synthetic)",
                                flag, text);
  }
  return FeedSpec{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Trainer::Trainer(const Graph& graph, TrainerOptions options)
    : graph_(graph), options_(std::move(options)) {}
Trainer::~Trainer() = default;

Status NoCheckpointToResume(const std::string& dir) {
  return NotFoundError("--resume: no checkpoint in {} to resume from; pass --resume=if-exists "
                       "to start from the init op when there is none",
                       dir);
}

void WriteEvalFields(const EvalResult& eval, JsonWriter& json) {
  json.Field("examples", eval.examples).Key("accuracy");
  if (eval.accuracy) json.Double(*eval.accuracy);
  else json.Null();
  json.Key("loss");
  if (eval.loss) json.Double(*eval.loss);
  else json.Null();
  if (!eval.prediction.empty()) json.Field("prediction", eval.prediction);
  if (!eval.class_examples.empty()) {
    json.Key("classes").BeginArray();
    for (size_t c = 0; c < eval.class_examples.size(); ++c) {
      json.BeginObject()
          .Field("class", static_cast<int64_t>(c))
          .Field("examples", eval.class_examples[c])
          .Field("correct", eval.class_correct[c])
          .EndObject();
    }
    json.EndArray();
  }
}

int Trainer::world_size() const {
  return options_.communicator != nullptr ? options_.communicator->size() : 1;
}

double Trainer::EpochsDone(const DataPosition& position) const {
  if (!pipeline_outputs_.empty() && !has_columns_) return -1;
  const int64_t per_epoch = sampler_->examples_per_epoch();
  if (per_epoch <= 0) return -1;
  return static_cast<double>(position.epoch) +
         static_cast<double>(position.index) / static_cast<double>(per_epoch);
}

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const Graph& graph, TrainerOptions options) {
  std::unique_ptr<Trainer> trainer(new Trainer(graph, std::move(options)));
  PX_RETURN_IF_ERROR(trainer->Plan());
  // The evaluation's data is read and checked now, not after the whole training run.
  const TrainerOptions& o = trainer->options_;
  if (!o.eval_feeds.empty()) {
    PX_ASSIGN_OR_RETURN(Bindings bindings, BindFeeds(graph, o.eval_feeds, o.seed, "--eval-feed"));
    PX_ASSIGN_OR_RETURN(Dataset dataset, DatasetOf(bindings.list));
    trainer->eval_examples_ = dataset.num_examples();
    PX_ASSIGN_OR_RETURN(Feeder feeder, Feeder::Create(std::move(bindings.list), o.batch));
    trainer->eval_feeder_.emplace(std::move(feeder));
  }
  return trainer;
}

Status Trainer::Plan() {
  const TrainerOptions& o = options_;
  if (o.steps >= 0 && o.epochs >= 0) return InvalidArgumentError("--steps and --epochs exclude each other");
  if (o.log_every < 1) return InvalidArgumentError("--log-every: must be at least 1, not {}", o.log_every);
  if (o.checkpoint_every < 0) return InvalidArgumentError("--checkpoint-every must not be negative");
  if (o.resume && o.checkpoint_dir.empty()) return InvalidArgumentError("--resume needs --checkpoint-dir");
  if (const int most = kMaxThreadsPerCore * MachineCores(); o.threads > most) {
    return InvalidArgumentError("--threads {}: at most {} on this machine ({} per core): more "
                                "kernel threads than that only slow the kernels down",
                                o.threads, most, kMaxThreadsPerCore);
  }
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
    // Its initializer: the analysis's, else TF's Variable.initializer by name,
    // "<var>/Assign" (an initial value computed from another variable is not an
    // initializer to the analysis, but is one to tf.global_variables_initializer).
    NodeId initializer = v.initializer;
    if (initializer == kNoNode) {
      const std::string name = std::string(graph_.node(v.node).name()) + "/Assign";
      const NodeId assign = graph_.FindNode(name);
      if (assign != kNoNode && graph_.node(assign).num_data_inputs() >= 2 &&
          graph_.node(assign).input(0).node == v.node) {
        initializer = assign;
      }
    }
    if (initializer != kNoNode) {
      initializers_.emplace_back(cv.store_key, std::string(graph_.node(initializer).name()));
    }
    variables_.push_back(std::move(cv));
  }
  fingerprint_ = Fnv1a64Hex(SerializeGraphDef(graph_));

  // Feeds given, then the inputs the step needs that nothing feeds yet.
  PX_ASSIGN_OR_RETURN(Bindings bindings, BindFeeds(graph_, o.feeds, o.seed, "--feed"));
  std::set<NodeId> fed_nodes;
  for (const auto& [node, port] : bindings.fed) fed_nodes.insert(node);
  std::vector<bool> seen(static_cast<size_t>(graph_.id_limit()), false);
  std::vector<NodeId> stack = {graph_.FindNode(train_op_)};
  if (!loss_.empty()) stack.push_back(loss_ref.node);
  std::vector<std::pair<NodeId, int>> needs;  // unfed (node, port) the step reads
  std::string pipeline_gap;  // why an in-graph pipeline cannot run here, for the error
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
      // An unfed input pipeline runs in the graph, unless --synthetic replaces it or it
      // cannot run here.
      std::string why;
      const bool in_graph = IsPipelineOutput(node.op()) && !o.synthetic &&
                            CanRunInGraph(graph_, id, &why);
      if (!why.empty() && pipeline_gap.empty()) pipeline_gap = why;
      for (int port : ports) {
        if (bindings.fed.contains({id, port})) continue;
        if (in_graph) {
          pipeline_outputs_.push_back(graph_.TensorName({id, port}));
        } else {
          needs.emplace_back(id, port);
        }
      }
      if (in_graph) {
        for (NodeId init : PipelineInitializers(graph_, id)) {
          const std::string name(graph_.node(init).name());
          if (std::find(pipeline_initializers_.begin(), pipeline_initializers_.end(), name) ==
              pipeline_initializers_.end()) {
            pipeline_initializers_.push_back(name);
          }
        }
      }
      continue;
    }
    if (fed_nodes.contains(id)) continue;
    if (IsPlaceholder(node.op())) {
      needs.emplace_back(id, 0);
      continue;
    }
    if (node.op() == "Unstage") {
      // A staging area filled by Stage ops outside the train op (IMPALA's learner, where
      // TF runs `session.run([train_op, stage_op])`): the Unstage fills it on demand by
      // running them with the step's feeds (Session::RunRoot), so what they read is an
      // input of the step too.
      for (const std::string& stage :
           pipeline::QueueRunners(graph_, pipeline::ResourceNameOf(node), /*staging=*/true)) {
        stack.push_back(graph_.FindNode(stage));
      }
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
                                "(.npy, IDX, or FILE:COLUMN of a CSV or TFRecord file) or "
                                "NAME=VALUE for each, or --synthetic{}",
                                missing.size(), missing.size() == 1 ? "" : "s",
                                missing.size() == 1 ? "has" : "have", fmt::join(missing, ", "),
                                pipeline_gap.empty() ? "" : " (" + pipeline_gap + ")");
  }
  literal_feeds_ = std::move(bindings.literals);
  for (const auto& [name, value] : literal_feeds_) {
    fed_nodes_.push_back(ResolveTensorName(graph_, name)->node);
  }
  for (const std::string& name : pipeline_outputs_) {
    fed_nodes_.push_back(ResolveTensorName(graph_, name)->node);
  }

  has_columns_ = !bindings.list.empty();
  for (const Feeder::Binding& b : bindings.list) fed_nodes_.push_back(b.target.ref.node);
  PX_ASSIGN_OR_RETURN(Dataset dataset, DatasetOf(bindings.list));
  PX_ASSIGN_OR_RETURN(Feeder feeder, Feeder::Create(std::move(bindings.list), o.batch));
  // A batch whose input alone cannot be held is refused before anything is allocated.
  if (const std::optional<int64_t> available = AvailableMemoryBytes();
      available && feeder.BatchBytes() > *available) {
    return ResourceExhaustedError("batch {}: one step's feeds alone take {}, more than the {} "
                                  "of memory available here; use a smaller --batch",
                                  feeder.batch_size(), HumanBytes(feeder.BatchBytes()),
                                  HumanBytes(*available));
  }
  feeder_.emplace(std::move(feeder));
  PX_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(dataset.num_examples(), o.seed, o.shuffle, o.shard));
  sampler_.emplace(std::move(sampler));
  num_examples_ = dataset.num_examples();

  const int64_t batch = feeder_->batch_size();
  const int64_t per_epoch = sampler_->examples_per_epoch();
  if (o.steps >= 0) {
    total_steps_ = o.steps;
  } else if (o.epochs >= 0) {
    if (!pipeline_outputs_.empty()) {
      return InvalidArgumentError("--epochs counts epochs of --feed data; the graph's own input "
                                  "pipeline decides its epochs (train until it ends, or use "
                                  "--steps)");
    }
    if (!dataset.bounded()) {
      return InvalidArgumentError("--epochs needs data from files; synthetic data has no epochs "
                                  "(use --steps)");
    }
    total_steps_ = static_cast<int64_t>(std::ceil(o.epochs * static_cast<double>(per_epoch) /
                                                  static_cast<double>(batch)));
  } else if (!pipeline_outputs_.empty() && !dataset.bounded()) {
    total_steps_ = -1;  // until the pipeline ends
  } else {
    total_steps_ = dataset.bounded() ? (per_epoch + batch - 1) / batch : kDefaultSyntheticSteps;
  }

  // -vv: what -v does not say the steps read.
  for (const std::string& output : pipeline_outputs_) {
    spdlog::debug("input pipeline output {}: run in the graph each step", output);
  }
  for (const auto& [name, value] : literal_feeds_) {
    spdlog::debug("literal feed {}: {} {}, the same every step", name,
                  DataTypeShortName(value.dtype()), value.shape().DebugString());
  }

  if (o.gpu < 0 && o.precision != GpuPrecision::kFp32) {
    return InvalidArgumentError("--precision {}: a GPU's (the CPU computes in fp32); train on "
                                "a GPU (--device gpu) or leave --precision out",
                                GpuPrecisionName(o.precision));
  }
  if (o.gpu >= 0) {
    StatusOr<std::unique_ptr<Device>> gpu = OpenGpuDevice(o.gpu, o.threads, o.precision);
    if (!gpu.ok()) return gpu.status().WithPrefix(fmt::format("training on GPU {}", o.gpu));
    device_ = std::move(gpu).value();
  } else {
    device_ = std::make_unique<CpuDevice>(o.threads);
  }
  device_->set_communicator(o.communicator);
  if (o.gpu >= 0 && o.communicator != nullptr) {
    // The collectives of the GPU's kernels move device tensors (NCCL); the host's go on
    // through the job's communicator, which this one wraps.
    PX_ASSIGN_OR_RETURN(gpu_communicator_, MakeGpuCommunicator(*o.communicator, *device_));
    device_->set_communicator(gpu_communicator_.get());
  }
  // Do the graph's initializers restore a checkpoint themselves?
  {
    std::vector<NodeId> roots;
    if (!init_op_.empty()) roots.push_back(graph_.FindNode(init_op_));
    for (const auto& [key, initializer] : initializers_) roots.push_back(graph_.FindNode(initializer));
    const std::vector<bool> needed = NeededNodes(graph_, roots);
    for (NodeId id = 0; id < graph_.id_limit(); ++id) {
      if (needed[static_cast<size_t>(id)] && graph_.node(id).op() == "RestoreV2") {
        init_restores_checkpoint_ = true;
      }
    }
  }
  InputOptions input = o.input;
  input.init_checkpoint = o.init_checkpoint;
  input.shard_index = static_cast<int>(o.shard.index);
  input.shard_count = static_cast<int>(o.shard.count);
  input.seed = o.seed;
  executor_ = std::make_unique<Executor>(graph_, *device_, std::move(input));
  if (device_->memory() != nullptr) {
    spdlog::info("training on {} (precision {})", device_->name(), GpuPrecisionName(o.precision));
  }
  if (o.overlap && o.communicator != nullptr && o.communicator->size() > 1) {
    // Kernels keep the cores (their own threads); the collectives wait on a thread of
    // their own.
    executor_->set_execution({.compute_threads = 1, .communication_thread = true});
  }
  if (!o.timeline.empty()) PX_RETURN_IF_ERROR(StartTimeline());
  return Status::Ok();
}

Status Trainer::StartTimeline() {
  namespace fs = std::filesystem;
  const std::string& where = options_.timeline;
  std::error_code error;
  if (const Communicator* comm = options_.communicator) {
    // A directory shared by the ranks (or one per host): each writes its own file.
    fs::create_directories(where, error);
    if (error || !fs::is_directory(where)) {
      return InvalidArgumentError("--timeline {}: cannot make the directory: {}", where,
                                  error ? error.message() : "a file of that name exists");
    }
    timeline_path_ = (fs::path(where) / fmt::format("rank-{}.trace.json", comm->rank())).string();
    timeline_ = std::make_unique<Timeline>(comm->rank(),
                                           fmt::format("rank {} of {}", comm->rank(), comm->size()));
    timeline_->set_bytes_sent_counter([comm] { return comm->bytes_sent(); });
  } else {
    const fs::path parent = fs::path(where).parent_path();
    if (fs::is_directory(where)) {
      return InvalidArgumentError("--timeline {}: is a directory (a file is written outside "
                                  "a job)",
                                  where);
    }
    if (!parent.empty() && !fs::is_directory(parent)) {
      return InvalidArgumentError("--timeline {}: no directory {}", where, parent.string());
    }
    timeline_path_ = where;
    timeline_ = std::make_unique<Timeline>(0, "parallax run");
  }
  executor_->session().set_timeline(timeline_.get());
  return Status::Ok();
}

int Trainer::StepStreamIndex() const {
  // The test hook PARALLAX_TEST_SHARED_RANDOM_STREAM=1 plants a bug `parallax verify`
  // must catch: every rank draws rank 0's numbers.
  const bool planted = TestHook("PARALLAX_TEST_SHARED_RANDOM_STREAM") == "1";
  return options_.communicator != nullptr && !planted ? options_.communicator->rank() : 0;
}

Status Trainer::Initialize() {
  // Initial values are the same on every rank (stream 0, as one device draws them);
  // the steps draw each rank's own numbers (dropout masks, samplers): random.h.
  executor_->session().random().set_stream_index(0);
  if (options_.resume) {
    // The newest checkpoint that reads back (a job: the newest complete step every rank
    // reads). A job checkpoint written by another number of ranks is re-sliced: every
    // rank reads all the old ranks' files of that step, reassembles the parameter-server
    // variables from their row ranges and takes the rows it owns in this job's plan
    // (job_checkpoint.h); the replicated variables are rank 0's; the data position is
    // converted between shard sizes below. Either way the directory must be shared
    // between the hosts: a rank of the same rank count reads the variables its own file
    // leaves to rank 0's (ReadRankFile).
    PX_ASSIGN_OR_RETURN(std::optional<ResumePoint> point, options_.communicator != nullptr
                                                              ? JobResumePoint()
                                                              : ProcessResumePoint());
    if (point) {
      const bool resliced = point->old_job_size > 0;
      const std::string& latest = point->path;
      PX_ASSIGN_OR_RETURN(CheckpointState state,
                          RestoreCheckpointFrom(point->contents, point->source, variables_,
                                                executor_->variables()));
      if (auto size = state.extra.find("job_size");
          !resliced && options_.communicator != nullptr && size != state.extra.end() &&
          size->second != std::to_string(options_.communicator->size())) {
        return FailedPreconditionError("{}: written by a job of {} ranks, this job has {}",
                                       latest, size->second, options_.communicator->size());
      }
      if (resliced) {
        // The examples of the epoch read so far, over all shards, in the new shard size.
        const int64_t read = state.position.index * point->old_job_size;
        const int64_t size = options_.communicator->size();
        if (read % size != 0) {
          spdlog::warn("{}: {} examples of epoch {} were read by {} ranks; {} ranks continue "
                       "after {} of them",
                       latest, read, state.position.epoch, point->old_job_size, size,
                       read / size * size);
        }
        state.position.index = read / size;
        spdlog::info("{}: written by {} ranks, restored on {}", latest, point->old_job_size,
                     size);
      }
      if (!resliced && !state.graph_fingerprint.empty() &&
          state.graph_fingerprint != fingerprint_) {
        spdlog::warn("{}: written for a graph with fingerprint {}, this graph's is {}; variables "
                     "match by name, dtype and shape",
                     latest, state.graph_fingerprint, fingerprint_);
      }
      if (state.shuffle_seed != sampler_->seed() || state.shuffle != sampler_->shuffle()) {
        spdlog::info("{}: continuing with the checkpoint's shuffling (seed {}, {})", latest,
                     state.shuffle_seed, state.shuffle ? "shuffled" : "file order");
        PX_ASSIGN_OR_RETURN(Sampler sampler,
                            Sampler::Create(num_examples_, state.shuffle_seed, state.shuffle,
                                            options_.shard));
        sampler_.emplace(std::move(sampler));
      }
      Status seek = sampler_->Seek(state.position);
      if (!seek.ok()) return seek.WithPrefix(latest);
      step_ = state.step;
      resumed_from_ = latest;
      // The streams of unseeded random ops continue with the checkpoint's run seed.
      if (auto seed = state.extra.find("random_seed"); seed != state.extra.end()) {
        executor_->session().random().set_run_seed(std::stoull(seed->second));
      }
      executor_->session().random().Restore(RandomPositionsOf(state.extra));
      spdlog::info("restored {} variables from {} (step {}, epoch {}, index {})", variables_.size(),
                   latest, state.step, state.position.epoch, state.position.index);
      PX_RETURN_IF_ERROR(CheckReplicasAgree(latest));
      if (const std::string dir = SaveRestoredDir(); !dir.empty()) {
        PX_RETURN_IF_ERROR(CheckpointTo(RankDir(dir)).status());
      }
      PX_RETURN_IF_ERROR(executor_->PlaceVariables());
      executor_->session().random().set_stream_index(StepStreamIndex());
      return StartPipeline(/*replay=*/true);
    }
    if (!options_.resume_if_exists) return NoCheckpointToResume(RankCheckpointDir());
    spdlog::info("{}: no checkpoint to resume from (--resume=if-exists); starting from the "
                 "init op",
                 RankCheckpointDir());
  }
  if (!init_op_.empty()) {
    // Literal feeds reach initializers too (an iterator's dataset may read one).
    StatusOr<std::vector<Tensor>> init =
        executor_->Run({.feeds = literal_feeds_, .targets = {init_op_}});
    if (!init.ok()) return init.status().WithPrefix(fmt::format("init op '{}'", init_op_));
  }
  PX_RETURN_IF_ERROR(InitializeRemainingVariables());
  if (!options_.init_checkpoint.empty() && !init_restores_checkpoint_) {
    PX_RETURN_IF_ERROR(RestoreInitCheckpoint());
  }
  std::vector<std::string> uninitialised;
  for (const CheckpointVariable& v : variables_) {
    const Tensor* value = executor_->variables().Find(v.store_key);
    if (value == nullptr || !value->initialized()) uninitialised.push_back(v.name);
  }
  if (!uninitialised.empty()) {
    return InvalidArgumentError(
        "{}: {} variable{} no initial value ({}{}): nothing in the graph initialises {}; start "
        "from a checkpoint with --init-checkpoint FILE, or --resume",
        graph_.source(), uninitialised.size(), uninitialised.size() == 1 ? " has" : "s have",
        fmt::join(uninitialised.begin(),
                  uninitialised.begin() + std::min<size_t>(uninitialised.size(), 5), ", "),
        uninitialised.size() > 5 ? ", ..." : "", uninitialised.size() == 1 ? "it" : "them");
  }
  PX_RETURN_IF_ERROR(executor_->PlaceVariables());
  executor_->session().random().set_stream_index(StepStreamIndex());
  return StartPipeline(/*replay=*/false);
}

Status Trainer::RestoreInitCheckpoint() {
  const std::string& path = options_.init_checkpoint;
  const std::string& flag = options_.init_checkpoint_flag;
  StatusOr<std::unique_ptr<NamedTensorReader>> opened = OpenNamedTensors(path);
  if (!opened.ok()) return opened.status().WithPrefix(flag);
  const NamedTensorReader& reader = **opened;
  // Checks every variable before touching the store: all or nothing.
  std::vector<std::string> missing;
  std::vector<std::pair<Tensor*, Tensor>> values;
  for (const CheckpointVariable& v : variables_) {
    if (reader.Find(v.name) == nullptr) {
      missing.push_back(v.name);
      continue;
    }
    StatusOr<Tensor> value = reader.Read(v.name);
    if (!value.ok()) return value.status().WithPrefix(flag);
    bool fits = value->dtype() == v.dtype && (!v.known_shape || value->rank() ==
                                                                    static_cast<int>(v.dims.size()));
    for (size_t d = 0; fits && v.known_shape && d < v.dims.size(); ++d) {
      fits = v.dims[d] < 0 || v.dims[d] == value->dim(static_cast<int>(d));
    }
    if (!fits) {
      return InvalidArgumentError("{} {}: tensor '{}' is {}{}, the graph's variable "
                                  "is {}{}",
                                  flag, path, v.name, DataTypeShortName(value->dtype()),
                                  value->shape().DebugString(), DataTypeShortName(v.dtype),
                                  v.known_shape ? TensorShape(v.dims).DebugString() : "[?]");
    }
    values.emplace_back(executor_->variables().Slot(v.store_key), std::move(value).value());
  }
  if (!missing.empty()) {
    return InvalidArgumentError("{} {}: {} of the graph's {} variables {} not in it: "
                                "{}",
                                flag, path, missing.size(), variables_.size(),
                                missing.size() == 1 ? "is" : "are",
                                fmt::join(missing.begin(),
                                          missing.begin() + std::min<size_t>(missing.size(), 10),
                                          ", "));
  }
  for (auto& [slot, value] : values) *slot = std::move(value);
  spdlog::info("initialised {} variables from {}", values.size(), reader.location().found);
  return Status::Ok();
}

Status Trainer::InitializeRemainingVariables() {
  // Variables whose initializer still has to run, by store key.
  std::map<std::string, std::string> pending;
  for (const auto& [key, initializer] : initializers_) {
    const Tensor* value = executor_->variables().Find(key);
    if (value == nullptr || !value->initialized()) pending.emplace(key, initializer);
  }
  if (pending.empty()) return Status::Ok();
  // Dependency order (tf.global_variables_initializer's): an initial value that reads
  // another pending variable waits for it. Each round runs every initializer whose
  // value reads no pending variable.
  std::map<std::string, std::set<std::string>> reads;  // initializer -> pending vars read
  for (const auto& [key, initializer] : pending) {
    const Node& assign = graph_.node(graph_.FindNode(initializer));
    std::vector<NodeId> roots;
    for (int i = 1; i < assign.num_data_inputs(); ++i) roots.push_back(assign.input(i).node);
    const std::vector<bool> needed = NeededNodes(graph_, roots);
    for (NodeId id = 0; id < graph_.id_limit(); ++id) {
      if (!needed[static_cast<size_t>(id)]) continue;
      const Node& node = graph_.node(id);
      if (node.op() != "VariableV2" && node.op() != "Variable" && node.op() != "VarHandleOp") {
        continue;
      }
      std::string store(node.name());
      if (auto shared = node.FindAttr("shared_name"); shared && !shared->s().empty()) {
        store = shared->s();
      }
      if (store != key && pending.contains(store)) reads[key].insert(store);
    }
  }
  while (!pending.empty()) {
    std::vector<std::string> ready;
    for (const auto& [key, initializer] : pending) {
      if (reads[key].empty()) ready.push_back(key);
    }
    if (ready.empty()) {
      return InvalidArgumentError("{}: the initial values of variable '{}' and others read each "
                                  "other; no order initialises them",
                                  graph_.source(), pending.begin()->first);
    }
    RunRequest request;
    request.feeds = literal_feeds_;
    for (const std::string& key : ready) request.targets.push_back(pending.at(key));
    StatusOr<std::vector<Tensor>> ran = executor_->Run(request);
    if (!ran.ok()) return ran.status().WithPrefix("initialising variables");
    for (const std::string& key : ready) {
      pending.erase(key);
      for (auto& [other, deps] : reads) deps.erase(key);
    }
  }
  return Status::Ok();
}

Status Trainer::StartPipeline(bool replay) {
  if (!pipeline_initializers_.empty()) {
    StatusOr<std::vector<Tensor>> ran =
        executor_->Run({.feeds = literal_feeds_, .targets = pipeline_initializers_});
    if (!ran.ok()) return ran.status().WithPrefix("initialising the input pipeline");
  }
  if (!replay || pipeline_outputs_.empty() || step_ == 0) return Status::Ok();
  // Replays the steps already trained so that the pipeline continues where it was.
  for (int64_t i = 0; i < step_; ++i) {
    StatusOr<std::vector<Tensor>> skipped = InputRun();
    if (!skipped.ok()) {
      return skipped.status().WithPrefix(
          fmt::format("replaying the input pipeline to step {} (at step {})", step_, i + 1));
    }
  }
  spdlog::info("replayed {} steps of the input pipeline", step_);
  return Status::Ok();
}

StatusOr<std::vector<Tensor>> Trainer::InputRun() {
  RunRequest request;
  request.feeds = literal_feeds_;
  request.fetches = pipeline_outputs_;
  StatusOr<std::vector<Tensor>> input = executor_->Run(request);
  if (!input.ok() && input.status().code() != StatusCode::kOutOfRange) {
    return input.status().WithPrefix("input pipeline");
  }
  if (Communicator* comm = options_.communicator; comm != nullptr && comm->size() > 1) {
    // Every rank stops at the first step that any rank's pipeline cannot fill.
    Tensor have = Tensor::Scalar<int64_t>(input.ok() ? 1 : 0);
    Communicator::ScopedLabel label(comm, "whether every rank's input pipeline has a batch");
    ScopedSpan span(timeline_.get(), "every rank has a batch", "collective");
    span.span().bytes = static_cast<int64_t>(have.bytes());
    PX_RETURN_IF_ERROR(comm->AllReduce(have, ReduceOp::kMin));
    if (have.data<int64_t>()[0] == 0 && input.ok()) {
      return OutOfRangeError("the input pipeline of another rank ended");
    }
  }
  if (input.ok() && !input->empty()) {
    pipeline_batch_ = input->front().rank() > 0 ? input->front().dim(0) : 1;
  }
  return input;
}

std::vector<std::string> Trainer::FindSummaries() const {
  static const std::set<std::string_view> kSummaryOps = {
      "ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummary", "AudioSummaryV2",
      "TensorSummary", "TensorSummaryV2", "MergeSummary"};
  std::vector<bool> fed_mask(static_cast<size_t>(graph_.id_limit()), false);
  for (NodeId id : fed_nodes_) fed_mask[static_cast<size_t>(id)] = true;
  std::vector<std::string> merged, single;
  for (NodeId id : graph_.NodeIds()) {
    const Node& node = graph_.node(id);
    if (!kSummaryOps.contains(node.op())) continue;
    bool inside_merge = false;
    for (const InputRef& use : node.fanout()) {
      inside_merge |= graph_.node(use.node).op() == "MergeSummary";
    }
    if (inside_merge) continue;
    // Computable in the train step: no unfed placeholder behind it.
    const std::vector<bool> needed = NeededNodes(graph_, {id}, fed_mask);
    bool computable = true;
    for (NodeId n = 0; n < graph_.id_limit() && computable; ++n) {
      computable = !(needed[static_cast<size_t>(n)] && !fed_mask[static_cast<size_t>(n)] &&
                     IsPlaceholder(graph_.node(n).op()));
    }
    if (!computable) continue;
    (node.op() == "MergeSummary" ? merged : single).push_back(graph_.TensorName({id, 0}));
  }
  return merged.empty() ? single : merged;
}

Status Trainer::WriteReportSummaries(const StepReport& report) {
  if (!events_) return Status::Ok();
  if (report.loss) PX_RETURN_IF_ERROR(events_->WriteScalar(report.step, "parallax/loss", static_cast<float>(*report.loss)));
  PX_RETURN_IF_ERROR(events_->WriteScalar(report.step, "parallax/examples_per_sec",
                                          static_cast<float>(report.examples_per_sec)));
  if (const Communicator* comm = options_.communicator) {
    PX_RETURN_IF_ERROR(events_->WriteScalar(report.step, "parallax/bytes_sent",
                                            static_cast<float>(comm->bytes_sent())));
  }
  return events_->Flush();
}

StatusOr<std::vector<std::pair<std::string, Tensor>>> Trainer::MicroBatchFeeds(
    std::span<const int64_t> ids, Trainer* pipeline) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  if (!pipeline_outputs_.empty()) {
    Trainer& source = pipeline != nullptr ? *pipeline : *this;
    PX_ASSIGN_OR_RETURN(std::vector<Tensor> input, source.InputRun());
    if (input.size() != pipeline_outputs_.size()) {
      return InternalError("the input pipeline gave {} tensors, expected {}", input.size(),
                           pipeline_outputs_.size());
    }
    for (size_t i = 0; i < pipeline_outputs_.size(); ++i) {
      feeds.emplace_back(pipeline_outputs_[i], std::move(input[i]));
    }
    pipeline_batch_ = source.pipeline_batch_;
  }
  if (has_columns_ || pipeline_outputs_.empty()) {
    PX_ASSIGN_OR_RETURN(auto columns, feeder_->Feeds(ids));
    for (auto& feed : columns) feeds.push_back(std::move(feed));
  }
  for (const auto& literal : literal_feeds_) feeds.push_back(literal);
  return feeds;
}

StatusOr<std::optional<double>> Trainer::Step() {
  RunRequest request;
  std::vector<int64_t> ids;  // the batch's examples of the fed columns
  if (has_columns_ || pipeline_outputs_.empty()) ids = sampler_->Next(feeder_->batch_size());
  if (options_.batch_order == BatchOrder::kReversed) std::reverse(ids.begin(), ids.end());
  if (options_.batch_order == BatchOrder::kRotatedHalf) {
    std::rotate(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(ids.size() / 2), ids.end());
  }
  std::optional<ScopedSpan> input_span;
  input_span.emplace(timeline_.get(), "input", "input");
  StatusOr<std::vector<std::pair<std::string, Tensor>>> feeds = MicroBatchFeeds(ids);
  input_span.reset();
  if (!feeds.ok()) return feeds.status().WithPrefix(fmt::format("step {}", step_ + 1));
  request.feeds = std::move(feeds).value();
  // The graph's summaries, at the steps that report.
  const int64_t next = step_ + 1;
  const bool summarise = events_ && !summaries_.empty() &&
                         (next % options_.log_every == 0 || next == total_steps_);
  if (!loss_.empty()) request.fetches.push_back(loss_);
  if (summarise) {
    request.fetches.insert(request.fetches.end(), summaries_.begin(), summaries_.end());
  }
  request.targets.push_back(train_op_);
  const auto started = std::chrono::steady_clock::now();
  StatusOr<std::vector<Tensor>> out = executor_->Run(request);
  if (!out.ok()) return out.status().WithPrefix(fmt::format("step {}", step_ + 1));
  ++step_;
  spdlog::debug("step {}: {:.2f} ms (the train op's run)", step_,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                    .count());
  if (summarise) {
    for (size_t i = loss_.empty() ? 0 : 1; i < out->size(); ++i) {
      const Tensor& summary = (*out)[i];
      if (summary.dtype() != tensorflow::DT_STRING || summary.num_elements() != 1) continue;
      PX_RETURN_IF_ERROR(events_->WriteSummary(step_, summary.data<std::string>()[0]));
    }
  }
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
  state.extra.emplace("random_seed", std::to_string(executor_->session().random().run_seed()));
  for (const auto& [stream, position] : executor_->session().random().Positions()) {
    state.extra.emplace(std::string(kRandomMetadataPrefix) + stream, std::to_string(position));
  }
  // In a job with a plan, what every rank holds identically is written by rank 0 alone
  // (job_checkpoint.h, "replicated-once"); the other ranks write their partitions and
  // per-rank state.
  std::vector<CheckpointVariable> written = variables_;
  if (Communicator* comm = options_.communicator) {
    state.extra.insert({{"job_rank", std::to_string(comm->rank())},
                        {"job_size", std::to_string(comm->size())}});
    const parallax::Plan* plan = options_.plan;
    if (plan != nullptr) state.extra.merge(RowRanges(*plan, comm->rank(), variables_));
    const bool once = plan != nullptr && !options_.checkpoint_every_rank;
    state.extra.emplace(kJobLayoutKey, once ? kLayoutReplicatedOnce : kLayoutEveryRank);
    if (once && comm->rank() != 0) {
      std::erase_if(written, [&](const CheckpointVariable& v) {
        return plan->IdenticalOnEveryRank(v.name);
      });
    }
  }
  return SaveCheckpoint(dir, written, executor_->variables(), state, options_.keep_checkpoints);
}

Status Trainer::CheckReplicasAgree(const std::string& restored_from) {
  Communicator* comm = options_.communicator;
  const parallax::Plan* plan = options_.plan;
  if (comm == nullptr || plan == nullptr || comm->size() == 1) return Status::Ok();
  // FNV-1a 64 of each variable every rank holds identically, in variables_ order (the same
  // on every rank: one graph), compared with rank 0's.
  std::vector<const CheckpointVariable*> replicated;
  std::vector<int64_t> fingerprints;
  for (const CheckpointVariable& v : variables_) {
    if (!plan->IdenticalOnEveryRank(v.name)) continue;
    const Tensor* variable = executor_->variables().Find(v.store_key);
    if (variable == nullptr || !variable->initialized() || variable->bytes() == 0) continue;
    PX_ASSIGN_OR_RETURN(const Tensor value, variable->CopiedTo(nullptr));  // from a GPU
    replicated.push_back(&v);
    fingerprints.push_back(static_cast<int64_t>(
        Fnv1a64(std::string_view(static_cast<const char*>(value.raw_data()), value.bytes()))));
  }
  const Tensor mine = Tensor::FromVector(
      fingerprints, TensorShape({static_cast<int64_t>(fingerprints.size())}));
  Tensor rank0 = mine.DeepCopy();
  PX_RETURN_IF_ERROR(comm->Broadcast(rank0, 0));
  if (rank0.num_elements() != mine.num_elements()) {
    return FailedPreconditionError("{}: after the resume rank {} holds {} replicated variables, "
                                   "rank 0 {}",
                                   restored_from, comm->rank(), mine.num_elements(),
                                   rank0.num_elements());
  }
  for (size_t i = 0; i < replicated.size(); ++i) {
    const int64_t theirs = rank0.flat<int64_t>()[i];
    if (theirs != fingerprints[i]) {
      return FailedPreconditionError(
          "{}: after the resume variable '{}' on rank {} differs from rank 0's copy "
          "(fingerprint {:016x}, rank 0's {:016x}): the ranks' checkpoint files disagree",
          restored_from, replicated[i]->name, comm->rank(), static_cast<uint64_t>(fingerprints[i]),
          static_cast<uint64_t>(theirs));
    }
  }
  return Status::Ok();
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

StatusOr<std::optional<Trainer::ResumePoint>> Trainer::ProcessResumePoint() {
  PX_ASSIGN_OR_RETURN(auto files, ListCheckpoints(options_.checkpoint_dir));
  std::vector<Status> unreadable;  // newest first; warned about once an older one reads
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    // ReadRankFile: a plain file as read, a job's rank file completed from rank 0's.
    StatusOr<RankFileContents> read = ReadRankFile(it->second);
    if (!read.ok()) {
      unreadable.push_back(read.status());
      continue;
    }
    for (const Status& skipped : unreadable) {
      spdlog::warn("{}; skipped: resuming from {}", skipped.message(), it->second);
    }
    return std::optional<ResumePoint>(ResumePoint{
        .path = it->second, .source = read->source, .contents = std::move(read->contents)});
  }
  if (!unreadable.empty()) return unreadable.front();  // none reads: the newest one's error
  return std::optional<ResumePoint>();
}

StatusOr<std::optional<Trainer::ResumePoint>> Trainer::JobResumePoint() {
  Communicator* comm = options_.communicator;
  const std::string& dir = options_.checkpoint_dir;
  const auto rank_dir = [&](int rank) {
    return (std::filesystem::path(dir) / fmt::format("rank-{}", rank)).string();
  };
  PX_ASSIGN_OR_RETURN(const CompleteJobSteps steps, FindCompleteJobSteps(dir));
  if (steps.complete.empty() && !steps.incomplete.empty()) {
    return NewestCompleteJobStep(dir).status();  // names the newest step's missing file
  }
  if (steps.complete.empty()) {
    // Rank 0 has no checkpoint. When another rank has, rank 0's files are gone or not
    // visible to it: starting over from the init op would silently drop the job's
    // training, so it is an error naming the rank.
    PX_ASSIGN_OR_RETURN(auto own_files, ListCheckpoints(RankCheckpointDir()));
    const Tensor mine = Tensor::FromVector<int64_t>({static_cast<int64_t>(own_files.size())},
                                                    TensorShape({1}));
    Tensor counts;
    {
      Communicator::ScopedLabel label(comm, "the number of checkpoint files of every rank");
      PX_RETURN_IF_ERROR(comm->AllGatherV(mine, &counts));
    }
    for (int r = 1; r < comm->size(); ++r) {
      const int64_t count = counts.data<int64_t>()[r];
      if (count > 0) {
        return FailedPreconditionError(
            "{}: rank 0 has no checkpoint to resume from, but rank {} has {} in {}: a job "
            "resumes from a step that every rank wrote (are rank 0's files deleted, or is {} "
            "not shared with its host?)",
            rank_dir(0), r, count, rank_dir(r), dir);
      }
    }
    return std::optional<ResumePoint>();
  }
  std::vector<std::string> skipped;  // newer steps than the one restored, for rank 0's log
  for (const IncompleteJobStep& step : steps.incomplete) {
    if (step.step > steps.complete.front().step) {
      skipped.push_back(fmt::format("step {} is incomplete ({})", step.step, step.problem));
    }
  }
  for (const JobStep& candidate : steps.complete) {
    // Read on every rank, then agreed on: every rank takes the same branch in the same
    // order, so the collectives below match.
    auto read = [&]() -> StatusOr<ResumePoint> {
      if (candidate.job_size == comm->size()) {
        const std::string path = CheckpointPath(RankCheckpointDir(), candidate.step);
        PX_ASSIGN_OR_RETURN(RankFileContents own, ReadRankFile(path));
        return ResumePoint{.path = path, .source = own.source, .contents = std::move(own.contents)};
      }
      PX_ASSIGN_OR_RETURN(JobCheckpoint job, ReadJobCheckpoint(dir, candidate.step));
      return ResumePoint{.path = job.files[0], .source = job.files[0], .old_job_size = job.job_size,
                         .job = std::move(job)};
    };
    StatusOr<ResumePoint> point = read();
    if (!point.ok()) {
      spdlog::warn("rank {}: {}; skipping step {}: resuming from an older complete step if "
                   "every rank reads one",
                   comm->rank(), point.status().message(), candidate.step);
    }
    Tensor everyone = Tensor::Scalar<int64_t>(point.ok() ? 1 : 0);
    {
      Communicator::ScopedLabel label(comm, "whether every rank reads the checkpoint step");
      PX_RETURN_IF_ERROR(comm->AllReduce(everyone, ReduceOp::kMin));
    }
    if (everyone.data<int64_t>()[0] == 1) {
      if (!skipped.empty() && comm->rank() == 0) {
        spdlog::warn("{}: resuming from step {}, the newest step that every rank wrote and "
                     "reads back ({})",
                     dir, candidate.step, fmt::join(skipped, "; "));
      }
      if (point->job) {
        // A plan that cannot take the checkpoint is an error, not a reason to skip it.
        PX_ASSIGN_OR_RETURN(point->contents, ContentsForThisRank(*point->job));
        point->job.reset();
      }
      return std::optional<ResumePoint>(*std::move(point));
    }
    skipped.push_back(fmt::format("step {} does not read back on every rank (see the ranks' "
                                  "warnings)",
                                  candidate.step));
  }
  return FailedPreconditionError("{}: no complete checkpoint step reads back on every rank ({})",
                                 dir, fmt::join(skipped, "; "));
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
  ScopedSpan span(timeline_.get(), "the reported loss", "collective");
  span.span().bytes = static_cast<int64_t>(t.bytes());
  PX_RETURN_IF_ERROR(comm->AllReduce(t, ReduceOp::kMean));
  return std::optional<double>(t.data<double>()[0]);
}

StatusOr<TrainSummary> Trainer::Run(const std::function<void(const StepReport&)>& on_report,
                                    const std::function<void()>& on_start) {
  PX_RETURN_IF_ERROR(Initialize());
  // The initial values' temporaries (a whole table drawn and scaled, rows received
  // before they are assigned) are not what the steps allocate: return them to the
  // system rather than keep them cached for the whole run.
  BufferCache::Global().Trim();
  if (on_start) on_start();
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
  if (!options_.summary_dir.empty() && writes_metrics) {
    StatusOr<std::unique_ptr<EventWriter>> events = EventWriter::Create(options_.summary_dir);
    if (!events.ok()) return events.status().WithPrefix("--summary-dir");
    events_ = std::move(*events);
    summaries_ = FindSummaries();
    spdlog::info("TensorBoard events to {} ({} summary op{} of the graph)", events_->path(),
                 summaries_.size(), summaries_.size() == 1 ? "" : "s");
  }

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point window_start = start;
  int64_t window_steps = 0;
  int64_t saved_step = -1;
  InjectedFailure injected = InjectedFailure::kKill;
  const int64_t fail_at = FailAtStep(
      options_.communicator != nullptr ? options_.communicator->rank() : 0, &injected);
  // Reports step_ (loss: this rank's; a collective in a job, so every rank reports the
  // same steps).
  auto report = [&](std::optional<double> loss) -> Status {
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - window_start).count();
    const double examples_per_sec =
        seconds > 0 ? window_steps * static_cast<double>(batch_size()) / seconds : 0;
    const DataPosition position = sampler_->position();
    StepReport r{.step = step_,
                 .total_steps = total_steps_,
                 .start_step = summary.start_step,
                 .loss = loss,
                 .examples_per_sec = examples_per_sec,
                 .global_examples_per_sec = examples_per_sec * world_size(),
                 .world_size = world_size(),
                 .elapsed_seconds = std::chrono::duration<double>(now - start).count(),
                 .wall_time = WallTime(),
                 .position = position,
                 .epochs_done = EpochsDone(position)};
    if (metrics != nullptr) {
      JsonWriter json(0);
      json.BeginObject().Field("step", r.step).Key("loss");
      if (loss) json.Double(*loss);
      else json.Null();
      json.Key("examples_per_sec").Double(r.examples_per_sec);
      json.Key("global_examples_per_sec").Double(r.global_examples_per_sec);
      json.Field("world_size", r.world_size);
      json.Key("elapsed").Double(r.elapsed_seconds);
      json.Key("wall_time").Double(r.wall_time);
      if (!options_.cpu_fallback_from.empty()) {
        json.Field("cpu_fallback_from", options_.cpu_fallback_from);
      }
      json.EndObject();
      std::fprintf(metrics, "%s\n", json.str().c_str());
      std::fflush(metrics);
    }
    if (on_report) on_report(r);
    PX_RETURN_IF_ERROR(WriteReportSummaries(r));
    window_start = now;
    window_steps = 0;
    return Status::Ok();
  };
  std::optional<double> last_local_loss;
  bool reported_last = true;
  while (total_steps_ < 0 || step_ < total_steps_) {
    if (step_ + 1 == fail_at) {
      // The time lets failure tests measure how long the job takes to end after this.
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
      std::fprintf(stderr, "parallax: PARALLAX_TEST_FAIL_AT_STEP: %s before step %lld at unix "
                           "ms %lld\n",
                   injected == InjectedFailure::kError  ? "failing"
                   : injected == InjectedFailure::kStop ? "stopping this rank"
                                                        : "killing this rank",
                   static_cast<long long>(fail_at), static_cast<long long>(ms));
      std::fflush(stderr);
      if (injected == InjectedFailure::kError) {
        return InternalError("PARALLAX_TEST_FAIL_AT_STEP: injected failure before step {}",
                             fail_at);
      }
      // SIGSTOP stops every thread, the communicator's watchdog too (its heartbeat).
      std::raise(injected == InjectedFailure::kStop ? SIGSTOP : SIGKILL);
    }
    // The step's span: its input, its train run, the loss's all-reduce, its checkpoint.
    ScopedSpan step_span(timeline_.get(), fmt::format("step {}", step_ + 1), "step");
    step_span.span().step = step_ + 1;
    StatusOr<std::optional<double>> stepped = Step();
    if (!stepped.ok() && stepped.status().code() == StatusCode::kOutOfRange &&
        !pipeline_outputs_.empty()) {
      step_span.Cancel();  // no step was trained
      // The in-graph pipeline ended (on every rank: InputRun agrees in a job).
      spdlog::info("the input pipeline ended after step {}", step_);
      break;
    }
    if (!stepped.ok()) return stepped.status();
    std::optional<double> loss = *stepped;
    last_local_loss = loss;
    // Collective on every rank at the same steps: the first, the reported, the last.
    const bool report_step = step_ % options_.log_every == 0 || step_ == total_steps_;
    if (report_step || step_ == summary.start_step + 1) {
      PX_ASSIGN_OR_RETURN(loss, JobLoss(loss));
    }
    if (step_ == summary.start_step + 1) summary.first_loss = loss;
    summary.last_loss = loss;
    ++window_steps;
    reported_last = report_step;
    if (report_step) PX_RETURN_IF_ERROR(report(loss));
    if (!options_.checkpoint_dir.empty() && options_.checkpoint_every > 0 &&
        step_ % options_.checkpoint_every == 0) {
      ScopedSpan span(timeline_.get(), "checkpoint", "checkpoint");
      PX_ASSIGN_OR_RETURN(summary.last_checkpoint, Checkpoint());
      saved_step = step_;
    }
  }
  if (!reported_last && step_ > summary.start_step) {
    // The pipeline ended between reports: the last step is reported (every rank left
    // the loop at the same step, so the loss's all-reduce matches).
    PX_ASSIGN_OR_RETURN(summary.last_loss, JobLoss(last_local_loss));
    PX_RETURN_IF_ERROR(report(summary.last_loss));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  summary.end_step = step_;
  summary.elapsed_seconds = seconds;
  summary.examples_per_sec =
      seconds > 0
          ? static_cast<double>(step_ - summary.start_step) * static_cast<double>(batch_size()) / seconds
          : 0;
  summary.global_examples_per_sec = summary.examples_per_sec * world_size();
  if (!options_.checkpoint_dir.empty() && saved_step != step_ && step_ > summary.start_step) {
    ScopedSpan span(timeline_.get(), "checkpoint", "checkpoint");
    PX_ASSIGN_OR_RETURN(summary.last_checkpoint, Checkpoint());
  }
  if (!options_.eval_feeds.empty()) {
    PX_ASSIGN_OR_RETURN(summary.eval, Evaluate());
    if (metrics != nullptr) {
      JsonWriter json(0);
      json.BeginObject().Field("step", step_).Key("eval").BeginObject();
      WriteEvalFields(*summary.eval, json);
      json.EndObject().EndObject();
      std::fprintf(metrics, "%s\n", json.str().c_str());
      std::fflush(metrics);
    }
  }
  if (timeline_) {
    PX_RETURN_IF_ERROR(timeline_->Write(timeline_path_));
    spdlog::info("timeline: {} spans to {}", timeline_->size(), timeline_path_);
  }
  if (const std::vector<std::string> host_ops = executor_->HostPlacedOps(); !host_ops.empty()) {
    spdlog::info("{}: ops without a kernel there ran on the host, their inputs and outputs "
                 "copied across: {}",
                 device_->name(), fmt::join(host_ops, ", "));
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
  if (!eval_feeder_) return InternalError("evaluation without --eval-feed data");
  const Feeder& feeder = *eval_feeder_;
  const int64_t n = eval_examples_;
  const int64_t batch = feeder.batch_size();

  EvalResult result;
  if (!logits.empty()) result.prediction = fmt::format("argmax of '{}' vs '{}'", logits, labels);
  RunRequest request;
  if (!loss_.empty()) request.fetches.push_back(loss_);
  if (!logits.empty()) {
    request.fetches.push_back(logits);
    request.fetches.push_back(labels);
  }
  int64_t correct = 0;
  double loss_sum = 0;  // each batch's mean loss times its examples
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
      if (auto l = MeanValue(out->at(next))) loss_sum += *l * static_cast<double>(end - begin);
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
      const int64_t classes = out->at(next).rank() >= 1
                                  ? out->at(next).dim(out->at(next).rank() - 1)
                                  : 0;
      if (result.class_examples.empty()) {
        result.class_examples.assign(static_cast<size_t>(classes), 0);
        result.class_correct.assign(static_cast<size_t>(classes), 0);
      }
      for (size_t i = 0; i < predicted.size() && i < actual.size(); ++i) {
        const bool right = predicted[i] == actual[i];
        correct += right ? 1 : 0;
        if (actual[i] >= 0 && actual[i] < static_cast<int64_t>(result.class_examples.size())) {
          ++result.class_examples[static_cast<size_t>(actual[i])];
          result.class_correct[static_cast<size_t>(actual[i])] += right ? 1 : 0;
        }
      }
    }
    result.examples += end - begin;
  }
  if (result.examples > 0 && !loss_.empty()) {
    result.loss = loss_sum / static_cast<double>(result.examples);
  }
  if (!logits.empty() && result.examples > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.examples);
  }
  return result;
}

}  // namespace parallax
