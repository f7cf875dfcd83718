#include "lib/verify/verify.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "lib/analysis/training_analysis.h"
#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/base/json_writer.h"
#include "lib/cluster/rank_layout.h"
#include "lib/graph/attr_values.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/strip_horovod.h"
#include "lib/launch/mpirun.h"
#include "lib/verify/accumulate.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/runtime/checkpoint/job_checkpoint.h"
#include "lib/runtime/checkpoint/named_tensors.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/data/dataset.h"
#include "lib/runtime/data/feeder.h"
#include "lib/transform/job_writer.h"
#include "lib/transform/strategy.h"
#include "lib/transform/transform.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLocalSuffix = kLocalStorageSuffix;

bool IsCountedDequeue(std::string_view op) {
  return op == "QueueDequeueManyV2" || op == "QueueDequeueMany" || op == "QueueDequeueUpToV2" ||
         op == "QueueDequeueUpTo";
}

double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT: return t.data<float>()[i];
    case tensorflow::DT_DOUBLE: return t.data<double>()[i];
    case tensorflow::DT_INT64: return static_cast<double>(t.data<int64_t>()[i]);
    case tensorflow::DT_INT32: return t.data<int32_t>()[i];
    case tensorflow::DT_UINT8: return t.data<uint8_t>()[i];
    case tensorflow::DT_BOOL: return t.data<bool>()[i] ? 1 : 0;
    default: return NAN;
  }
}

std::string ShapeText(const TensorShape& shape) {
  return fmt::format("[{}]", fmt::join(shape.dims(), ","));
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (v == 0) return "0";
  return fmt::format("{:.3g}", v);
}

// Checkpoint metadata for a fresh start at step 0 (the initial checkpoint's copies).
std::map<std::string, std::string> StartMetadata(const VerifyOptions& o) {
  return {{"format", std::string(kCheckpointFormat)},
          {"step", "0"},
          {"data_epoch", "0"},
          {"data_index", "0"},
          {"shuffle_seed", std::to_string(o.seed)},
          {"shuffle", o.shuffle ? "true" : "false"}};
}

