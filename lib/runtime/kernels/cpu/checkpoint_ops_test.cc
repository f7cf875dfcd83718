// The checkpoint kernels one op at a time (through RunOp), then the save/restore
// subgraphs of real TF graphs: half_plus_two's plain Saver (restored from the files TF
// wrote, saved back byte for byte), and the Savers of the shared training graphs
// (Horovod MNIST, BERT, IMPALA: sharded, StringJoin -> ShardedFilename -> SaveV2 -> Pack
// -> MergeV2Checkpoints; SfMLearner: plain).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;
using testing::AttrMap;
using testing::RunOp;

Tensor Str(std::string value) { return Tensor::FromVector<std::string>({std::move(value)}, TensorShape()); }
Tensor Strs(std::vector<std::string> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<std::string>(values, TensorShape({n}));
}

tensorflow::AttrValue TypeListAttr(const std::vector<DataType>& types) {
  tensorflow::AttrValue attr;
  for (DataType t : types) attr.mutable_list()->add_type(t);
  return attr;
}

Tensor RunOne(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {}) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  if (!run.ok()) FAIL(run.status().message());
  REQUIRE(run->outputs.size() == 1);
  return run->outputs[0];
}

std::string RunError(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {},
                     int num_outputs = -1) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs, {}, num_outputs);
  REQUIRE_FALSE(run.ok());
  return run.status().message();
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("ShardedFilename, ShardedFilespec") {
  CHECK(RunOne("ShardedFilename", {Str("ck_temp/part"), Tensor::Scalar<int32_t>(3),
                                   Tensor::Scalar<int32_t>(12)})
            .flat<std::string>()[0] == "ck_temp/part-00003-of-00012");
  CHECK(RunOne("ShardedFilespec", {Str("ck"), Tensor::Scalar<int32_t>(2)}).flat<std::string>()[0] ==
        "ck-?????-of-00002");
  CHECK(RunError("ShardedFilename", {Str("a"), Tensor::FromVector<int32_t>({1, 2}, TensorShape({2})),
                                     Tensor::Scalar<int32_t>(2)}) ==
        "node 'op' (ShardedFilename): input shard must be an int32 scalar, got DT_INT32 [2]");
}

TEST_CASE("StringJoin: scalars broadcast, a separator between inputs") {
  const Tensor joined = RunOne("StringJoin", {Str("model"), Strs({"a", "b"}), Str("/part")},
                               {{"N", IntAttr(3)}, {"separator", StringAttr("_")}});
  REQUIRE(joined.shape() == TensorShape({2}));
  CHECK(joined.flat<std::string>()[0] == "model_a_/part");
  CHECK(joined.flat<std::string>()[1] == "model_b_/part");
  CHECK(RunOne("StringJoin", {Str("p"), Str("_temp/part")}, {{"N", IntAttr(2)}}).flat<std::string>()[0] ==
        "p_temp/part");
  CHECK(RunError("StringJoin", {Strs({"a", "b"}), Strs({"a"})}, {{"N", IntAttr(2)}}) ==
        "node 'op' (StringJoin): input shapes do not match: [2] vs. [1] (input 1)");
}

