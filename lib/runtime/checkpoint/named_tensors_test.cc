#include "lib/runtime/checkpoint/named_tensors.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/runtime/checkpoint/safetensors.h"
#include "lib/runtime/checkpoint/tf_checkpoint.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

namespace fs = std::filesystem;

CheckpointLocation Resolve(const std::string& path) {
  StatusOr<CheckpointLocation> location = ResolveCheckpoint(path);
  if (!location.ok()) FAIL(location.status().message());
  return *location;
}

std::string ResolveError(const std::string& path) {
  StatusOr<CheckpointLocation> location = ResolveCheckpoint(path);
  REQUIRE_FALSE(location.ok());
  return location.status().message();
}

std::unique_ptr<NamedTensorReader> OpenOrFail(const std::string& path) {
  StatusOr<std::unique_ptr<NamedTensorReader>> reader = OpenNamedTensors(path);
  if (!reader.ok()) FAIL(reader.status().message());
  return std::move(reader).value();
}

TEST_CASE("what a user names resolves to one checkpoint") {
  const std::string dir = testing::TempDir();
  const std::string prefix = dir + "/train/model.ckpt-5";
  REQUIRE(WriteTfCheckpoint(prefix, {{"w", Tensor::Scalar<float>(1)}}).ok());
  using F = CheckpointFormat;

  CheckpointLocation l = Resolve(prefix);
  CHECK(l.format == F::kTensorFlow);
  CHECK(l.path == prefix);
  CHECK(l.found.empty());
  CHECK(Resolve(prefix + ".index").path == prefix);
  CHECK(Resolve(prefix + ".data-00000-of-00001").path == prefix);

  // A directory with a `checkpoint` file, and the file itself.
  tensorflow::CheckpointState state;
  state.set_model_checkpoint_path("model.ckpt-5");
  REQUIRE(WriteTfCheckpointState(dir + "/train", state).ok());
  l = Resolve(dir + "/train");
  CHECK(l.path == prefix);
  CHECK(l.found == "from " + dir + "/train/checkpoint");
  CHECK(Resolve(dir + "/train/checkpoint").path == prefix);

  // A SavedModel and its variables directory.
  REQUIRE(WriteTfCheckpoint(dir + "/saved/variables/variables", {{"v", Tensor::Scalar<float>(2)}}).ok());
  l = Resolve(dir + "/saved");
  CHECK(l.path == dir + "/saved/variables/variables");
  CHECK(l.found == "the variables of the SavedModel " + dir + "/saved");
  CHECK(Resolve(dir + "/saved/variables").path == dir + "/saved/variables/variables");

  // A safetensors file (by content, whatever its name) and a `parallax run` directory.
  SafetensorsContents contents;
  contents.tensors["w"] = Tensor::FromVector<float>({1, 2}, TensorShape({2}));
  contents.metadata["step"] = "9";
  fs::create_directories(dir + "/run");
  REQUIRE(WriteSafetensors(dir + "/run/checkpoint-9.safetensors", contents).ok());
  REQUIRE(WriteSafetensors(dir + "/weights.bin", contents).ok());
  l = Resolve(dir + "/weights.bin");
  CHECK(l.format == F::kSafetensors);
  CHECK(l.path == dir + "/weights.bin");
  l = Resolve(dir + "/run");
  CHECK(l.format == F::kSafetensors);
  CHECK(l.path == dir + "/run/checkpoint-9.safetensors");
  CHECK(l.found == "the newest checkpoint in " + dir + "/run");

  // What is not a checkpoint.
  CHECK(ResolveError(dir + "/nope") ==
        dir + "/nope: no such file, directory or checkpoint prefix (" + dir + "/nope.index does not exist)");
  CHECK(ResolveCheckpoint(dir + "/nope").status().code() == StatusCode::kNotFound);
  fs::create_directories(dir + "/empty");
  CHECK(ResolveError(dir + "/empty") ==
        dir + "/empty: a directory without a TensorFlow `checkpoint` file, SavedModel variables or "
              "`parallax run` checkpoints (of one process or of a job's ranks)");
  std::ofstream(dir + "/notes.txt") << "hello\n";
  CHECK(ResolveError(dir + "/notes.txt") ==
        dir + "/notes.txt: not a checkpoint: neither a TensorFlow checkpoint file (PREFIX.index, "
              "PREFIX.data-*), a `checkpoint` file nor a safetensors file");
  state.set_model_checkpoint_path("model.ckpt-6");
  REQUIRE(WriteTfCheckpointState(dir + "/train", state).ok());
  CHECK(ResolveError(dir + "/train") ==
        dir + "/train/checkpoint: model_checkpoint_path 'model.ckpt-6' names a missing checkpoint (" +
            dir + "/train/model.ckpt-6.index does not exist)");
}