// The variable of the plan that `name` is, or whose slot it is; and whether it lives on
// parameter servers.
// A slot has its own (local) entry in the plan too; the variable it belongs to wins.
const VariablePlan* OwnerOf(const Plan& plan, const std::string& name) {
  for (const VariablePlan& v : plan.variables) {
    if (std::find(v.slots.begin(), v.slots.end(), name) != v.slots.end()) return &v;
  }
  for (const VariablePlan& v : plan.variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}
// The local storage `<name>/parallax/local` of each rank's graph, by rank.
using LocalStorage = std::vector<std::set<std::string>>;
bool IsPartitioned(const LocalStorage& storage, const std::string& name) {
  const std::string local = name + std::string(kLocalSuffix);
  return std::any_of(storage.begin(), storage.end(),
                     [&](const std::set<std::string>& s) { return s.contains(local); });
}
std::vector<RowRange> OwnedRanges(const VariablePlan& v, int rank) {
  std::vector<RowRange> out;
  for (const Partition& p : v.partitions) {
    if (p.owner == rank) out.push_back({p.row_begin, p.row_end});
  }
  return out;
}

// Writes the initial checkpoint for the one device (dir/checkpoint-0) and for every rank
// (ranks_dir/rank-R/checkpoint-0: replicated tensors as they are, parameter-server ones
// as the rows the rank owns, named `<name>/parallax/local`).
Status WriteInitialCheckpoints(const VerifyOptions& o, const SafetensorsContents& init,
                               const Plan& plan, const LocalStorage& storage,
                               const std::string& single_dir, const std::string& ranks_dir) {
  std::error_code ec;
  fs::create_directories(single_dir, ec);
  for (int r = 0; r < plan.world_size() && !ec; ++r) {
    fs::create_directories(fs::path(ranks_dir) / fmt::format("rank-{}", r), ec);
  }
  if (ec) return InternalError("{}: cannot create directories: {}", ranks_dir, ec.message());
  SafetensorsContents single{.tensors = init.tensors, .metadata = StartMetadata(o)};
  PX_RETURN_IF_ERROR(WriteSafetensors(CheckpointPath(single_dir, 0), single));
  for (int r = 0; r < plan.world_size(); ++r) {
    SafetensorsContents rank{.tensors = {}, .metadata = StartMetadata(o)};
    rank.metadata["job_rank"] = std::to_string(r);
    rank.metadata["job_size"] = std::to_string(plan.world_size());
    for (const auto& [name, tensor] : init.tensors) {
      if (!IsPartitioned(storage, name)) {
        rank.tensors.emplace(name, tensor);
        continue;
      }
      const std::string local = name + std::string(kLocalSuffix);
      const VariablePlan* owner = OwnerOf(plan, name);
      if (!storage[static_cast<size_t>(r)].contains(local) || owner == nullptr) continue;
      const auto ranges = OwnedRanges(*owner, r);
      StatusOr<Tensor> rows = SliceRows(tensor, ranges);
      if (!rows.ok()) return rows.status().WithPrefix(o.init_checkpoint);
      rank.metadata[std::string(kRowsMetadataPrefix) + local] = FormatRowRanges(ranges);
      rank.tensors.emplace(local, *std::move(rows));
    }
    PX_RETURN_IF_ERROR(WriteSafetensors(
        CheckpointPath((fs::path(ranks_dir) / fmt::format("rank-{}", r)).string(), 0), rank));
  }
  return Status::Ok();
}

// The last `max_lines` lines of a file, for an error's details.
std::string Tail(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  return fmt::format("{}", fmt::join(lines, "\n"));
}

// The cluster verify runs on: localhost with N CPU ranks (or N ranks sharing the GPU),
// the strategy from --cluster (its hosts ignored) and --partitions.
StatusOr<ClusterSpec> VerifyCluster(const VerifyOptions& o) {
  ClusterSpec spec;
  if (!o.cluster.empty()) {
    PX_ASSIGN_OR_RETURN(spec, LoadClusterSpec(o.cluster));
  }
  spec.source = o.cluster.empty() ? "verify" : o.cluster;
  HostSpec host;
  host.name = "localhost";
  if (o.gpu >= 0) {
    host.device = DeviceKind::kGpu;
    host.gpus = {o.gpu};
    host.ranks_per_gpu = o.ranks;
  } else {
    host.device = DeviceKind::kCpu;
    host.cpus = o.ranks;
  }
  spec.hosts = {host};
  if (o.partitions) spec.strategy.partitions = *o.partitions;
  return spec;
}

// The first placeholder among the inputs that fixes the batch dimension, with that size.
struct FixedBatch {
  FeedTarget target;
  int64_t size = 0;
};
std::optional<FixedBatch> FindFixedBatch(const Graph& graph, const Plan& plan,
                                         const VerifyOptions& o) {
  std::vector<std::string> names = plan.feeds;
  for (const FeedSpec& f : o.feeds) names.push_back(f.name);
  for (const std::string& name : names) {
    StatusOr<FeedTarget> target = DescribeFeedTarget(graph, name);
    if (!target.ok()) continue;  // the trainer names unknown feeds
    if (!target->what.starts_with("placeholder")) continue;
    if (!target->shape.known_rank || target->shape.dims.empty() || target->shape.dims[0] < 0) {
      continue;
    }
    const int64_t size = target->shape.dims[0];
    return FixedBatch{*std::move(target), size};
  }
  return std::nullopt;
}

// Without accumulation a placeholder that fixes the batch dimension is the error.
Status CheckOpenBatch(const std::optional<FixedBatch>& fixed, const VerifyOptions& o,
                      int64_t global_batch) {
  if (!fixed) return Status::Ok();
  return InvalidArgumentError(
      "{}: {} fixes the batch dimension at {}, so one device cannot take the global batch of "
      "{} x {} = {}; use --accumulate (one device accumulates the ranks' {} batches of {}), or "
      "export the graph with an open batch (`parallax models export NAME --batch 0`, or a "
      "placeholder of shape [-1, ...])",
      o.graph, fixed->target.DebugString(), fixed->size, o.ranks,
      global_batch / std::max(1, o.ranks), global_batch, o.ranks,
      global_batch / std::max(1, o.ranks));
}

// Examples per epoch: the first file feed's count (the trainer checks that all agree),
// kSyntheticEpochExamples when every input is synthetic.
StatusOr<int64_t> ExamplesPerEpoch(const VerifyOptions& o) {
  for (const FeedSpec& f : o.feeds) {
    if (f.source == "synthetic") continue;
    PX_ASSIGN_OR_RETURN(std::shared_ptr<TensorColumn> column, LoadColumnFromFile(f.source));
    return column->num_examples();
  }
  return kSyntheticEpochExamples;
}

}  // namespace

// --- pieces ------------------------------------------------------------------------------

void CompareInto(const Tensor& want, const Tensor& got, VariableComparison* out) {
  if (want.dtype() != got.dtype() || !(want.shape() == got.shape())) {
    if (out->problem.empty()) {
      out->problem = fmt::format("{} {} in the job, {} {} on one device", DataTypeShortName(got.dtype()),
                                 ShapeText(got.shape()), DataTypeShortName(want.dtype()),
                                 ShapeText(want.shape()));
    }
    return;
  }
  double ref_max = 0, max_abs = 0;
  bool nan = false;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double y = ValueAt(want, i), x = ValueAt(got, i);
    if (std::isnan(x) || std::isnan(y)) nan = true;
    ref_max = std::max(ref_max, std::fabs(y));
    max_abs = std::max(max_abs, std::fabs(x - y));
  }
  out->reference_max = std::max(out->reference_max, ref_max);
  out->max_abs = std::max(out->max_abs, max_abs);
  const double rel = nan ? NAN : max_abs / std::max(ref_max, kTinyMagnitude);
  if (std::isnan(rel) || std::isnan(out->max_rel)) {
    out->max_rel = NAN;
  } else {
    out->max_rel = std::max(out->max_rel, rel);
  }
}

