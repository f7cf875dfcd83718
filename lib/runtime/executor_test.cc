#include "lib/runtime/executor.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"
#include "lib/ops/op_registry.h"
#include "lib/runtime/kernel.h"

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

TEST_CASE("a large splat Const is made each run, not held; a small one is shared") {
  // 512 x 1024 floats of 0.25 (2 MiB from a proto of a few bytes), and a [2] constant.
  Graph g = Parse(R"pb(
    node { name: "ones" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT
             tensor_shape { dim { size: 512 } dim { size: 1024 } } float_val: 0.25 } } } }
    node { name: "small" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
                                                float_val: 1 float_val: 2 } } } }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  StatusOr<std::vector<Tensor>> first = executor.Run({.fetches = {"ones", "small"}});
  StatusOr<std::vector<Tensor>> second = executor.Run({.fetches = {"ones", "small"}});
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  for (const std::vector<Tensor>* run : {&*first, &*second}) {
    const Tensor& ones = run->at(0);
    REQUIRE(ones.num_elements() == 512 * 1024);
    CHECK(std::all_of(ones.data<float>(), ones.data<float>() + ones.num_elements(),
                      [](float v) { return v == 0.25f; }));
    CHECK(run->at(1).DebugString() == "float[2] {1, 2}");
  }
  CHECK_FALSE(first->at(0).SharesBufferWith(second->at(0)));
  CHECK(first->at(1).SharesBufferWith(second->at(1)));
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


// Text of a TF1 while-loop node: attrs T (int32 unless said) and, for Enter, its frame.
std::string LoopNode(const std::string& name, const std::string& op,
                     const std::vector<std::string>& inputs, const std::string& extra = "") {
  std::string text = "node { name: '" + name + "' op: '" + op + "'";
  for (const std::string& in : inputs) text += " input: '" + in + "'";
  return text + " " + extra + " }\n";
}
std::string IntConst(const std::string& name, int value, const std::string& control = "") {
  return "node { name: '" + name + "' op: 'Const'" +
         (control.empty() ? "" : " input: '^" + control + "'") +
         " attr { key: 'dtype' value { type: DT_INT32 } } attr { key: 'value' value { tensor {"
         " dtype: DT_INT32 tensor_shape {} int_val: " + std::to_string(value) + " } } } }\n";
}
std::string EnterNode(const std::string& name, const std::string& input, const std::string& frame,
                      bool constant) {
  return LoopNode(name, "Enter", {input},
                  "attr { key: 'frame_name' value { s: '" + frame + "' } } "
                  "attr { key: 'is_constant' value { b: " + (constant ? "true" : "false") + " } }");
}
// i = i0; while i < n: i += step; acc = acc + i. Loop variables `i` and `acc` (int32),
// in frame `prefix`, nodes named `prefix/...`; returns the text.
std::string CountingLoop(const std::string& p, const std::string& i0, const std::string& acc0,
                         const std::string& n) {
  std::string t;
  t += EnterNode(p + "/Enter_i", i0, p, false);
  t += EnterNode(p + "/Enter_acc", acc0, p, false);
  t += EnterNode(p + "/Enter_n", n, p, true);
  t += LoopNode(p + "/Merge_i", "Merge", {p + "/Enter_i", p + "/NextIteration_i"});
  t += LoopNode(p + "/Merge_acc", "Merge", {p + "/Enter_acc", p + "/NextIteration_acc"});
  t += LoopNode(p + "/Less", "Less", {p + "/Merge_i", p + "/Enter_n"},
                "attr { key: 'T' value { type: DT_INT32 } }");
  t += LoopNode(p + "/LoopCond", "LoopCond", {p + "/Less"});
  t += LoopNode(p + "/Switch_i", "Switch", {p + "/Merge_i", p + "/LoopCond"});
  t += LoopNode(p + "/Switch_acc", "Switch", {p + "/Merge_acc", p + "/LoopCond"});
  t += LoopNode(p + "/Identity_i", "Identity", {p + "/Switch_i:1"});
  t += LoopNode(p + "/Identity_acc", "Identity", {p + "/Switch_acc:1"});
  t += IntConst(p + "/one", 1, p + "/Identity_i");
  t += LoopNode(p + "/add_i", "Add", {p + "/Identity_i", p + "/one"},
                "attr { key: 'T' value { type: DT_INT32 } }");
  t += LoopNode(p + "/add_acc", "Add", {p + "/Identity_acc", p + "/add_i"},
                "attr { key: 'T' value { type: DT_INT32 } }");
  t += LoopNode(p + "/NextIteration_i", "NextIteration", {p + "/add_i"});
  t += LoopNode(p + "/NextIteration_acc", "NextIteration", {p + "/add_acc"});
  t += LoopNode(p + "/Exit_i", "Exit", {p + "/Switch_i:0"});
  t += LoopNode(p + "/Exit_acc", "Exit", {p + "/Switch_acc:0"});
  return t;
}

