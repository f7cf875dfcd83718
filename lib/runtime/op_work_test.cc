// Op work: flops and memory bytes per kernel run from the shapes of what it read and
// wrote — matrix products and convolutions by their multiply-adds, gathers by their rows,
// state updates by the state they read and write, views and function calls as nothing.
#include "lib/runtime/op_work.h"

#include <catch2/catch.hpp>

#include "lib/graph/attr_values.h"

namespace parallax {
namespace {

// A graph of one node of `op` (no inputs: KernelWork reads only the op and attrs).
struct OneNode {
  Graph graph;
  NodeId id = -1;
  OneNode(std::string op, std::map<std::string, tensorflow::AttrValue> attrs = {}) {
    id = *graph.AddNode(NodeSpec{.name = "n", .op = std::move(op), .attrs = std::move(attrs)});
  }
  const Node& node() const { return graph.node(id); }
};

KernelValue Float(std::vector<int64_t> dims) {
  return KernelValue{Tensor(tensorflow::DT_FLOAT, TensorShape(std::move(dims)))};
}
KernelValue Int32(std::vector<int64_t> dims) {
  return KernelValue{Tensor(tensorflow::DT_INT32, TensorShape(std::move(dims)))};
}

TEST_CASE("matrix products count their multiply-adds") {
  // [64, 128] x [128, 32]: 2 * 64 * 32 * 128 flops; 4 bytes each of 8192 + 4096 + 2048.
  const OneNode matmul("MatMul");
  const OpWork w = KernelWork(matmul.node(), {Float({64, 128}), Float({128, 32})}, {Float({64, 32})});
  CHECK(w.flops == 2.0 * 64 * 32 * 128);
  CHECK(w.memory_bytes == 4.0 * (8192 + 4096 + 2048));
  // transpose_a: a is [K, M].
  const OneNode transposed("MatMul", {{"transpose_a", BoolAttr(true)}});
  CHECK(KernelWork(transposed.node(), {Float({128, 64}), Float({128, 32})}, {Float({64, 32})}).flops ==
        2.0 * 64 * 32 * 128);
  // Batched: 8 x [16, 4] x [4, 16]; adj_x reads K from the second to last dimension.
  const OneNode batched("BatchMatMulV2", {{"adj_x", BoolAttr(true)}});
  CHECK(KernelWork(batched.node(), {Float({8, 4, 16}), Float({8, 4, 16})}, {Float({8, 16, 16})}).flops ==
        2.0 * 8 * 16 * 16 * 4);
}

TEST_CASE("convolutions and both backprops count the forward's multiply-adds") {
  // NHWC [2, 8, 8, 3] * filter [3, 3, 3, 16] -> [2, 8, 8, 16]: 2 * 2048 * 27 flops.
  const double forward = 2.0 * (2 * 8 * 8 * 16) * (3 * 3 * 3);
  const OneNode conv("Conv2D");
  CHECK(KernelWork(conv.node(), {Float({2, 8, 8, 3}), Float({3, 3, 3, 16})}, {Float({2, 8, 8, 16})})
            .flops == forward);
  const OneNode input_grad("Conv2DBackpropInput");
  CHECK(KernelWork(input_grad.node(), {Int32({4}), Float({3, 3, 3, 16}), Float({2, 8, 8, 16})},
                   {Float({2, 8, 8, 3})})
            .flops == forward);
  const OneNode filter_grad("Conv2DBackpropFilter");
  CHECK(KernelWork(filter_grad.node(), {Float({2, 8, 8, 3}), Int32({4}), Float({2, 8, 8, 16})},
                   {Float({3, 3, 3, 16})})
            .flops == forward);
  // Depthwise [3, 3, 3, 2]: each of the 2 * 8 * 8 * 6 outputs reads a 3x3 window.
  const OneNode depthwise("DepthwiseConv2dNative");
  CHECK(KernelWork(depthwise.node(), {Float({2, 8, 8, 3}), Float({3, 3, 3, 2})}, {Float({2, 8, 8, 6})})
            .flops == 2.0 * (2 * 8 * 8 * 6) * 9);
}

TEST_CASE("elementwise ops: one flop per element, inputs and new outputs in bytes") {
  const OneNode add("AddV2");
  const OpWork w = KernelWork(add.node(), {Float({1000}), Float({1})}, {Float({1000})});
  CHECK(w.flops == 1001);  // the larger side: the inputs' 1001 elements
  CHECK(w.memory_bytes == 4.0 * (1000 + 1 + 1000));
}

TEST_CASE("a gather moves its rows and indices, not the table") {
  const OneNode gather("GatherV2");
  const OpWork w =
      KernelWork(gather.node(), {Float({100000, 64}), Int32({256}), Int32({})}, {Float({256, 64})});
  CHECK(w.memory_bytes == 2.0 * 256 * 64 * 4 + 256 * 4 + 4);
  CHECK(w.flops == 0);
}

TEST_CASE("state updates read and write each state tensor as much as their largest input") {
  // ApplyAdam(var, m, v refs; 9 scalars; grad [1000]).
  Tensor var(tensorflow::DT_FLOAT, TensorShape({1000}));
  std::vector<KernelValue> inputs = {{var, &var}, {var, &var}, {var, &var}};
  for (int k = 0; k < 6; ++k) inputs.push_back(Float({}));
  inputs.push_back(Float({1000}));
  std::vector<KernelValue> outputs = {{var, &var}};
  const OneNode adam("ApplyAdam");
  const OpWork w = KernelWork(adam.node(), inputs, outputs);
  CHECK(w.memory_bytes == 6 * 4 + 4000 + 2.0 * 3 * 4000);
  CHECK(w.flops == 2.0 * 3 * 1000);
  // A sparse update touches the gradient's rows: ScatterAdd(ref [1e6, 8], indices [10],
  // updates [10, 8]).
  Tensor table(tensorflow::DT_FLOAT, TensorShape({1000000, 8}));
  const OneNode scatter("ScatterAdd");
  const OpWork s = KernelWork(scatter.node(), {{table, &table}, Int32({10}), Float({10, 8})},
                              {{table, &table}});
  CHECK(s.memory_bytes == 40 + 320 + 2.0 * 320);
}

TEST_CASE("views, constants and function calls do no work") {
  const Tensor x(tensorflow::DT_FLOAT, TensorShape({4, 4}));
  const OneNode identity("Identity");
  const OpWork view = KernelWork(identity.node(), {KernelValue{x}}, {KernelValue{x}});
  CHECK(view.flops == 0);
  CHECK(view.memory_bytes == 0);
  const OneNode constant("Const");
  CHECK(KernelWork(constant.node(), {}, {Float({1000})}).memory_bytes == 0);
  const OneNode loop("While");
  CHECK(KernelWork(loop.node(), {Float({1000})}, {Float({1000})}).memory_bytes == 0);
}

}  // namespace
}  // namespace parallax