StatusOr<std::optional<PipelineBatch>> FindPipelineBatch(const Graph& graph) {
  std::optional<PipelineBatch> out;
  std::vector<std::string> described;
  for (NodeId id : graph.NodeIds()) {
    const Node& node = graph.node(id);
    if (!IsCountedDequeue(node.op()) || node.num_data_inputs() < 2) continue;
    const Node& count_node = graph.node(node.input(1).node);
    if (count_node.op() != "Const") continue;
    std::optional<tensorflow::AttrValue> value = count_node.FindAttr("value");
    if (!value) continue;
    StatusOr<Tensor> t = Tensor::FromProto(value->tensor());
    if (!t.ok() || t->num_elements() != 1) continue;
    const auto count = static_cast<int64_t>(ValueAt(*t, 0));
    for (const InputRef& use : count_node.fanout()) {
      const Node& consumer = graph.node(use.node);
      if (!IsCountedDequeue(consumer.op()) || use.index != 1) {
        return InvalidArgumentError("{}: the dequeue count Const '{}' of '{}' also feeds '{}', so "
                                    "verify cannot give one device another batch size",
                                    graph.source(), count_node.name(), node.name(),
                                    consumer.name());
      }
    }
    if (!out) out.emplace();
    if (!out->count_consts.empty() && out->count != count) {
      return InvalidArgumentError("{}: input pipelines dequeue {} and {} examples per step",
                                  graph.source(), out->count, count);
    }
    out->count = count;
    if (std::find(out->count_consts.begin(), out->count_consts.end(), count_node.id()) ==
        out->count_consts.end()) {
      out->count_consts.push_back(count_node.id());
    }
    described.push_back(fmt::format("'{}' (count Const '{}')", node.name(), count_node.name()));
  }
  if (out) {
    out->description = fmt::format("input pipeline {}", fmt::join(described, ", "));
  }
  return out;
}

void SetPipelineBatch(Graph& graph, const PipelineBatch& pipeline, int64_t count) {
  for (NodeId id : pipeline.count_consts) {
    std::optional<tensorflow::AttrValue> dtype = graph.node(id).FindAttr("dtype");
    const bool int64 = dtype && dtype->type() == tensorflow::DT_INT64;
    graph.SetAttr(id, "value",
                  int64 ? Int64TensorAttr({count}, true)
                        : Int32TensorAttr({static_cast<int32_t>(count)}, true));
  }
}

// --- Verify --------------------------------------------------------------------------------

namespace {

// Verify compares the job with one device on the same examples, which it picks itself
// (--feed data, synthetic data); a pipeline inside the graph picks its own on each side.
Status RefuseInGraphPipeline(const std::string& graph, const Trainer& trainer) {
  if (trainer.pipeline_outputs().empty()) return Status::Ok();
  return InvalidArgumentError(
      "{}: its input pipeline runs inside the graph ({}), so the one device and the ranks "
      "would read examples of their own; use --accumulate (one device reads each rank's shard "
      "through its own copy of the pipeline), feed the pipeline's outputs (--feed NAME=FILE) "
      "or pass --synthetic",
      graph, fmt::join(trainer.pipeline_outputs(), ", "));
}

}  // namespace

