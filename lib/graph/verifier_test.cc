#include "lib/graph/verifier.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "lib/base/file.h"
#include "lib/graph/algorithm.h"
#include "lib/graph/graph_io.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Graph Parse(const char* text) {
  StatusOr<Graph> graph = ParseGraph(text, "test.pbtxt");
  if (!graph.ok()) FAIL(graph.status().message());
  return std::move(graph).value();
}

// Loads a file and verifies it: the whole of what `parallax inspect` checks.
Status LoadAndVerify(const std::string& path) {
  StatusOr<Graph> graph = LoadGraph(path);
  if (!graph.ok()) return graph.status();
  return VerifyGraph(*graph);
}

TEST_CASE("a TF1 while loop's NextIteration -> Merge back-edge is not a cycle") {
  Graph g = Parse(R"pb(
    node { name: "i0" op: "Const" }
    node { name: "while/Enter" op: "Enter" input: "i0" attr { key: "frame_name" value { s: "while" } } }
    node { name: "while/Merge" op: "Merge" input: "while/Enter" input: "while/NextIteration"
           attr { key: "N" value { i: 2 } } }
    node { name: "while/Less/y" op: "Const" input: "^while/Merge" }
    node { name: "while/Less" op: "Less" input: "while/Merge" input: "while/Less/y" }
    node { name: "while/LoopCond" op: "LoopCond" input: "while/Less" }
    node { name: "while/Switch" op: "Switch" input: "while/Merge" input: "while/LoopCond" }
    node { name: "while/Identity" op: "Identity" input: "while/Switch:1" }
    node { name: "while/add" op: "AddV2" input: "while/Identity" input: "while/Less/y" }
    node { name: "while/NextIteration" op: "NextIteration" input: "while/add" }
    node { name: "while/Exit" op: "Exit" input: "while/Switch" }
  )pb");
  CHECK(VerifyGraph(g).ok());
  StatusOr<std::vector<NodeId>> order = TopologicalOrder(g);
  REQUIRE(order.ok());
  CHECK(order->size() == 11);
  CHECK(g.node(order->front()).name() == "i0");
}

TEST_CASE("ComputeFrames puts a while loop's body in its frame and Exit back in the parent") {
  Graph g = Parse(R"pb(
    node { name: "i0" op: "Const" }
    node { name: "outer/Enter" op: "Enter" input: "i0" attr { key: "frame_name" value { s: "outer" } } }
    node { name: "inner/Enter" op: "Enter" input: "outer/Enter" attr { key: "frame_name" value { s: "inner" } } }
    node { name: "inner/Merge" op: "Merge" input: "inner/Enter" input: "inner/NextIteration"
           attr { key: "N" value { i: 2 } } }
    node { name: "inner/Less/y" op: "Const" input: "^inner/Merge" }
    node { name: "inner/Less" op: "Less" input: "inner/Merge" input: "inner/Less/y" }
    node { name: "inner/LoopCond" op: "LoopCond" input: "inner/Less" }
    node { name: "inner/Switch" op: "Switch" input: "inner/Merge" input: "inner/LoopCond" }
    node { name: "inner/Identity" op: "Identity" input: "inner/Switch:1" }
    node { name: "inner/NextIteration" op: "NextIteration" input: "inner/Identity" }
    node { name: "inner/Exit" op: "Exit" input: "inner/Switch" }
    node { name: "outer/Exit" op: "Exit" input: "inner/Exit" }
    node { name: "after" op: "Identity" input: "outer/Exit" }
  )pb");
  StatusOr<Frames> frames = ComputeFrames(g);
  INFO(frames.status().ToString());
  REQUIRE(frames.ok());
  REQUIRE(frames->frames.size() == 3);
  auto frame_of = [&](const char* name) {
    return frames->frames[static_cast<size_t>(frames->frame_of[static_cast<size_t>(g.FindNode(name))])];
  };
  CHECK(frame_of("i0").name.empty());
  CHECK(frame_of("outer/Enter").name == "outer");
  CHECK(frame_of("inner/Merge").name == "inner");
  CHECK(frame_of("inner/Identity").name == "inner");
  CHECK(frame_of("inner/NextIteration").name == "inner");
  CHECK(frame_of("inner/Exit").name == "outer");
  CHECK(frame_of("after").name.empty());
  CHECK(frame_of("inner/Merge").loop_cond == g.FindNode("inner/LoopCond"));
  CHECK(frames->frames[static_cast<size_t>(frame_of("inner/Merge").parent)].name == "outer");

  Graph bad = Parse(R"pb(
    node { name: "x" op: "Placeholder" }
    node { name: "y" op: "Identity" input: "x" }
    node { name: "loop/Enter" op: "Enter" input: "y" attr { key: "frame_name" value { s: "loop" } } }
    node { name: "mixed" op: "AddV2" input: "loop/Enter" input: "y" }
  )pb");
  CHECK(ComputeFrames(bad).status().message() ==
        "test.pbtxt: node 'mixed' (AddV2) reads from two while-loop frames: 'loop' and '' (an "
        "input from another frame must pass through Enter or Exit)");
  Graph stray_exit = Parse(R"pb(
    node { name: "x" op: "Placeholder" }
    node { name: "y" op: "Identity" input: "x" }
    node { name: "out" op: "Exit" input: "y" }
  )pb");
  CHECK(ComputeFrames(stray_exit).status().message() ==
        "test.pbtxt: node 'out' (Exit) is not inside a while loop");
}