TEST_CASE("named tensors over both formats: list, find, read") {
  const std::string dir = testing::TempDir();
  const Tensor w = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  const Tensor step = Tensor::Scalar<int64_t>(42);
  REQUIRE(WriteTfCheckpoint(dir + "/tf", {{"w", w}, {"global_step", step}}).ok());
  SafetensorsContents contents;
  contents.tensors["w"] = w;
  contents.tensors["global_step"] = step;
  contents.metadata["step"] = "42";
  REQUIRE(WriteSafetensors(dir + "/st.safetensors", contents).ok());

  for (const std::string& path : {dir + "/tf", dir + "/st.safetensors"}) {
    INFO(path);
    const std::unique_ptr<NamedTensorReader> reader = OpenOrFail(path);
    REQUIRE(reader->tensors().size() == 2);
    CHECK(reader->tensors()[0].name == "global_step");
    CHECK(reader->tensors()[1].name == "w");
    const NamedTensorInfo* info = reader->Find("w");
    REQUIRE(info != nullptr);
    CHECK(info->dtype == tensorflow::DT_FLOAT);
    CHECK(info->shape == TensorShape({2, 3}));
    CHECK(info->bytes == 24);
    CHECK(reader->Find("x") == nullptr);
    StatusOr<Tensor> back = reader->Read("w");
    REQUIRE(back.ok());
    CHECK(TensorsBitEqual(*back, w));
    CHECK(reader->Read("x").status().code() == StatusCode::kNotFound);
  }
  const std::unique_ptr<NamedTensorReader> tf = OpenOrFail(dir + "/tf");
  CHECK(tf->location().format == CheckpointFormat::kTensorFlow);
  CHECK(tf->metadata().empty());
  CHECK(tf->Read("x").status().message() == dir + "/tf.index: no tensor 'x' in the checkpoint");
  const std::unique_ptr<NamedTensorReader> st = OpenOrFail(dir + "/st.safetensors");
  CHECK(st->location().format == CheckpointFormat::kSafetensors);
  CHECK(st->metadata().at("step") == "42");
  CHECK(st->Read("x").status().message() == dir + "/st.safetensors: no tensor 'x' in the checkpoint");
  CHECK(CheckpointFormatName(CheckpointFormat::kSafetensors) == "safetensors");
}

TEST_CASE("the shared TF checkpoints through the named-tensor interface") {
  const std::optional<std::string> files = testing::SharedDataPath("testdata/tf-files");
  if (!files) return;
  // An Estimator's model_dir: its `checkpoint` file names model.ckpt-1000.
  const std::unique_ptr<NamedTensorReader> taxi = OpenOrFail(*files + "/tfx_taxi_estimator_ckpt");
  CHECK(taxi->location().path == *files + "/tfx_taxi_estimator_ckpt/model.ckpt-1000");
  StatusOr<Tensor> step = taxi->Read("global_step");
  REQUIRE(step.ok());
  CHECK(*step->data<int64_t>() == 1000);
  const std::unique_ptr<NamedTensorReader> half = OpenOrFail(*files + "/tfserving_half_plus_two/export");
  REQUIRE(half->tensors().size() == 2);
  CHECK(*half->Read("Variable")->data<float>() == 0.5f);
  CHECK(*half->Read("Variable_1")->data<float>() == 2.0f);
}

}  // namespace
}  // namespace parallax