StatusOr<VerifyReport> Verify(const VerifyOptions& o) {
  // The CLI's flag checks say the same (cmd/parallax AtLeast); callers in code get them here.
  if (o.ranks < 1) return InvalidArgumentError("--ranks: must be at least 1, not {}", o.ranks);
  if (o.steps < 1) return InvalidArgumentError("--steps: must be at least 1, not {}", o.steps);
  if (o.batch < 0) return InvalidArgumentError("--batch: must be at least 1, not {}", o.batch);
  if (!(o.tolerance >= 0)) {
    return InvalidArgumentError("--tolerance must be 0 or more, not {}", o.tolerance);
  }
  if (!(o.noise_factor >= 0)) {
    return InvalidArgumentError("--noise-factor must be 0 or more, not {}", o.noise_factor);
  }
  if (o.gpu >= 0 && o.accumulate) {
    return InvalidArgumentError("--device gpu:{}: --accumulate runs on the CPU only", o.gpu);
  }
  if (o.partitions && *o.partitions < 1) {
    return InvalidArgumentError("--partitions must be at least 1, not {}", *o.partitions);
  }

  // Inputs: graph, strategy, plan. Nothing is created before they are all valid.
  PX_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(o.graph, kMaxGraphFileBytes));
  const std::string fingerprint = Fnv1a64Hex(bytes);
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(std::move(bytes), o.graph));
  PX_RETURN_IF_ERROR(VerifyGraph(graph));
  // A Horovod graph is compared as the single-device graph underneath.
  PX_ASSIGN_OR_RETURN(HorovodStrip horovod, StripHorovod(graph));
  if (horovod.total() > 0) spdlog::info("{}: removed {}", o.graph, horovod.Summary());
  PX_ASSIGN_OR_RETURN(TrainingAnalysis analysis, AnalyzeTraining(graph));
  PX_ASSIGN_OR_RETURN(ClusterSpec cluster, VerifyCluster(o));
  PX_ASSIGN_OR_RETURN(RankLayout layout, LayoutRanks(cluster));
  TransformOptions transform;
  transform.strategy = o.strategy;
  transform.sparse = o.sparse;
  transform.source_fingerprint = fingerprint;
  PX_ASSIGN_OR_RETURN(Plan plan, BuildPlan(graph, analysis, cluster, layout, transform));

  VerifyReport report;
  // The transform's warnings are notes here: verify feeds every input itself (an in-graph
  // pipeline's outputs too, sharded), and what they warn of shows up in the comparison.
  for (const std::string& warning : plan.warnings) {
    report.notes.push_back("transform: " + warning);
  }
  report.graph = o.graph;
  report.ranks = o.ranks;
  report.steps = o.steps;
  report.strategy = plan.strategy;
  report.tolerance = o.tolerance;
  // N·b: two more one-device runs, each batch's examples reordered, measure the
  // reference's noise.
  const bool noise_run = !o.accumulate && o.noise_factor > 0;
  if (noise_run) report.noise_factor = o.noise_factor;

  // Batch: b per rank, N·b on the one device.
  // With accumulation the one device keeps b: the graph as it is.
  Graph reference = graph;
  PX_ASSIGN_OR_RETURN(std::optional<PipelineBatch> pipeline, FindPipelineBatch(graph));
  const std::optional<FixedBatch> fixed = FindFixedBatch(graph, plan, o);
  int64_t batch = o.batch > 0 ? o.batch : kDefaultBatchSize;
  if (pipeline) {
    if (o.batch > 0 && o.batch != pipeline->count) {
      return InvalidArgumentError("--batch {} conflicts with {}: the ranks' graphs dequeue {} "
                                  "examples per step",
                                  o.batch, pipeline->description, pipeline->count);
    }
    batch = pipeline->count;
    if (!o.accumulate) {
      SetPipelineBatch(reference, *pipeline, batch * o.ranks);
      report.notes.push_back(fmt::format("{}: one device dequeues {} = {} x {} examples per step",
                                         pipeline->description, batch * o.ranks, o.ranks, batch));
    }
  } else if (fixed) {
    if (o.accumulate && o.batch > 0 && o.batch != fixed->size) {
      return InvalidArgumentError("--batch {} conflicts with {}: it fixes the batch at {}",
                                  o.batch, fixed->target.DebugString(), fixed->size);
    }
    // The ranks train at the graph's batch; without --batch so does the message below.
    if (o.accumulate || o.batch <= 0) batch = fixed->size;
  }
  report.batch = batch;
  report.global_batch = batch * o.ranks;
  report.accumulate = o.accumulate;
  if (!o.accumulate) PX_RETURN_IF_ERROR(CheckOpenBatch(fixed, o, report.global_batch));
  std::optional<AccumulationPlan> accumulation;
  if (o.accumulate) {
    if (analysis.train_ops.empty()) {
      return InvalidArgumentError("{}: no train op found (no node runs a gradient update)",
                                  o.graph);
    }
    PX_ASSIGN_OR_RETURN(accumulation,
                        PlanAccumulation(graph, analysis, plan,
                                         graph.node(analysis.train_ops[0].node).name()));
    if (!accumulation->backward_left.empty()) {
      report.notes.push_back(fmt::format(
          "accumulate: with the gradients fed the train op still runs {} node(s) of the "
          "backward pass (on micro-batch 0), e.g. '{}'",
          accumulation->backward_left.size(), accumulation->backward_left[0]));
    }
  }
  std::set<std::string> rank_local;
  for (const RankLocalVariable& v : RankLocalState(graph, analysis)) rank_local.insert(v.name);
  // Without an init op both sides run each variable's initializer (seeded: the same values).
  const bool every_variable_initialised =
      std::all_of(analysis.variables.begin(), analysis.variables.end(), [](const Variable& v) {
        return v.kind == VariableKind::kFrozen || v.initializer != kNoNode;
      });
  if (analysis.init_op.node == kNoNode && o.init_checkpoint.empty() &&
      !every_variable_initialised) {
    return InvalidArgumentError("{}: no init op found (no node initialises the variables); "
                                "start both sides from a checkpoint with --init-checkpoint FILE",
                                o.graph);
  }
  std::optional<SafetensorsContents> init;  // --init-checkpoint's, read once
  bool init_tf = false;  // a TF checkpoint: both sides' `--init-checkpoint`
  if (!o.init_checkpoint.empty()) {
    StatusOr<CheckpointLocation> location = ResolveCheckpoint(o.init_checkpoint);
    if (!location.ok()) return location.status().WithPrefix("--init-checkpoint");
    init_tf = location->format == CheckpointFormat::kTensorFlow;
  }
  if (!o.init_checkpoint.empty() && !init_tf) {
    StatusOr<SafetensorsContents> read = ReadSafetensors(o.init_checkpoint);
    if (!read.ok()) return read.status().WithPrefix("--init-checkpoint");
    init = std::move(read).value();
  }

  PX_ASSIGN_OR_RETURN(TempDir work, o.keep_dir.empty() ? TempDir::Make("parallax-verify")
                                                       : TempDir::Keep(o.keep_dir, "--keep"));
  if (work.kept()) report.kept_dir = work.path();
  const std::string job_dir = work.Sub("job");
  const std::string single_dir = work.Sub("single");
  // The noise runs: each batch reversed, and each batch's halves swapped.
  const std::vector<std::pair<BatchOrder, std::string>> noise_orders = {
      {BatchOrder::kReversed, work.Sub("single-reversed")},
      {BatchOrder::kRotatedHalf, work.Sub("single-rotated")}};
  const std::string ranks_dir = work.Sub("ranks");
  const std::string log_path = work.Sub("job.log");

  // The job: the transform, written as `parallax transform` writes it.
  const MpirunOptions launch = MpirunOptionsForThisMachine();
  LocalStorage storage(static_cast<size_t>(o.ranks));
  {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<JobWriter> writer, JobWriter::Begin(job_dir, false));
    std::mutex mutex;
    PX_RETURN_IF_ERROR(TransformEach(
        graph, plan, PipelineOptions{}, TransformRunOptions{}, [&](int rank, Graph&& rank_graph) {
          std::set<std::string> local;
          for (NodeId id : rank_graph.NodeIds()) {
            const std::string_view name = rank_graph.node(id).name();
            if (name.ends_with(kLocalSuffix)) local.emplace(name);
          }
          {
            std::lock_guard<std::mutex> lock(mutex);
            storage[static_cast<size_t>(rank)] = std::move(local);
          }
          return writer->WriteRankGraph(rank, rank_graph);
        }));
    PX_RETURN_IF_ERROR(writer->WriteJobFiles(plan, launch));
    PX_RETURN_IF_ERROR(writer->Commit());
  }
  if (init) {
    PX_RETURN_IF_ERROR(WriteInitialCheckpoints(o, *init, plan, storage, single_dir, ranks_dir));
    for (const auto& [order, dir] : noise_run ? noise_orders : decltype(noise_orders){}) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (!ec) fs::copy_file(CheckpointPath(single_dir, 0), CheckpointPath(dir, 0), ec);
      if (ec) return InternalError("{}: cannot copy the initial checkpoint: {}", dir, ec.message());
    }
  }

  // One device, in this process.
  TrainerOptions single;
  single.feeds = o.feeds;
  single.synthetic = o.synthetic;
  single.batch = pipeline ? 0 : report.global_batch;
  single.steps = o.steps;
  single.seed = o.seed;
  single.shuffle = o.shuffle;
  single.threads = o.threads;
  single.gpu = o.gpu;
  if (o.accumulate && o.threads <= 0) {
    // The ranks' kernel threads (the cores divided by N, as `parallax run JOB_DIR`): a
    // kernel's result can depend on how its work is split, and with accumulation the one
    // device computes the very tensors each rank computes.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    single.threads = std::max(1, cores / o.ranks);
  }
  single.log_every = o.steps;
  single.checkpoint_dir = single_dir;
  single.keep_checkpoints = 0;
  single.resume = init.has_value();
  if (init_tf) single.init_checkpoint = o.init_checkpoint;
  single.input.input_dir = o.input_dir;
  single.input.input_map = o.input_map;
  std::string single_checkpoint;
  std::vector<std::string> noise_checkpoints;  // the noise runs'
  bool in_graph_input = false;  // the graph reads its examples itself (tf.data, readers)
  if (accumulation) {
    single.batch = pipeline ? 0 : batch;
    PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(reference, single));
    in_graph_input = !trainer->pipeline_outputs().empty();
    // An in-graph pipeline: rank r's copy reads shard r of N, as rank r of the job does.
    std::vector<std::unique_ptr<Trainer>> inputs;
    std::vector<Trainer*> pipelines;
    if (in_graph_input) {
      for (int r = 0; r < o.ranks; ++r) {
        TrainerOptions input = single;
        input.shard = ShardSpec{.index = r, .count = o.ranks};
        input.checkpoint_dir.clear();
        input.resume = false;
        input.metrics_path.clear();
        PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> reader, Trainer::Create(reference, input));
        Status started = reader->Initialize();
        if (!started.ok()) {
          return started.WithPrefix(fmt::format("{}: rank {}'s input pipeline", o.graph, r));
        }
        pipelines.push_back(reader.get());
        inputs.push_back(std::move(reader));
      }
    } else if (trainer->batch_size() != batch) {
      return InternalError("verify: one device's micro-batch is {}, expected {}",
                           trainer->batch_size(), batch);
    }
    spdlog::info("one device: {} accumulated micro-batches{}, {} steps", o.ranks,
                 in_graph_input ? " from the ranks' input pipelines"
                                : fmt::format(" of {}", batch),
                 o.steps);
    StatusOr<AccumulatedRun> run = TrainAccumulated(
        *trainer, *accumulation,
        AccumulateOptions{.ranks = o.ranks, .steps = o.steps, .seed = o.seed,
                          .shuffle = o.shuffle, .checkpoint_dir = single_dir,
                          .pipelines = pipelines});
    if (!run.ok()) {
      return run.status().WithPrefix(
          fmt::format("{}: one device, {} accumulated micro-batches of {}", o.graph, o.ranks,
                      in_graph_input ? trainer->batch_size() : batch));
    }
    if (in_graph_input) {
      report.batch = batch = trainer->batch_size();
      report.global_batch = batch * o.ranks;
    }
    report.single_loss_first = run->first_loss;
    report.single_loss_last = run->last_loss;
    single_checkpoint = run->checkpoint;
  } else {
    PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(reference, single));
    PX_RETURN_IF_ERROR(RefuseInGraphPipeline(o.graph, *trainer));
    if (trainer->batch_size() != report.global_batch) {
      return InternalError("verify: one device's batch is {}, expected {}", trainer->batch_size(),
                           report.global_batch);
    }
    // The job reads floor(E/N) examples of each epoch per rank and skips the last E mod N;
    // one device reads all E. They agree while no rank crosses an epoch end.
    PX_ASSIGN_OR_RETURN(const int64_t examples, ExamplesPerEpoch(o));
    if (examples % o.ranks != 0 && o.steps * batch > examples / o.ranks) {
      return InvalidArgumentError(
          "the data has {} examples per epoch, not a multiple of {} ranks: each epoch the job "
          "leaves out the last {}, one device does not, so they read different examples after "
          "step {}; use --steps {} or fewer, or data with a multiple of {} examples",
          examples, o.ranks, examples % o.ranks, examples / o.ranks / batch,
          examples / o.ranks / batch, o.ranks);
    }
    spdlog::info("one device: batch {}, {} steps", trainer->batch_size(), o.steps);
    StatusOr<TrainSummary> summary = trainer->Run();
    if (!summary.ok()) {
      // The usual cause at step 1: a batch size fixed inside the graph (a Reshape to a
      // constant shape), which no feed can change.
      const bool first_step = summary.status().message().starts_with("step 1:");
      return Status(summary.status().code(),
                    fmt::format("{}: one device, batch {}{}: {}{}", o.graph, report.global_batch,
                                pipeline ? fmt::format(" (its input pipeline dequeues {})", batch)
                                         : "",
                                summary.status().message(),
                                first_step && o.ranks > 1
                                    ? "; the graph seems to fix its batch size beyond its inputs "
                                      "(e.g. a Reshape to a constant shape): use --accumulate "
                                      "(one device accumulates the ranks' batches) or a graph "
                                      "that trains at any batch size"
                                    : ""));
    }
    report.single_loss_first = summary->first_loss;
    report.single_loss_last = summary->last_loss;
    single_checkpoint = summary->last_checkpoint;
    for (const auto& [order, dir] : noise_run ? noise_orders : decltype(noise_orders){}) {
      TrainerOptions reordered = single;
      reordered.batch_order = order;
      reordered.checkpoint_dir = dir;
      const char* what = order == BatchOrder::kReversed ? "each batch reversed"
                                                        : "each batch's halves swapped";
      spdlog::info("one device again, {} (float noise)", what);
      PX_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> again, Trainer::Create(reference, reordered));
      StatusOr<TrainSummary> noise = again->Run();
      if (!noise.ok()) {
        return noise.status().WithPrefix(
            fmt::format("{}: one device, batch {}, {}", o.graph, report.global_batch, what));
      }
      noise_checkpoints.push_back(noise->last_checkpoint);
    }
  }

  // N ranks under mpirun, their output in job.log.
  MpirunOptions run = launch;
  for (const FeedSpec& f : o.feeds) {
    run.run_args.push_back("--feed");
    run.run_args.push_back(f.name + "=" + f.source);
  }
  if (o.synthetic) run.run_args.push_back("--synthetic");
  for (const std::string& arg :
       {std::string("--steps"), std::to_string(o.steps), std::string("--seed"),
        std::to_string(o.seed), std::string("--log-every"), std::to_string(o.steps),
        std::string("--checkpoint-dir"), ranks_dir, std::string("--keep-checkpoints"),
        std::string("0")}) {
    run.run_args.push_back(arg);
  }
  if (!pipeline && !in_graph_input) {
    run.run_args.push_back("--batch");
    run.run_args.push_back(std::to_string(batch));
  }
  if (!o.shuffle) run.run_args.push_back("--no-shuffle");
  // Every rank's copy of the replicated variables is compared, so every rank writes one.
  run.run_args.push_back("--checkpoint-every-rank");
  if (init) run.run_args.push_back("--resume");
  if (init_tf) {
    run.run_args.push_back("--init-checkpoint");
    run.run_args.push_back(o.init_checkpoint);
  }
  if (!o.input_dir.empty()) {
    run.run_args.push_back("--input-dir");
    run.run_args.push_back(o.input_dir);
  }
  for (const auto& [from, to] : o.input_map) {
    run.run_args.push_back("--input-map");
    run.run_args.push_back(from + "=" + to);
  }
  const std::vector<std::string> argv = MpirunArgv(plan, job_dir, run);
  spdlog::info("{}", ShellLine(argv));
  PX_ASSIGN_OR_RETURN(int exit_status, RunAndWait(argv, log_path));
  if (exit_status != 0) {
    return Status(StatusCode::kAborted,
                  fmt::format("{}: the {}-rank job failed: mpirun exited with status {}{}\n{}",
                              o.graph, o.ranks, exit_status,
                              work.kept() ? fmt::format(" (output: {})", log_path) : "",
                              Tail(log_path, 20)));
  }

  // Compare. ReadJobCheckpoint reassembles the parameter-server variables (and checks
  // their rows); it keeps rank 0's copy of a replicated one, and verify wants every
  // rank's, so those are read from each file (the ranks ran with --checkpoint-every-rank:
  // each file holds its rank's own copy; ReadRankFile reads either layout).
  PX_ASSIGN_OR_RETURN(SafetensorsContents want, ReadSafetensors(single_checkpoint));
  StatusOr<JobCheckpoint> job = ReadJobCheckpoint(ranks_dir, o.steps);
  if (!job.ok()) {
    return Status(StatusCode::kAborted,
                  fmt::format("{}: the {}-rank job's checkpoint: {}", o.graph, o.ranks,
                              job.status().message()));
  }
  std::vector<SafetensorsContents> got;
  for (const std::string& path : job->files) {
    PX_ASSIGN_OR_RETURN(RankFileContents file, ReadRankFile(path));
    got.push_back(std::move(file.contents));
  }
  std::vector<SafetensorsContents> reordered;
  for (const std::string& path : noise_checkpoints) {
    PX_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(path));
    reordered.push_back(std::move(contents));
  }
  for (const auto& [name, y] : want.tensors) {
    VariableComparison c;
    c.name = name;
    c.shape = ShapeText(y.shape());
    c.dims = y.shape().dims();
    const VariablePlan* owner = OwnerOf(plan, name);
    // A slot shows its variable's method when it moves with it (PS), else "local".
    c.method = owner == nullptr ? "local"
               : owner->name == name || owner->method == SyncMethod::kParameterServer
                   ? std::string(SyncMethodName(owner->method))
                   : "local";
    c.partitioned = job->partitioned.contains(name);
    c.rank_local = rank_local.contains(name) && !c.partitioned;
    // Rank r's copy of rank-local state holds rank r's statistics; one device accumulating
    // computes rank 0's (its apply run sees micro-batch 0), one device with N·b neither.
    const size_t compared_ranks = c.rank_local ? (o.accumulate ? 1 : 0) : got.size();
    c.compared = compared_ranks > 0;
    if (c.partitioned) {
      CompareInto(y, job->variables.at(name), &c);
    } else {
      for (size_t r = 0; r < compared_ranks; ++r) {
        auto t = got[r].tensors.find(name);
        if (t == got[r].tensors.end()) {
          c.problem = fmt::format("missing from rank {}'s checkpoint", r);
          break;
        }
        CompareInto(y, t->second, &c);
        if (!c.problem.empty()) {
          c.problem = fmt::format("rank {}: {}", r, c.problem);
          break;
        }
      }
    }
    if (!reordered.empty() && c.compared) {
      VariableComparison self;  // the reference against its reordered runs
      for (const SafetensorsContents& other : reordered) {
        auto t = other.tensors.find(name);
        if (t != other.tensors.end()) CompareInto(y, t->second, &self);
        if (t == other.tensors.end() || !self.problem.empty()) {
          return InternalError("{}: a noise run's checkpoint lacks '{}' or differs in shape",
                               o.graph, name);
        }
      }
      c.noise = self.max_rel;
      report.noise = std::isnan(self.max_rel) || (report.noise && std::isnan(*report.noise))
                         ? NAN
                         : std::max(report.noise.value_or(0.0), self.max_rel);
    }
    report.variables.push_back(std::move(c));
  }
  // The bound is the training's noise, not each variable's: rounding differences spread
  // through every variable, and one variable's own noise can be 10x below what another
  // summation order leaves in it (Fashion-MNIST's Adam mlp: dense_2/kernel 1.8e-7 noise,
  // 2.9e-6 between the job and one device).
  const double bound =
      report.noise && !std::isnan(*report.noise)
          ? std::max(o.tolerance, std::min(o.noise_factor * *report.noise, kMaxNoiseBound))
          : o.tolerance;
  report.bound = bound;
  report.pass = true;
  for (VariableComparison& c : report.variables) {
    c.bound = bound;
    c.pass = c.problem.empty() && !std::isnan(c.max_rel) && c.max_rel <= bound;
    if (!c.compared) continue;
    report.pass = report.pass && c.pass;
    report.max_abs = std::max(report.max_abs, c.max_abs);
    report.max_rel = std::isnan(c.max_rel) || std::isnan(report.max_rel)
                         ? NAN
                         : std::max(report.max_rel, c.max_rel);
  }
  if (report.variables.empty()) {
    return InvalidArgumentError("{}: the graph has no variables to compare", o.graph);
  }
  std::vector<std::string> local_names;
  for (const VariableComparison& c : report.variables) {
    if (c.rank_local) local_names.push_back(c.name);
  }
  if (!local_names.empty()) {
    report.notes.push_back(fmt::format(
        "rank-local state ({}): each rank updates it from its own examples or random numbers "
        "(batch statistics are not synchronised); {}",
        fmt::join(local_names, ", "),
        o.accumulate ? "one device keeps a copy per rank, each updated by its micro-batch; "
                       "compared on rank 0"
                     : "not compared (one device's statistics are over N·b examples): use "
                       "--accumulate to compare rank 0's"));
  }
  if (std::none_of(report.variables.begin(), report.variables.end(),
                   [](const VariableComparison& c) { return c.compared; })) {
    return InvalidArgumentError("{}: the graph has no variables to compare", o.graph);
  }
  if (report.noise && !(report.noise_factor * *report.noise <= kMaxNoiseBound)) {
    report.notes.push_back(fmt::format(
        "one device differs from itself by up to {} (relative) when only the order of each "
        "batch's examples changes: random ops in the step (dropout, samplers) or training this "
        "sensitive leave the N·b comparison unable to tell a bug from rounding (its bound "
        "stops at {}); --accumulate compares exactly",
        FormatNumber(*report.noise), kMaxNoiseBound));
  }
  return report;
}

