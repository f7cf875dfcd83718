// File readers of both pipeline kinds and TF1 queue pipelines, run as graphs: records
// from TFRecord / text / fixed-length files written here, queues filled by their runners
// on demand, sharding by file and by record, names resolved through --input-dir.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "lib/graph/graph_io.h"
#include "lib/runtime/data/tfrecord.h"
#include "lib/runtime/executor.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

std::string StringConst(const std::string& name, const std::vector<std::string>& values,
                        bool scalar = false) {
  std::string text = "node { name: \"" + name + "\" op: \"Const\" attr { key: \"dtype\" value { "
                     "type: DT_STRING } } attr { key: \"value\" value { tensor { dtype: DT_STRING "
                     "tensor_shape { ";
  if (!scalar) text += "dim { size: " + std::to_string(values.size()) + " } ";
  text += "} ";
  for (const std::string& v : values) text += "string_val: \"" + v + "\" ";
  return text + "} } } }\n";
}

std::string ScalarConst(const std::string& name, const std::string& type, const std::string& field,
                        const std::string& value) {
  return "node { name: \"" + name + "\" op: \"Const\" attr { key: \"dtype\" value { type: " + type +
         " } } attr { key: \"value\" value { tensor { dtype: " + type + " tensor_shape { } " +
         field + ": " + value + " } } } }\n";
}

// Writes records "<prefix>0", "<prefix>1", ... to `path`.
void WriteRecords(const std::string& path, const std::string& prefix, int n) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) records.push_back(prefix + std::to_string(i));
  REQUIRE(WriteTFRecordFile(path, records).ok());
}

// The string values fetched from `fetch` until OutOfRange (at most `limit` runs).
std::vector<std::string> Drain(const std::string& text, const std::vector<std::string>& init,
                               const std::string& fetch, InputOptions input = {},
                               int limit = 1000, Status* end = nullptr) {
  StatusOr<Graph> graph = ParseGraph(text, "pipeline.pbtxt");
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device, std::move(input));
  if (!init.empty()) {
    StatusOr<std::vector<Tensor>> ran = executor.Run({.targets = init});
    INFO(ran.status().ToString());
    REQUIRE(ran.ok());
  }
  std::vector<std::string> out;
  for (int i = 0; i < limit; ++i) {
    StatusOr<std::vector<Tensor>> next = executor.Run({.fetches = {fetch}});
    if (!next.ok()) {
      if (end != nullptr) *end = next.status();
      CHECK(next.status().code() == StatusCode::kOutOfRange);
      break;
    }
    for (const std::string& s : (*next)[0].flat<std::string>()) out.push_back(s);
  }
  return out;
}

std::string TFRecordDatasetGraph(const std::vector<std::string>& files) {
  return StringConst("files", files) + ScalarConst("compression", "DT_STRING", "string_val", "\"\"") +
         ScalarConst("buffer", "DT_INT64", "int64_val", "262144") + R"(
    node { name: "ds" op: "TFRecordDataset" input: "files" input: "compression" input: "buffer" }
    node { name: "iterator" op: "IteratorV2" attr { key: "shared_name" value { s: "" } }
           attr { key: "container" value { s: "" } }
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    node { name: "make" op: "MakeIterator" input: "ds" input: "iterator" }
    node { name: "next" op: "IteratorGetNext" input: "iterator"
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } })";
}

TEST_CASE("TFRecordDataset reads its files in order; a job's ranks split them by file or record") {
  const std::string dir = testing::TempDir();
  WriteRecords(dir + "/a.tfrecord", "a", 3);
  WriteRecords(dir + "/b.tfrecord", "b", 2);
  const std::string both = TFRecordDatasetGraph({dir + "/a.tfrecord", dir + "/b.tfrecord"});
  CHECK(Drain(both, {"make"}, "next:0") == std::vector<std::string>{"a0", "a1", "a2", "b0", "b1"});

  InputOptions rank1;
  rank1.shard_index = 1;
  rank1.shard_count = 2;
  CHECK(Drain(both, {"make"}, "next:0", rank1) == std::vector<std::string>{"b0", "b1"});  // by file
  const std::string one = TFRecordDatasetGraph({dir + "/a.tfrecord"});
  CHECK(Drain(one, {"make"}, "next:0", rank1) == std::vector<std::string>{"a1"});  // by record

  // A name baked into the graph that does not exist here is looked up in --input-dir.
  InputOptions moved;
  moved.input_dir = dir;
  const std::string elsewhere = TFRecordDatasetGraph({"gs://bucket/data/b.tfrecord"});
  CHECK(Drain(elsewhere, {"make"}, "next:0", moved) == std::vector<std::string>{"b0", "b1"});
  moved.input_dir.clear();
  moved.input_map = {{"gs://bucket/data/", dir + "/"}};
  CHECK(Drain(elsewhere, {"make"}, "next:0", moved) == std::vector<std::string>{"b0", "b1"});
}

