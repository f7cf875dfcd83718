// Control flow: TF1 Switch/Merge conditionals and Enter/Exit while loops, functional
// If/While/calls, NoOp groups, and the checks (Assert, Abort, Print).
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// `in` -> `out` of type T, plain or Ref.
OpSchemaBuilder Forward(std::string name, bool ref) {
  OpSchemaBuilder b(std::move(name));
  const std::string type = ref ? "Ref(T)" : "T";
  b.Input("data: " + type).Output("output: " + type).Attr("T: type");
  return b;
}

OpSchemaBuilder Switch(std::string name, bool ref) {
  OpSchemaBuilder b(std::move(name));
  const std::string type = ref ? "Ref(T)" : "T";
  b.Input("data: " + type).Input("pred: bool").Output("output_false: " + type)
      .Output("output_true: " + type).Attr("T: type");
  return b;
}

// Outputs the first input to arrive and its index.
OpSchemaBuilder Merge(std::string name, bool ref) {
  OpSchemaBuilder b(std::move(name));
  b.Input(ref ? "inputs: Ref(N * T)" : "inputs: N * T").Output(ref ? "output: Ref(T)" : "output: T")
      .Output("value_index: int32").Attr("T: type").Attr("N: int >= 1");
  return b;
}

OpSchemaBuilder Enter(std::string name, bool ref) {
  OpSchemaBuilder b = Forward(std::move(name), ref);
  b.Attr("frame_name: string").Attr("is_constant: bool = false")
      .Attr("parallel_iterations: int = 10");
  return b;
}

OpSchemaBuilder FunctionalIf(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("cond: Tcond").Input("input: Tin").Output("output: Tout").Attr("Tcond: type")
      .Attr("Tin: list(type) >= 0").Attr("Tout: list(type) >= 0").Attr("then_branch: func")
      .Attr("else_branch: func").Attr("output_shapes: list(shape) = []");
  return b;
}

OpSchemaBuilder FunctionalWhile(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("input: T").Output("output: T").Attr("T: list(type) >= 0").Attr("cond: func")
      .Attr("body: func").Attr("output_shapes: list(shape) = []")
      .Attr("parallel_iterations: int = 10");
  return b;
}

OpSchemaBuilder Call(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("args: Tin").Output("output: Tout").Attr("Tin: list(type) >= 0")
      .Attr("Tout: list(type) >= 0").Attr("f: func").Attr("config: string = ''")
      .Attr("config_proto: string = ''").Attr("executor_type: string = ''");
  return b;
}

// Conditionals.
PX_REGISTER_OP(Switch("Switch", false));
PX_REGISTER_OP(Switch("RefSwitch", true));
PX_REGISTER_OP(Merge("Merge", false));
PX_REGISTER_OP(Merge("RefMerge", true));

// While loops (frames).
PX_REGISTER_OP(Enter("Enter", false));
PX_REGISTER_OP(Enter("RefEnter", true));
PX_REGISTER_OP(Forward("Exit", false));
PX_REGISTER_OP(Forward("RefExit", true));
PX_REGISTER_OP(Forward("NextIteration", false));
PX_REGISTER_OP(Forward("RefNextIteration", true));
PX_REGISTER_OP(OpSchemaBuilder("LoopCond").Input("input: bool").Output("output: bool"));

// Grouping.
PX_REGISTER_OP(OpSchemaBuilder("NoOp"));
PX_REGISTER_OP(OpSchemaBuilder("ControlTrigger"));

// Functional control flow and function calls (TF2 graphs).
PX_REGISTER_OP(FunctionalIf("If").Stateful());
PX_REGISTER_OP(FunctionalIf("StatelessIf"));
PX_REGISTER_OP(FunctionalWhile("While").Stateful());
PX_REGISTER_OP(FunctionalWhile("StatelessWhile"));
PX_REGISTER_OP(Call("PartitionedCall"));
PX_REGISTER_OP(Call("StatefulPartitionedCall").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("_Arg").Output("output: T").Attr("T: type")
                   .Attr("index: int >= 0").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("_Retval").Input("input: T").Attr("T: type")
                   .Attr("index: int >= 0").Stateful());

// Checks and logging: stateful so that they are never pruned as dead code.
PX_REGISTER_OP(OpSchemaBuilder("Assert").Input("condition: bool").Input("data: T")
                   .Attr("T: list(type)").Attr("summarize: int = 3").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Abort").Attr("error_msg: string = ''")
                   .Attr("exit_without_error: bool = false").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Print").Input("input: T").Input("data: U").Output("output: T")
                   .Attr("T: type").Attr("U: list(type) >= 0").Attr("message: string = ''")
                   .Attr("first_n: int = -1").Attr("summarize: int = 3").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("PrintV2").Input("input: string")
                   .Attr("output_stream: string = 'stderr'").Attr("end: string = '\\n'")
                   .Stateful());

// TensorArrays (V3): the per-iteration buffers of TF1 while loops (dynamic_rnn, scan).
// `flow` is a scalar float that orders the accesses to one array.
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayV3").Input("size: int32").Output("handle: resource")
                   .Output("flow: float").Attr("dtype: type")
                   .Attr("element_shape: shape = { unknown_rank: true }")
                   .Attr("dynamic_size: bool = false").Attr("clear_after_read: bool = true")
                   .Attr("identical_element_shapes: bool = false")
                   .Attr("tensor_array_name: string = ''").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayGradV3").Input("handle: resource")
                   .Input("flow_in: float").Output("grad_handle: resource")
                   .Output("flow_out: float").Attr("source: string").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayGradWithShape").Input("handle: resource")
                   .Input("flow_in: float").Input("shape_to_prepend: int32")
                   .Output("grad_handle: resource").Output("flow_out: float")
                   .Attr("source: string").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayWriteV3").Input("handle: resource")
                   .Input("index: int32").Input("value: T").Input("flow_in: float")
                   .Output("flow_out: float").Attr("T: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayReadV3").Input("handle: resource")
                   .Input("index: int32").Input("flow_in: float").Output("value: dtype")
                   .Attr("dtype: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayGatherV3").Input("handle: resource")
                   .Input("indices: int32").Input("flow_in: float").Output("value: dtype")
                   .Attr("dtype: type").Attr("element_shape: shape = { unknown_rank: true }")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayScatterV3").Input("handle: resource")
                   .Input("indices: int32").Input("value: T").Input("flow_in: float")
                   .Output("flow_out: float").Attr("T: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayConcatV3").Input("handle: resource")
                   .Input("flow_in: float").Output("value: dtype").Output("lengths: int64")
                   .Attr("dtype: type")
                   .Attr("element_shape_except0: shape = { unknown_rank: true }").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArraySplitV3").Input("handle: resource")
                   .Input("value: T").Input("lengths: int64").Input("flow_in: float")
                   .Output("flow_out: float").Attr("T: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArraySizeV3").Input("handle: resource")
                   .Input("flow_in: float").Output("size: int32").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("TensorArrayCloseV3").Input("handle: resource").Stateful());

// Stacks (V2): where TF1 while-loop gradients keep the forward loop's values.
PX_REGISTER_OP(OpSchemaBuilder("StackV2").Input("max_size: int32").Output("handle: resource")
                   .Attr("elem_type: type").Attr("stack_name: string = ''").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("StackPushV2").Input("handle: resource").Input("elem: T")
                   .Output("output: T").Attr("T: type").Attr("swap_memory: bool = false")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("StackPopV2").Input("handle: resource").Output("elem: elem_type")
                   .Attr("elem_type: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("StackCloseV2").Input("handle: resource").Stateful());

}  // namespace
}  // namespace parallax