int32_t RunInt(Executor& executor, const std::string& fetch,
               std::vector<std::pair<std::string, Tensor>> feeds) {
  StatusOr<std::vector<Tensor>> out = executor.Run({.feeds = std::move(feeds), .fetches = {fetch}});
  if (!out.ok()) FAIL(out.status().message());
  return out->at(0).data<int32_t>()[0];
}

TEST_CASE("a TF1 while loop runs its iterations until LoopCond is false") {
  Graph g = Parse((IntConst("i0", 0) + IntConst("acc0", 100) +
                   "node { name: 'n' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }\n" +
                   CountingLoop("while", "i0", "acc0", "n") +
                   LoopNode("out", "Identity", {"while/Exit_acc"}))
                      .c_str());
  CpuDevice device(1);
  Executor executor(g, device);
  // acc = 100 + 1 + 2 + ... + n; no iteration when n <= 0.
  CHECK(RunInt(executor, "out", {{"n", Tensor::Scalar<int32_t>(0)}}) == 100);
  CHECK(RunInt(executor, "out", {{"n", Tensor::Scalar<int32_t>(4)}}) == 110);
  CHECK(RunInt(executor, "while/Exit_i", {{"n", Tensor::Scalar<int32_t>(1000)}}) == 1000);
  CHECK(RunInt(executor, "out", {{"n", Tensor::Scalar<int32_t>(1000)}}) == 100 + 500500);
  CHECK(RunInt(executor, "out", {{"n", Tensor::Scalar<int32_t>(-3)}}) == 100);
  // Inside the loop, tensors have a value per iteration: neither fed nor fetched.
  CHECK(executor.Run({.feeds = {{"n", Tensor::Scalar<int32_t>(2)}}, .fetches = {"while/add_i"}})
            .status().message() ==
        "fetch 'while/add_i': the tensor is inside a while loop (fetch what its loop's Exit "
        "returns)");
  CHECK(executor.Run({.feeds = {{"n", Tensor::Scalar<int32_t>(2)}, {"while/add_i", Tensor::Scalar<int32_t>(2)}},
                      .fetches = {"out"}})
            .status().message() == "feed 'while/add_i': the tensor is inside a while loop");
}

TEST_CASE("nested while loops: the inner loop runs whole in every outer iteration") {
  // total = 0; for j in range(m): for k in range(j): total += k + 1  ->  sum of j(j+1)/2.
  std::string t = IntConst("zero", 0) +
                  "node { name: 'm' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } } }\n";
  const std::string o = "outer";
  t += CountingLoop(o, "zero", "zero", "m");
  // Replace the outer accumulator's update: acc' = inner loop over k < j starting at acc.
  const std::string from = "node { name: 'outer/add_acc'";
  const size_t at = t.find(from);
  const size_t end = t.find("}\n", t.find("attr", at)) + 2;
  t.erase(at, end - at);
  t += IntConst(o + "/k0", 0, o + "/Identity_i");
  std::string inner = CountingLoop(o + "/inner", o + "/k0", o + "/Identity_acc", o + "/Identity_i");
  t += inner;
  t += LoopNode(o + "/add_acc", "Identity", {o + "/inner/Exit_acc"});
  t += LoopNode("out", "Identity", {o + "/Exit_acc"});
  Graph g = Parse(t.c_str());
  CpuDevice device(1);
  Executor executor(g, device);
  for (int m : {0, 1, 2, 5, 30}) {
    int expected = 0;
    for (int j = 0; j < m; ++j) expected += j * (j + 1) / 2;
    CHECK(RunInt(executor, "out", {{"m", Tensor::Scalar<int32_t>(m)}}) == expected);
  }
}