TEST_CASE("a missing file fails the step with the dataset and the path") {
  StatusOr<Graph> graph = ParseGraph(TFRecordDatasetGraph({"/no/such/train.tfrecord"}), "g.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device);
  REQUIRE(executor.Run({.targets = {"make"}}).ok());
  StatusOr<std::vector<Tensor>> next = executor.Run({.fetches = {"next:0"}});
  REQUIRE_FALSE(next.ok());
  CHECK(next.status().message().find("node 'next' (IteratorGetNext): TFRecordDataset 'ds': "
                                     "/no/such/train.tfrecord") == 0);
}

TEST_CASE("TextLineDataset and FixedLengthRecordDataset cut records as tf.data does") {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/lines.txt") << "first\r\nsecond\n\nlast";
  std::ofstream(dir + "/fixed.bin") << "HDRaaabbbcccFT";
  const std::string text = StringConst("files", {dir + "/lines.txt"}) +
                           ScalarConst("compression", "DT_STRING", "string_val", "\"\"") +
                           ScalarConst("buffer", "DT_INT64", "int64_val", "0") + R"(
    node { name: "ds" op: "TextLineDataset" input: "files" input: "compression" input: "buffer" }
    node { name: "iterator" op: "IteratorV2" attr { key: "shared_name" value { s: "" } }
           attr { key: "container" value { s: "" } }
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    node { name: "make" op: "MakeIterator" input: "ds" input: "iterator" }
    node { name: "next" op: "IteratorGetNext" input: "iterator"
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } })";
  CHECK(Drain(text, {"make"}, "next:0") == std::vector<std::string>{"first", "second", "", "last"});
  const std::string fixed = StringConst("files", {dir + "/fixed.bin"}) +
                            ScalarConst("header", "DT_INT64", "int64_val", "3") +
                            ScalarConst("record", "DT_INT64", "int64_val", "3") +
                            ScalarConst("footer", "DT_INT64", "int64_val", "2") +
                            ScalarConst("buffer", "DT_INT64", "int64_val", "0") + R"(
    node { name: "ds" op: "FixedLengthRecordDataset" input: "files" input: "header"
           input: "record" input: "footer" input: "buffer" }
    node { name: "iterator" op: "IteratorV2" attr { key: "shared_name" value { s: "" } }
           attr { key: "container" value { s: "" } }
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    node { name: "make" op: "MakeIterator" input: "ds" input: "iterator" }
    node { name: "next" op: "IteratorGetNext" input: "iterator"
           attr { key: "output_types" value { list { type: DT_STRING } } }
           attr { key: "output_shapes" value { list { shape { } } } } })";
  CHECK(Drain(fixed, {"make"}, "next:0") == std::vector<std::string>{"aaa", "bbb", "ccc"});
}

// TF1's string_input_producer (one epoch: CountUpTo on a local variable) -> a
// TFRecordReaderV2 -> a batch queue of 2, as tf.train.batch builds it.
std::string QueuePipeline(const std::vector<std::string>& files, int epochs) {
  return StringConst("names", files) + R"(
    node { name: "epochs" op: "VariableV2" attr { key: "dtype" value { type: DT_INT64 } }
           attr { key: "shape" value { shape { } } } }
    )" + ScalarConst("zero", "DT_INT64", "int64_val", "0") + R"(
    node { name: "epochs/Assign" op: "Assign" input: "epochs" input: "zero" attr { key: "T" value { type: DT_INT64 } } }
    node { name: "limit" op: "CountUpTo" input: "epochs" attr { key: "T" value { type: DT_INT64 } }
           attr { key: "limit" value { i: )" + std::to_string(epochs) + R"( } } }
    node { name: "limited" op: "Identity" input: "names" input: "^limit" attr { key: "T" value { type: DT_STRING } } }
    node { name: "filenames" op: "FIFOQueueV2" attr { key: "component_types" value { list { type: DT_STRING } } }
           attr { key: "shapes" value { list { shape { } } } } attr { key: "capacity" value { i: 32 } } }
    node { name: "filenames_enqueue" op: "QueueEnqueueManyV2" input: "filenames" input: "limited"
           attr { key: "Tcomponents" value { list { type: DT_STRING } } } }
    node { name: "reader" op: "TFRecordReaderV2" }
    node { name: "read" op: "ReaderReadV2" input: "reader" input: "filenames" }
    node { name: "batch/queue" op: "FIFOQueueV2" attr { key: "component_types" value { list { type: DT_STRING } } }
           attr { key: "shapes" value { list { shape { } } } } attr { key: "capacity" value { i: 8 } } }
    node { name: "batch/enqueue" op: "QueueEnqueueV2" input: "batch/queue" input: "read:1"
           attr { key: "Tcomponents" value { list { type: DT_STRING } } } }
    )" + ScalarConst("batch/n", "DT_INT32", "int_val", "2") + R"(
    node { name: "batch" op: "QueueDequeueUpToV2" input: "batch/queue" input: "batch/n"
           attr { key: "component_types" value { list { type: DT_STRING } } } }
    node { name: "init" op: "NoOp" input: "^epochs/Assign" })";
}

