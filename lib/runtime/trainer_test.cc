#include "lib/runtime/trainer.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/data/idx.h"
#include "lib/runtime/data/npy.h"
#include "lib/runtime/kernel.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Graph LoadTestGraph() {
  StatusOr<Graph> g = LoadGraph("lib/runtime/testdata/softmax_regression.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

// The ops of `graph` without a CPU kernel, "" when all have one.
std::string MissingKernels(const Graph& graph) {
  std::set<std::string> missing;
  for (NodeId id : graph.NodeIds()) {
    if (!HasKernel(graph.node(id), DeviceType::kCpu)) missing.insert(std::string(graph.node(id).op()));
  }
  std::string out;
  for (const std::string& op : missing) out += (out.empty() ? "" : ", ") + op;
  return out;
}

// A graph these tests train must have every kernel: a missing one fails the test (it
// would otherwise check nothing).
#define REQUIRE_KERNELS(graph)                                                           \
  do {                                                                                   \
    const std::string missing_ = MissingKernels(graph);                                  \
    INFO("no CPU kernel for " << missing_);                                              \
    REQUIRE(missing_.empty());                                                           \
  } while (0)

// 64 examples: x uniform in [-1, 1)^4 (x.npy) and y = argmax(x W*) as IDX uint8 labels.
struct Data {
  std::string x, y;
};
Data WriteData(const std::string& dir) {
  Tensor x(tensorflow::DT_FLOAT, TensorShape({64, 4}));
  Tensor y(tensorflow::DT_UINT8, TensorShape({64}));
  const float w[4][3] = {{1, -1, 0}, {0, 1, -1}, {-1, 0, 1}, {0.5f, 0.5f, -1}};
  uint64_t state = 12345;
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 4; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      x.data<float>()[i * 4 + j] = static_cast<float>((state >> 40) % 2000) / 1000.0f - 1.0f;
    }
    int best = 0;
    float best_value = -1e9f;
    for (int k = 0; k < 3; ++k) {
      float v = 0;
      for (int j = 0; j < 4; ++j) v += x.data<float>()[i * 4 + j] * w[j][k];
      if (v > best_value) {
        best_value = v;
        best = k;
      }
    }
    y.data<uint8_t>()[i] = static_cast<uint8_t>(best);
  }
  Data data{dir + "/x.npy", dir + "/y-idx1-ubyte.gz"};
  REQUIRE(WriteNpy(data.x, x).ok());
  REQUIRE(WriteIdx(data.y, y, /*gzip=*/true).ok());
  return data;
}

TrainerOptions Options(const Data& data) {
  TrainerOptions o;
  o.feeds = {{"x", data.x}, {"y", data.y}};
  o.seed = 7;
  o.threads = 2;
  return o;
}

std::unique_ptr<Trainer> MakeTrainer(const Graph& graph, TrainerOptions options) {
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(graph, std::move(options));
  if (!t.ok()) FAIL(t.status().message());
  return std::move(t).value();
}

std::string CreateError(const Graph& graph, TrainerOptions options) {
  StatusOr<std::unique_ptr<Trainer>> t = Trainer::Create(graph, std::move(options));
  REQUIRE_FALSE(t.ok());
  return t.status().message();
}

TEST_CASE("feed specs are NAME=SRC") {
  StatusOr<FeedSpec> spec = ParseFeedSpec("queue/DequeueMany:1=/data/a=b.npy");
  REQUIRE(spec.ok());
  CHECK(spec->name == "queue/DequeueMany:1");
  CHECK(spec->source == "/data/a=b.npy");
  const std::string expected =
      "expected NAME=SRC (SRC: a .npy or IDX file, FILE:COLUMN of a CSV or TFRecord file, a "
      "literal value, or synthetic)";
  CHECK(ParseFeedSpec("x").status().message() == "--feed 'x': " + expected);
  CHECK(ParseFeedSpec("=a.npy").status().message() == "--feed '=a.npy': " + expected);
  CHECK(ParseFeedSpec("x=", "--eval-feed").status().message() == "--eval-feed 'x=': " + expected);
}