TEST_CASE("a while loop on the branch of a conditional not taken is dead, Exits included") {
  std::string t = IntConst("x", 5) + IntConst("acc0", 0) + IntConst("n", 3) +
                  "node { name: 'pred' op: 'Placeholder' attr { key: 'dtype' value { type: DT_BOOL } } }\n";
  t += LoopNode("cond/Switch", "Switch", {"x", "pred"});
  t += LoopNode("cond/true", "Identity", {"cond/Switch:1"});
  t += CountingLoop("cond/while", "cond/true", "acc0", "n");
  t += LoopNode("cond/Merge", "Merge", {"cond/Switch:0", "cond/while/Exit_acc"});
  Graph g = Parse(t.c_str());
  CpuDevice device(1);
  Executor executor(g, device);
  // Taken: i runs 5 -> ... no iteration (5 >= 3), acc stays 0.
  CHECK(RunInt(executor, "cond/Merge", {{"pred", Tensor::Scalar<bool>(true)}}) == 0);
  CHECK(RunInt(executor, "cond/Merge", {{"pred", Tensor::Scalar<bool>(false)}}) == 5);
  CHECK(executor.Run({.feeds = {{"pred", Tensor::Scalar<bool>(false)}}, .fetches = {"cond/while/Exit_i"}})
            .status().message() ==
        "fetch 'cond/while/Exit_i' was not computed: it is on a branch of a conditional that was "
        "not taken");
}

TEST_CASE("ControlTrigger runs even when its control inputs are dead") {
  Graph g = Parse(R"pb(
    node { name: "pred" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
    node { name: "x" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 int_val: 7 } } } }
    node { name: "s" op: "Switch" input: "x" input: "pred" }
    node { name: "t" op: "Identity" input: "s:1" }
    node { name: "trigger" op: "ControlTrigger" input: "^t" }
    node { name: "noop" op: "NoOp" input: "^t" }
    node { name: "after_trigger" op: "Identity" input: "x" input: "^trigger" }
    node { name: "after_noop" op: "Identity" input: "x" input: "^noop" }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  CHECK(RunInt(executor, "after_trigger", {{"pred", Tensor::Scalar<bool>(false)}}) == 7);
  CHECK(!executor.Run({.feeds = {{"pred", Tensor::Scalar<bool>(false)}}, .fetches = {"after_noop"}}).ok());
}

TEST_CASE("a while loop that reads its own Exit cannot start: one error naming it") {
  // The loop's bound is computed from its own result.
  std::string t = IntConst("i0", 0) + IntConst("acc0", 0);
  t += CountingLoop("while", "i0", "acc0", "bound");
  t += LoopNode("bound", "Identity", {"while/Exit_acc"});
  Graph g = Parse(t.c_str());
  CpuDevice device(1);
  Executor executor(g, device);
  StatusOr<std::vector<Tensor>> out = executor.Run({.fetches = {"while/Exit_i"}});
  REQUIRE(!out.ok());
  CHECK(out.status().message().find("cycle") != std::string::npos);
}

