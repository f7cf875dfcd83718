// Every zoo model with every optimizer: builds, verifies, analyses as a training graph
// with the expected variables, roles, dense/sparse gradients, train/init ops, loss and
// feeds, and round-trips through the binary and text GraphDef forms.
#include "lib/models/zoo.h"

#include <set>

#include <catch2/catch.hpp>

#include "lib/analysis/training_analysis.h"
#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/testing/golden.h"

namespace parallax::models {
namespace {

int SlotsPerVariable(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return 0;
    case OptimizerKind::kMomentum: return 1;
    case OptimizerKind::kAdam: return 2;
    case OptimizerKind::kRmsProp: return 2;
    case OptimizerKind::kAdagrad: return 1;
    case OptimizerKind::kAdamWeightDecay: return 2;
    case OptimizerKind::kFtrl: return 2;
  }
  return -1;
}

// The optimizer that trains `var`: wide_deep's linear part is Ftrl whatever --optimizer
// says (it picks the deep part's).
OptimizerKind KindFor(const Model& model, std::string_view var, OptimizerKind kind) {
  return model.name == "wide_deep" && var.starts_with("linear/") ? OptimizerKind::kFtrl : kind;
}

// Variables read through a GatherV2 (embedding tables, wide_deep's hashed and crossed
// columns' weights, BERT's word embeddings, lm1b's embedding and sampled softmax weights
// and biases) have IndexedSlices gradients.
bool HasSparseGradient(std::string_view var) {
  return var == "embeddings" || var.ends_with("/weights") || var.ends_with("/embedding_weights") ||
         var == "bert/embeddings/word_embeddings" || var == "model/emb_0" ||
         var == "model/softmax_w_0" || var == "model/softmax_b";
}

void CheckModel(const Model& model, OptimizerKind kind, bool global_step) {
  INFO("model " << model.name << " optimizer " << OptimizerFlagName(kind));
  const Graph& graph = model.graph;
  const Status verified = VerifyGraph(graph);
  REQUIRE(verified.message() == "");

  StatusOr<TrainingAnalysis> analysis_or = AnalyzeTraining(graph);
  REQUIRE(analysis_or.ok());
  const TrainingAnalysis& a = *analysis_or;
  INFO(DescribeAnalysis(a, graph));
  CHECK(a.problems.empty());

  // Variables and roles.
  std::set<std::string> trainable;
  for (const Variable& v : a.variables) {
    if (v.role == VariableRole::kTrainable) trainable.insert(v.name);
  }
  CHECK(trainable == std::set<std::string>(model.trainable_variables.begin(),
                                           model.trainable_variables.end()));
  const int n = static_cast<int>(model.trainable_variables.size());
  int slots = 0;
  for (const std::string& v : model.trainable_variables) slots += SlotsPerVariable(KindFor(model, v, kind));
  CHECK(a.CountRole(VariableRole::kSlot) == slots);
  // Batch norm's moving mean and variance (the model's update ops write them) are state.
  const int state = (kind == OptimizerKind::kAdam ? 2 : 0) + (global_step ? 1 : 0) +
                    static_cast<int>(model.update_ops.size());
  CHECK(a.CountRole(VariableRole::kState) == state);
  CHECK(a.CountRole(VariableRole::kUnrecognised) == 0);
  CHECK(a.CountRole(VariableRole::kUntouched) == 0);
  for (const Variable& v : a.variables) {
    if (v.role != VariableRole::kTrainable) continue;
    INFO("variable " << v.name);
    CHECK(v.gradient == (HasSparseGradient(v.name) ? GradientKind::kSparse : GradientKind::kDense));
    CHECK(v.updates.size() == 1);
    CHECK(v.slots.size() == static_cast<size_t>(SlotsPerVariable(KindFor(model, v.name, kind))));
  }
  int64_t params = 0;
  for (const Variable& v : a.variables) {
    if (v.role == VariableRole::kTrainable) params += v.shape.num_elements();
  }
  CHECK(params == model.num_params);

  // Train op, init op, loss, feeds.
  REQUIRE(!a.train_ops.empty());
  CHECK(graph.node(a.train_ops[0].node).name() == model.train_op);
  CHECK(a.train_ops[0].num_updates == n);
  std::string train_op(OptimizerScopeName(kind));
  if (model.name == "wide_deep") train_op = "train_op";
  if (!model.update_ops.empty()) train_op = "group_deps";  // tf.group(minimize, update_ops)
  CHECK(model.train_op == train_op);
  for (const std::string& update : model.update_ops) {
    INFO("update op " << update);
    const NodeId id = graph.FindNode(update);
    REQUIRE(id != kNoNode);
    CHECK(graph.node(id).op() == "AssignSub");
    bool run_by_train_op = false;
    for (const OutputRef& in : graph.node(graph.FindNode(model.train_op)).control_inputs()) {
      run_by_train_op = run_by_train_op || in.node == id;
    }
    CHECK(run_by_train_op);
  }
  REQUIRE(a.init_op.node != kNoNode);
  CHECK(graph.node(a.init_op.node).name() == "init");
  CHECK(a.init_op.num_initializers == static_cast<int>(a.variables.size()));
  REQUIRE(!a.losses.empty());
  CHECK(graph.node(a.losses[0].node).name() == "loss");
  REQUIRE(a.feeds.size() == model.feeds.size());
  for (size_t i = 0; i < a.feeds.size(); ++i) {
    CHECK(graph.node(a.feeds[i].node).name() == model.feeds[i].name);
    CHECK(a.feeds[i].used_by_train_op);
    CHECK(a.feeds[i].dtype == model.feeds[i].dtype);
    auto rule = graph.node(a.feeds[i].node).FindAttr(kSyntheticAttr);
    REQUIRE(rule.has_value());
    CHECK(rule->s() == model.feeds[i].synthetic);
  }

  // Round trips: binary is byte-stable, text parses back to the same graph.
  const std::string bytes = SerializeGraphDef(graph);
  StatusOr<Graph> loaded = ParseGraph(bytes, "model.pb");
  REQUIRE(loaded.ok());
  CHECK(SerializeGraphDef(*loaded) == bytes);
  StatusOr<std::string> text = SerializeGraphDefText(graph);
  REQUIRE(text.ok());
  StatusOr<Graph> from_text = ParseGraph(*text, "model.pbtxt");
  REQUIRE(from_text.ok());
  CHECK(parallax::testing::DiffGraphs(*from_text, graph) == "");
}

TEST_CASE("every zoo model builds, verifies and analyses with every optimizer") {
  for (const ModelSpec& spec : ModelSpecs()) {
    for (OptimizerKind kind : kAllOptimizers) {
      for (bool global_step : {false, true}) {
        ModelOptions options;
        options.optimizer = kind;
        options.global_step = global_step;
        StatusOr<Model> model = BuildModel(spec.name, options);
        INFO(spec.name << " " << OptimizerFlagName(kind) << " global_step=" << global_step);
        REQUIRE(model.status().message() == "");
        CheckModel(*model, kind, global_step);
      }
    }
  }
}

TEST_CASE("an open batch dimension builds Shape ops and still analyses") {
  for (const ModelSpec& spec : ModelSpecs()) {
    for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam}) {
      ModelOptions options;
      options.batch = 0;
      options.optimizer = kind;
      StatusOr<Model> model = BuildModel(spec.name, options);
      INFO(spec.name);
      REQUIRE(model.status().message() == "");
      CheckModel(*model, kind, false);
      const Graph& g = model->graph;
      auto x = g.node(g.FindNode(model->feeds[0].name)).FindAttr("shape");
      REQUIRE(x.has_value());
      CHECK(x->shape().dim(0).size() == -1);
      // The loss gradient divides by a count computed at run time.
      // (The mean cross entropy is `cross_entropy` where the loss adds weight decay.)
      const std::string mean = g.FindNode("cross_entropy") != kNoNode ? "cross_entropy" : "loss";
      CHECK(g.FindNode("gradients/" + mean + "_grad/floordiv") != kNoNode);
    }
  }
}

