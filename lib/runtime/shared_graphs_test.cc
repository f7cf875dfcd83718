// Every real TensorFlow graph of the shared test data (../shared/testdata/tf), run by the
// trainer as `parallax run` runs it: one test case per row of docs/graphs.md. A graph
// that runs trains >= 20 steps unchanged, on data written here with Parallax's own
// writers or on the real files TensorFlow wrote (../shared/testdata/tf-files), with a
// finite loss that falls; a graph that does not run yet is checked to lack exactly the
// kernels the table says it waits for. The SfMLearner row (1000x1000 images, ~10 s a
// step) is the test target shared_graphs_sfmlearner_test (this file with
// PARALLAX_SFMLEARNER_ONLY).
#include <cmath>
#include <numeric>
#include <set>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/passes/strip_horovod.h"
#include "lib/runtime/data/npy.h"
#include "lib/runtime/kernel.h"
#include "lib/runtime/trainer.h"
#include "lib/testing/testdata.h"
#include "lib/testing/tf_data.h"

namespace parallax {
namespace {

// The shared graph `file`, or nullopt when the folder is absent (missing test data:
// skipped, or failed under CI; lib/testing/testdata.h).
std::optional<Graph> SharedGraph(const std::string& file) {
  std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return std::nullopt;
  StatusOr<Graph> graph = LoadGraph(*dir + "/" + file);
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  // As `parallax run` does.
  REQUIRE(StripHorovod(*graph).ok());
  return std::move(graph).value();
}

// The ops of `graph` without a CPU kernel.
std::set<std::string> WithoutKernel(const Graph& graph) {
  std::set<std::string> ops;
  for (NodeId id : graph.NodeIds()) {
    if (!HasKernel(graph.node(id), DeviceType::kCpu)) ops.insert(std::string(graph.node(id).op()));
  }
  return ops;
}

struct Trained {
  std::vector<double> losses;  // one per step
  TrainSummary summary;
};

// Trains with a report every step; REQUIREs success and a finite loss at every step.
Trained Train(const Graph& graph, TrainerOptions o) {
  o.log_every = 1;
  StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(graph, o);
  INFO(trainer.status().ToString());
  REQUIRE(trainer.ok());
  Trained t;
  StatusOr<TrainSummary> summary = (*trainer)->Run([&](const StepReport& r) {
    REQUIRE(r.loss);
    t.losses.push_back(*r.loss);
  });
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  t.summary = *summary;
  for (double loss : t.losses) CHECK(std::isfinite(loss));
  return t;
}

double Mean(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end), 0.0) /
         static_cast<double>(end - begin);
}

#ifndef PARALLAX_SFMLEARNER_ONLY

TEST_CASE("bert_tiny_mrpc_finetune: BERT-Tiny fine-tunes on MRPC from its own tf.data pipeline") {
  std::optional<Graph> graph = SharedGraph("bert_tiny_mrpc_finetune.pbtxt");
  if (!graph) return;
  // Its TFRecordDataset reads train.tf_record from the input directory.
  const std::optional<std::string> mrpc = testing::SharedDataPath("testdata/tf-files/bert_mrpc");
  if (!mrpc) return;
  // The graph's checkpoint_initializer restores "./bert_model.ckpt" (pretrained BERT,
  // not in the shared data): a checkpoint of the same tensors, random, written here.
  const std::string dir = testing::TempDir();
  StatusOr<int> written = testing::WriteRandomCheckpoint(*graph, dir + "/pretrained", false);
  REQUIRE(written.ok());
  CHECK(*written >= 40);
  TrainerOptions o;
  o.input.input_dir = *mrpc;
  o.init_checkpoint = dir + "/pretrained";
  o.steps = 60;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 60);
  // Two classes: ~0.69 at the start; it learns (AdamWeightDecay, lr 2e-5 with warmup).
  CHECK(Mean(t.losses, 40, 60) < Mean(t.losses, 0, 10) - 0.02);
}

