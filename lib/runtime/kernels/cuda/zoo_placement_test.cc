// Where the zoo's variables would live on a GPU, in the --config=cuda build: for each
// model, every float variable is a device variable (every node that updates it has a GPU
// kernel), so a training step copies no weights — the embedding model's table and its
// Adagrad slot included — and only an int64 global step stays in host memory. The
// executor plans placement from the kernel registry alone, so a fake GPU (host memory
// behind the device interface) stands in for one: nothing runs.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "lib/models/zoo.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/fake_device.h"

namespace parallax {
namespace {

using models::BuildModel;
using models::Model;
using models::ModelOptions;

// The VariableStore keys of the graph's float variables, sorted.
std::vector<std::string> FloatVariables(const Graph& graph) {
  std::set<std::string> keys;
  for (NodeId id = 0; id < graph.id_limit(); ++id) {
    if (!graph.IsLive(id)) continue;
    const Node& node = graph.node(id);
    if (node.op() != "VariableV2" && node.op() != "VarHandleOp") continue;
    const std::optional<tensorflow::AttrValue> dtype = node.FindAttr("dtype");
    if (!dtype.has_value() || dtype->type() != tensorflow::DT_FLOAT) continue;
    const std::optional<tensorflow::AttrValue> shared = node.FindAttr("shared_name");
    keys.insert(shared.has_value() && !shared->s().empty() ? shared->s()
                                                           : std::string(node.name()));
  }
  return {keys.begin(), keys.end()};
}

TEST_CASE("on a GPU, every float variable of the zoo's models lives in device memory") {
  struct Case {
    const char* model;
    ModelOptions options;
  };
  ModelOptions small_resnet;
  small_resnet.image_size = 32;
  small_resnet.blocks = std::vector<int64_t>{1, 1, 1, 1};
  ModelOptions small_transformer;
  small_transformer.layers = 1;
  small_transformer.hidden = 64;
  small_transformer.heads = 2;
  small_transformer.seq = 16;
  small_transformer.vocab = 100;
  ModelOptions with_step;
  with_step.global_step = true;
  for (const Case& c : std::vector<Case>{{"mlp", with_step},
                                         {"lenet", {}},
                                         {"embedding", {}},
                                         {"resnet50", small_resnet},
                                         {"transformer", small_transformer}}) {
    CAPTURE(c.model);
    StatusOr<Model> model = BuildModel(c.model, c.options);
    REQUIRE(model.ok());
    testing::FakeGpu gpu;
    Executor executor(model->graph, gpu);
    const std::vector<std::string> floats = FloatVariables(model->graph);
    CHECK(!floats.empty());
    CHECK(executor.DeviceVariables() == floats);
  }
}

}  // namespace
}  // namespace parallax
