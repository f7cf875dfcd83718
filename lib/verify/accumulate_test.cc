// Gradient accumulation (`parallax verify --accumulate`'s one device) on the runtime's
// softmax regression graph (batch fixed at 8, plain SGD with lr 0.5): which gradients are
// accumulated and that feeding them cuts the backward pass, the combination, one
// micro-batch == a plain step bit for bit, and two micro-batches == the mean of the two
// shards' gradients applied once (computed here from the graph's own gradient tensors).
#include "lib/verify/accumulate.h"

#include <cmath>
#include <filesystem>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Graph LoadSoftmax() {
  StatusOr<Graph> g = LoadGraph("lib/runtime/testdata/softmax_regression.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

Plan AllReducePlan(bool average) {
  Plan plan;
  plan.average = average;
  for (const char* name : {"w", "b"}) {
    VariablePlan v;
    v.name = name;
    v.method = SyncMethod::kAllReduce;
    plan.variables.push_back(v);
  }
  return plan;
}

std::unique_ptr<Trainer> MakeTrainer(const Graph& graph, const std::string& dir) {
  TrainerOptions o;
  o.synthetic = true;
  o.seed = 3;
  o.shuffle = false;
  o.threads = 1;
  o.steps = 1;
  o.log_every = 1;
  o.checkpoint_dir = dir;
  o.keep_checkpoints = 0;
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(graph, std::move(o));
  if (!t.ok()) FAIL(t.status().message());
  return std::move(t).value();
}

Tensor Floats(std::vector<float> values, TensorShape shape) {
  return Tensor::FromVector<float>(values, std::move(shape));
}

AccumulationPlan MustPlan(const Graph& graph, bool average) {
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(graph);
  REQUIRE(analysis.ok());
  StatusOr<AccumulationPlan> plan =
      PlanAccumulation(graph, *analysis, AllReducePlan(average), "GradientDescent");
  if (!plan.ok()) FAIL(plan.status().message());
  return *std::move(plan);
}

TEST_CASE("PlanAccumulation: the apply ops' gradient inputs; feeding them cuts the backward "
          "pass") {
  const Graph graph = LoadSoftmax();
  const AccumulationPlan plan = MustPlan(graph, true);
  REQUIRE(plan.gradients.size() == 2);
  CHECK(plan.gradients[0].tensor == "gradients/MatMul_grad/MatMul_1:0");
  CHECK(plan.gradients[0].variable == "w");
  CHECK(plan.gradients[1].tensor == "gradients/logits_grad/BiasAddGrad:0");
  CHECK(plan.gradients[1].variable == "b");
  CHECK(plan.gradients[0].combined);
  CHECK(plan.train_op == "GradientDescent");
  CHECK(plan.backward_left.empty());
}

TEST_CASE("PlanAccumulation takes a sparse update's slices: values and indices") {
  const StatusOr<Graph> graph = ParseGraph(R"pb(
    node { name: "emb" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 10 } dim { size: 4 } } } } }
    node { name: "lr" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.1 } } } }
    node { name: "gradients/values" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "ids" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } } }
    node { name: "accum" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 10 } dim { size: 4 } } } } }
    node { name: "train" op: "SparseApplyAdagrad"
           input: "emb" input: "accum" input: "lr" input: "gradients/values" input: "ids"
           attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tindices" value { type: DT_INT64 } } }
  )pb", "sparse.pbtxt");
  REQUIRE(graph.ok());
  StatusOr<TrainingAnalysis> analysis = AnalyzeTraining(*graph);
  REQUIRE(analysis.ok());
  StatusOr<AccumulationPlan> plan = PlanAccumulation(*graph, *analysis, Plan{}, "train");
  REQUIRE(plan.ok());
  REQUIRE(plan->gradients.size() == 1);
  CHECK(plan->gradients[0].tensor == "gradients/values:0");
  CHECK(plan->gradients[0].indices == "ids:0");
  CHECK(plan->gradients[0].variable == "emb");
}

