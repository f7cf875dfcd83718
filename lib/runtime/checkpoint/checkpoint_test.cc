#include "lib/runtime/checkpoint/checkpoint.h"

#include <filesystem>

#include <catch2/catch.hpp>

#include "lib/base/file.h"
#include "lib/base/fnv1a.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/executor.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

constexpr const char* kGraph = R"pb(
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
  node { name: "w/init" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 3 } }
                                               float_val: 0.5 } } } }
  node { name: "w/Assign" op: "Assign" input: "w" input: "w/init" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "step" op: "VariableV2" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { } } } attr { key: "shared_name" value { s: "global_step" } } }
  node { name: "step/init" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 3 } } } }
  node { name: "step/Assign" op: "Assign" input: "step" input: "step/init" attr { key: "T" value { type: DT_INT64 } } }
  node { name: "init" op: "NoOp" input: "^w/Assign" input: "^step/Assign" }
)pb";

std::vector<CheckpointVariable> Variables() {
  return {{"w", "w", tensorflow::DT_FLOAT, true, {2, 3}},
          {"step", "global_step", tensorflow::DT_INT64, true, {}}};
}

struct Initialised {
  Graph graph;
  CpuDevice device{1};
  std::unique_ptr<Executor> executor;
  Initialised() {
    StatusOr<Graph> g = ParseGraph(kGraph, "ck.pbtxt");
    REQUIRE(g.ok());
    graph = std::move(g).value();
    executor = std::make_unique<Executor>(graph, device);
    REQUIRE(executor->Run({.targets = {"init"}}).ok());
  }
};

TEST_CASE("save and restore every variable with step, data position and fingerprint") {
  const std::string dir = testing::TempDir();
  Initialised a;
  a.executor->variables().Find("w")->data<float>()[4] = 42;
  CheckpointState state{.step = 120, .position = {2, 17}, .shuffle_seed = 99, .shuffle = false,
                        .graph_fingerprint = Fnv1a64Hex("graph")};
  StatusOr<std::string> path = SaveCheckpoint(dir, Variables(), a.executor->variables(), state);
  REQUIRE(path.ok());
  CHECK(*path == dir + "/checkpoint-120.safetensors");

  StatusOr<SafetensorsContents> raw = ReadSafetensors(*path);
  REQUIRE(raw.ok());
  CHECK(raw->metadata.at("format") == "parallax-checkpoint-1");
  CHECK(raw->metadata.at("step") == "120");
  CHECK(raw->tensors.contains("step"));  // by graph name, not shared_name

  VariableStore fresh;
  StatusOr<CheckpointState> restored = RestoreCheckpoint(*path, Variables(), fresh);
  REQUIRE(restored.ok());
  CHECK(restored->step == 120);
  CHECK(restored->position == DataPosition{2, 17});
  CHECK(restored->shuffle_seed == 99);
  CHECK_FALSE(restored->shuffle);
  CHECK(restored->graph_fingerprint == Fnv1a64Hex("graph"));
  CHECK(TensorsBitEqual(*fresh.Find("w"), *a.executor->variables().Find("w")));
  CHECK(fresh.Find("global_step")->DebugString() == "int64[] {3}");
}