TEST_CASE("the trainer finds train op, init op, loss and inputs; inputs without data fail") {
  Graph graph = LoadTestGraph();
  const Data data = WriteData(testing::TempDir());
  std::unique_ptr<Trainer> t = MakeTrainer(graph, Options(data));
  CHECK(t->train_op() == "GradientDescent");
  CHECK(t->init_op() == "init");
  CHECK(t->loss() == "loss:0");
  CHECK(t->batch_size() == 8);
  CHECK(t->total_steps() == 8);  // one epoch of 64 examples
  CHECK(t->DescribeFeeds() ==
        std::vector<std::string>{"x <- " + data.x + ": copy float [4] to float [4]",
                                 "y <- " + data.y + ": cast uint8 [] to int64 []"});
  CHECK(t->variables().size() == 3);

  TrainerOptions none;
  CHECK(CreateError(graph, none) ==
        "2 inputs of the train step have no data: placeholder 'x' (float [8,4]), placeholder 'y' "
        "(int64 [8]); pass --feed NAME=FILE (.npy, IDX, or FILE:COLUMN of a CSV or TFRecord "
        "file) or NAME=VALUE for each, or --synthetic");
  TrainerOptions only_x = Options(data);
  only_x.feeds.pop_back();
  CHECK(CreateError(graph, only_x) ==
        "1 input of the train step has no data: placeholder 'y' (int64 [8]); pass --feed "
        "NAME=FILE (.npy, IDX, or FILE:COLUMN of a CSV or TFRecord file) or NAME=VALUE for each, or "
        "--synthetic");
  TrainerOptions missing = Options(data);
  missing.feeds[0].source = data.x + ".absent";
  CHECK(CreateError(graph, missing) == data.x + ".absent: no such file");
  TrainerOptions unknown = Options(data);
  unknown.feeds.push_back({"nope", data.x});
  CHECK(CreateError(graph, unknown) == "--feed nope: 'nope' names no node in the graph");
  TrainerOptions twice = Options(data);
  twice.feeds.push_back({"x:0", data.x});
  CHECK(CreateError(graph, twice) == "--feed: 'x:0' is fed twice");
  TrainerOptions batch = Options(data);
  batch.batch = 16;
  CHECK(CreateError(graph, batch) ==
        "--batch 16 conflicts with placeholder 'x' (float [8,4]), whose batch dimension is fixed "
        "at 8");
  TrainerOptions swapped = Options(data);
  std::swap(swapped.feeds[0].source, swapped.feeds[1].source);
  // (x accepts y's class ids as one-hot rows of 4; y cannot take x's floats.)
  CHECK(CreateError(graph, swapped) ==
        "placeholder 'y' (int64 [8]): cannot feed " + data.x +
            " (float, 64 examples of [4]): float data cannot be converted to int64");
  TrainerOptions op = Options(data);
  op.train_op = "train";
  CHECK(CreateError(graph, op) ==
        "--train-op 'train' names no node in lib/runtime/testdata/softmax_regression.pbtxt");
  TrainerOptions both = Options(data);
  both.steps = 3;
  both.epochs = 1;
  CHECK(CreateError(graph, both) == "--steps and --epochs exclude each other");
  TrainerOptions resume = Options(data);
  resume.resume = true;
  CHECK(CreateError(graph, resume) == "--resume needs --checkpoint-dir");
  TrainerOptions epochs = Options(data);
  epochs.epochs = 2.5;
  CHECK(MakeTrainer(graph, epochs)->total_steps() == 20);
  TrainerOptions synthetic;
  synthetic.synthetic = true;
  synthetic.epochs = 1;
  CHECK(CreateError(graph, synthetic) ==
        "--epochs needs data from files; synthetic data has no epochs (use --steps)");
  synthetic.epochs = -1;
  CHECK(MakeTrainer(graph, synthetic)->total_steps() == kDefaultSyntheticSteps);
}