TEST_CASE("bigdl_lenet_rmsprop_train: TF-slim LeNet reads TFRecords through queues and readers") {
  std::optional<Graph> graph = SharedGraph("bigdl_lenet_rmsprop_train.pbtxt");
  if (!graph) return;
  if (!testing::FashionMnistDir()) return;  // WriteSlimMnist's images
  const std::string dir = testing::TempDir();
  REQUIRE(testing::WriteSlimMnist(dir + "/mnist_train.tfrecord", 500).ok());
  TrainerOptions o;
  o.input.input_dir = dir;
  o.steps = 40;
  // As exported, the graph cannot run in TensorFlow either: its batch queue dequeues 2
  // examples (batch/n, edited for BigDL's tests) while its prefetch queue and
  // LeNet/Flatten/Reshape keep TF-slim's batch of 32. The queue's shape check says so.
  StatusOr<std::unique_ptr<Trainer>> unchanged = Trainer::Create(*graph, o);
  REQUIRE(unchanged.ok());
  StatusOr<TrainSummary> refused = (*unchanged)->Run();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "step 1: input pipeline: node 'fifo_queue_Dequeue' (QueueDequeueV2): filling FIFOQueue "
        "'prefetch_queue/fifo_queue' by running 'prefetch_queue/fifo_queue_enqueue': node "
        "'prefetch_queue/fifo_queue_enqueue' (QueueEnqueueV2): FIFOQueue "
        "'prefetch_queue/fifo_queue': the element enqueued component 0 has shape [2,28,28,1], "
        "the queue's is [32,28,28,1]");
  // With batch/n = 32, as TF-slim wrote it, it trains.
  StatusOr<std::string> text = ReadFileToString(graph->source());
  REQUIRE(text.ok());
  const size_t at = text->find("name: \"batch/n\"");
  REQUIRE(at != std::string::npos);
  const size_t value = text->find("int_val: 2", at);
  REQUIRE(value != std::string::npos);
  text->replace(value, 10, "int_val: 32");
  StatusOr<Graph> fixed = ParseGraph(*text, "lenet_batch_32.pbtxt");
  REQUIRE(fixed.ok());
  Trained t = Train(*fixed, o);
  REQUIRE(t.losses.size() == 40);
  CHECK(Mean(t.losses, 30, 40) < 0.5 * Mean(t.losses, 0, 5));
}

TEST_CASE("horovod_mnist_rmsprop: a Horovod graph trains as its single-device graph") {
  std::optional<Graph> graph = SharedGraph("horovod_mnist_rmsprop.pbtxt");
  if (!graph) return;
  const std::optional<std::string> fashion_mnist = testing::FashionMnistDir();
  if (!fashion_mnist) return;
  const std::string& fm = *fashion_mnist;
  TrainerOptions o;
  o.feeds = {{"input/image", fm + "/train-images-idx3-ubyte.gz"},
             {"input/label", fm + "/train-labels-idx1-ubyte.gz"}};
  o.batch = 64;
  o.steps = 40;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 40);
  CHECK(Mean(t.losses, 30, 40) < Mean(t.losses, 0, 5));
}

TEST_CASE("tensorboard_mnist_mlp_train: the MLP trains from a checkpoint, its queue fed") {
  std::optional<Graph> graph = SharedGraph("tensorboard_mnist_mlp_train.pbtxt");
  if (!graph) return;
  const std::optional<std::string> fashion_mnist = testing::FashionMnistDir();
  if (!fashion_mnist) return;
  // Its queue has no enqueue op in the graph and no variable has an initializer.
  const std::string dir = testing::TempDir();
  REQUIRE(testing::WriteRandomCheckpoint(*graph, dir + "/start", true).ok());
  const std::string& fm = *fashion_mnist;
  const std::string q = "mnist_dataset_train_2/random_shuffle_queue_DequeueMany";
  TrainerOptions o;
  o.feeds = {{q + ":0", fm + "/train-images-idx3-ubyte.gz"},
             {q + ":1", fm + "/train-labels-idx1-ubyte.gz"}};
  o.init_checkpoint = dir + "/start";
  o.steps = 40;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 40);
  CHECK(Mean(t.losses, 30, 40) < Mean(t.losses, 0, 5));
  CHECK(WithoutKernel(*graph) == std::set<std::string>{"_Send"});  // not on the path of a step
}