TEST_CASE("only the newest K checkpoints are kept; temporary files are not checkpoints") {
  const std::string dir = testing::TempDir();
  Initialised a;
  for (int64_t step : {10, 20, 30, 40, 50}) {
    REQUIRE(SaveCheckpoint(dir, Variables(), a.executor->variables(), {.step = step}, 3).ok());
  }
  REQUIRE(WriteFileAtomically(dir + "/checkpoint-90.safetensors.tmp.123", "partial").ok());
  REQUIRE(WriteFileAtomically(dir + "/notes.txt", "x").ok());
  auto list = ListCheckpoints(dir);
  REQUIRE(list.ok());
  REQUIRE(list->size() == 3);
  CHECK((*list)[0].first == 30);
  CHECK((*list)[2].first == 50);
  auto latest = LatestCheckpoint(dir);
  REQUIRE(latest.ok());
  CHECK(*latest == std::optional<std::string>(dir + "/checkpoint-50.safetensors"));
  auto none = LatestCheckpoint(dir + "/absent");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("the next checkpoint removes what a writer killed mid-write left") {
  const std::string dir = testing::TempDir();
  Initialised a;
  REQUIRE(SaveCheckpoint(dir, Variables(), a.executor->variables(), {.step = 10}).ok());
  REQUIRE(WriteFileAtomically(dir + "/checkpoint-20.safetensors.tmp.4242", "partial").ok());
  REQUIRE(WriteFileAtomically(dir + "/notes.tmp.1", "not a checkpoint's").ok());
  REQUIRE(SaveCheckpoint(dir, Variables(), a.executor->variables(), {.step = 30}).ok());
  CHECK_FALSE(std::filesystem::exists(dir + "/checkpoint-20.safetensors.tmp.4242"));
  CHECK(std::filesystem::exists(dir + "/notes.tmp.1"));
  CHECK(std::filesystem::exists(dir + "/checkpoint-10.safetensors"));
  CHECK(std::filesystem::exists(dir + "/checkpoint-30.safetensors"));
}

TEST_CASE("restore errors name the file and the variable; the store is untouched") {
  const std::string dir = testing::TempDir();
  Initialised a;
  StatusOr<std::string> path = SaveCheckpoint(dir, Variables(), a.executor->variables(), {.step = 1});
  REQUIRE(path.ok());
  VariableStore store;

  std::vector<CheckpointVariable> more = Variables();
  more.push_back({"b", "b", tensorflow::DT_FLOAT, true, {3}});
  CHECK(RestoreCheckpoint(*path, more, store).status().message() ==
        *path + ": variable 'b' is missing from the checkpoint");
  std::vector<CheckpointVariable> wrong_shape = Variables();
  wrong_shape[0].dims = {3, 2};
  CHECK(RestoreCheckpoint(*path, wrong_shape, store).status().message() ==
        *path + ": variable 'w' is F32 [2,3] in the checkpoint, the graph declares float [3,2]");
  std::vector<CheckpointVariable> wrong_type = Variables();
  wrong_type[1].dtype = tensorflow::DT_INT32;
  CHECK(RestoreCheckpoint(*path, wrong_type, store).status().message() ==
        *path + ": variable 'step' is I64 [] in the checkpoint, the graph declares int32 []");
  std::vector<CheckpointVariable> open = Variables();
  open[0].dims = {-1, 3};
  CHECK(RestoreCheckpoint(*path, open, store).ok());  // unknown dims accept any size
  CHECK(store.Find("w") != nullptr);

  VariableStore untouched;
  CHECK_FALSE(RestoreCheckpoint(*path, more, untouched).ok());
  CHECK(untouched.all().empty());

  // Corrupt files.
  StatusOr<std::string> bytes = ReadFileToString(*path);
  REQUIRE(bytes.ok());
  const std::string truncated = dir + "/checkpoint-2.safetensors";
  REQUIRE(WriteFileAtomically(truncated, bytes->substr(0, bytes->size() - 3)).ok());
  CHECK(RestoreCheckpoint(truncated, Variables(), store).status().message().starts_with(
      truncated + ": tensor '"));
  const std::string garbage = dir + "/checkpoint-3.safetensors";
  REQUIRE(WriteFileAtomically(garbage, "this is not a checkpoint").ok());
  CHECK(RestoreCheckpoint(garbage, Variables(), store).status().message() ==
        garbage + ": bad header length 2338328219631577204: over the limit of 100000000 bytes");
  SafetensorsContents foreign;
  foreign.tensors["w"] = Tensor::Scalar<float>(1);
  const std::string other = dir + "/checkpoint-4.safetensors";
  REQUIRE(WriteSafetensors(other, foreign).ok());
  CHECK(RestoreCheckpoint(other, Variables(), store).status().message() ==
        other + ": not a parallax checkpoint (__metadata__ 'format' is not "
                "'parallax-checkpoint-1')");
  foreign.metadata = {{"format", "parallax-checkpoint-1"}, {"step", "x1"}};
  REQUIRE(WriteSafetensors(other, foreign).ok());
  CHECK(RestoreCheckpoint(other, Variables(), store).status().message() ==
        other + ": __metadata__ 'step' is 'x1', not a non-negative integer");
  CHECK(RestoreCheckpoint(dir + "/none.safetensors", Variables(), store).status().message() ==
        dir + "/none.safetensors: no such file");
}

TEST_CASE("saving an uninitialised variable is an error naming it") {
  VariableStore store;
  CHECK(SaveCheckpoint(testing::TempDir(), Variables(), store, {}).status().message() ==
        "checkpoint: variable 'w' is not initialised (the init op does not initialise it)");
}

}  // namespace
}  // namespace parallax