TEST_CASE("--resume without a checkpoint is an error; with resume_if_exists, the init op") {
  Graph graph = LoadTestGraph();
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  const std::string empty = dir + "/empty";
  std::filesystem::create_directories(empty);
  TrainerOptions o = Options(data);
  o.checkpoint_dir = empty;
  o.resume = true;
  std::unique_ptr<Trainer> strict = MakeTrainer(graph, o);
  const Status refused = strict->Initialize();
  CHECK(refused.code() == StatusCode::kNotFound);
  CHECK(refused.message() == "--resume: no checkpoint in " + empty +
                                 " to resume from; pass --resume=if-exists to start from the "
                                 "init op when there is none");
  o.resume_if_exists = true;
  std::unique_ptr<Trainer> lenient = MakeTrainer(graph, o);
  CHECK(lenient->Initialize().ok());
}

TEST_CASE("a corrupt checkpoint stops --resume with one line naming the file") {
  Graph graph = LoadTestGraph();
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  REQUIRE(WriteFileAtomically(dir + "/checkpoint-5.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"w\": 1}", 17)).ok());
  TrainerOptions o = Options(data);
  o.checkpoint_dir = dir;
  o.resume = true;
  std::unique_ptr<Trainer> t = MakeTrainer(graph, o);
  CHECK(t->Initialize().message() ==
        dir + "/checkpoint-5.safetensors: bad header length 16: the file has 9 bytes after it");
  // A checkpoint of another graph: the missing variable is named.
  SafetensorsContents other;
  other.tensors["w"] = Tensor(tensorflow::DT_FLOAT, TensorShape({4, 3}));
  other.metadata = {{"format", "parallax-checkpoint-1"}, {"step", "6"}, {"data_epoch", "0"},
                    {"data_index", "0"}, {"shuffle_seed", "7"}};
  REQUIRE(WriteSafetensors(dir + "/checkpoint-6.safetensors", other).ok());
  std::unique_ptr<Trainer> t2 = MakeTrainer(graph, o);
  CHECK(t2->Initialize().message() ==
        dir + "/checkpoint-6.safetensors: variable 'b' is missing from the checkpoint");
}

TEST_CASE("training on files: the loss falls, metrics are JSON lines, evaluation reports accuracy") {
  Graph graph = LoadTestGraph();
  REQUIRE_KERNELS(graph);
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  TrainerOptions o = Options(data);
  o.epochs = 10;
  o.log_every = 8;
  o.metrics_path = dir + "/metrics.jsonl";
  o.eval_feeds = o.feeds;
  std::unique_ptr<Trainer> t = MakeTrainer(graph, o);
  std::vector<StepReport> reports;
  StatusOr<TrainSummary> summary = t->Run([&](const StepReport& r) { reports.push_back(r); });
  REQUIRE(summary.ok());
  CHECK(summary->end_step == 80);
  REQUIRE(summary->first_loss.has_value());
  REQUIRE(summary->last_loss.has_value());
  INFO("loss " << *summary->first_loss << " -> " << *summary->last_loss);
  CHECK(*summary->last_loss < 0.6 * *summary->first_loss);
  CHECK(reports.size() == 10);
  CHECK(reports.back().position == DataPosition{9, 64});
  CHECK(t->executor().variables().Find("global_step")->DebugString() == "int64[] {80}");
  StatusOr<std::string> metrics = ReadFileToString(o.metrics_path);
  REQUIRE(metrics.ok());
  // The 10 reports, then the evaluation.
  CHECK(std::count(metrics->begin(), metrics->end(), '\n') == 11);
  CHECK(metrics->find("\n{\"step\":80,\"eval\":{\"examples\":64,\"accuracy\":") !=
        std::string::npos);
  CHECK(metrics->starts_with("{\"step\":8,\"loss\":"));
  CHECK(metrics->find("\"examples_per_sec\":") != std::string::npos);
  CHECK(metrics->find("\"wall_time\":") != std::string::npos);
  REQUIRE(summary->eval.has_value());
  CHECK(summary->eval->examples == 64);
  REQUIRE(summary->eval->accuracy.has_value());
  INFO("accuracy " << *summary->eval->accuracy);
  CHECK(*summary->eval->accuracy > 0.7);
  CHECK(summary->eval->prediction == "argmax of 'logits:0' vs 'y:0'");
  // Per class: the labels' counts, and the right predictions adding up to the accuracy.
  REQUIRE(summary->eval->class_examples.size() == 3);
  int64_t examples = 0, correct = 0;
  for (size_t c = 0; c < 3; ++c) {
    examples += summary->eval->class_examples[c];
    correct += summary->eval->class_correct[c];
    CHECK(summary->eval->class_correct[c] <= summary->eval->class_examples[c]);
  }
  CHECK(examples == 64);
  CHECK(static_cast<double>(correct) / 64 == *summary->eval->accuracy);
  // The reports carry the run's shape: one rank, the epochs read, the time.
  CHECK(reports.back().world_size == 1);
  CHECK(reports.back().global_examples_per_sec == reports.back().examples_per_sec);
  CHECK(reports.back().epochs_done == 10.0);
  CHECK(reports[3].epochs_done == 4.0);
  CHECK(reports.back().elapsed_seconds >= reports.front().elapsed_seconds);
}

