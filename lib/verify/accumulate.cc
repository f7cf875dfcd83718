#include "lib/verify/accumulate.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/data/sampler.h"
#include "lib/runtime/random.h"

namespace parallax {
namespace {

// The gradient-scope nodes the train op needs when the nodes `fed` are fed: its data and
// control ancestors, not looking past fed nodes (the executor's rule).
std::vector<std::string> BackwardLeft(const Graph& graph, NodeId train_op,
                                      const std::set<NodeId>& fed) {
  std::vector<bool> seen(static_cast<size_t>(graph.id_limit()), false);
  std::vector<NodeId> stack = {train_op};
  std::vector<std::string> out;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(id)]) continue;
    seen[static_cast<size_t>(id)] = true;
    if (fed.contains(id)) continue;
    const Node& node = graph.node(id);
    if (InGradientsScope(node.name())) out.emplace_back(node.name());
    for (const OutputRef& in : node.inputs()) stack.push_back(in.node);
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T>
void AddInto(const Tensor& in, Tensor& sum) {
  T* out = sum.data<T>();
  const T* add = in.data<T>();
  for (int64_t i = 0; i < sum.num_elements(); ++i) out[i] += add[i];
}

template <typename T>
void DivideBy(Tensor& t, int n) {
  const T d = static_cast<T>(n);
  T* data = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) data[i] /= d;
}

// Stream index 0's positions from `from`, every other stream's from `others` (a stream
// missing from `from` is at block 0).
std::map<std::string, uint64_t> WithRankZeroFrom(const std::map<std::string, uint64_t>& from,
                                                 std::map<std::string, uint64_t> others) {
  for (auto& [id, position] : others) {
    if (!id.ends_with("@0")) continue;
    auto it = from.find(id);
    position = it != from.end() ? it->second : 0;
  }
  for (const auto& [id, position] : from) {
    if (id.ends_with("@0")) others.emplace(id, position);
  }
  return others;
}

}  // namespace

StatusOr<AccumulationPlan> PlanAccumulation(const Graph& graph, const TrainingAnalysis& analysis,
                                            const Plan& plan, std::string_view train_op) {
  AccumulationPlan out;
  out.train_op = std::string(train_op);
  out.average = plan.average;
  const NodeId train = graph.FindNode(train_op);
  if (train == kNoNode) {
    return NotFoundError("{}: no train op '{}'", graph.source(), train_op);
  }
  std::set<std::string> seen;
  std::set<NodeId> fed;
  auto add = [&](OutputRef values, OutputRef indices, const Variable& variable) {
    const std::string tensor = graph.TensorName(values);
    if (!seen.insert(tensor).second) return;
    bool combined = true;
    for (const VariablePlan& v : plan.variables) {
      if (v.name == variable.name) combined = v.method != SyncMethod::kLocal;
    }
    AccumulatedGradient gradient{tensor, "", variable.name, combined};
    fed.insert(values.node);
    if (indices.node != kNoNode) {
      gradient.indices = graph.TensorName(indices);
      fed.insert(indices.node);
    }
    out.gradients.push_back(std::move(gradient));
  };
  for (const GradientUpdate& update : analysis.updates) {
    const Variable& variable = analysis.variables[static_cast<size_t>(update.variable)];
    const std::string_view op = graph.node(update.op).name();
    if (update.at_boundary) {
      // The tensors tf.gradients returned: the job synchronises them there.
      for (const BoundaryGradient& b : update.boundary) add(b.values, b.indices, variable);
      continue;
    }
    if (update.sparse) {
      // The IndexedSlices before TF's dedup: what allgather gathers and the servers receive.
      if (update.raw_values.node == kNoNode || update.raw_indices.node == kNoNode) {
        return InvalidArgumentError("{}: variable '{}': sparse update '{}' has no gradient "
                                    "slices to accumulate",
                                    graph.source(), variable.name, op);
      }
      add(update.raw_values, update.raw_indices, variable);
      continue;
    }
    if (update.grad_input.node == kNoNode) {
      return InvalidArgumentError("{}: variable '{}': update '{}' has no gradient input to "
                                  "accumulate",
                                  graph.source(), variable.name, op);
    }
    add(update.grad_input, OutputRef{kNoNode, 0}, variable);
  }
  if (out.gradients.empty()) {
    return InvalidArgumentError("{}: no gradient updates to accumulate", graph.source());
  }
  out.backward_left = BackwardLeft(graph, train, fed);
  out.rank_local = RankLocalState(graph, analysis);
  return out;
}