TEST_CASE("opaque ops accept any output port") {
  Graph g = Parse(R"pb(
    node { name: "custom" op: "MyCustomOp" }
    node { name: "y" op: "Identity" input: "custom:7" }
  )pb");
  CHECK(VerifyGraph(g).ok());
}

// x -> Relu y, and a NoOp init: the graph the edit tests start from.
constexpr const char* kXReluInit = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "init" op: "NoOp" }
)pb";

TEST_CASE("edits keep fanout in step and the graph valid") {
  Graph g = Parse(kXReluInit);
  const NodeId x = g.FindNode("x"), y = g.FindNode("y"), init = g.FindNode("init");
  NodeSpec spec;
  spec.name = g.UniqueName("x");
  spec.op = "Identity";
  spec.inputs = {OutputRef{x, 0}};
  tensorflow::AttrValue t;
  t.set_type(tensorflow::DT_FLOAT);
  spec.attrs["T"] = t;
  StatusOr<NodeId> id = g.AddNode(spec);
  REQUIRE(id.ok());
  CHECK(g.node(*id).name() == "x_1");
  REQUIRE(g.ReplaceInput(y, 0, OutputRef{*id, 0}).ok());
  REQUIRE(g.AddControlInput(y, init).ok());
  REQUIRE(g.AddControlInput(y, init).ok());  // idempotent
  CHECK(g.node(y).control_inputs().size() == 1);
  CHECK(g.node(x).fanout().size() == 1);
  CHECK(VerifyGraph(g).ok());

  g.SetDevice(y, "/device:CPU:0");
  tensorflow::AttrValue flag;
  flag.set_b(true);
  g.SetAttr(y, "_parallax_test", flag);
  g.SetAttr(y, "T", t);
  CHECK(g.node(y).device() == "/device:CPU:0");
  CHECK(g.node(y).FindAttr("_parallax_test")->b());
  CHECK(g.node(y).DecodeAttrs().size() == 2);

  Status busy = g.RemoveNode(*id);
  CHECK(busy.message() == "cannot remove node 'x_1': node 'y' still reads it");
  REQUIRE(g.ReplaceInput(y, 0, OutputRef{x, 0}).ok());
  REQUIRE(g.RemoveNode(*id).ok());
  CHECK(g.num_nodes() == 3);
  CHECK(g.FindNode("x_1") == kNoNode);
  CHECK(VerifyGraph(g).ok());
  // The saved graph has the edits and loads back.
  StatusOr<Graph> back = ParseGraph(SerializeGraphDef(g), "edited.pb");
  REQUIRE(back.ok());
  CHECK(VerifyGraph(*back).ok());
  CHECK(back->node(back->FindNode("y")).control_inputs().size() == 1);

  NodeSpec bad = spec;
  bad.name = "y";
  CHECK(g.AddNode(bad).status().message() == "cannot add node 'y': the name is taken");
  bad.name = "z";
  bad.inputs = {OutputRef{init, kControlPort}, OutputRef{x, 0}};
  CHECK(g.AddNode(bad).status().message() ==
        "cannot add node 'z': data input 1 comes after a control input");
}