std::string RenderVerifyReport(const VerifyReport& r) {
  std::string out =
      r.accumulate
          ? fmt::format("verify {}: {} ranks x batch {} vs one device accumulating {} batches of "
                        "{}, {} steps, strategy {}\n",
                        r.graph, r.ranks, r.batch, r.ranks, r.batch, r.steps, r.strategy)
          : fmt::format(
                "verify {}: {} ranks x batch {} vs one device x batch {}, {} steps, strategy {}\n",
                r.graph, r.ranks, r.batch, r.global_batch, r.steps, r.strategy);
  for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);
  size_t width = 8;
  for (const VariableComparison& v : r.variables) width = std::max(width, v.name.size());
  const bool noise = r.noise.has_value();
  // The NOISE column only when a noise run was made.
  auto noise_cell = [&](const std::string& text) {
    return noise ? fmt::format(" {:>12}", text) : std::string();
  };
  out += fmt::format("  {:<{}}  {:<12} {:<10} {:>12} {:>12}{}  {}\n", "VARIABLE", width, "SHAPE",
                     "METHOD", "MAX ABS", "MAX REL", noise_cell("NOISE"), "RESULT");
  for (const VariableComparison& v : r.variables) {
    std::string method =
        v.method + (v.partitioned ? " (rows)" : v.rank_local && v.compared ? " (rank 0)" : "");
    if (!v.compared) {
      out += fmt::format("  {:<{}}  {:<12} {:<10} {:>12} {:>12}{}  not compared (rank-local)\n",
                         v.name, width, v.shape, method, "-", "-", noise_cell("-"));
      continue;
    }
    out += fmt::format("  {:<{}}  {:<12} {:<10} {:>12} {:>12}{}  {}{}\n", v.name, width, v.shape,
                       method, FormatNumber(v.max_abs), FormatNumber(v.max_rel),
                       noise_cell(v.noise ? FormatNumber(*v.noise) : "-"),
                       v.pass ? "PASS" : "FAIL", v.problem.empty() ? "" : ": " + v.problem);
  }
  if (noise) {
    out += fmt::format(
        "noise: one device against itself with each batch's examples reversed, and with its "
        "halves swapped (the same training, summed in other orders): up to {} relative; a "
        "variable passes within "
        "max(tolerance {}, {} x that, at most {})\n",
        FormatNumber(*r.noise), r.tolerance, r.noise_factor, kMaxNoiseBound);
  }
  out += fmt::format(
      "overall: {} variables compared, max abs difference {}, max relative difference {} ({}): "
      "{}\n",
      std::count_if(r.variables.begin(), r.variables.end(),
                    [](const VariableComparison& v) { return v.compared; }),
      FormatNumber(r.max_abs), FormatNumber(r.max_rel),
      noise ? fmt::format("bound {}", FormatNumber(r.bound)) : fmt::format("tolerance {}", r.tolerance),
      r.pass ? "PASS" : "FAIL");
  if (!r.kept_dir.empty()) out += fmt::format("kept {}\n", r.kept_dir);
  return out;
}