TEST_CASE("ConcatSlices joins the micro-batches' slices in order, values over N for the mean") {
  const std::vector<Tensor> values = {Floats({1, 2, 3, 4}, {2, 2}), Floats({6, 8}, {1, 2})};
  const std::vector<Tensor> indices = {Tensor::FromVector<int64_t>({7, 1}, TensorShape({2})),
                                       Tensor::FromVector<int64_t>({7}, TensorShape({1}))};
  StatusOr<std::pair<Tensor, Tensor>> mean = ConcatSlices(values, indices, true, "g");
  REQUIRE(mean.ok());
  CHECK(mean->first.DebugString() == "float[3,2] {0.5, 1, 1.5, 2, 3, 4}");
  CHECK(mean->second.DebugString() == "int64[3] {7, 1, 7}");
  StatusOr<std::pair<Tensor, Tensor>> sum = ConcatSlices(values, indices, false, "g");
  REQUIRE(sum.ok());
  CHECK(sum->first.DebugString() == "float[3,2] {1, 2, 3, 4, 6, 8}");
  // An empty micro-batch (no rows touched) contributes nothing.
  const std::vector<Tensor> empty_values = {Floats({1, 2}, {1, 2}), Tensor(tensorflow::DT_FLOAT, TensorShape({0, 2}))};
  const std::vector<Tensor> empty_indices = {Tensor::FromVector<int64_t>({3}, TensorShape({1})),
                                             Tensor(tensorflow::DT_INT64, TensorShape({0}))};
  StatusOr<std::pair<Tensor, Tensor>> one = ConcatSlices(empty_values, empty_indices, false, "g");
  REQUIRE(one.ok());
  CHECK(one->first.DebugString() == "float[1,2] {1, 2}");
  // Errors name the gradient and the micro-batch.
  const std::vector<Tensor> rows = {Floats({1, 2}, {1, 2}), Floats({1, 2, 3}, {1, 3})};
  const std::vector<Tensor> two = {Tensor::FromVector<int64_t>({0}, TensorShape({1})),
                                   Tensor::FromVector<int64_t>({0}, TensorShape({1}))};
  CHECK(ConcatSlices(rows, two, true, "g").status().message() ==
        "g: micro-batch 1 gives float values [1,3] with int64 indices [1], micro-batch 0 float "
        "values [1,2]");
  CHECK(ConcatSlices(values, two, true, "g").status().message() ==
        "g: micro-batch 0 gives float values [2,2] with int64 indices [1], micro-batch 0 float "
        "values [2,2]");
  CHECK(ConcatSlices({}, {}, true, "g").status().message() == "g: 0 values for 0 indices");
}

TEST_CASE("CombineGradients sums in order and divides for the mean; errors name the gradient") {
  const std::vector<Tensor> micro = {Floats({1, 2}, {2}), Floats({3, 5}, {2}),
                                     Floats({-1, 2}, {2})};
  StatusOr<Tensor> mean = CombineGradients(micro, true, "g");
  REQUIRE(mean.ok());
  CHECK(mean->DebugString() == "float[2] {1, 3}");
  StatusOr<Tensor> sum = CombineGradients(micro, false, "g");
  REQUIRE(sum.ok());
  CHECK(sum->DebugString() == "float[2] {3, 9}");
  // The inputs are not changed.
  CHECK(micro[0].DebugString() == "float[2] {1, 2}");
  const std::vector<Tensor> mixed = {Floats({1, 2}, {2}), Floats({1, 2, 3}, {3})};
  CHECK(CombineGradients(mixed, true, "g").status().message() ==
        "g: micro-batch 1 gives float [3], micro-batch 0 float [2]");
  const std::vector<Tensor> ints = {Tensor::Scalar<int32_t>(1)};
  CHECK(CombineGradients(ints, true, "g").status().message() ==
        "g: a int32 gradient cannot be accumulated (float or double only)");
  CHECK(CombineGradients({}, true, "g").status().message() == "g: no micro-batches to combine");
}

