// wide_deep: the canned estimator's structure (hashed and crossed columns, sum and mean
// lookups, Ftrl on the linear part and Adagrad on the dnn, grouped into train_op), the
// training analysis' view of it (sparse weights and embeddings, dense layers, every
// update recognised), TF's ids (FarmHash buckets and crosses), gradients against
// central finite differences, and training through the runtime on synthetic data.
#include "lib/models/wide_deep.h"

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "lib/analysis/training_analysis.h"
#include "lib/base/tf_hash.h"
#include "lib/graph/verifier.h"
#include "lib/models/gradient_checker.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/trainer.h"

namespace parallax::models {
namespace {

using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT64;

constexpr std::string_view kLinear = "linear/linear_model/";
constexpr std::string_view kInput = "dnn/input_from_feature_columns/input_layer/";

Model Build(const ModelOptions& options = {}) {
  StatusOr<Model> model = BuildModel("wide_deep", options);
  REQUIRE(model.status().message() == "");
  REQUIRE(VerifyGraph(model->graph).message() == "");
  return std::move(*model);
}

const Node& NodeNamed(const Graph& g, std::string_view name) {
  INFO("node " << name);
  const NodeId id = g.FindNode(name);
  REQUIRE(id != kNoNode);
  return g.node(id);
}

std::string Op(const Graph& g, const std::string& name) {
  const NodeId id = g.FindNode(name);
  return id == kNoNode ? "<none: " + name + ">" : std::string(g.node(id).op());
}

int64_t IntAttrOf(const Node& n, std::string_view attr) {
  auto v = n.FindAttr(attr);
  REQUIRE(v.has_value());
  return v->i();
}

// The value of a scalar float Const.
double ConstValue(const Graph& g, const std::string& name) {
  auto v = NodeNamed(g, name).FindAttr("value");
  REQUIRE(v.has_value());
  return v->tensor().float_val(0);
}

// Control inputs of a node, by name.
std::set<std::string> ControlInputs(const Graph& g, const Node& n) {
  std::set<std::string> out;
  for (const OutputRef& in : n.inputs()) {
    if (in.port == kControlPort) out.insert(std::string(g.node(in.node).name()));
  }
  return out;
}

TEST_CASE("wide_deep is the canned DNNLinearCombinedClassifier's graph") {
  const Model m = Build();
  const Graph& g = m.graph;
  CHECK(m.options.batch == 256);
  CHECK(m.options.optimizer == OptimizerKind::kAdagrad);
  CHECK(m.options.learning_rate == 0.05);
  REQUIRE(m.feeds.size() == 3);
  CHECK(m.feeds[0].name == "ids");
  CHECK(m.feeds[0].dtype == DT_INT64);
  CHECK(m.feeds[0].synthetic == "uniform_int:0:1000");
  CHECK(m.feeds[2].synthetic == "token_vote:ids:10");

  // Hashed columns: _to_sparse_input, AsString, StringToHashBucketFast into 4V buckets;
  // the wide and the deep part each hash (TF transforms per feature-column call).
  for (const std::string& scope : {std::string(kLinear) + "c2/", std::string(kInput) + "c2_embedding/"}) {
    INFO(scope);
    CHECK(Op(g, scope + "to_sparse_input/NotEqual") == "NotEqual");
    CHECK(Op(g, scope + "to_sparse_input/indices") == "Where");
    CHECK(Op(g, scope + "to_sparse_input/values") == "GatherNd");
    CHECK(Op(g, scope + "AsString") == "AsString");
    const Node& lookup = NodeNamed(g, scope + "lookup");
    CHECK(lookup.op() == "StringToHashBucketFast");
    CHECK(IntAttrOf(lookup, "num_buckets") == 4000);
  }
  // The crossed column: SparseCross of the raw c0 and c1 columns, hashed with TF's key.
  const Node& cross = NodeNamed(g, std::string(kLinear) + "c0_X_c1/SparseCross");
  CHECK(cross.op() == "SparseCross");
  CHECK(cross.FindAttr("hashed_output")->b());
  CHECK(IntAttrOf(cross, "num_buckets") == 4000);
  CHECK(IntAttrOf(cross, "hash_key") == 0xDECAFCAFFE);
  CHECK(g.node(cross.input(0).node).name() == "c0");
  CHECK(g.node(cross.input(1).node).name() == "c1");

  // Lookups: sum for the linear weights, mean for the embeddings, each after Unique and
  // a GatherV2 of the variable.
  CHECK(Op(g, std::string(kLinear) + "c0_X_c1/weighted_sum") == "SparseSegmentSum");
  CHECK(Op(g, std::string(kLinear) + "c3/weighted_sum/Unique") == "Unique");
  CHECK(Op(g, std::string(kLinear) + "c3/weighted_sum/embedding_lookup") == "GatherV2");
  CHECK(Op(g, std::string(kInput) + "c1_embedding/c1_embedding_weights") == "SparseSegmentMean");
  CHECK(Op(g, std::string(kLinear) + "weighted_sum_no_bias") == "AddN");
  CHECK(Op(g, std::string(kInput) + "concat") == "ConcatV2");
  CHECK(Op(g, "dnn/hiddenlayer_1/Relu") == "Relu");
  CHECK(Op(g, "add") == "AddV2");

  // Two minimize calls: gradients scopes, Adagrad on dnn/, Ftrl on linear/, grouped.
  CHECK(g.FindNode("gradients/Fill") != kNoNode);
  CHECK(g.FindNode("gradients_1/Fill") != kNoNode);
  CHECK(Op(g, "Adagrad/update_dnn/input_from_feature_columns/input_layer/c0_embedding/"
              "embedding_weights/SparseApplyAdagrad") == "SparseApplyAdagrad");
  CHECK(Op(g, "Adagrad/update_dnn/hiddenlayer_0/kernel/ApplyAdagrad") == "ApplyAdagrad");
  CHECK(Op(g, "Ftrl/update_linear/linear_model/c0/weights/SparseApplyFtrl") == "SparseApplyFtrl");
  CHECK(Op(g, "Ftrl/update_linear/linear_model/c0/weights/Unique") == "Unique");
  CHECK(Op(g, "Ftrl/update_linear/linear_model/bias_weights/ApplyFtrl") == "ApplyFtrl");
  CHECK(Op(g, "linear/linear_model/c0_X_c1/weights/Ftrl") == "VariableV2");
  CHECK(Op(g, "linear/linear_model/c0_X_c1/weights/Ftrl_1") == "VariableV2");
  CHECK(ConstValue(g, "Ftrl/learning_rate") == Approx(0.2));  // min(0.2, 1/sqrt(5))
  CHECK(ConstValue(g, "Ftrl/learning_rate_power") == Approx(-0.5));
  CHECK(ConstValue(g, "Ftrl/l1_regularization_strength") == 0);
  CHECK(ConstValue(g, "Adagrad/learning_rate") == Approx(0.05));
  // Accumulators at 0.1 / B^2: the canned estimator's summed loss, with the mean loss.
  CHECK(ConstValue(g, "linear/linear_model/c0/weights/Ftrl/Initializer/Const") ==
        Approx(0.1 / (256.0 * 256.0)));
  CHECK(ConstValue(g, "dnn/logits/kernel/Adagrad/Initializer/Const") == Approx(0.1 / (256.0 * 256.0)));
  CHECK(m.train_op == "train_op");
  const Node& train = NodeNamed(g, "train_op");
  CHECK(train.op() == "NoOp");
  CHECK(ControlInputs(g, train) == std::set<std::string>{"Adagrad", "Ftrl"});
}

TEST_CASE("with --global-step the group is train_op/update and train_op increments") {
  ModelOptions o;
  o.global_step = true;
  o.optimizer = OptimizerKind::kAdam;
  const Model m = Build(o);
  const Graph& g = m.graph;
  CHECK(m.train_op == "train_op");
  CHECK(Op(g, "train_op") == "AssignAdd");
  CHECK(ControlInputs(g, NodeNamed(g, "train_op")) == std::set<std::string>{"train_op/update"});
  CHECK(ControlInputs(g, NodeNamed(g, "train_op/update")) == std::set<std::string>{"Adam", "Ftrl"});
  CHECK(m.options.learning_rate == 0.001);  // another optimizer takes its own default
}

TEST_CASE("the analysis: sparse weights and embeddings, dense layers, every update") {
  for (int64_t batch : {256, 0}) {
    ModelOptions o;
    o.batch = batch;
    const Model m = Build(o);
    StatusOr<TrainingAnalysis> a = AnalyzeTraining(m.graph);
    REQUIRE(a.ok());
    INFO(DescribeAnalysis(*a, m.graph));
    CHECK(a->problems.empty());
    CHECK(a->CountRole(VariableRole::kUnrecognised) == 0);
    CHECK(a->CountRole(VariableRole::kUntouched) == 0);
    std::map<std::string, GradientKind> kinds;
    for (const Variable& v : a->variables) {
      if (v.role == VariableRole::kTrainable) kinds[v.name] = v.gradient;
    }
    std::map<std::string, GradientKind> expected;
    for (const std::string col : {"c0", "c0_X_c1", "c1", "c2", "c3"}) {
      expected[std::string(kLinear) + col + "/weights"] = GradientKind::kSparse;
    }
    for (const std::string col : {"c0", "c1", "c2", "c3"}) {
      expected[std::string(kInput) + col + "_embedding/embedding_weights"] = GradientKind::kSparse;
    }
    expected[std::string(kLinear) + "bias_weights"] = GradientKind::kDense;
    for (const std::string layer : {"hiddenlayer_0", "hiddenlayer_1", "logits"}) {
      expected["dnn/" + layer + "/kernel"] = GradientKind::kDense;
      expected["dnn/" + layer + "/bias"] = GradientKind::kDense;
    }
    CHECK(kinds == expected);
    REQUIRE(!a->train_ops.empty());
    CHECK(m.graph.node(a->train_ops[0].node).name() == "train_op");
    CHECK(a->train_ops[0].num_updates == static_cast<int>(expected.size()));
    REQUIRE(!a->losses.empty());
    CHECK(m.graph.node(a->losses[0].node).name() == "loss");
  }
}

TEST_CASE("hashed and crossed ids are TensorFlow's") {
  ModelOptions o;
  o.batch = 3;
  const Model m = Build(o);
  Tensor ids(DT_INT64, TensorShape{3, 4});
  const std::vector<int64_t> values = {0, 7, 999, 12, 5, 5, 1, 0, 123, 456, 789, 3};
  std::copy(values.begin(), values.end(), ids.data<int64_t>());
  CpuDevice device(1);
  Executor executor(m.graph, device);
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"ids:0", ids}},
       .fetches = {std::string(kLinear) + "c1/lookup:0", std::string(kInput) + "c1_embedding/lookup:0",
                   std::string(kLinear) + "c0_X_c1/SparseCross:0",
                   std::string(kLinear) + "c0_X_c1/SparseCross:1"}});
  REQUIRE(out.status().message() == "");
  auto bucket = [](int64_t id) {
    return static_cast<int64_t>(tf_hash::Fingerprint64(std::to_string(id)) % 4000);
  };
  auto cross = [](int64_t a, int64_t b) {
    uint64_t h = tf_hash::FingerprintCat64(0xDECAFCAFFEULL, static_cast<uint64_t>(a));
    h = tf_hash::FingerprintCat64(h, static_cast<uint64_t>(b));
    return static_cast<int64_t>(h % 4000);
  };
  auto ints = [](const Tensor& t) {
    return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
  };
  const std::vector<int64_t> c1 = {bucket(7), bucket(5), bucket(456)};
  CHECK(ints((*out)[0]) == c1);
  CHECK(ints((*out)[1]) == c1);
  CHECK(ints((*out)[2]) == std::vector<int64_t>{0, 0, 1, 0, 2, 0});
  CHECK(ints((*out)[3]) == std::vector<int64_t>{cross(0, 7), cross(5, 5), cross(123, 456)});
}