TEST_CASE("a TF1 queue pipeline runs its queue runners on demand and ends after its epochs") {
  const std::string dir = testing::TempDir();
  WriteRecords(dir + "/a.tfrecord", "a", 3);
  WriteRecords(dir + "/b.tfrecord", "b", 2);
  const std::vector<std::string> files = {dir + "/a.tfrecord", dir + "/b.tfrecord"};
  Status end;
  CHECK(Drain(QueuePipeline(files, 2), {"init"}, "batch:0", {}, 1000, &end) ==
        std::vector<std::string>{"a0", "a1", "a2", "b0", "b1", "a0", "a1", "a2", "b0", "b1"});
  CHECK(end.message() == "node 'batch' (QueueDequeueUpToV2): FIFOQueue 'batch/queue' is closed "
                         "and has 0 elements (2 requested)");
  // Rank 0 of 2 keeps the reader's records 0, 2, 4, ...
  InputOptions rank0;
  rank0.shard_count = 2;
  CHECK(Drain(QueuePipeline(files, 1), {"init"}, "batch:0", rank0) ==
        std::vector<std::string>{"a0", "a2", "b1"});
}

TEST_CASE("a queue that nothing fills says so instead of waiting forever") {
  const std::string text = R"(
    node { name: "q" op: "FIFOQueueV2" attr { key: "component_types" value { list { type: DT_FLOAT } } } }
    node { name: "deq" op: "QueueDequeueV2" input: "q"
           attr { key: "component_types" value { list { type: DT_FLOAT } } } })";
  StatusOr<Graph> graph = ParseGraph(text, "g.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device);
  StatusOr<std::vector<Tensor>> out = executor.Run({.fetches = {"deq:0"}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() ==
        "node 'deq' (QueueDequeueV2): FIFOQueue 'q' holds 0 of the 1 elements asked for and no "
        "enqueue op of the graph fills it; feed the dequeue's outputs (--feed) instead");
}

TEST_CASE("a staging area filled by a Stage op outside the step reads the step's feeds") {
  // IMPALA's learner: a queue nothing fills -> Stage; the model reads Unstage. TF runs
  // [train_op, stage_op] with one feed_dict; here the Unstage runs the Stage on demand,
  // and that nested run sees the step's feed of the dequeue.
  const std::string text = R"(
    node { name: "q" op: "FIFOQueueV2" attr { key: "component_types" value { list { type: DT_FLOAT } } } }
    node { name: "deq" op: "QueueDequeueV2" input: "q"
           attr { key: "component_types" value { list { type: DT_FLOAT } } } }
    node { name: "put" op: "Stage" input: "deq"
           attr { key: "dtypes" value { list { type: DT_FLOAT } } }
           attr { key: "shared_name" value { s: "area" } } }
    node { name: "get" op: "Unstage"
           attr { key: "dtypes" value { list { type: DT_FLOAT } } }
           attr { key: "shared_name" value { s: "area" } } }
    node { name: "twice" op: "Add" input: "get" input: "get" attr { key: "T" value { type: DT_FLOAT } } })";
  StatusOr<Graph> graph = ParseGraph(text, "g.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device);
  for (float v : {1.5f, -2.0f}) {
    StatusOr<std::vector<Tensor>> out =
        executor.Run({.feeds = {{"deq:0", Tensor::Scalar<float>(v)}}, .fetches = {"twice:0"}});
    INFO(out.status().message());
    REQUIRE(out.ok());
    CHECK((*out)[0].data<float>()[0] == 2 * v);
  }
  // Without the feed, the error says what to feed.
  StatusOr<std::vector<Tensor>> unfed = executor.Run({.fetches = {"twice:0"}});
  REQUIRE_FALSE(unfed.ok());
  CHECK(unfed.status().message().find("feed the dequeue's outputs (--feed) instead") !=
        std::string::npos);
}

}  // namespace
}  // namespace parallax
