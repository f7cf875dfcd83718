// The trainer on graphs that bring their own input and initialisation: an in-graph
// tf.data pipeline (lib/runtime/testdata/tfdata_softmax.pbtxt), literal feeds, graphs
// without an init op, --init-checkpoint (TF checkpoints, checkpoint_initializer
// restores), --summary-dir.
#include <filesystem>
#include <map>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/runtime/summary/event_file.h"
#include "lib/runtime/trainer.h"
#include "lib/testing/testdata.h"
#include "lib/testing/tf_data.h"

namespace parallax {
namespace {

Graph Load(const std::string& path) {
  StatusOr<Graph> g = LoadGraph(path);
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

Graph Parse(const std::string& text) {
  StatusOr<Graph> g = ParseGraph(text, "graph.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

std::unique_ptr<Trainer> Make(const Graph& graph, TrainerOptions options) {
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(graph, std::move(options));
  if (!t.ok()) FAIL(t.status().message());
  return std::move(t).value();
}

// tfdata_softmax's pipeline reading `n` examples written to a fresh directory.
TrainerOptions PipelineOptions(int n, std::string* dir = nullptr) {
  const std::string d = testing::TempDir();
  REQUIRE(testing::WriteSoftmaxExamples(d + "/train.tfrecord", n).ok());
  if (dir != nullptr) *dir = d;
  TrainerOptions o;
  o.input.input_dir = d;
  o.threads = 1;
  return o;
}

constexpr const char* kPipelineGraph = "lib/runtime/testdata/tfdata_softmax.pbtxt";

TEST_CASE("an in-graph tf.data pipeline feeds the train step, and the model learns") {
  const Graph graph = Load(kPipelineGraph);
  TrainerOptions o = PipelineOptions(256);
  o.steps = 200;
  o.log_every = 50;
  std::unique_ptr<Trainer> t = Make(graph, o);
  CHECK(t->pipeline_outputs() == std::vector<std::string>{"IteratorGetNext:0", "IteratorGetNext:1"});
  StatusOr<TrainSummary> summary = t->Run();
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  CHECK(t->batch_size() == 8);
  CHECK(summary->end_step == 200);
  REQUIRE(summary->first_loss);
  REQUIRE(summary->last_loss);
  CHECK(std::isfinite(*summary->last_loss));
  CHECK(*summary->last_loss < 0.75 * *summary->first_loss);
}

TEST_CASE("without --steps a finite pipeline ends the run; a literal feeds its placeholder") {
  const Graph graph = Load(kPipelineGraph);
  TrainerOptions o = PipelineOptions(64);
  o.feeds = {{"epochs", "2"}};  // repeat(2): 2 x 64 / 8 = 16 batches
  std::unique_ptr<Trainer> t = Make(graph, o);
  CHECK(t->total_steps() < 0);
  StatusOr<TrainSummary> summary = t->Run();
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  CHECK(summary->end_step == 16);

  TrainerOptions bad = PipelineOptions(8);
  bad.feeds = {{"epochs", "1.5"}};
  StatusOr<std::unique_ptr<Trainer>> refused = Trainer::Create(graph, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "--feed epochs: '1.5' is not a int64 value");
  TrainerOptions epochs = PipelineOptions(8);
  epochs.epochs = 1;
  CHECK(Trainer::Create(graph, epochs).status().message() ==
        "--epochs counts epochs of --feed data; the graph's own input pipeline decides its "
        "epochs (train until it ends, or use --steps)");
}

TEST_CASE("a resumed run replays the pipeline and is bit-identical to an uninterrupted one") {
  const Graph graph = Load(kPipelineGraph);
  std::string dir;
  TrainerOptions o = PipelineOptions(40, &dir);  // 5 batches per epoch: resumes mid-epoch
  o.steps = 14;
  o.checkpoint_dir = dir + "/straight";
  std::unique_ptr<Trainer> straight = Make(graph, o);
  REQUIRE(straight->Run().ok());

  o.checkpoint_dir = dir + "/split";
  o.steps = 7;
  REQUIRE(Make(graph, o)->Run().ok());
  o.steps = 14;
  o.resume = true;
  std::unique_ptr<Trainer> resumed = Make(graph, o);
  StatusOr<TrainSummary> summary = resumed->Run();
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  CHECK(summary->start_step == 7);
  for (const CheckpointVariable& v : straight->variables()) {
    INFO(v.name);
    const Tensor* a = straight->executor().variables().Find(v.store_key);
    const Tensor* b = resumed->executor().variables().Find(v.store_key);
    REQUIRE((a != nullptr && b != nullptr));
    CHECK(TensorsBitEqual(*a, *b));
  }
}

TEST_CASE("--summary-dir writes the graph's summaries and Parallax's scalars") {
  // tfdata_softmax plus a ScalarSummary of the loss.
  StatusOr<std::string> text = ReadFileToString(kPipelineGraph);
  REQUIRE(text.ok());
  const std::string with_summary = *text + R"(
    node { name: "loss_tag" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { } string_val: "loss" } } } }
    node { name: "loss_summary" op: "ScalarSummary" input: "loss_tag" input: "loss"
           attr { key: "T" value { type: DT_FLOAT } } })";
  const Graph graph = Parse(with_summary);
  std::string dir;
  TrainerOptions o = PipelineOptions(64, &dir);
  o.steps = 20;
  o.log_every = 10;
  o.summary_dir = dir + "/tb";
  std::vector<std::pair<int64_t, double>> reported;
  std::unique_ptr<Trainer> t = Make(graph, o);
  REQUIRE(t->Run([&](const StepReport& r) { reported.emplace_back(r.step, *r.loss); }).ok());
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/tb")) {
    files.push_back(entry.path().string());
  }
  REQUIRE(files.size() == 1);
  CHECK(std::filesystem::path(files[0]).filename().string().starts_with("events.out.tfevents."));
  StatusOr<std::vector<tensorflow::Event>> events = ReadEventFile(files[0]);
  INFO(events.status().ToString());
  REQUIRE(events.ok());
  std::map<std::string, std::map<int64_t, float>> scalars;  // tag -> step -> value
  for (const tensorflow::Event& e : *events) {
    for (const auto& v : e.summary().value()) scalars[v.tag()][e.step()] = v.simple_value();
  }
  REQUIRE(reported.size() == 2);
  for (const auto& [step, loss] : reported) {
    INFO("step " << step);
    // The graph's summary is the loss of the step's batch before its update; Parallax's
    // parallax/loss is the same step's fetched loss.
    REQUIRE(scalars["loss"].contains(step));
    CHECK(scalars["loss"][step] == static_cast<float>(loss));
    CHECK(scalars["parallax/loss"][step] == static_cast<float>(loss));
    CHECK(scalars["parallax/examples_per_sec"].contains(step));
  }
}

