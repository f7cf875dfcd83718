#include "lib/verify/accumulate.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "lib/runtime/checkpoint/checkpoint.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/data/sampler.h"

namespace parallax {
namespace {

// A node in TF's `gradients` scope (`gradients/`, `gradients_3/`, `model/gradients/`).
bool InGradientScope(std::string_view name) {
  size_t start = 0;
  for (size_t slash = name.find('/'); slash != std::string_view::npos;
       start = slash + 1, slash = name.find('/', start)) {
    std::string_view part = name.substr(start, slash - start);
    if (!part.starts_with("gradients")) continue;
    part.remove_prefix(std::string_view("gradients").size());
    if (part.empty()) return true;
    if (part[0] == '_' && part.size() > 1 &&
        std::all_of(part.begin() + 1, part.end(), [](char c) { return std::isdigit(c) != 0; })) {
      return true;
    }
  }
  return false;
}

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
    if (InGradientScope(node.name())) out.emplace_back(node.name());
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
  for (const GradientUpdate& update : analysis.updates) {
    const Variable& variable = analysis.variables[static_cast<size_t>(update.variable)];
    const std::string_view op = graph.node(update.op).name();
    if (update.sparse || update.pattern != UpdatePattern::kApplyOp) {
      return InvalidArgumentError(
          "{}: variable '{}' takes a sparse gradient (values, indices) in '{}'; --accumulate "
          "combines dense gradients only: verify this graph without --accumulate",
          graph.source(), variable.name, op);
    }
    if (update.grad_input.node == kNoNode) {
      return InvalidArgumentError("{}: variable '{}': update '{}' has no gradient input to "
                                  "accumulate",
                                  graph.source(), variable.name, op);
    }
    const std::string tensor = graph.TensorName(update.grad_input);
    if (!seen.insert(tensor).second) continue;
    bool combined = true;
    for (const VariablePlan& v : plan.variables) {
      if (v.name == variable.name) combined = v.method != SyncMethod::kLocal;
    }
    out.gradients.push_back({tensor, variable.name, combined});
    fed.insert(update.grad_input.node);
  }
  if (out.gradients.empty()) {
    return InvalidArgumentError("{}: no gradient updates to accumulate", graph.source());
  }
  out.backward_left = BackwardLeft(graph, train, fed);
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

StatusOr<AccumulatedRun> TrainAccumulated(Trainer& trainer, const AccumulationPlan& plan,
                                          const AccumulateOptions& o) {
  if (o.ranks < 1) return InvalidArgumentError("accumulate: {} micro-batches", o.ranks);
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
  for (const AccumulatedGradient& g : plan.gradients) micro.fetches.push_back(g.tensor);
  const bool has_loss = !trainer.loss().empty();
  if (has_loss) micro.fetches.push_back(trainer.loss());

  AccumulatedRun run;
  for (int64_t step = 1; step <= o.steps; ++step) {
    // grads[g][r]: gradient g of micro-batch r.
    std::vector<std::vector<Tensor>> grads(plan.gradients.size());
    std::vector<std::pair<std::string, Tensor>> first_inputs;
    double loss_sum = 0;
    for (int r = 0; r < o.ranks; ++r) {
      const std::vector<int64_t> ids = samplers[static_cast<size_t>(r)].Next(batch);
      PX_ASSIGN_OR_RETURN(micro.feeds, trainer.FeedsFor(ids));
      StatusOr<std::vector<Tensor>> out = trainer.executor().Run(micro);
      if (!out.ok()) {
        return out.status().WithPrefix(fmt::format("step {}: micro-batch {}", step, r));
      }
      for (size_t g = 0; g < plan.gradients.size(); ++g) grads[g].push_back((*out)[g]);
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
    for (size_t g = 0; g < plan.gradients.size(); ++g) {
      const AccumulatedGradient& gradient = plan.gradients[g];
      if (!gradient.combined) {
        apply.feeds.emplace_back(gradient.tensor, grads[g][0]);
        continue;
      }
      StatusOr<Tensor> combined =
          CombineGradients(grads[g], plan.average,
                           fmt::format("step {}: gradient '{}' of '{}'", step, gradient.tensor,
                                       gradient.variable));
      if (!combined.ok()) return combined.status();
      apply.feeds.emplace_back(gradient.tensor, *std::move(combined));
    }
    for (auto& input : first_inputs) apply.feeds.push_back(std::move(input));
    StatusOr<std::vector<Tensor>> applied = trainer.executor().Run(apply);
    if (!applied.ok()) {
      return applied.status().WithPrefix(
          fmt::format("step {}: the train op '{}' with the accumulated gradients fed", step,
                      plan.train_op));
    }
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