TEST_CASE("SaveV2 then RestoreV2: whole tensors, slices, and their errors") {
  const std::string prefix = testing::TempDir() + "/ck";
  const Tensor w = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, TensorShape({4, 3}));
  const Tensor top = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape({2, 3}));
  const Tensor bottom = Tensor::FromVector<float>({6, 7, 8, 9, 10, 11}, TensorShape({2, 3}));
  const Tensor step = Tensor::Scalar<int64_t>(7);
  const Tensor words = Strs({"x", "yz"});
  const AttrMap save_attrs = {{"dtypes", TypeListAttr({tensorflow::DT_FLOAT, tensorflow::DT_FLOAT,
                                                       tensorflow::DT_INT64, tensorflow::DT_STRING})}};
  REQUIRE(RunOp("SaveV2",
                {Str(prefix), Strs({"w", "w", "global_step", "words"}),
                 Strs({"4 3 2,2:-", "4 3 0,2:-", "", ""}), bottom, top, step, words},
                save_attrs)
              .ok());
  StatusOr<TfCheckpointReader> reader = TfCheckpointReader::Open(prefix);
  REQUIRE(reader.ok());
  CHECK(reader->Find("w")->slices.size() == 2);

  const AttrMap restore_attrs = {{"dtypes", TypeListAttr({tensorflow::DT_FLOAT, tensorflow::DT_FLOAT,
                                                          tensorflow::DT_INT64, tensorflow::DT_STRING})}};
  StatusOr<testing::OpRun> restored =
      RunOp("RestoreV2", {Str(prefix), Strs({"w", "w", "global_step", "words"}),
                          Strs({"", "4 3 1,2:1,1", "", ""})},
            restore_attrs);
  REQUIRE(restored.ok());
  REQUIRE(restored->outputs.size() == 4);
  CHECK(TensorsBitEqual(restored->outputs[0], w));
  CHECK(TensorsBitEqual(restored->outputs[1], Tensor::FromVector<float>({4, 7}, TensorShape({2, 1}))));
  CHECK(TensorsBitEqual(restored->outputs[2], step));
  CHECK(TensorsBitEqual(restored->outputs[3], words));

  const AttrMap one_float = {{"dtypes", TypeListAttr({tensorflow::DT_INT32})}};
  CHECK(RunError("RestoreV2", {Str(prefix), Strs({"w"}), Strs({""})}, one_float) ==
        "node 'op' (RestoreV2): " + prefix + ".index: tensor 'w' is float in the checkpoint, the "
        "restore asks for int32");
  CHECK(RunError("RestoreV2", {Str(prefix), Strs({"v"}), Strs({""})}, one_float) ==
        "node 'op' (RestoreV2): " + prefix + ".index: no tensor 'v' in the checkpoint");
  CHECK(RunError("RestoreV2", {Str(prefix + "x"), Strs({"v"}), Strs({""})}, one_float) ==
        "node 'op' (RestoreV2): " + prefix +
            "x.index: no such file (to restore from another checkpoint, pass --init-checkpoint)");
  CHECK(RunError("RestoreV2", {Str(prefix), Strs({"v", "w"}), Strs({""})}, one_float, 1) ==
        "node 'op' (RestoreV2): tensor_names has 2 elements, shape_and_slices 1");
  CHECK(RunError("SaveV2", {Str(prefix + "2"), Strs({"w"}), Strs({"4 3 0,1:-"}), top},
                 {{"dtypes", TypeListAttr({tensorflow::DT_FLOAT})}}) ==
        "node 'op' (SaveV2): tensor 'w': shape_and_slice '4 3 0,1:-' is of shape [1,3], the "
        "tensor to save is [2,3]");
  CHECK(RunError("SaveV2", {Str(prefix + "2"), Strs({"w"}), Strs({"4 3 0,1"}), top},
                 {{"dtypes", TypeListAttr({tensorflow::DT_FLOAT})}}) ==
        "node 'op' (SaveV2): tensor 'w': shape_and_slice '4 3 0,1': slice '0,1' has 1 dimensions, "
        "the shape [4,3] has 2");
  CHECK_FALSE(fs::exists(prefix + "2.index"));
}

TEST_CASE("MergeV2Checkpoints joins shards and removes the temporary directory") {
  const std::string dir = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(dir + "/ck_temp/part-00000-of-00002", {{"a", Tensor::Scalar<float>(1)}}).ok());
  REQUIRE(WriteTfCheckpoint(dir + "/ck_temp/part-00001-of-00002", {{"b", Tensor::Scalar<float>(2)}}).ok());
  StatusOr<testing::OpRun> run =
      RunOp("MergeV2Checkpoints",
            {Strs({dir + "/ck_temp/part-00000-of-00002", dir + "/ck_temp/part-00001-of-00002"}),
             Str(dir + "/ck")},
            {{"delete_old_dirs", BoolAttr(true)}});
  if (!run.ok()) FAIL(run.status().message());
  CHECK_FALSE(fs::exists(dir + "/ck_temp"));
  StatusOr<TfCheckpointReader> reader = TfCheckpointReader::Open(dir + "/ck");
  REQUIRE(reader.ok());
  CHECK(reader->num_shards() == 2);
  CHECK(*reader->Read("b")->data<float>() == 2);
}

// ---------------------------------------------------------------------------------
// Real graphs
// ---------------------------------------------------------------------------------

Graph Load(const std::string& path) {
  StatusOr<Graph> graph = LoadGraph(path);
  if (!graph.ok()) FAIL(graph.status().message());
  return std::move(graph).value();
}

void Run(Executor& executor, const RunRequest& request) {
  StatusOr<std::vector<Tensor>> out = executor.Run(request);
  if (!out.ok()) FAIL(out.status().message());
}