TEST_CASE("tfnet_vd_cnn: a very deep CNN with batch norm trains on character ids") {
  std::optional<Graph> graph = SharedGraph("tfnet_vd_cnn.meta");
  if (!graph) return;
  // 16 texts of 1014 character ids (its embeddings have 70 rows), 14 classes; the class
  // is a function of the first characters, so the net can fit them.
  const std::string dir = testing::TempDir();
  Tensor x(tensorflow::DT_INT32, TensorShape({16, 1014}));
  Tensor y(tensorflow::DT_INT32, TensorShape({16}));
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 1014; ++j) x.data<int32_t>()[i * 1014 + j] = (i * 13 + j * 7 + (j * j) % 11) % 70;
    y.data<int32_t>()[i] = i % 14;
  }
  REQUIRE(WriteNpy(dir + "/x.npy", x).ok());
  REQUIRE(WriteNpy(dir + "/y.npy", y).ok());
  TrainerOptions o;
  o.feeds = {{"x", dir + "/x.npy"}, {"y", dir + "/y.npy"}, {"is_training", "true"}};
  o.batch = 8;
  o.steps = 24;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 24);
  CHECK(Mean(t.losses, 16, 24) < 0.5 * Mean(t.losses, 0, 4));
}

TEST_CASE("tfnet_word2vec_nce: skip-gram with NCE (LogUniformCandidateSampler) trains") {
  std::optional<Graph> graph = SharedGraph("tfnet_word2vec_nce.meta");
  if (!graph) return;
  // Synthetic (word, context) ids: NCE learns the true classes' and the sampled
  // candidates' logits apart, so the loss falls.
  TrainerOptions o;
  o.synthetic = true;
  o.batch = 128;
  o.steps = 30;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 30);
  CHECK(Mean(t.losses, 20, 30) < 0.8 * Mean(t.losses, 0, 5));
}

TEST_CASE("tfnet_lstm_crf_ner: bi-LSTM (dynamic_rnn while loops) + CRF trains on sentences") {
  std::optional<Graph> graph = SharedGraph("tfnet_lstm_crf_ner.meta");
  if (!graph) return;
  // 32 sentences of 3 to 8 words (23 word ids, 28 char ids, words of 1 to 5 chars) padded
  // to 8; a word's tag (9 tags) is a function of its id, which the tagger can learn.
  constexpr int kSentences = 32, kWords = 8, kChars = 5;
  Tensor word_ids(tensorflow::DT_INT32, TensorShape({kSentences, kWords}));
  Tensor lengths(tensorflow::DT_INT32, TensorShape({kSentences}));
  Tensor char_ids(tensorflow::DT_INT32, TensorShape({kSentences, kWords, kChars}));
  Tensor word_lengths(tensorflow::DT_INT32, TensorShape({kSentences, kWords}));
  Tensor labels(tensorflow::DT_INT32, TensorShape({kSentences, kWords}));
  for (Tensor* t : {&word_ids, &char_ids, &word_lengths, &labels}) {
    std::fill_n(t->data<int32_t>(), t->num_elements(), 0);
  }
  for (int s = 0; s < kSentences; ++s) {
    const int n = 3 + (s * 5) % 6;
    lengths.data<int32_t>()[s] = n;
    for (int w = 0; w < n; ++w) {
      const int id = 1 + (s * 7 + w * 3) % 22;
      word_ids.data<int32_t>()[s * kWords + w] = id;
      labels.data<int32_t>()[s * kWords + w] = id % 9;
      const int chars = 1 + id % kChars;
      word_lengths.data<int32_t>()[s * kWords + w] = chars;
      for (int c = 0; c < chars; ++c) {
        char_ids.data<int32_t>()[(s * kWords + w) * kChars + c] = 1 + (id * 5 + c) % 27;
      }
    }
  }
  const std::string dir = testing::TempDir();
  const std::vector<std::pair<std::string, const Tensor*>> files = {
      {"word_ids", &word_ids}, {"sequence_lengths", &lengths}, {"char_ids", &char_ids},
      {"word_lengths", &word_lengths}, {"labels", &labels}};
  TrainerOptions o;
  for (const auto& [name, tensor] : files) {
    REQUIRE(WriteNpy(dir + "/" + name + ".npy", *tensor).ok());
    o.feeds.push_back({name, dir + "/" + name + ".npy"});
  }
  o.feeds.push_back({"dropout", "0.8"});  // the keep probability: dropout masks every step
  o.feeds.push_back({"lr", "0.01"});
  o.batch = 8;
  o.steps = 24;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 24);
  CHECK(Mean(t.losses, 16, 24) < 0.5 * Mean(t.losses, 0, 4));
}