TEST_CASE("one micro-batch per step is the plain step, bit for bit") {
  const Graph graph = LoadSoftmax();
  const AccumulationPlan plan = MustPlan(graph, true);
  const std::string plain_dir = testing::TempDir(), acc_dir = testing::TempDir();
  std::unique_ptr<Trainer> plain = MakeTrainer(graph, plain_dir);
  // Five plain steps.
  const Status init = plain->Initialize();
  INFO(init.message());
  REQUIRE(init.ok());
  for (int i = 0; i < 5; ++i) REQUIRE(plain->Step().ok());
  StatusOr<std::string> want = plain->Checkpoint();
  REQUIRE(want.ok());
  std::unique_ptr<Trainer> acc = MakeTrainer(graph, acc_dir);
  StatusOr<AccumulatedRun> run = TrainAccumulated(
      *acc, plan,
      AccumulateOptions{.ranks = 1, .steps = 5, .seed = 3, .shuffle = false,
                        .checkpoint_dir = acc_dir});
  REQUIRE(run.ok());
  StatusOr<SafetensorsContents> a = ReadSafetensors(*want), b = ReadSafetensors(run->checkpoint);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (const char* name : {"w", "b", "global_step"}) {
    INFO(name);
    CHECK(TensorsBitEqual(a->tensors.at(name), b->tensors.at(name)));
  }
  CHECK(b->metadata.at("step") == "5");
  CHECK(run->first_loss.has_value());
}

TEST_CASE("two micro-batches: each rank's shard, the mean gradient applied once") {
  const Graph graph = LoadSoftmax();
  const AccumulationPlan plan = MustPlan(graph, true);
  // The reference, from the graph's gradient tensors: rank r of 2 reads examples r, r+2,
  // ..., r+14 in step 1 (no shuffling); w1 = w0 - 0.5 * (g0 + g1) / 2.
  std::unique_ptr<Trainer> ref = MakeTrainer(graph, testing::TempDir());
  REQUIRE(ref->Initialize().ok());
  std::vector<Tensor> g;
  Tensor w0;
  for (int r = 0; r < 2; ++r) {
    std::vector<int64_t> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(r + 2 * i);
    StatusOr<std::vector<std::pair<std::string, Tensor>>> feeds = ref->FeedsFor(ids);
    REQUIRE(feeds.ok());
    StatusOr<std::vector<Tensor>> out = ref->executor().Run(
        {.feeds = *feeds, .fetches = {"gradients/MatMul_grad/MatMul_1:0", "w/read:0"}});
    REQUIRE(out.ok());
    g.push_back((*out)[0].DeepCopy());
    w0 = (*out)[1].DeepCopy();
  }
  const std::string dir = testing::TempDir();
  std::unique_ptr<Trainer> acc = MakeTrainer(graph, dir);
  StatusOr<AccumulatedRun> run = TrainAccumulated(
      *acc, plan,
      AccumulateOptions{.ranks = 2, .steps = 1, .seed = 3, .shuffle = false,
                        .checkpoint_dir = dir});
  REQUIRE(run.ok());
  StatusOr<SafetensorsContents> got = ReadSafetensors(run->checkpoint);
  REQUIRE(got.ok());
  const Tensor& w1 = got->tensors.at("w");
  REQUIRE(w1.num_elements() == 12);
  double max_diff = 0, moved = 0;
  for (int i = 0; i < 12; ++i) {
    const float mean = (g[0].data<float>()[i] + g[1].data<float>()[i]) / 2.0f;
    const float want = w0.data<float>()[i] - 0.5f * mean;
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(w1.data<float>()[i] - want)));
    moved = std::max(moved, std::fabs(static_cast<double>(w1.data<float>()[i] -
                                                          w0.data<float>()[i])));
  }
  CHECK(max_diff <= 1e-7);
  CHECK(moved > 1e-3);  // the step did something
  CHECK(got->tensors.at("global_step").DebugString() == "int64[] {1}");  // one apply run
}

}  // namespace
}  // namespace parallax