// All variables of two executors, bit for bit.
void CheckSameVariables(Trainer& a, Trainer& b) {
  for (const CheckpointVariable& v : a.variables()) {
    INFO(v.name);
    const Tensor* x = a.executor().variables().Find(v.store_key);
    const Tensor* y = b.executor().variables().Find(v.store_key);
    REQUIRE(x != nullptr);
    REQUIRE(y != nullptr);
    CHECK(TensorsBitEqual(*x, *y));
  }
}

TEST_CASE("resume is bit-identical: 2k steps == k steps + checkpoint + resume + k steps") {
  Graph graph = LoadTestGraph();
  REQUIRE_KERNELS(graph);
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  for (bool shuffle : {true, false}) {
    INFO("shuffle " << shuffle);
    // k = 11: the checkpoint falls mid-epoch (8 steps per epoch) and a batch boundary.
    TrainerOptions whole = Options(data);
    whole.shuffle = shuffle;
    whole.steps = 22;
    std::unique_ptr<Trainer> a = MakeTrainer(graph, whole);
    REQUIRE(a->Run().ok());

    TrainerOptions first = whole;
    first.steps = 11;
    first.checkpoint_dir = dir + (shuffle ? "/ck_shuffled" : "/ck_ordered");
    first.checkpoint_every = 4;
    first.keep_checkpoints = 2;
    std::unique_ptr<Trainer> b = MakeTrainer(graph, first);
    StatusOr<TrainSummary> half = b->Run();
    REQUIRE(half.ok());
    CHECK(half->last_checkpoint == first.checkpoint_dir + "/checkpoint-11.safetensors");
    auto kept = ListCheckpoints(first.checkpoint_dir);
    REQUIRE(kept.ok());
    CHECK(kept->size() == 2);  // 8 and 11; 4 was deleted

    TrainerOptions second = first;
    second.steps = 22;
    second.resume = true;
    second.seed = 1234;  // ignored: the checkpoint's seed continues the same order
    std::unique_ptr<Trainer> c = MakeTrainer(graph, second);
    StatusOr<TrainSummary> rest = c->Run();
    REQUIRE(rest.ok());
    CHECK(rest->start_step == 11);
    CHECK(rest->resumed_from == first.checkpoint_dir + "/checkpoint-11.safetensors");
    CHECK(c->position() == a->position());
    CheckSameVariables(*a, *c);
    CHECK(c->executor().variables().Find("global_step")->DebugString() == "int64[] {22}");

    // Resuming a finished run does nothing.
    std::unique_ptr<Trainer> d = MakeTrainer(graph, second);
    StatusOr<TrainSummary> done = d->Run();
    REQUIRE(done.ok());
    CHECK(done->start_step == 22);
    CHECK(done->end_step == 22);
    CheckSameVariables(*a, *d);
  }
}