// A graph with independent branches, random ops, and a variable that one branch reads
// before it is updated (`w/read`, the plan's order) and another after (`w/late_read`,
// ready at once but after the update in the plan's order).
constexpr const char* kConcurrentGraph = R"pb(
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 3 } } } } }
  node { name: "w/initial_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } }
                                               float_val: 0.5 } } } }
  node { name: "w/Assign" op: "Assign" input: "w" input: "w/initial_value"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } }
                                               int_val: 3 } } } }
  node { name: "noise" op: "RandomUniform" input: "shape"
         attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "T" value { type: DT_INT32 } }
         attr { key: "seed" value { i: 0 } } attr { key: "seed2" value { i: 0 } } }
  node { name: "noise2" op: "RandomUniform" input: "shape"
         attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "T" value { type: DT_INT32 } }
         attr { key: "seed" value { i: 0 } } attr { key: "seed2" value { i: 0 } } }
  node { name: "a" op: "Mul" input: "w/read" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "b" op: "Square" input: "noise" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "c" op: "Add" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "d" op: "Sub" input: "noise2" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/update" op: "AssignAdd" input: "w" input: "d"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "train" op: "NoOp" input: "^w/update" input: "^c" }
  node { name: "w/late_read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "late" op: "Square" input: "w/late_read" attr { key: "T" value { type: DT_FLOAT } } }
)pb";

TEST_CASE("a concurrent run gives the bits one node at a time gives") {
  Graph g = Parse(kConcurrentGraph);
  auto run = [&](ExecutionOptions execution) {
    CpuDevice device(2);
    Executor executor(g, device);
    executor.set_execution(execution);
    REQUIRE(executor.Run({.targets = {"w/Assign"}}).ok());
    std::vector<std::string> out;
    for (int step = 0; step < 20; ++step) {
      StatusOr<std::vector<Tensor>> values =
          executor.Run({.feeds = {{"x", Tensor::Scalar<float>(0.25f * step)}},
                        .fetches = {"c", "w/read", "late"},
                        .targets = {"train"}});
      REQUIRE(values.ok());
      out.push_back(values->at(0).DebugString(3) + " " + values->at(1).DebugString(3) + " " +
                    values->at(2).DebugString(3));
    }
    out.push_back(executor.variables().Find("w")->DebugString(3));
    return out;
  };
  const std::vector<std::string> sequential = run({});
  CHECK(sequential == run({.compute_threads = 3}));
  CHECK(sequential == run({.compute_threads = 2, .communication_thread = true}));
}

// `a` reads the variable through `w/read` and a Reshape (both forward its buffer), and
// a slow MatMul; the update waits for a chain of cheap Identities. One node at a time,
// `a` comes first (the plan's order: fewer hops from the inputs) and sees the old value;
// a concurrent run must not let the update in before it.
constexpr const char* kForwardedReadGraph = R"pb(
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 3 } } } } }
  node { name: "w/initial_value" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } }
                                               float_val: 1 } } } }
  node { name: "w/Assign" op: "Assign" input: "w" input: "w/initial_value"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "shape" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } }
                                               int_val: 3 } } } }
  node { name: "w/reshaped" op: "Reshape" input: "w/read" input: "shape"
         attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tshape" value { type: DT_INT32 } } }
  node { name: "m" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "m1" op: "MatMul" input: "m" input: "m" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "m2" op: "MatMul" input: "m1" input: "m" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "axes" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } }
                                               int_val: 0 int_val: 1 } } } }
  node { name: "slow" op: "Sum" input: "m2" input: "axes" attr { key: "T" value { type: DT_FLOAT } }
         attr { key: "Tidx" value { type: DT_INT32 } } }
  node { name: "a" op: "Mul" input: "w/reshaped" input: "slow"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "delta" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "d1" op: "Identity" input: "delta" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "d2" op: "Identity" input: "d1" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "d3" op: "Identity" input: "d2" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "d4" op: "Identity" input: "d3" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "d5" op: "Identity" input: "d4" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "w/update" op: "AssignAdd" input: "w" input: "d5"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "train" op: "NoOp" input: "^w/update" input: "^a" }
)pb";

