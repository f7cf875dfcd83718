// Tests of the stack kernels, run as small graphs (a stack lives for one step): pops
// give the pushed values last-in first-out, pushes pass their value on, max_size,
// elem_type and empty-stack errors name the stack, and a closed stack refuses use.
#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::F32;
using kernel_test::I32Vec;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using testing::CompareTensors;
using testing::RandomTensor;

std::string Attrs(DataType type, const std::string& key) {
  return "attr { key: '" + key + "' value { type: " + tensorflow::DataType_Name(type) + " } } ";
}
std::string NodeText(const std::string& name, const std::string& op,
                     const std::vector<std::string>& inputs, const std::string& attrs = "") {
  std::string t = "node { name: '" + name + "' op: '" + op + "'";
  for (const std::string& in : inputs) t += " input: '" + in + "'";
  return t + " " + attrs + "}\n";
}
std::string Placeholder(const std::string& name, DataType type) {
  return NodeText(name, "Placeholder", {}, Attrs(type, "dtype"));
}
std::string StackNode(const std::string& name, DataType elem_type,
                      const std::string& stack_name = "") {
  return NodeText(name, "StackV2", {"max_size"},
                  Attrs(elem_type, "elem_type") + "attr { key: 'stack_name' value { s: '" +
                      stack_name + "' } } ");
}
// Push `value` after `after` (a node name for a control edge, or "").
std::string Push(const std::string& name, const std::string& value, const std::string& after,
                 DataType type = DT_FLOAT) {
  std::vector<std::string> inputs = {"s", value};
  if (!after.empty() && after != "s") inputs.push_back("^" + after);
  return NodeText(name, "StackPushV2", inputs,
                  Attrs(type, "T") + "attr { key: 'swap_memory' value { b: false } } ");
}
std::string Pop(const std::string& name, const std::string& after, DataType type = DT_FLOAT) {
  std::vector<std::string> inputs = {"s"};
  if (after != "s") inputs.push_back("^" + after);
  return NodeText(name, "StackPopV2", inputs, Attrs(type, "elem_type"));
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

StatusOr<std::vector<Tensor>> RunGraph(const std::string& text, Feeds feeds,
                                       std::vector<std::string> fetches) {
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(text, "test.pbtxt"));
  CpuDevice device(1);
  Executor executor(graph, device);
  return executor.Run({.feeds = std::move(feeds), .fetches = std::move(fetches)});
}
std::string ErrorOfGraph(const std::string& text, Feeds feeds, std::vector<std::string> fetches) {
  StatusOr<std::vector<Tensor>> out = RunGraph(text, std::move(feeds), std::move(fetches));
  return out.ok() ? "" : out.status().message();
}

TEST_CASE("Stack: pops give the pushed values last-in first-out; a push outputs its value") {
  for (int n : {1, 3, 6}) {
    std::string t = Placeholder("max_size", DT_INT32) + StackNode("s", DT_FLOAT);
    Feeds feeds = {{"max_size", Tensor::Scalar<int32_t>(-1)}};
    std::vector<Tensor> values;
    std::string last = "s";
    for (int k = 0; k < n; ++k) {
      const std::string v = "v" + std::to_string(k), p = "push" + std::to_string(k);
      t += Placeholder(v, DT_FLOAT) + Push(p, v, last);
      // Shapes may differ from push to push (a loop's last batch).
      values.push_back(RandomTensor(DT_FLOAT, TensorShape({k % 3, 2}), 100 + k));
      feeds.push_back({v, values.back()});
      last = p;
    }
    std::vector<std::string> fetches;
    for (int k = 0; k < n; ++k) {
      const std::string p = "pop" + std::to_string(k);
      t += Pop(p, last);
      fetches.push_back(p);
      last = p;
    }
    fetches.push_back("push0");
    StatusOr<std::vector<Tensor>> out = RunGraph(t, feeds, fetches);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    for (int k = 0; k < n; ++k) {
      CHECK(CompareTensors(out->at(static_cast<size_t>(k)), values[static_cast<size_t>(n - 1 - k)],
                           0, 0) == "");
    }
    CHECK(CompareTensors(out->at(static_cast<size_t>(n)), values[0], 0, 0) == "");
  }
}

TEST_CASE(
    "Stack: max_size, elem_type, empty stacks and closed stacks are errors naming the stack") {
  const std::string base = Placeholder("max_size", DT_INT32) + Placeholder("v", DT_FLOAT) +
                           Placeholder("w", DT_INT32) + StackNode("s", DT_FLOAT, "acc");
  const Feeds feeds = {
      {"max_size", Tensor::Scalar<int32_t>(1)}, {"v", F32({1, 2}, {2})}, {"w", I32Vec({3})}};
  CHECK(ErrorOfGraph(base + Push("p1", "v", "s") + Push("p2", "v", "p1"), feeds, {"p2"}) ==
        "node 'p2' (StackPushV2): stack 'acc' is full: it holds max_size = 1 elements");
  CHECK(ErrorOfGraph(base + Push("p1", "w", "s", DT_INT32), feeds, {"p1"}) ==
        "node 'p1' (StackPushV2): stack 'acc' holds float, cannot push int32");
  CHECK(ErrorOfGraph(base + Push("p1", "v", "s") + Pop("pop", "p1", DT_INT32), feeds, {"pop"}) ==
        "node 'pop' (StackPopV2): stack 'acc' holds float, but elem_type is int32");
  CHECK(ErrorOfGraph(base + Push("p1", "v", "s") + Pop("pop1", "p1") + Pop("pop2", "pop1"), feeds,
                     {"pop2"}) == "node 'pop2' (StackPopV2): stack 'acc' is empty: nothing to pop");
  CHECK(ErrorOfGraph(base + NodeText("close", "StackCloseV2", {"s"}) + Push("p1", "v", "close"),
                     feeds, {"p1"}) == "node 'p1' (StackPushV2): stack 'acc' has been closed");
  CHECK(ErrorOfGraph(base, {{"max_size", I32Vec({1})}}, {"s"}) ==
        "node 's' (StackV2): input 0 (max_size) must be an int32 scalar, got int32 [1]");
  // Without stack_name, the node's name.
  const std::string unnamed =
      Placeholder("max_size", DT_INT32) + StackNode("s", DT_FLOAT) + Pop("pop", "s");
  CHECK(ErrorOfGraph(unnamed, {{"max_size", Tensor::Scalar<int32_t>(1)}}, {"pop"}) ==
        "node 'pop' (StackPopV2): stack 's' is empty: nothing to pop");
}

}  // namespace
}  // namespace parallax