// w's initial value reads v's: initialised in that order without an init op.
constexpr const char* kNoInitOp = R"(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } } } } }
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } } } } }
  node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2 } } } }
  node { name: "w/initial_value" op: "Mul" input: "v/read" input: "two" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/Assign" op: "Assign" input: "w" input: "w/initial_value" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "v" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } } } } }
  node { name: "v/read" op: "Identity" input: "v" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "v/initial_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: 1.5 float_val: -1 } } } }
  node { name: "v/Assign" op: "Assign" input: "v" input: "v/initial_value" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "prod" op: "Mul" input: "x" input: "w/read" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "idx" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 0 } } } }
  node { name: "loss" op: "Sum" input: "prod" input: "idx" attr { key: "T" value { type: DT_FLOAT } }
         attr { key: "Tidx" value { type: DT_INT32 } } }
  node { name: "lr" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 0.5 } } } }
  node { name: "gradients/prod_grad" op: "Identity" input: "x" input: "^loss" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "train" op: "ApplyGradientDescent" input: "w" input: "lr" input: "gradients/prod_grad"
         attr { key: "T" value { type: DT_FLOAT } } })";

TEST_CASE("without an init op every variable starts from its initializer, in dependency order") {
  const Graph graph = Parse(kNoInitOp);
  TrainerOptions o;
  o.feeds = {{"x", "[1, 2]"}};
  o.steps = 1;
  o.threads = 1;
  std::unique_ptr<Trainer> t = Make(graph, o);
  CHECK(t->init_op().empty());
  StatusOr<TrainSummary> summary = t->Run();
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  // w = 2v = [3, -2]; one step of SGD on sum(x * w) with lr 0.5: w - 0.5 x = [2.5, -3].
  CHECK(t->executor().variables().Find("v")->DebugString() == "float[2] {1.5, -1}");
  CHECK(t->executor().variables().Find("w")->DebugString() == "float[2] {2.5, -3}");
  CHECK(*summary->first_loss == 3 * 1 + -2 * 2);
}