TEST_CASE("a concurrent run updates a variable after the readers of its forwarded value") {
  Graph g = Parse(kForwardedReadGraph);
  const int64_t n = 256;  // two MatMuls of 256^3: milliseconds; the update's chain takes none
  Tensor m(tensorflow::DT_FLOAT, TensorShape({n, n}));
  std::fill(m.data<float>(), m.data<float>() + n * n, 1.0f / n);
  for (ExecutionOptions execution :
       {ExecutionOptions{}, ExecutionOptions{.compute_threads = 2},
        ExecutionOptions{.compute_threads = 2, .communication_thread = true}}) {
    CpuDevice device(1);
    Executor executor(g, device);
    executor.set_execution(execution);
    REQUIRE(executor.Run({.targets = {"w/Assign"}}).ok());
    for (int step = 1; step <= 3; ++step) {
      StatusOr<std::vector<Tensor>> out = executor.Run(
          {.feeds = {{"m", m}, {"delta", Tensor::FromVector<float>({10, 10, 10}, {3})}},
           .fetches = {"a"},
           .targets = {"train"}});
      REQUIRE(out.ok());
      // m's entries 1/n, so m1's and m2's too, and slow = n (all exact); w before this
      // step's update = 1 + 10 * (step - 1).
      const float expected = (1.0f + 10.0f * static_cast<float>(step - 1)) * static_cast<float>(n);
      INFO("compute_threads " << execution.compute_threads << ", step " << step);
      CHECK(out->at(0).data<float>()[0] == expected);
    }
  }
}

// A kernel that hands its input on without saying it forwards (OpKernel::ForwardsInputs).
class UnsaidForwardOp : public OpKernel {
 public:
  UnsaidForwardOp(const KernelInit&, Status*) {}
  Status Compute(KernelContext& context) const override {
    context.set_output(0, context.input(0));
    return Status::Ok();
  }
};
PX_REGISTER_OP(OpSchemaBuilder("TestUnsaidForward").Input("x: T").Output("y: T").Attr("T: type"));
PX_REGISTER_KERNEL(UnsaidForwardOp, "TestUnsaidForward", DeviceType::kCpu);

TEST_CASE("a concurrent run refuses a kernel that forwards a variable's buffer unsaid") {
  Graph g = Parse(R"pb(
    node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 2 } } } } }
    node { name: "v" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
                                                 float_val: 1 } } } }
    node { name: "w/Assign" op: "Assign" input: "w" input: "v"
           attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "f" op: "TestUnsaidForward" input: "w/read"
           attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  REQUIRE(executor.Run({.targets = {"w/Assign"}}).ok());
  StatusOr<std::vector<Tensor>> sequential = executor.Run({.fetches = {"f"}});
  INFO(sequential.status().message());
  REQUIRE(sequential.ok());  // one node at a time: nothing to order
  executor.set_execution({.compute_threads = 2});
  StatusOr<std::vector<Tensor>> out = executor.Run({.fetches = {"f"}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message().starts_with(
      "node 'f' (TestUnsaidForward): output 0 shares an input's buffer, but the kernel does not "
      "say it forwards inputs"));
}

TEST_CASE("a concurrent run stops at the first error and names the node") {
  Graph g = Parse(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "y" op: "Log" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "check" op: "CheckNumerics" input: "y" attr { key: "T" value { type: DT_FLOAT } }
           attr { key: "message" value { s: "log of x" } } }
    node { name: "z" op: "Square" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  CpuDevice device(1);
  Executor executor(g, device);
  executor.set_execution({.compute_threads = 2});
  StatusOr<std::vector<Tensor>> out =
      executor.Run({.feeds = {{"x", Tensor::Scalar<float>(-1)}}, .fetches = {"check", "z"}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message().starts_with("node 'check' (CheckNumerics): log of x"));
  // The executor is still usable.
  StatusOr<std::vector<Tensor>> fine =
      executor.Run({.feeds = {{"x", Tensor::Scalar<float>(1)}}, .fetches = {"check", "z"}});
  REQUIRE(fine.ok());
  CHECK(fine->at(1).DebugString() == "float[] {1}");
}

TEST_CASE("plans with a conditional run one node at a time under set_execution") {
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
  executor.set_execution({.compute_threads = 2, .communication_thread = true});
  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.feeds = {{"pred", Tensor::Scalar<bool>(true)}}, .fetches = {"cond/Merge", "cond/Merge:1"}});
  REQUIRE(out.ok());
  CHECK(out->at(1).data<int32_t>()[0] == 1);
}

}  // namespace
}  // namespace parallax