TEST_CASE("half_plus_two's Saver: restores what TF wrote and saves the same bytes back") {
  const std::optional<std::string> dir =
      testing::SharedDataPath("testdata/tf-files/tfserving_half_plus_two");
  if (!dir) return;
  const Graph graph = Load(*dir + "/export.meta");
  CpuDevice device(2);
  Executor executor(graph, device);
  Run(executor, {.feeds = {{"save/Const:0", Str(*dir + "/export")}}, .targets = {"save/restore_all"}});
  CHECK(*executor.variables().Find("Variable")->data<float>() == 0.5f);
  CHECK(*executor.variables().Find("Variable_1")->data<float>() == 2.0f);

  const std::string out = testing::TempDir() + "/model.ckpt";
  StatusOr<std::vector<Tensor>> saved =
      executor.Run({.feeds = {{"save/Const:0", Str(out)}}, .fetches = {"save/control_dependency:0"}});
  REQUIRE(saved.ok());
  CHECK((*saved)[0].flat<std::string>()[0] == out);
  CHECK(Bytes(out + ".index") == Bytes(*dir + "/export.index"));
  CHECK(Bytes(out + ".data-00000-of-00001") == Bytes(*dir + "/export.data-00000-of-00001"));
}

// Runs a real graph's Saver: restores random values written by the checkpoint writer
// (names, dtypes and shapes from the graph), saves them through the graph's own save
// subgraph, and checks the files: only the merged checkpoint is left (a sharded saver's
// `_temp_<uuid>` directory is gone) and it holds the same bytes.
void RoundTripThroughSaver(const std::string& path) {
  const Graph graph = Load(path);
  const NodeId names_id = graph.FindNode("save/SaveV2/tensor_names");
  REQUIRE(names_id != kNoNode);
  const std::optional<tensorflow::AttrValue> names_value = graph.node(names_id).FindAttr("value");
  REQUIRE(names_value.has_value());
  StatusOr<Tensor> names = Tensor::FromProto(names_value->tensor());
  REQUIRE(names.ok());
  std::map<std::string, Tensor> values;
  uint64_t seed = 1;
  for (const std::string& name : names->flat<std::string>()) {
    INFO(name);
    const NodeId id = graph.FindNode(name);
    REQUIRE(id != kNoNode);
    const Node& variable = graph.node(id);
    INFO(variable.op());
    const std::optional<tensorflow::AttrValue> dtype = variable.FindAttr("dtype");
    const std::optional<tensorflow::AttrValue> shape = variable.FindAttr("shape");
    REQUIRE(dtype.has_value());
    REQUIRE(shape.has_value());
    std::vector<int64_t> dims;
    for (const auto& d : shape->shape().dim()) dims.push_back(d.size());
    values[name] = testing::RandomTensor(dtype->type(), TensorShape(dims), seed++, -2, 2);
  }
  const std::string work = testing::TempDir();
  REQUIRE(WriteTfCheckpoint(work + "/init", values).ok());

  CpuDevice device(2);
  Executor executor(graph, device);
  Run(executor, {.feeds = {{"save/Const:0", Str(work + "/init")}}, .targets = {"save/restore_all"}});
  const bool sharded = graph.FindNode("save/MergeV2Checkpoints") != kNoNode;
  const std::string saved = sharded ? "save/Identity:0" : "save/control_dependency:0";
  Run(executor, {.feeds = {{"save/Const:0", Str(work + "/model.ckpt-1")}}, .fetches = {saved}});
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(work)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"init.data-00000-of-00001", "init.index",
                                          "model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"});
  StatusOr<TfCheckpointReader> reader = TfCheckpointReader::Open(work + "/model.ckpt-1");
  REQUIRE(reader.ok());
  REQUIRE(reader->entries().size() == values.size());
  for (const auto& [name, value] : values) {
    INFO(name);
    StatusOr<Tensor> back = reader->Read(name);
    REQUIRE(back.ok());
    CHECK(TensorsBitEqual(*back, value));
  }
  CHECK(Bytes(work + "/model.ckpt-1.data-00000-of-00001") == Bytes(work + "/init.data-00000-of-00001"));
  CHECK(Bytes(work + "/model.ckpt-1.index") == Bytes(work + "/init.index"));
}

TEST_CASE("the Savers of real graphs: restore, then save (sharded: StringJoin, ShardedFilename, "
          "SaveV2, Pack, MergeV2Checkpoints)") {
  const std::optional<std::string> dir = testing::SharedTfGraphDir();
  if (!dir) return;
  for (const char* file : {"horovod_mnist_rmsprop.pbtxt", "bert_tiny_mrpc_finetune.pbtxt",
                           "impala_scalable_agent_learner.pbtxt", "sfmlearner_queue_adam.pbtxt"}) {
    SECTION(file) { RoundTripThroughSaver(*dir + "/" + file); }
  }
}

}  // namespace
}  // namespace parallax
