#include "lib/passes/pipeline.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "lib/graph/graph_io.h"
#include "lib/graph/verifier.h"
#include "lib/passes/collective_builder.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

Graph SmallGraph() {
  StatusOr<Graph> g = ParseGraph(R"pb(
    node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim { size: 2 } } } } }
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
  )pb",
                                 "small");
  REQUIRE(g.ok());
  return std::move(g).value();
}

// Adds one NoOp named after the pass each run; reports the change truthfully.
class AddNoOp : public Pass {
 public:
  explicit AddNoOp(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::string_view description() const override { return "adds a NoOp"; }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext&) override {
    NodeSpec spec;
    spec.name = graph.UniqueName(name_);
    spec.op = "NoOp";
    PX_RETURN_IF_ERROR(graph.AddNode(spec).status());
    return true;
  }

 private:
  std::string name_;
};

// Changes the graph but says it did not.
class Liar : public Pass {
 public:
  std::string_view name() const override { return "liar"; }
  std::string_view description() const override { return "lies"; }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext&) override {
    graph.SetDevice(0, "/cpu:0");
    return false;
  }
};

// Produces an invalid graph: reads output 3 of a one-output variable.
class BreakPorts : public Pass {
 public:
  std::string_view name() const override { return "break-ports"; }
  std::string_view description() const override { return "breaks ports"; }

 protected:
  StatusOr<bool> RunImpl(Graph& graph, PassContext&) override {
    NodeSpec spec;
    spec.name = "w/parallax/bad";
    spec.op = "Identity";
    spec.inputs = {OutputRef{graph.FindNode("w"), 3}};
    PX_RETURN_IF_ERROR(graph.AddNode(spec).status());
    return true;
  }
};

std::unique_ptr<Pipeline> ThreePasses(PipelineOptions options) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<AddNoOp>("first"));
  passes.push_back(std::make_unique<AddNoOp>("second"));
  passes.push_back(std::make_unique<AddNoOp>("third"));
  return std::make_unique<Pipeline>("test", "three passes", std::move(passes), options);
}

TEST_CASE("a pipeline runs its passes in order and honours disable and stop-after") {
  Graph g = SmallGraph();
  PassContext context;
  PipelineOptions options;
  options.check_changed = true;
  options.disabled_passes = {"second"};
  auto pipeline = ThreePasses(options);
  REQUIRE(pipeline->ValidateOptions().ok());
  StatusOr<bool> changed = pipeline->Run(g, context);
  REQUIRE(changed.ok());
  CHECK(*changed);
  CHECK(g.FindNode("first") != kNoNode);
  CHECK(g.FindNode("second") == kNoNode);
  CHECK(g.FindNode("third") != kNoNode);

  Graph h = SmallGraph();
  options.disabled_passes.clear();
  options.stop_after = 1;
  auto stopped = ThreePasses(options);
  REQUIRE(stopped->Run(h, context).ok());
  CHECK(h.FindNode("first") != kNoNode);
  CHECK(h.FindNode("second") == kNoNode);
  CHECK(stopped->Describe() ==
        "   1. first   adds a NoOp\n"
        "   2. second  adds a NoOp  [after --stop-after]\n"
        "   3. third   adds a NoOp  [after --stop-after]\n");
}

TEST_CASE("pipeline flags must name its passes") {
  PipelineOptions options;
  options.disabled_passes = {"fourth"};
  CHECK(ThreePasses(options)->ValidateOptions().message() ==
        "--disable-pass: unknown pass 'fourth'; the passes are: first, second, third");
  options.disabled_passes.clear();
  options.dump_after = "zeroth";
  CHECK(ThreePasses(options)->ValidateOptions().message() ==
        "--dump-after: unknown pass 'zeroth'; the passes are: first, second, third");
  options.dump_after.clear();
  options.stop_after = 4;
  CHECK(ThreePasses(options)->ValidateOptions().message() ==
        "--stop-after: 4 is more than the 3 passes of test");
}