std::string VerifyReportToJson(const VerifyReport& r) {
  JsonWriter w;
  auto number = [&](double v) -> JsonWriter& { return std::isnan(v) ? w.Null() : w.Double(v); };
  w.BeginObject();
  w.Field("graph", r.graph).Field("ranks", r.ranks).Field("steps", r.steps);
  w.Field("batch", r.batch).Field("global_batch", r.global_batch);
  w.Field("accumulate", r.accumulate);
  w.Field("strategy", r.strategy);
  w.Key("tolerance").Double(r.tolerance);
  w.Key("noise_factor").Double(r.noise_factor);
  w.Key("noise");
  if (r.noise) number(*r.noise); else w.Null();
  w.Key("bound").Double(r.bound);
  w.Key("variables").BeginArray();
  for (const VariableComparison& v : r.variables) {
    w.BeginObject();
    w.Field("name", v.name);
    w.Key("shape").BeginArray();
    for (int64_t d : v.dims) w.Int(d);
    w.EndArray();
    w.Field("method", v.method);
    w.Field("partitioned", v.partitioned);
    w.Field("rank_local", v.rank_local).Field("compared", v.compared);
    w.Key("max_abs");
    number(v.max_abs);
    w.Key("max_rel");
    number(v.max_rel);
    w.Key("reference_max");
    number(v.reference_max);
    w.Key("noise");
    if (v.noise) number(*v.noise); else w.Null();
    w.Key("bound");
    number(v.bound);
    w.Key("problem");
    if (v.problem.empty()) w.Null(); else w.String(v.problem);
    w.Field("pass", v.pass);
    w.EndObject();
  }
  w.EndArray();
  w.Key("max_abs");
  number(r.max_abs);
  w.Key("max_rel");
  number(r.max_rel);
  w.Field("pass", r.pass);
  w.Key("notes").BeginArray();
  for (const std::string& n : r.notes) w.String(n);
  w.EndArray();
  w.Key("kept_dir");
  if (r.kept_dir.empty()) w.Null(); else w.String(r.kept_dir);
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace parallax