// The softmax regression with dropout on its input: an unseeded RandomUniform (seed and
// seed2 0) draws the mask every step.
Graph LoadDropoutGraph() {
  StatusOr<std::string> text = ReadFileToString("lib/runtime/testdata/softmax_regression.pbtxt");
  REQUIRE(text.ok());
  std::string t = *text;
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
  };
  replace(R"(name: "MatMul" op: "MatMul" input: "x")", R"(name: "MatMul" op: "MatMul" input: "x_drop")");
  replace(R"(op: "MatMul" input: "x" input: "gradients/xent_grad/mul")",
          R"(op: "MatMul" input: "x_drop" input: "gradients/xent_grad/mul")");
  t += R"pb(
node { name: "dropout/Shape" op: "Shape" input: "x" attr { key: "T" value { type: DT_FLOAT } }
       attr { key: "out_type" value { type: DT_INT32 } } }
node { name: "dropout/random_uniform" op: "RandomUniform" input: "dropout/Shape"
       attr { key: "T" value { type: DT_INT32 } } attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "seed" value { i: 0 } } attr { key: "seed2" value { i: 0 } } }
node { name: "dropout/rate" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 0.5 } } } }
node { name: "dropout/keep" op: "GreaterEqual" input: "dropout/random_uniform" input: "dropout/rate"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "dropout/mask" op: "Cast" input: "dropout/keep"
       attr { key: "SrcT" value { type: DT_BOOL } } attr { key: "DstT" value { type: DT_FLOAT } } }