TEST_CASE("default sizes and parameter counts") {
  auto params = [](std::string_view name) {
    StatusOr<Model> m = BuildModel(name);
    REQUIRE(m.ok());
    return m->num_params;
  };
  CHECK(params("softmax") == 784 * 10 + 10);
  CHECK(params("mlp") == 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  CHECK(params("lenet") == 5 * 5 * 32 + 32 + 5 * 5 * 32 * 64 + 64 + 3136 * 1024 + 1024 + 1024 * 10 + 10);
  CHECK(params("embedding") == 100000 * 128 + 128 * 10 + 10);
  // 4 hashed + 1 crossed columns of 4000 buckets x 10 classes and a bias; 4 embedding
  // tables of 4000 x 8; dnn (32 + 8) -> 64 -> 32 -> 10.
  CHECK(params("wide_deep") == 5 * 4000 * 10 + 10 + 4 * 4000 * 8 + 40 * 64 + 64 + 64 * 32 + 32 +
                                   32 * 10 + 10);
  // lstm: kernel [D+H, 4H] and bias [4H] of the cell, dense H -> 10.
  CHECK(params("lstm") == (32 + 128) * 4 * 128 + 4 * 128 + 128 * 10 + 10);
  // resnet50: torchvision's ResNet-50 has 25,557,032 parameters for 1000 classes; the
  // official TF model's 1001st class adds a row of 2048 weights and a bias.
  CHECK(params("resnet50") == 25557032 + 2048 + 1);
  // lm1b: emb and softmax_w [V, 512], softmax_b [V]; the LSTM's kernel [512 + 512, 4 * 2048],
  // bias [4 * 2048] and projection [2048, 512].
  CHECK(params("lm1b") == 793470 * 512 * 2 + 793470 + 1024 * 8192 + 8192 + 2048 * 512);
  CHECK(params("lm1b") == 822752126);
  StatusOr<Model> lenet = BuildModel("lenet");
  REQUIRE(lenet.ok());
  CHECK(lenet->options.batch == 64);
  CHECK(lenet->train_op == "Adam");
  CHECK(lenet->graph.FindNode("conv2d_1/Conv2D") != kNoNode);
  CHECK(lenet->graph.FindNode("max_pooling2d_1/MaxPool") != kNoNode);
  CHECK(lenet->graph.FindNode("gradients/conv2d/Conv2D_grad/Conv2DBackpropFilter") != kNoNode);
}

TEST_CASE("option errors name the option") {
  ModelOptions o;
  o.vocab = 10;
  CHECK(BuildModel("mlp", o).status().message() == "option --vocab does not apply to model 'mlp'");
  CHECK(BuildModel("resnet18").status().message() ==
        "unknown model 'resnet18' (known: softmax, mlp, lenet, embedding, wide_deep, lstm, resnet50, "
        "transformer, lm1b)");
  ModelOptions format;
  format.data_format = "channels_first";
  CHECK(BuildModel("resnet50", format).status().message() ==
        "--data-format must be NHWC or NCHW, got 'channels_first'");
  CHECK(BuildModel("mlp", format).status().message() ==
        "option --data-format does not apply to model 'mlp'");
  ModelOptions no_blocks;
  no_blocks.blocks = std::vector<int64_t>{};
  CHECK(BuildModel("resnet50", no_blocks).status().message() == "--blocks needs at least one value");
  no_blocks.blocks = std::vector<int64_t>{3, 0};
  CHECK(BuildModel("resnet50", no_blocks).status().message() == "--blocks must be at least 1, got 0");
  ModelOptions tiny;
  tiny.image_size = 0;
  CHECK(BuildModel("resnet50", tiny).status().message() == "--image-size must be at least 1, got 0");
  ModelOptions w;
  w.widths = std::vector<int64_t>{32, 64};
  CHECK(BuildModel("lenet", w).status().message() ==
        "--widths for lenet takes 3 values (conv1,conv2,fc), got 2");
  ModelOptions b;
  b.batch = -3;
  CHECK(BuildModel("softmax", b).status().message() == "--batch must be at least 0, got -3");
  ModelOptions lr;
  lr.learning_rate = 0;
  CHECK(BuildModel("softmax", lr).status().message() == "--lr must be positive, got 0");
  ModelOptions z;
  z.widths = std::vector<int64_t>{0};
  CHECK(BuildModel("mlp", z).status().message() == "--widths must be at least 1, got 0");
  ModelOptions one_feature;
  one_feature.seq = 1;  // the crossed column needs two
  CHECK(BuildModel("wide_deep", one_feature).status().message() == "--seq must be at least 2, got 1");
  ModelOptions many;
  many.vocab = 50;
  many.samples = 51;
  CHECK(BuildModel("lm1b", many).status().message() ==
        "--samples must be at most --vocab (50): the candidates are distinct words, got 51");
  many.samples = 0;
  CHECK(BuildModel("lm1b", many).status().message() == "--samples must be at least 1, got 0");
  CHECK(BuildModel("embedding", many).status().message() ==
        "option --samples does not apply to model 'embedding'");
}

TEST_CASE("lm1b: feeds, variables, the sampled softmax and Adagrad from 1.0") {
  ModelOptions o;
  o.vocab = 50;
  o.dim = 4;
  o.hidden = 6;
  o.seq = 3;
  o.samples = 8;
  o.batch = 2;
  StatusOr<Model> m = BuildModel("lm1b", o);
  REQUIRE(m.status().message() == "");
  CHECK(DescribeOptions(*FindModelSpec("lm1b"), m->options) ==
        "batch=2 optimizer=adagrad lr=0.2 vocab=50 dim=4 hidden=6 seq=3 samples=8");
  REQUIRE(m->feeds.size() == 2);
  CHECK(m->feeds[0].synthetic == "zipf_int:0:50");
  CHECK(m->feeds[1].synthetic == "shift:ids");
  CHECK(m->feeds[1].shape == StaticShape{2, 3});
  CHECK(m->trainable_variables ==
        std::vector<std::string>{"model/emb_0", "model/lstm_0/lstm_cell/kernel",
                                 "model/lstm_0/lstm_cell/bias",
                                 "model/lstm_0/lstm_cell/projection/kernel", "model/softmax_w_0",
                                 "model/softmax_b"});
  CHECK(m->num_params == 50 * 4 * 2 + 50 + 8 * 24 + 24 + 6 * 4);
  const Graph& g = m->graph;
  auto op = [&](const std::string& name) {
    const NodeId id = g.FindNode(name);
    return id == kNoNode ? std::string("(none)") : std::string(g.node(id).op());
  };
  const std::string s = "model/sampled_softmax_loss/";
  CHECK(op(s + "LogUniformCandidateSampler") == "LogUniformCandidateSampler");
  CHECK(op(s + "ComputeAccidentalHits") == "ComputeAccidentalHits");
  CHECK(op(s + "SparseToDense") == "SparseToDense");
  CHECK(op(s + "softmax_cross_entropy_with_logits") == "SoftmaxCrossEntropyWithLogits");
  CHECK(op(s + "embedding_lookup") == "GatherV2");
  CHECK(op(s + "embedding_lookup_1") == "GatherV2");
  CHECK(op("model/embedding_lookup") == "GatherV2");
  // The projection; static_rnn's steps share the scope `lstm_cell/`, names made unique
  // by suffix (rnn.h): step 1's is MatMul_1, step 2's MatMul_1_1.
  CHECK(op("model/lstm_0/lstm_cell/MatMul_1") == "MatMul");
  CHECK(op("model/lstm_0/lstm_cell/MatMul_1_1") == "MatMul");
  const auto sampler = g.node(g.FindNode(s + "LogUniformCandidateSampler"));
  CHECK(sampler.FindAttr("range_max")->i() == 50);
  CHECK(sampler.FindAttr("num_sampled")->i() == 8);
  CHECK(sampler.FindAttr("unique")->b());
  CHECK(op("loss") == "Mean");
  CHECK(op("model/emb_0/Adagrad") == "VariableV2");
  CHECK(op("model/softmax_b/Adagrad/Initializer/Const") == "Const");
}

TEST_CASE("models are deterministic") {
  ModelOptions o;
  o.optimizer = OptimizerKind::kAdam;
  StatusOr<Model> a = BuildModel("embedding", o);
  StatusOr<Model> b = BuildModel("embedding", o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(SerializeGraphDef(a->graph) == SerializeGraphDef(b->graph));
  o.seed = 7;
  StatusOr<Model> c = BuildModel("embedding", o);
  REQUIRE(c.ok());
  CHECK(SerializeGraphDef(a->graph) != SerializeGraphDef(c->graph));
}

TEST_CASE("synthetic label rules") {
  CHECK(TokenClass(0, 10) == 0);
  CHECK(TokenClass(1, 10) == 2654435761ll % 10);
  CHECK(TokenClass(2, 10) == ((2ull * 2654435761ull) & 0xffffffffull) % 10);
  const std::vector<int32_t> ids = {1, 1, 2};
  CHECK(TokenVoteLabel(ids, 10) == TokenClass(1, 10));
  const std::vector<int32_t> tie = {1, 2};
  CHECK(TokenVoteLabel(tie, 10) == std::min(TokenClass(1, 10), TokenClass(2, 10)));
  const std::vector<float> x = {0.1f, 0.9f, 0.3f, 0.9f, 5.0f};
  CHECK(ArgmaxPrefixLabel(x, 4) == 1);
  CHECK(ArgmaxPrefixLabel(x, 10) == 4);
}

}  // namespace
}  // namespace parallax::models