// Feeds: ids from [0, vocab), x uniform, y by the token vote.
std::vector<std::pair<std::string, Tensor>> Feeds(const Model& m, DataType dtype, int64_t rows,
                                                  uint64_t seed) {
  std::mt19937_64 gen(seed);
  const int64_t features = *m.options.seq;
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(*m.options.vocab) - 1);
  Tensor ids(DT_INT64, TensorShape{rows, features});
  Tensor y(DT_INT64, TensorShape{rows});
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> row;
    for (int64_t f = 0; f < features; ++f) {
      row.push_back(token(gen));
      ids.data<int64_t>()[r * features + f] = row.back();
    }
    y.data<int64_t>()[r] = TokenVoteLabel(row, kNumClasses);
  }
  return {{"ids:0", ids},
          {"x:0", RandomFloats(dtype, TensorShape{rows, kWideDeepDenseFeatures}, seed, 0, 1)},
          {"y:0", y}};
}

// Every trainable variable's gradient (from the analysis, as the transform finds it)
// against central differences of the loss, in float64.
void CheckGradients(int64_t batch) {
  ModelOptions o;
  o.batch = batch;
  o.dtype = DT_DOUBLE;
  o.vocab = 5;
  o.dim = 3;
  o.seq = 3;
  o.widths = std::vector<int64_t>{5, 4};
  const Model m = Build(o);
  StatusOr<TrainingAnalysis> a = AnalyzeTraining(m.graph);
  REQUIRE(a.ok());
  GradientCheck check;
  check.graph = &m.graph;
  check.y = "loss:0";
  check.feeds = Feeds(m, DT_DOUBLE, 4, 3);
  check.delta = 1e-6;
  check.rtol = 1e-5;
  check.atol = 1e-8;
  check.max_coordinates = 40;
  uint64_t seed = 50;
  int sparse = 0;
  for (const GradientUpdate& u : a->updates) {
    const Variable& v = a->variables[static_cast<size_t>(u.variable)];
    const std::string read = v.name + "/read:0";
    check.feeds.emplace_back(read, RandomFloats(DT_DOUBLE, TensorShape(v.shape.dims), seed++, -0.5, 0.5));
    check.inputs.push_back({read, m.graph.TensorName(u.grad_input),
                            u.sparse ? m.graph.TensorName(u.indices_input) : ""});
    sparse += u.sparse ? 1 : 0;
  }
  CHECK(check.inputs.size() == 14);  // 4 weights + bias, 3 embeddings, 3 x (kernel, bias)
  CHECK(sparse == 7);
  StatusOr<std::string> report = CheckGradients(check);
  REQUIRE(report.status().message() == "");
  CHECK(*report == "");
}

TEST_CASE("gradients match central finite differences (float64)") {
  CheckGradients(4);
  CheckGradients(0);  // open batch: shapes computed at run time
}

TEST_CASE("wide_deep learns its synthetic labels through the runtime") {
  const Model m = Build();
  TrainerOptions options;
  options.synthetic = true;
  options.steps = 100;
  options.log_every = 10;
  StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(m.graph, options);
  REQUIRE(trainer.status().message() == "");
  std::vector<double> losses;
  StatusOr<TrainSummary> summary = (*trainer)->Run([&](const StepReport& r) {
    if (r.loss) losses.push_back(*r.loss);
  });
  REQUIRE(summary.status().message() == "");
  REQUIRE(summary->first_loss);
  REQUIRE(summary->last_loss);
  INFO("losses every 10 steps: " << fmt::format("{:.3f}", fmt::join(losses, " ")));
  // Chance is ln 10 = 2.30.
  CHECK(*summary->first_loss > 2.2);
  CHECK(*summary->last_loss < 1.0);
}

}  // namespace
}  // namespace parallax::models