node { name: "dropout/scale" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
node { name: "dropout/scaled" op: "Mul" input: "x" input: "dropout/scale" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "x_drop" op: "Mul" input: "dropout/scaled" input: "dropout/mask" attr { key: "T" value { type: DT_FLOAT } } }
)pb";
  StatusOr<Graph> g = ParseGraph(t, "softmax_dropout.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

TEST_CASE("a corrupt newest checkpoint: resume takes the one before it, bit-identical") {
  Graph graph = LoadTestGraph();
  REQUIRE_KERNELS(graph);
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  TrainerOptions whole = Options(data);
  whole.steps = 22;
  std::unique_ptr<Trainer> a = MakeTrainer(graph, whole);
  REQUIRE(a->Run().ok());

  TrainerOptions first = whole;
  first.steps = 11;
  first.checkpoint_dir = dir + "/ck";
  first.checkpoint_every = 4;
  REQUIRE(MakeTrainer(graph, first)->Run().ok());  // steps 4, 8 and 11
  // One bit of step 11's data flipped (the file's last byte is a tensor's).
  const std::string newest = first.checkpoint_dir + "/checkpoint-11.safetensors";
  StatusOr<std::string> bytes = ReadFileToString(newest);
  REQUIRE(bytes.ok());
  bytes->back() = static_cast<char>(bytes->back() ^ 0x01);
  REQUIRE(WriteFileAtomically(newest, *bytes).ok());

  TrainerOptions second = first;
  second.steps = 22;
  second.resume = true;
  std::unique_ptr<Trainer> c = MakeTrainer(graph, second);
  StatusOr<TrainSummary> rest = c->Run();
  REQUIRE(rest.ok());
  CHECK(rest->start_step == 8);
  CHECK(rest->resumed_from == first.checkpoint_dir + "/checkpoint-8.safetensors");
  CheckSameVariables(*a, *c);

  // When no checkpoint reads back, the newest one's error.
  auto kept = ListCheckpoints(first.checkpoint_dir);
  REQUIRE(kept.ok());
  CHECK(kept->back().first == 22);
  for (const auto& [step, path] : *kept) REQUIRE(WriteFileAtomically(path, "garbage").ok());
  CHECK(MakeTrainer(graph, second)->Initialize().message() ==
        first.checkpoint_dir +
            "/checkpoint-22.safetensors: truncated safetensors file: 7 bytes, the header length "
            "alone takes 8");
}

TEST_CASE("resume with dropout is bit-identical: the random streams continue") {
  Graph graph = LoadDropoutGraph();
  REQUIRE_KERNELS(graph);
  const std::string dir = testing::TempDir();
  const Data data = WriteData(dir);
  TrainerOptions whole = Options(data);
  whole.steps = 22;
  std::unique_ptr<Trainer> a = MakeTrainer(graph, whole);
  REQUIRE(a->Run().ok());

  TrainerOptions first = whole;
  first.steps = 11;
  first.checkpoint_dir = dir + "/ck_dropout";
  std::unique_ptr<Trainer> b = MakeTrainer(graph, first);
  REQUIRE(b->Run().ok());
  StatusOr<SafetensorsContents> saved =
      ReadSafetensors(first.checkpoint_dir + "/checkpoint-11.safetensors");
  REQUIRE(saved.ok());
  // 11 steps x 8 examples x 4 floats, 4 floats a Philox block.
  CHECK(saved->metadata.at("random:dropout/random_uniform@0") == "88");
  CHECK(saved->metadata.at("random_seed") == "7");

  TrainerOptions second = first;
  second.steps = 22;
  second.resume = true;
  second.seed = 1234;  // the checkpoint's seed continues the same streams
  std::unique_ptr<Trainer> c = MakeTrainer(graph, second);
  REQUIRE(c->Run().ok());
  CheckSameVariables(*a, *c);

  // The masks matter: another seed trains other weights.
  TrainerOptions other = whole;
  other.seed = 8;
  other.shuffle = false;
  TrainerOptions same = whole;
  same.shuffle = false;
  std::unique_ptr<Trainer> x = MakeTrainer(graph, same);
  std::unique_ptr<Trainer> y = MakeTrainer(graph, other);
  REQUIRE(x->Run().ok());
  REQUIRE(y->Run().ok());
  CHECK_FALSE(TensorsBitEqual(*x->executor().variables().Find("w"), *y->executor().variables().Find("w")));
}

TEST_CASE("synthetic data runs the graph for throughput") {
  Graph graph = LoadTestGraph();
  REQUIRE_KERNELS(graph);
  TrainerOptions o;
  o.synthetic = true;
  o.steps = 5;
  o.threads = 1;
  std::unique_ptr<Trainer> t = MakeTrainer(graph, o);
  StatusOr<TrainSummary> summary = t->Run();
  REQUIRE(summary.ok());
  CHECK(summary->end_step == 5);
  CHECK(summary->last_loss.has_value());
}

TEST_CASE("a batch in another order: the same examples, the same loss up to rounding") {
  Graph graph = LoadTestGraph();
  REQUIRE_KERNELS(graph);
  std::vector<double> first_losses;
  for (BatchOrder order : {BatchOrder::kAsRead, BatchOrder::kReversed, BatchOrder::kRotatedHalf}) {
    TrainerOptions o;
    o.synthetic = true;
    o.steps = 3;
    o.threads = 1;
    o.batch_order = order;
    std::unique_ptr<Trainer> t = MakeTrainer(graph, o);
    StatusOr<TrainSummary> summary = t->Run();
    REQUIRE(summary.ok());
    REQUIRE(summary->first_loss.has_value());
    first_losses.push_back(*summary->first_loss);
  }
  // Step 1's loss is the mean over the same 8 examples, whatever their order.
  CHECK(first_losses[1] == Approx(first_losses[0]).epsilon(1e-6));
  CHECK(first_losses[2] == Approx(first_losses[0]).epsilon(1e-6));
}

}  // namespace
}  // namespace parallax