StatusOr<Tensor> CombineGradients(std::span<const Tensor> micro, bool average,
                                  std::string_view what) {
  if (micro.empty()) return InvalidArgumentError("{}: no micro-batches to combine", what);
  const DataType dtype = micro[0].dtype();
  if (dtype != tensorflow::DT_FLOAT && dtype != tensorflow::DT_DOUBLE) {
    return InvalidArgumentError("{}: a {} gradient cannot be accumulated (float or double only)",
                                what, DataTypeShortName(dtype));
  }
  Tensor sum = micro[0].DeepCopy();
  for (size_t r = 1; r < micro.size(); ++r) {
    if (micro[r].dtype() != dtype || !(micro[r].shape() == sum.shape())) {
      return InvalidArgumentError("{}: micro-batch {} gives {} {}, micro-batch 0 {} {}", what, r,
                                  DataTypeShortName(micro[r].dtype()),
                                  micro[r].shape().DebugString(), DataTypeShortName(dtype),
                                  sum.shape().DebugString());
    }
    if (dtype == tensorflow::DT_FLOAT) {
      AddInto<float>(micro[r], sum);
    } else {
      AddInto<double>(micro[r], sum);
    }
  }
  if (average && micro.size() > 1) {
    if (dtype == tensorflow::DT_FLOAT) {
      DivideBy<float>(sum, static_cast<int>(micro.size()));
    } else {
      DivideBy<double>(sum, static_cast<int>(micro.size()));
    }
  }
  return sum;
}

StatusOr<std::pair<Tensor, Tensor>> ConcatSlices(std::span<const Tensor> values,
                                                 std::span<const Tensor> indices, bool average,
                                                 std::string_view what) {
  if (values.empty() || values.size() != indices.size()) {
    return InvalidArgumentError("{}: {} values for {} indices", what, values.size(),
                                indices.size());
  }
  const DataType value_type = values[0].dtype();
  const DataType index_type = indices[0].dtype();
  if (value_type != tensorflow::DT_FLOAT && value_type != tensorflow::DT_DOUBLE) {
    return InvalidArgumentError("{}: a {} gradient cannot be accumulated (float or double only)",
                                what, DataTypeShortName(value_type));
  }
  if (index_type != tensorflow::DT_INT32 && index_type != tensorflow::DT_INT64) {
    return InvalidArgumentError("{}: {} indices (int32 or int64 only)", what,
                                DataTypeShortName(index_type));
  }
  const TensorShape& first = values[0].shape();
  if (first.rank() < 1) return InvalidArgumentError("{}: scalar slice values", what);
  int64_t rows = 0;
  for (size_t r = 0; r < values.size(); ++r) {
    const TensorShape& shape = values[r].shape();
    bool same_rows = values[r].dtype() == value_type && shape.rank() == first.rank();
    for (int d = 1; same_rows && d < shape.rank(); ++d) same_rows = shape.dim(d) == first.dim(d);
    if (!same_rows || indices[r].dtype() != index_type || indices[r].shape().rank() != 1 ||
        indices[r].shape().dim(0) != shape.dim(0)) {
      return InvalidArgumentError(
          "{}: micro-batch {} gives {} values {} with {} indices {}, micro-batch 0 {} values {}",
          what, r, DataTypeShortName(values[r].dtype()), shape.DebugString(),
          DataTypeShortName(indices[r].dtype()), indices[r].shape().DebugString(),
          DataTypeShortName(value_type), first.DebugString());
    }
    rows += shape.dim(0);
  }
  TensorShape value_shape = first;
  value_shape.set_dim(0, rows);
  Tensor all_values(value_type, value_shape);
  Tensor all_indices(index_type, TensorShape({rows}));
  const size_t value_bytes = DataTypeSize(value_type), index_bytes = DataTypeSize(index_type);
  char* value_out = static_cast<char*>(all_values.raw_data());
  char* index_out = static_cast<char*>(all_indices.raw_data());
  for (size_t r = 0; r < values.size(); ++r) {
    const size_t v = static_cast<size_t>(values[r].num_elements()) * value_bytes;
    const size_t i = static_cast<size_t>(indices[r].num_elements()) * index_bytes;
    if (v > 0) std::memcpy(value_out, values[r].raw_data(), v);
    if (i > 0) std::memcpy(index_out, indices[r].raw_data(), i);
    value_out += v;
    index_out += i;
  }
  if (average && values.size() > 1) {
    if (value_type == tensorflow::DT_FLOAT) {
      DivideBy<float>(all_values, static_cast<int>(values.size()));
    } else {
      DivideBy<double>(all_values, static_cast<int>(values.size()));
    }
  }
  return std::make_pair(std::move(all_values), std::move(all_indices));
}