TEST_CASE("dump-after writes the graph after that pass") {
  Graph g = SmallGraph();
  PassContext context;
  PipelineOptions options;
  options.dump_after = "second";
  options.dump_dir = testing::TempDir();
  REQUIRE(ThreePasses(options)->Run(g, context).ok());
  StatusOr<Graph> dumped = LoadGraph(options.dump_dir + "/small.after-second.pbtxt");
  REQUIRE(dumped.ok());
  CHECK(dumped->FindNode("second") != kNoNode);
  CHECK(dumped->FindNode("third") == kNoNode);
}

TEST_CASE("the verifier runs after every changing pass and names the pass") {
  Graph g = SmallGraph();
  PassContext context;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<AddNoOp>("fine"));
  passes.push_back(std::make_unique<BreakPorts>());
  Pipeline pipeline("transform", "test", std::move(passes));
  StatusOr<bool> result = pipeline.Run(g, context);
  CHECK(result.status().message() ==
        "transform: after break-ports: small: node 'w/parallax/bad': input 0 'w:3' names output 3 "
        "of 'w' (VariableV2), which has 1 output");
}

TEST_CASE("a pass that changes the graph while reporting no change is caught") {
  Graph g = SmallGraph();
  PassContext context;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<Liar>());
  PipelineOptions options;
  options.check_changed = true;
  Pipeline pipeline("transform", "test", std::move(passes), options);
  CHECK(pipeline.Run(g, context).status().message() ==
        "transform: pass liar reported no change but changed the graph");
}

TEST_CASE("FixedPoint stops at no change and caps runaway passes") {
  Graph g = SmallGraph();
  PassContext context;
  FixedPoint runaway(std::make_unique<AddNoOp>("grow"), 3);
  CHECK(runaway.Run(g, context).status().message() ==
        "grow: grow still changed the graph after 3 iterations");
  CHECK(g.FindNode("grow_2") != kNoNode);
}

TEST_CASE("TfCollectives emits TF collective ops with increasing instance keys") {
  Graph g = SmallGraph();
  CollectiveOptions options;
  options.group_size = 4;
  options.device = "/job:worker/replica:0/task:1/device:CPU:0";
  TfCollectives collectives(options);
  const OutputRef x{g.FindNode("x"), 0};
  StatusOr<OutputRef> reduced = collectives.AllReduce(g, "x/parallax/allreduce", x, tensorflow::DT_FLOAT, true);
  REQUIRE(reduced.ok());
  StatusOr<OutputRef> gathered = collectives.AllGather(g, "x/parallax/allgather", x, tensorflow::DT_FLOAT);
  REQUIRE(gathered.ok());
  StatusOr<OutputRef> broadcast = collectives.Broadcast(g, "x/parallax/broadcast", x, tensorflow::DT_FLOAT, 0);
  REQUIRE(broadcast.ok());
  CHECK(VerifyGraph(g).ok());
  const Node& reduce = g.node(reduced->node);
  CHECK(reduce.name() == "x/parallax/allreduce");
  CHECK(reduce.op() == "CollectiveReduceV2");
  CHECK(reduce.device() == options.device);
  CHECK(reduce.FindAttr("final_op")->s() == "Div");
  const Node& key = g.node(reduce.input(3).node);
  CHECK(key.name() == "x/parallax/allreduce/instance_key");
  CHECK(key.FindAttr("value")->tensor().int_val(0) == 1);
  CHECK(g.node(g.node(gathered->node).input(3).node).FindAttr("value")->tensor().int_val(0) == 2);
  CHECK(g.node(broadcast->node).FindAttr("instance_key")->i() == 3);
  CHECK(collectives.next_instance_key() == 4);

  VariablePlan table;
  table.name = "w";
  table.partitions = {Partition{0, 3, 0}, Partition{3, 5, 1}};
  StatusOr<PushResult> pushed = collectives.SparsePush(g, "w/parallax/push", table, x, x,
                                                       tensorflow::DT_FLOAT, tensorflow::DT_INT32, 0.25f);
  REQUIRE(pushed.ok());
  const Node& push = g.node(pushed->local_values.node);
  CHECK(push.FindAttr("row_splits")->list().i_size() == 3);
  CHECK(push.FindAttr("num_rows")->i() == 5);
  CHECK(pushed->local_indices.port == 1);
  CHECK(VerifyGraph(g).ok());
}

}  // namespace
}  // namespace parallax