TEST_CASE("structure_version counts the edits the verifier checks, not device strings") {
  Graph g = Parse(kXReluInit);
  const NodeId x = g.FindNode("x"), y = g.FindNode("y"), init = g.FindNode("init");
  uint64_t version = g.structure_version();
  auto bumped = [&]() {
    const bool changed = g.structure_version() != version;
    version = g.structure_version();
    return changed;
  };
  g.SetDevice(y, "/device:CPU:0");
  CHECK_FALSE(bumped());
  tensorflow::AttrValue flag;
  flag.set_b(true);
  g.SetAttr(y, "_parallax_test", flag);
  CHECK(bumped());
  REQUIRE(g.AddControlInput(y, init).ok());
  CHECK(bumped());
  REQUIRE(g.AddControlInput(y, init).ok());  // already there: no edit
  CHECK_FALSE(bumped());
  REQUIRE(g.RemoveControlInput(y, init).ok());
  CHECK(bumped());
  NodeSpec spec;
  spec.name = "x2";
  spec.op = "Identity";
  spec.inputs = {OutputRef{x, 0}};
  StatusOr<NodeId> id = g.AddNode(spec);
  REQUIRE(id.ok());
  CHECK(bumped());
  REQUIRE(g.ReplaceInput(y, 0, OutputRef{*id, 0}).ok());
  CHECK(bumped());
  REQUIRE(g.ReplaceInput(y, 0, OutputRef{x, 0}).ok());
  REQUIRE(g.RemoveNode(*id).ok());
  CHECK(bumped());
  // A copy carries the count on.
  Graph copy = g;
  CHECK(copy.structure_version() == g.structure_version());
}

TEST_CASE("VerifyScope::kEdits still catches bad ports and cycles") {
  Graph g = Parse(R"pb(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "z" op: "Relu" input: "y" attr { key: "T" value { type: DT_FLOAT } } }
  )pb");
  const NodeId x = g.FindNode("x"), y = g.FindNode("y"), z = g.FindNode("z");
  CHECK(VerifyGraph(g, VerifyScope::kEdits).ok());
  NodeSpec spec;
  spec.name = "bad";
  spec.op = "Identity";
  spec.inputs = {OutputRef{x, 2}};
  REQUIRE(g.AddNode(spec).ok());
  CHECK(VerifyGraph(g, VerifyScope::kEdits).message() ==
        "test.pbtxt: node 'bad': input 0 'x:2' names output 2 of 'x' (Placeholder), which has "
        "1 output");
  REQUIRE(g.RemoveNode(g.FindNode("bad")).ok());
  REQUIRE(g.AddControlInput(y, z).ok());
  CHECK(VerifyGraph(g, VerifyScope::kEdits).message() ==
        VerifyGraph(g, VerifyScope::kFull).message());
  CHECK_FALSE(VerifyGraph(g, VerifyScope::kEdits).ok());
}

TEST_CASE("a text graph in a file named .pb loads: formats are sniffed, not guessed") {
  const std::string dir = testing::TempDir();
  REQUIRE(WriteFileAtomically(dir + "/text.pb", "node { name: \"a\" op: \"NoOp\" }\n").ok());
  StatusOr<Graph> g = LoadGraph(dir + "/text.pb");
  REQUIRE(g.ok());
  CHECK(g->file_format() == GraphFileFormat::kText);
}

TEST_CASE("every shared TensorFlow graph verifies") {
  const std::vector<std::string> files = testing::SharedTfGraphFiles();
  if (files.empty()) return;  // skipped, or failed under CI
  for (const std::string& path : files) {
    INFO(path);
    const Status status = LoadAndVerify(path);
    if (!status.ok()) FAIL(status.message());
  }
}

// testdata/bad/expected_errors.txt: "file | exact error message" per line.
TEST_CASE("every malformed input gives its exact one-line error") {
  const std::vector<testing::ExpectedError> cases =
      testing::ReadExpectedErrors(testing::RepoPath("testdata/bad"));
  for (const auto& [file, message] : cases) {
    INFO(file);
    const Status status = LoadAndVerify(file);
    REQUIRE_FALSE(status.ok());
    CHECK(status.message() == message);
    CHECK(status.message().find('\n') == std::string::npos);
  }
  CHECK(cases.size() >= 20);
}

TEST_CASE("a file over protobuf's 2 GiB limit is refused before it is read") {
  const std::string path = testing::TempDir() + "/huge.pb";
  {
    std::ofstream out(path);
  }
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(kMaxGraphFileBytes) + 1) == 0);  // sparse
  StatusOr<Graph> g = LoadGraph(path);
  CHECK(g.status().message() == path + ": file is 2.0 GiB; protobuf messages are limited to 2 GiB");
  CHECK(g.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace parallax