TEST_CASE("impala_scalable_agent_learner: the learner trains on trajectories fed to its queue") {
  std::optional<Graph> graph = SharedGraph("impala_scalable_agent_learner.pbtxt");
  if (!graph) return;
  CHECK(WithoutKernel(*graph).empty());
  // Its FIFO queue is filled by the actors (another graph); the learner dequeues 8
  // unrolls of 21 frames, transposes them to time-major and stages them (Stage, run by
  // TF with the train op), the model reads the Unstage. The dequeue's outputs get
  // synthetic trajectories (frames, rewards, actions, logits, LSTM state, level names).
  TrainerOptions o;
  o.synthetic = true;
  o.steps = 20;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 20);
  // V-trace's baseline loss fits the random returns: the loss falls (446 -> 216).
  CHECK(Mean(t.losses, 15, 20) < 0.85 * Mean(t.losses, 0, 5));
}

TEST_CASE("nnfusion_frozen_*: op graphs with frozen variables are not training graphs") {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"nnfusion_frozen_apply_momentum_graph.pb",
       "step 1: node 'apply_momentum/update_var/ApplyMomentum' (ApplyMomentum): input 0 (var) "
       "is not a variable"},
      {"nnfusion_frozen_bias_add_grad_graph.pb",
       "nnfusion_frozen_bias_add_grad_graph.pb: no train op found (no node runs a gradient "
       "update); name one with --train-op"},
  };
  for (const auto& [file, message] : refused) {
    INFO(file);
    std::optional<Graph> graph = SharedGraph(file);
    if (!graph) return;
    TrainerOptions o;
    o.synthetic = true;
    o.steps = 2;
    StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(*graph, o);
    Status status = trainer.ok() ? (*trainer)->Run().status() : trainer.status();
    REQUIRE_FALSE(status.ok());
    const std::string got = status.message();
    CHECK(got.substr(got.size() - std::min(got.size(), message.size())) == message);
  }
}

#else  // PARALLAX_SFMLEARNER_ONLY

TEST_CASE("sfmlearner_queue_adam: SfMLearner reads JPEG files through queues and trains") {
  std::optional<Graph> graph = SharedGraph("sfmlearner_queue_adam.pbtxt");
  if (!graph) return;
  // Its producer lists 2,367 JPEG files of 1000x1000x3 (the batch queue's shape): a few
  // images written here, every listed name linked to one of them.
  const std::string dir = testing::TempDir();
  StatusOr<int> names = testing::WriteGraphImages(*graph, dir, 1000, 1000);
  REQUIRE(names.ok());
  CHECK(*names > 2000);
  TrainerOptions o;
  o.input.input_dir = dir;
  o.steps = 20;
  Trained t = Train(*graph, o);
  REQUIRE(t.losses.size() == 20);
  CHECK(Mean(t.losses, 15, 20) < Mean(t.losses, 0, 3));
}

#endif  // PARALLAX_SFMLEARNER_ONLY

}  // namespace
}  // namespace parallax