TEST_CASE("--init-checkpoint takes a TF checkpoint by variable name; missing and mis-shaped "
          "variables are refused by name") {
  const Graph graph = Parse(kNoInitOp);
  const std::string dir = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(dir + "/start", {{"v", Tensor::FromVector<float>({4, 5}, {2})},
                                             {"w", Tensor::FromVector<float>({6, 7}, {2})}})
              .ok());
  TrainerOptions o;
  o.feeds = {{"x", "[0, 0]"}};
  o.steps = 1;
  o.threads = 1;
  o.init_checkpoint = dir + "/start";
  std::unique_ptr<Trainer> t = Make(graph, o);
  REQUIRE(t->Run().ok());
  CHECK(t->executor().variables().Find("v")->DebugString() == "float[2] {4, 5}");
  CHECK(t->executor().variables().Find("w")->DebugString() == "float[2] {6, 7}");

  REQUIRE(WriteTfCheckpoint(dir + "/partial", {{"v", Tensor::FromVector<float>({4, 5}, {2})}}).ok());
  o.init_checkpoint = dir + "/partial";
  CHECK(Make(graph, o)->Run().status().message() ==
        "--init-checkpoint " + dir + "/partial: 1 of the graph's 2 variables is not in it: w");
  REQUIRE(WriteTfCheckpoint(dir + "/shaped", {{"v", Tensor::FromVector<float>({4, 5, 6}, {3})},
                                              {"w", Tensor::FromVector<float>({6, 7}, {2})}})
              .ok());
  o.init_checkpoint = dir + "/shaped";
  CHECK(Make(graph, o)->Run().status().message() ==
        "--init-checkpoint " + dir + "/shaped: tensor 'v' is float[3], the graph's variable is "
        "float[2]");
}

TEST_CASE("a checkpoint_initializer whose path is missing reads --init-checkpoint") {
  // BERT's fine-tuning graphs: Assign(var, RestoreV2(<a path of the author's machine>)).
  const std::string text = std::string(kNoInitOp) + R"(
    node { name: "ckpt/prefix" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { } string_val: "/home/someone/bert_model.ckpt" } } } }
    node { name: "ckpt/names" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: "pretrained/v" } } } }
    node { name: "ckpt/slices" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 1 } } string_val: "" } } } }
    node { name: "checkpoint_initializer" op: "RestoreV2" input: "ckpt/prefix" input: "ckpt/names"
           input: "ckpt/slices" attr { key: "dtypes" value { list { type: DT_FLOAT } } } }
    node { name: "v/Assign_1" op: "Assign" input: "v" input: "checkpoint_initializer"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "init" op: "NoOp" input: "^v/Assign_1" })";
  // Without a checkpoint: the graph's path is missing.
  const Graph graph = Parse(text);
  TrainerOptions o;
  o.feeds = {{"x", "[0, 0]"}};
  o.steps = 1;
  o.threads = 1;
  StatusOr<TrainSummary> failed = Make(graph, o)->Run();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message() ==
        "init op 'init': node 'checkpoint_initializer' (RestoreV2): "
        "/home/someone/bert_model.ckpt.index: no such file (to restore from another "
        "checkpoint, pass --init-checkpoint)");
  const std::string dir = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(dir + "/pretrained",
                            {{"pretrained/v", Tensor::FromVector<float>({0.25f, 0.5f}, {2})}})
              .ok());
  o.init_checkpoint = dir + "/pretrained";
  std::unique_ptr<Trainer> t = Make(graph, o);
  StatusOr<TrainSummary> summary = t->Run();
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  CHECK(t->executor().variables().Find("v")->DebugString() == "float[2] {0.25, 0.5}");
  CHECK(t->executor().variables().Find("w")->DebugString() == "float[2] {0.5, 1}");
}

}  // namespace
}  // namespace parallax
