#include "lib/runtime/executor.h"

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"

namespace parallax {
namespace {

Graph Parse(const char* text) {
  StatusOr<Graph> g = ParseGraph(text, "test.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

constexpr const char* kVariableGraph = R"pb(
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 2 } } } } }
  node { name: "w/initial_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
                                               float_val: 1.5 } } } }
  node { name: "w/Assign" op: "Assign" input: "w" input: "w/initial_value"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "init" op: "NoOp" input: "^w/Assign" }
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "y" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
)pb";

TEST_CASE("variables persist across runs and are read after initialisation") {
  Graph g = Parse(kVariableGraph);
  CpuDevice device(1);
  Executor executor(g, device);
  StatusOr<std::vector<Tensor>> early = executor.Run({.fetches = {"w/read"}});
  CHECK(early.status().message() ==
        "node 'w/read' (Identity): input 0 reads variable 'w' before it is initialised (run the "
        "init op first)");
  REQUIRE(executor.Run({.targets = {"init"}}).ok());
  StatusOr<std::vector<Tensor>> read = executor.Run({.fetches = {"w/read:0"}});
  REQUIRE(read.ok());
  CHECK(read->at(0).DebugString() == "float[2] {1.5, 1.5}");
  CHECK(executor.variables().Find("w")->DebugString() == "float[2] {1.5, 1.5}");
}

TEST_CASE("feeds replace placeholders; an unfed placeholder is an error") {
  Graph g = Parse(kVariableGraph);
  CpuDevice device(1);
  Executor executor(g, device);
  StatusOr<std::vector<Tensor>> fed =
      executor.Run({.feeds = {{"x", Tensor::Scalar<float>(4)}}, .fetches = {"y"}});
  REQUIRE(fed.ok());
  CHECK(fed->at(0).DebugString() == "float[] {4}");
  CHECK(executor.Run({.fetches = {"y"}}).status().message() ==
        "node 'x' (Placeholder): placeholder 'x' must be fed a value");
  CHECK(executor.Run({.fetches = {"nope:0"}}).status().message() ==
        "fetch: 'nope:0' names no node in the graph");
  CHECK(executor.Run({.targets = {"nope"}}).status().message() ==
        "target 'nope' names no node in the graph");
}

TEST_CASE("every op without a kernel is listed in one error before anything runs") {
  Graph g = Parse(R"pb(
    node { name: "a" op: "MyCustomOp" }
    node { name: "b" op: "OtherCustomOp" input: "a" }
    node { name: "c" op: "Identity" input: "b" }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  CHECK(executor.Run({.fetches = {"c"}}).status().message() ==
        "test.pbtxt: no CPU kernel for 2 ops in the subgraph to run: MyCustomOp (node 'a'), "
        "OtherCustomOp (node 'b')");
}

TEST_CASE("Switch and Merge run one branch of a conditional") {
  Graph g = Parse(R"pb(
    node { name: "pred" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
    node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 int_val: 7 } } } }
    node { name: "cond/Switch" op: "Switch" input: "x" input: "pred" attr { key: "T" value { type: DT_INT32 } } }
    node { name: "cond/false" op: "Identity" input: "cond/Switch:0" }
    node { name: "cond/true" op: "Identity" input: "cond/Switch:1" }
    node { name: "cond/Merge" op: "Merge" input: "cond/false" input: "cond/true"
           attr { key: "N" value { i: 2 } } attr { key: "T" value { type: DT_INT32 } } }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  for (bool pred : {false, true}) {
    StatusOr<std::vector<Tensor>> out = executor.Run(
        {.feeds = {{"pred", Tensor::Scalar<bool>(pred)}}, .fetches = {"cond/Merge", "cond/Merge:1"}});
    REQUIRE(out.ok());
    CHECK(out->at(0).DebugString() == "int32[] {7}");
    CHECK(out->at(1).data<int32_t>()[0] == (pred ? 1 : 0));
  }
  CHECK(executor.Run({.feeds = {{"pred", Tensor::Scalar<bool>(false)}}, .fetches = {"cond/true"}})
            .status().message() ==
        "fetch 'cond/true' was not computed: it is on a branch of a conditional that was not taken");
}

TEST_CASE("a feed the request does not need is ignored") {
  Graph g = Parse(kVariableGraph);
  CpuDevice device(1);
  Executor executor(g, device);
  REQUIRE(executor.Run({.feeds = {{"x", Tensor::Scalar<float>(4)}}, .targets = {"init"}}).ok());
  StatusOr<std::vector<Tensor>> read =
      executor.Run({.feeds = {{"x:0", Tensor::Scalar<float>(4)}, {"y", Tensor::Scalar<float>(1)}},
                    .fetches = {"w/read"}});
  REQUIRE(read.ok());
  CHECK(read->at(0).DebugString() == "float[2] {1.5, 1.5}");
  // Fed and needed next to fed and not needed.
  StatusOr<std::vector<Tensor>> both = executor.Run(
      {.feeds = {{"x", Tensor::Scalar<float>(2)}, {"w/initial_value", Tensor::Scalar<float>(0)}},
       .fetches = {"y"}});
  REQUIRE(both.ok());
  CHECK(both->at(0).DebugString() == "float[] {2}");
}

TEST_CASE("pure nodes reached only through control edges are not run; stateful ones are") {
  // `unread` would fail (its placeholder is not fed) but nothing reads its value: the
  // NoOp `group` only orders it, as TF's gradient tuples do. `w/Assign` is stateful and
  // runs although it, too, is reached through a control edge only.
  Graph g = Parse(R"pb(
    node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 1 } } } } }
    node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1 } }
                                                 float_val: 3 } } } }
    node { name: "w/Assign" op: "Assign" input: "w" input: "c"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "unread" op: "Identity" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "group" op: "NoOp" input: "^unread" input: "^w/Assign" }
    node { name: "out" op: "Identity" input: "c" input: "^group"
           attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  StatusOr<std::vector<Tensor>> out = executor.Run({.fetches = {"out"}});
  REQUIRE(out.ok());
  CHECK(out->at(0).DebugString() == "float[1] {3}");
  CHECK(executor.variables().Find("w")->DebugString() == "float[1] {3}");
  // Fetched, the same node runs (and fails without its feed).
  CHECK(executor.Run({.fetches = {"out", "unread"}}).status().message() ==
        "node 'x' (Placeholder): placeholder 'x' must be fed a value");
}

}  // namespace
}  // namespace parallax