StatusOr<AccumulatedRun> TrainAccumulated(Trainer& trainer, const AccumulationPlan& plan,
                                          const AccumulateOptions& o) {
  if (o.ranks < 1) return InvalidArgumentError("accumulate: {} micro-batches", o.ranks);
  if (!o.pipelines.empty() && o.pipelines.size() != static_cast<size_t>(o.ranks)) {
    return InvalidArgumentError("accumulate: {} input pipelines for {} micro-batches",
                                o.pipelines.size(), o.ranks);
  }
  PX_RETURN_IF_ERROR(trainer.Initialize());
  // Every rank's sampler, as the job's ranks create theirs.
  std::vector<Sampler> samplers;
  for (int r = 0; r < o.ranks; ++r) {
    PX_ASSIGN_OR_RETURN(Sampler sampler,
                        Sampler::Create(trainer.examples_per_epoch(), o.seed, o.shuffle,
                                        ShardSpec{.index = r, .count = o.ranks}));
    samplers.push_back(std::move(sampler));
  }
  const int64_t batch = trainer.batch_size();
  RunRequest micro;
  for (const AccumulatedGradient& g : plan.gradients) {
    micro.fetches.push_back(g.tensor);
    if (!g.indices.empty()) micro.fetches.push_back(g.indices);
  }
  const bool has_loss = !trainer.loss().empty();
  if (has_loss) micro.fetches.push_back(trainer.loss());
  RandomStreams& random = trainer.executor().session().random();
  // copies[r]: rank r's rank-local state, by store key.
  VariableStore& store = trainer.executor().variables();
  std::vector<std::string> local_keys;
  for (const RankLocalVariable& local : plan.rank_local) {
    for (const CheckpointVariable& v : trainer.variables()) {
      if (v.name == local.name) local_keys.push_back(v.store_key);
    }
    for (const std::string& write : local.writes) micro.targets.push_back(write);
  }
  auto save_state = [&]() {
    std::map<std::string, Tensor> state;
    for (const std::string& key : local_keys) {
      if (const Tensor* value = store.Find(key); value != nullptr) {
        state.emplace(key, value->DeepCopy());
      }
    }
    return state;
  };
  auto load_state = [&](const std::map<std::string, Tensor>& state) {
    for (const auto& [key, value] : state) *store.Slot(key) = value.DeepCopy();
  };
  std::vector<std::map<std::string, Tensor>> copies(static_cast<size_t>(o.ranks), save_state());

  AccumulatedRun run;
  for (int64_t step = 1; step <= o.steps; ++step) {
    // fetched[f][r]: fetch f of micro-batch r.
    std::vector<std::vector<Tensor>> fetched(micro.fetches.size());
    std::vector<std::pair<std::string, Tensor>> first_inputs;
    std::map<std::string, uint64_t> step_start;
    std::map<std::string, Tensor> state_start;  // rank 0's rank-local state
    double loss_sum = 0;
    for (int r = 0; r < o.ranks; ++r) {
      const std::vector<int64_t> ids = samplers[static_cast<size_t>(r)].Next(batch);
      Trainer* pipeline = o.pipelines.empty() ? nullptr : o.pipelines[static_cast<size_t>(r)];
      StatusOr<std::vector<std::pair<std::string, Tensor>>> feeds =
          trainer.MicroBatchFeeds(ids, pipeline);
      if (!feeds.ok()) {
        return feeds.status().WithPrefix(fmt::format("step {}: micro-batch {}", step, r));
      }
      micro.feeds = *std::move(feeds);
      if (r == 0) step_start = random.Positions();
      random.set_stream_index(r);  // rank r's random numbers
      load_state(copies[static_cast<size_t>(r)]);
      StatusOr<std::vector<Tensor>> out = trainer.executor().Run(micro);
      if (!out.ok()) {
        return out.status().WithPrefix(fmt::format("step {}: micro-batch {}", step, r));
      }
      if (r == 0) state_start = std::move(copies[0]);
      copies[static_cast<size_t>(r)] = save_state();
      for (size_t f = 0; f < micro.fetches.size(); ++f) fetched[f].push_back((*out)[f]);
      if (has_loss) {
        const Tensor& loss = out->back();
        double sum = 0;
        for (int64_t i = 0; i < loss.num_elements(); ++i) {
          sum += loss.dtype() == tensorflow::DT_DOUBLE ? loss.data<double>()[i]
                                                       : loss.data<float>()[i];
        }
        loss_sum += loss.num_elements() > 0 ? sum / static_cast<double>(loss.num_elements()) : 0;
      }
      if (r == 0) first_inputs = std::move(micro.feeds);
    }
    RunRequest apply;
    apply.targets.push_back(plan.train_op);
    size_t f = 0;
    for (const AccumulatedGradient& gradient : plan.gradients) {
      const std::vector<Tensor>& values = fetched[f++];
      const std::vector<Tensor>* indices = gradient.indices.empty() ? nullptr : &fetched[f++];
      if (!gradient.combined) {
        apply.feeds.emplace_back(gradient.tensor, values[0]);
        if (indices != nullptr) apply.feeds.emplace_back(gradient.indices, (*indices)[0]);
        continue;
      }
      const std::string what = fmt::format("step {}: gradient '{}' of '{}'", step,
                                           gradient.tensor, gradient.variable);
      if (indices == nullptr) {
        PX_ASSIGN_OR_RETURN(Tensor combined, CombineGradients(values, plan.average, what));
        apply.feeds.emplace_back(gradient.tensor, std::move(combined));
      } else {
        PX_ASSIGN_OR_RETURN(auto slices, ConcatSlices(values, *indices, plan.average, what));
        apply.feeds.emplace_back(gradient.tensor, std::move(slices.first));
        apply.feeds.emplace_back(gradient.indices, std::move(slices.second));
      }
    }
    for (auto& input : first_inputs) apply.feeds.push_back(std::move(input));
    // Rank 0 runs its step once: a random op the apply run reaches again (the forward
    // pass under batch-norm's update ops) draws what it drew for micro-batch 0, and every
    // stream ends the step one step on.
    const std::map<std::string, uint64_t> micro_end = random.Positions();
    random.Restore(WithRankZeroFrom(step_start, micro_end));
    random.set_stream_index(0);
    load_state(state_start);
    StatusOr<std::vector<Tensor>> applied = trainer.executor().Run(apply);
    if (!applied.ok()) {
      return applied.status().WithPrefix(
          fmt::format("step {}: the train op '{}' with the accumulated gradients fed", step,
                      plan.train_op));
    }
    std::map<std::string, uint64_t> step_end = random.Positions();
    for (const auto& [id, position] : micro_end) {
      uint64_t& end = step_end[id];
      end = std::max(end, position);
    }
    random.Restore(step_end);
    load_state(copies[0]);
    if (has_loss) {
      const double loss = loss_sum / o.ranks;
      if (step == 1) run.first_loss = loss;
      run.last_loss = loss;
    }
  }
  // The data position of one device that read the N shards' examples.
  const DataPosition at = samplers[0].position();
  CheckpointState state{.step = o.steps,
                        .position = {.epoch = at.epoch, .index = at.index * o.ranks},
                        .shuffle_seed = o.seed,
                        .shuffle = o.shuffle,
                        .graph_fingerprint = trainer.fingerprint()};
  PX_ASSIGN_OR_RETURN(run.checkpoint, SaveCheckpoint(o.checkpoint_dir, trainer.variables(),
                                                     trainer.executor().variables(), state, 0));
  return run;
}

}  // namespace parallax
