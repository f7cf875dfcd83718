#include "lib/ops/op_registry.h"

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/graph/graph_io.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using tensorflow::AttrValue;

// An AttrLookup over a literal map.
struct Attrs {
  std::map<std::string, AttrValue, std::less<>> values;
  Attrs& Int(const std::string& name, int64_t i) {
    values[name].set_i(i);
    return *this;
  }
  Attrs& Types(const std::string& name, int count) {
    AttrValue::ListValue* list = values[name].mutable_list();
    for (int i = 0; i < count; ++i) list->add_type(tensorflow::DT_FLOAT);
    return *this;
  }
  AttrLookup Lookup() const {
    return [this](std::string_view name) -> const AttrValue* {
      auto it = values.find(name);
      return it == values.end() ? nullptr : &it->second;
    };
  }
};

OpSchema MustBuild(const OpSchemaBuilder& builder) {
  StatusOr<OpSchema> schema = builder.Build();
  INFO(schema.status().ToString());
  REQUIRE(schema.ok());
  return *schema;
}

std::string BuildError(const OpSchemaBuilder& builder) {
  StatusOr<OpSchema> schema = builder.Build();
  REQUIRE_FALSE(schema.ok());
  CHECK(schema.status().code() == StatusCode::kInvalidArgument);
  return schema.status().message();
}

int Outputs(std::string_view op, const Attrs& attrs = {}) {
  const OpSchema* schema = FindOpSchema(op);
  INFO(op);
  REQUIRE(schema != nullptr);
  StatusOr<int> n = NumOutputs(*schema, attrs.Lookup());
  INFO(n.status().ToString());
  REQUIRE(n.ok());
  return *n;
}

TEST_CASE("every registered schema is consistent and findable") {
  std::vector<const OpSchema*> all = AllOpSchemas();
  REQUIRE(all.size() > 300);
  for (size_t i = 0; i < all.size(); ++i) {
    const OpSchema& op = *all[i];
    INFO(op.name);
    CHECK(FindOpSchema(op.name) == &op);
    if (i > 0) CHECK(all[i - 1]->name < op.name);
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const ArgSchema& arg : *args) {
        int kinds = (arg.fixed_type != tensorflow::DT_INVALID) + !arg.type_attr.empty() +
                    !arg.type_list_attr.empty();
        CHECK(kinds == 1);
        for (const std::string& attr : {arg.type_attr, arg.number_attr, arg.type_list_attr}) {
          if (!attr.empty()) CHECK(op.FindAttr(attr) != nullptr);
        }
      }
    }
    if (op.is_variable || op.apply || op.is_collective) CHECK(op.is_stateful);
  }
  CHECK(FindOpSchema("NoSuchOp") == nullptr);
  CHECK(FindOpSchema("") == nullptr);
}

TEST_CASE("the runtime's ops are registered") {
  for (std::string_view op :
       {"Const", "Placeholder", "PlaceholderWithDefault", "Identity", "IdentityN", "NoOp",
        "StopGradient", "PreventGradient", "VariableV2", "Variable", "VarHandleOp",
        "ReadVariableOp", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp",
        "AssignAddVariableOp", "AssignSubVariableOp", "IsVariableInitialized",
        "VarIsInitializedOp", "DestroyResourceOp", "Shape", "ShapeN", "Size", "Rank",
        "Reshape", "ExpandDims", "Squeeze", "ConcatV2", "Concat", "ConcatOffset", "Pack",
        "Unpack", "Split", "SplitV", "Slice", "StridedSlice", "StridedSliceGrad", "Fill",
        "ZerosLike", "OnesLike", "Tile", "BroadcastTo", "Cast", "Range", "Transpose",
        "InvertPermutation", "OneHot", "Select", "SelectV2", "Where", "Pad", "Floor", "Add",
        "AddV2", "Sub", "Mul", "RealDiv", "Div", "FloorDiv", "FloorMod", "Maximum", "Minimum",
        "Neg", "Abs", "Sign", "Square", "SquaredDifference", "Sqrt", "Rsqrt", "Reciprocal",
        "Exp", "Log", "Log1p", "Pow", "Equal", "NotEqual", "Greater", "GreaterEqual", "Less",
        "LessEqual", "LogicalAnd", "LogicalOr", "LogicalNot", "Sum", "Mean", "Prod", "Max",
        "Min", "ArgMax", "ArgMin", "All", "Any", "MatMul", "BatchMatMul", "BatchMatMulV2",
        "BiasAdd", "BiasAddGrad", "Relu", "ReluGrad", "Relu6", "Elu", "Sigmoid", "SigmoidGrad",
        "Tanh", "TanhGrad", "RsqrtGrad", "SqrtGrad", "Softmax", "LogSoftmax",
        "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
        "BroadcastGradientArgs", "AddN", "L2Loss", "GatherV2", "Gather", "ResourceGather",
        "Unique", "UnsortedSegmentSum", "DynamicStitch", "SparseSegmentMeanGrad",
        "SparseSegmentSum", "SparseSegmentMean", "Conv2D", "Conv2DBackpropInput",
        "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad",
        "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
        "FusedBatchNormGradV2", "FusedBatchNormGradV3", "RandomUniform", "RandomUniformInt",
        "RandomStandardNormal", "TruncatedNormal", "RandomShuffle", "Multinomial",
        // Named in shared/reference/tf-training-graphs.md.
        "ResourceScatterAdd", "ResourceScatterSub", "ScatterAdd", "ScatterSub", "SaveV2",
        "RestoreV2", "Switch", "Merge", "NextIteration", "_Send", "NcclAllReduce",
        "CollectiveReduceV2", "CollectiveGather", "CollectiveGatherV2", "CollectiveBcastSend",
        "CollectiveBcastRecv", "CollectiveBcastSendV2", "CollectiveBcastRecvV2", "_Recv",
        "_HostSend", "_HostRecv", "Iterator", "IteratorGetNext"}) {
    INFO(op);
    CHECK(FindOpSchema(op) != nullptr);
  }
}

TEST_CASE("arg specs parse into fixed types, type attrs, number attrs and type lists") {
  OpSchema op = MustBuild(OpSchemaBuilder("Demo")
                              .Input("var: Ref(T)")
                              .Input("x: float")
                              .Input("values: N * T")
                              .Input("shapes: N * int32")
                              .Input("refs: Ref(N * T)")
                              .Input("components: Tcomponents")
                              .Output("out: Ref(T)")
                              .Attr("T: {float, double}")
                              .Attr("N: int >= 1")
                              .Attr("Tcomponents: list(type) >= 1"));
  REQUIRE(op.inputs.size() == 6);
  CHECK(op.inputs[0].name == "var");
  CHECK(op.inputs[0].is_ref);
  CHECK(op.inputs[0].type_attr == "T");
  CHECK(op.inputs[1].fixed_type == tensorflow::DT_FLOAT);
  CHECK_FALSE(op.inputs[1].is_ref);
  CHECK(op.inputs[2].number_attr == "N");
  CHECK(op.inputs[2].type_attr == "T");
  CHECK(op.inputs[3].number_attr == "N");
  CHECK(op.inputs[3].fixed_type == tensorflow::DT_INT32);
  CHECK(op.inputs[4].is_ref);
  CHECK(op.inputs[4].number_attr == "N");
  CHECK(op.inputs[5].type_list_attr == "Tcomponents");
  CHECK(op.outputs[0].is_ref);
  CHECK(op.FindAttr("T")->type == "type");
  CHECK(op.FindAttr("N")->type == "int");
  CHECK(op.FindAttr("Tcomponents")->type == "list(type)");
  CHECK(op.FindAttr("missing") == nullptr);
}

TEST_CASE("fixed type names are TensorFlow's") {
  const std::pair<const char*, tensorflow::DataType> kTypes[] = {
      {"float", tensorflow::DT_FLOAT},       {"double", tensorflow::DT_DOUBLE},
      {"int32", tensorflow::DT_INT32},       {"int64", tensorflow::DT_INT64},
      {"uint8", tensorflow::DT_UINT8},       {"int8", tensorflow::DT_INT8},
      {"int16", tensorflow::DT_INT16},       {"uint16", tensorflow::DT_UINT16},
      {"uint32", tensorflow::DT_UINT32},     {"uint64", tensorflow::DT_UINT64},
      {"bool", tensorflow::DT_BOOL},         {"string", tensorflow::DT_STRING},
      {"resource", tensorflow::DT_RESOURCE}, {"variant", tensorflow::DT_VARIANT},
      {"half", tensorflow::DT_HALF},         {"bfloat16", tensorflow::DT_BFLOAT16},
      {"complex64", tensorflow::DT_COMPLEX64}, {"complex128", tensorflow::DT_COMPLEX128},
      {"qint8", tensorflow::DT_QINT8},       {"quint8", tensorflow::DT_QUINT8},
      {"qint32", tensorflow::DT_QINT32},
  };
  for (const auto& [name, type] : kTypes) {
    INFO(name);
    OpSchema op = MustBuild(OpSchemaBuilder("Demo").Input(std::string("x: ") + name));
    CHECK(op.inputs[0].fixed_type == type);
  }
}

TEST_CASE("attr specs record their type and parse defaults") {
  OpSchema op = MustBuild(OpSchemaBuilder("Demo")
                              .Attr("use_locking: bool = false")
                              .Attr("transpose_a: bool = true")
                              .Attr("axis: int = -1")
                              .Attr("N: int >= 2")
                              .Attr("k: int >= -2 = 4")
                              .Attr("epsilon: float = 0.0001")
                              .Attr("container: string = ''")
                              .Attr("padding: {'SAME', 'VALID'} = 'SAME'")
                              .Attr("delimiter: string = '\\t'")
                              .Attr("Tidx: {int32, int64} = DT_INT32")
                              .Attr("dtype: type")
                              .Attr("shape: shape")
                              .Attr("any_shape: shape = { unknown_rank: true }")
                              .Attr("component_types: list(type) >= 1")
                              .Attr("dtypes: list(type)")
                              .Attr("Tdense: list({float, int64, string}) >= 0")
                              .Attr("strides: list(int) = [1, 2, 2, 1]")
                              .Attr("labels: list(string) = []")
                              .Attr("value: tensor")
                              .Attr("bad_color: tensor = { dtype: DT_UINT8 int_val: 255 }")
                              .Attr("f: func")
                              .Attr("T: numbertype"));
  auto attr = [&](std::string_view name) {
    const AttrSchema* a = op.FindAttr(name);
    INFO(name);
    REQUIRE(a != nullptr);
    return *a;
  };
  CHECK(attr("use_locking").type == "bool");
  CHECK(attr("use_locking").default_value->b() == false);
  CHECK(attr("use_locking").default_value->value_case() == AttrValue::kB);
  CHECK(attr("transpose_a").default_value->b() == true);
  CHECK(attr("axis").default_value->i() == -1);
  CHECK(attr("N").type == "int");
  CHECK_FALSE(attr("N").default_value.has_value());
  CHECK(attr("k").default_value->i() == 4);
  CHECK(attr("epsilon").type == "float");
  CHECK(attr("epsilon").default_value->f() == Approx(0.0001f));
  CHECK(attr("container").default_value->s().empty());
  CHECK(attr("container").default_value->value_case() == AttrValue::kS);
  CHECK(attr("padding").type == "string");
  CHECK(attr("padding").default_value->s() == "SAME");
  CHECK(attr("delimiter").default_value->s() == "\t");
  CHECK(attr("Tidx").type == "type");
  CHECK(attr("Tidx").default_value->type() == tensorflow::DT_INT32);
  CHECK(attr("dtype").type == "type");
  CHECK(attr("shape").type == "shape");
  CHECK(attr("any_shape").default_value->shape().unknown_rank());
  CHECK(attr("component_types").type == "list(type)");
  CHECK(attr("dtypes").type == "list(type)");
  CHECK(attr("Tdense").type == "list(type)");
  CHECK(attr("strides").type == "list(int)");
  CHECK(attr("strides").default_value->list().i_size() == 4);
  CHECK(attr("strides").default_value->list().i(1) == 2);
  CHECK(attr("labels").type == "list(string)");
  CHECK(attr("labels").default_value->list().s_size() == 0);
  CHECK(attr("value").type == "tensor");
  CHECK(attr("bad_color").type == "tensor");
  CHECK_FALSE(attr("bad_color").default_value.has_value());  // tensor defaults are not read
  CHECK(attr("f").type == "func");
  CHECK(attr("T").type == "type");
}

TEST_CASE("malformed specs give exact errors") {
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x T")) ==
        "op 'Demo': input spec 'x T' is not 'name: type'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Output("2x: float")) ==
        "op 'Demo': output spec '2x: float' has a bad name '2x'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: Ref(T").Attr("T: type")) ==
        "op 'Demo': input 'x' has a malformed type 'Ref(T'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: N *").Attr("N: int")) ==
        "op 'Demo': input 'x' has a malformed type 'N *'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: flaot")) ==
        "op 'Demo': input 'x' names 'flaot', which is neither a type nor an attr");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: N * T").Attr("T: type")) ==
        "op 'Demo': input 'x' names 'N', which is not a declared attr");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: N * T").Attr("N: type").Attr("T: type")) ==
        "op 'Demo': input 'x' uses attr 'N' as a number, but it is declared as 'type'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: T").Attr("T: int")) ==
        "op 'Demo': input 'x' uses attr 'T' as a type, but it is declared as 'int'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: N * T").Attr("N: int")
                       .Attr("T: list(type)")) ==
        "op 'Demo': input 'x' uses attr 'T' as a type, but it is declared as 'list(type)'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: float").Input("x: int32")) ==
        "op 'Demo': duplicate input 'x'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T type")) ==
        "op 'Demo': attr spec 'T type' is not 'name: type'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("a-b: int")) ==
        "op 'Demo': attr spec 'a-b: int' has a bad name 'a-b'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: typ")) ==
        "op 'Demo': attr 'T' has unknown type 'typ'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: list(typ)")) ==
        "op 'Demo': attr 'T' has unknown type 'list(typ)'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: {float, flaot}")) ==
        "op 'Demo': attr 'T' allows unknown type 'flaot'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: {}")) == "op 'Demo': attr 'T' allows no values");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("N: int >= one")) ==
        "op 'Demo': attr 'N' has a bad minimum 'one'");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("b: bool = maybe")) ==
        "op 'Demo': attr 'b' has default 'maybe', which is not a valid bool");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("i: int = 1.5")) ==
        "op 'Demo': attr 'i' has default '1.5', which is not a valid int");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("s: string = VALID")) ==
        "op 'Demo': attr 's' has default 'VALID', which is not a valid string");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: type = DT_FLOAT_REF")) ==
        "op 'Demo': attr 'T' has default 'DT_FLOAT_REF', which is not a valid type");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("l: list(int) = [1, x]")) ==
        "op 'Demo': attr 'l' has default '[1, x]', which is not a valid list(int)");
  CHECK(BuildError(OpSchemaBuilder("Demo").Attr("T: type").Attr("T: int")) ==
        "op 'Demo': duplicate attr 'T'");
  CHECK(BuildError(OpSchemaBuilder("")) == "bad op name ''");
  CHECK(BuildError(OpSchemaBuilder("Demo").Input("x: float").Apply({.var_input = 0,
                                                                    .grad_input = 1,
                                                                    .indices_input = -1,
                                                                    .slot_inputs = {}})) ==
        "op 'Demo': apply input index 1 is out of range (the op has 1 inputs)");
}

TEST_CASE("NumOutputs counts fixed, number-attr and type-list outputs") {
  OpSchema op = MustBuild(OpSchemaBuilder("Demo")
                              .Output("a: float")
                              .Output("b: N * T")
                              .Output("c: Tlist")
                              .Output("d: M * int64")
                              .Attr("T: type")
                              .Attr("N: int >= 0")
                              .Attr("M: int = 3")
                              .Attr("Tlist: list(type)"));
  SECTION("from the node's attrs, with the schema's default for M") {
    StatusOr<int> n = NumOutputs(op, Attrs().Int("N", 4).Types("Tlist", 2).Lookup());
    REQUIRE(n.ok());
    CHECK(*n == 1 + 4 + 2 + 3);
  }
  SECTION("a node attr overrides the default") {
    CHECK(*NumOutputs(op, Attrs().Int("N", 0).Types("Tlist", 0).Int("M", 1).Lookup()) == 2);
  }
  SECTION("missing attrs are named") {
    CHECK(NumOutputs(op, Attrs().Types("Tlist", 1).Lookup()).status() ==
          InvalidArgumentError("attr 'N' is missing"));
    CHECK(NumOutputs(op, Attrs().Int("N", 1).Lookup()).status().message() ==
          "attr 'Tlist' is missing");
    CHECK(NumOutputs(op, AttrLookup()).status().message() == "attr 'N' is missing");
  }
  SECTION("attrs of the wrong kind are named") {
    CHECK(NumOutputs(op, Attrs().Types("N", 1).Types("Tlist", 1).Lookup()).status().message() ==
          "attr 'N' is not an int");
    CHECK(NumOutputs(op, Attrs().Int("N", -1).Types("Tlist", 1).Lookup()).status().message() ==
          "attr 'N' is negative (-1)");
    CHECK(NumOutputs(op, Attrs().Int("N", 1).Int("Tlist", 1).Lookup()).status().message() ==
          "attr 'Tlist' is not a list of types");
    Attrs ints = Attrs().Int("N", 1);
    ints.values["Tlist"].mutable_list()->add_i(3);
    CHECK(NumOutputs(op, ints.Lookup()).status().message() ==
          "attr 'Tlist' is not a list of types");
  }
  SECTION("NumInputs counts the same way") {
    const OpSchema* concat = FindOpSchema("ConcatV2");
    REQUIRE(concat != nullptr);
    CHECK(*NumInputs(*concat, Attrs().Int("N", 3).Lookup()) == 4);
  }
  SECTION("registered ops name their attr") {
    const OpSchema* queue = FindOpSchema("QueueDequeueV2");
    REQUIRE(queue != nullptr);
    CHECK(NumOutputs(*queue, {}).status().message() == "attr 'component_types' is missing");
    const OpSchema* enqueue = FindOpSchema("QueueEnqueueV2");
    REQUIRE(enqueue != nullptr);
    CHECK(NumInputs(*enqueue, Attrs().Int("Tcomponents", 2).Lookup()).status().message() ==
          "attr 'Tcomponents' is not a list of types");
  }
}

TEST_CASE("output counts of registered ops") {
  CHECK(Outputs("Const") == 1);
  CHECK(Outputs("NoOp") == 0);
  CHECK(Outputs("Assign") == 1);
  CHECK(Outputs("AssignVariableOp") == 0);
  CHECK(Outputs("VarHandleOp") == 1);
  CHECK(Outputs("Switch") == 2);
  CHECK(Outputs("RefSwitch") == 2);
  CHECK(Outputs("Merge", Attrs().Int("N", 2)) == 2);
  CHECK(Outputs("RefMerge", Attrs().Int("N", 2)) == 2);
  CHECK(Outputs("Enter") == 1);
  CHECK(Outputs("Unique") == 2);
  CHECK(Outputs("UniqueWithCounts") == 3);
  CHECK(Outputs("FusedBatchNorm") == 5);
  CHECK(Outputs("FusedBatchNormV2") == 5);
  CHECK(Outputs("FusedBatchNormV3") == 6);
  CHECK(Outputs("FusedBatchNormGrad") == 5);
  CHECK(Outputs("FusedBatchNormGradV2") == 5);
  CHECK(Outputs("FusedBatchNormGradV3") == 5);
  CHECK(Outputs("RestoreV2", Attrs().Types("dtypes", 93)) == 93);
  CHECK(Outputs("SaveV2") == 0);
  CHECK(Outputs("Unpack", Attrs().Int("num", 3)) == 3);
  CHECK(Outputs("Split", Attrs().Int("num_split", 4)) == 4);
  CHECK(Outputs("SplitV", Attrs().Int("num_split", 2)) == 2);
  CHECK(Outputs("ShapeN", Attrs().Int("N", 2)) == 2);
  CHECK(Outputs("IdentityN", Attrs().Types("T", 3)) == 3);
  CHECK(Outputs("QueueDequeueV2", Attrs().Types("component_types", 2)) == 2);
  CHECK(Outputs("QueueDequeueManyV2", Attrs().Types("component_types", 3)) == 3);
  CHECK(Outputs("QueueDequeueUpToV2", Attrs().Types("component_types", 1)) == 1);
  CHECK(Outputs("QueueEnqueueV2") == 0);
  CHECK(Outputs("IteratorGetNext", Attrs().Types("output_types", 2)) == 2);
  CHECK(Outputs("ReaderReadV2") == 2);
  CHECK(Outputs("ReaderRead") == 2);
  CHECK(Outputs("SoftmaxCrossEntropyWithLogits") == 2);
  CHECK(Outputs("SparseSoftmaxCrossEntropyWithLogits") == 2);
  CHECK(Outputs("BroadcastGradientArgs") == 2);
  CHECK(Outputs("TopKV2") == 2);
  CHECK(Outputs("DynamicPartition", Attrs().Int("num_partitions", 5)) == 5);
  CHECK(Outputs("ConcatOffset", Attrs().Int("N", 3)) == 3);
  CHECK(Outputs("ParseExample",
                Attrs().Int("Nsparse", 2).Int("Ndense", 3).Types("sparse_types", 2)
                    .Types("Tdense", 3)) == 2 + 2 + 2 + 3);
  CHECK(Outputs("ApplyAdam") == 1);
  CHECK(Outputs("ResourceApplyAdam") == 0);
  CHECK(Outputs("ResourceSparseApplyMomentum") == 0);
  CHECK(Outputs("ScatterSub") == 1);
  CHECK(Outputs("ResourceScatterAdd") == 0);
  CHECK(Outputs("_Send") == 0);
  CHECK(Outputs("_Recv") == 1);
  CHECK(Outputs("CollectiveReduceV2") == 1);
  CHECK(Outputs("AnonymousIteratorV2") == 2);
  CHECK(Outputs("While", Attrs().Types("T", 4)) == 4);
}

TEST_CASE("traits") {
  auto op = [](std::string_view name) {
    const OpSchema* schema = FindOpSchema(name);
    INFO(name);
    REQUIRE(schema != nullptr);
    return *schema;
  };
  CHECK(op("VariableV2").is_variable);
  CHECK_FALSE(op("VariableV2").is_resource_variable);
  CHECK(op("Variable").is_variable);
  CHECK(op("VarHandleOp").is_variable);
  CHECK(op("VarHandleOp").is_resource_variable);
  CHECK_FALSE(op("ReadVariableOp").is_variable);
  for (std::string_view name :
       {"VariableV2", "Assign", "AssignAdd", "AssignVariableOp", "ApplyAdam",
        "ResourceApplyAdam", "ScatterUpdate", "RandomUniform", "TruncatedNormal",
        "FIFOQueueV2", "TFRecordReaderV2", "SaveV2", "RestoreV2", "Assert",
        "WriteScalarSummary", "NcclAllReduce", "_Send", "_Recv"}) {
    INFO(name);
    CHECK(op(name).is_stateful);
  }
  for (std::string_view name : {"Add", "MatMul", "Identity", "Const", "ScalarSummary"}) {
    INFO(name);
    CHECK_FALSE(op(name).is_stateful);
  }
  for (std::string_view name : {"FIFOQueueV2", "QueueDequeueManyV2", "ReaderReadV2",
                                "TFRecordReaderV2", "IteratorGetNext", "DecodeRaw",
                                "DecodeJpeg", "ParseExample"}) {
    INFO(name);
    CHECK(op(name).is_input_pipeline);
  }
  CHECK_FALSE(op("MatMul").is_input_pipeline);
  for (std::string_view name : {"NcclAllReduce", "CollectiveReduceV2", "CollectiveGather",
                                "CollectiveGatherV2", "CollectiveBcastSendV2",
                                "CollectiveBcastRecv"}) {
    INFO(name);
    CHECK(op(name).is_collective);
  }
  CHECK_FALSE(op("_Send").is_collective);
  CHECK(op("ApplyMomentum").inputs[0].is_ref);
  CHECK(op("ApplyMomentum").outputs[0].is_ref);
  CHECK(op("ResourceApplyMomentum").inputs[0].fixed_type == tensorflow::DT_RESOURCE);
  CHECK(op("VariableV2").outputs[0].is_ref);
  CHECK(op("Assign").FindAttr("use_locking")->default_value->b() == true);
  CHECK(op("ApplyAdam").FindAttr("use_locking")->default_value->b() == false);
}

// The apply-op table of shared/reference/tf-training-graphs.md, copied by hand.
struct ApplyRow {
  std::string_view op;
  int grad;
  int indices;
  std::string_view inputs;
};
constexpr ApplyRow kReferenceApplyTable[] = {
    {"ApplyGradientDescent", 2, -1, "var alpha delta"},
    {"ApplyMomentum", 3, -1, "var accum lr grad momentum"},
    {"ResourceApplyKerasMomentum", 3, -1, "var accum lr grad momentum"},
    {"ApplyAdam", 9, -1, "var m v beta1_power beta2_power lr beta1 beta2 epsilon grad"},
    {"ResourceApplyAdamWithAmsgrad", 10, -1,
     "var m v vhat beta1_power beta2_power lr beta1 beta2 epsilon grad"},
    {"ApplyRMSProp", 7, -1, "var ms mom lr rho momentum epsilon grad"},
    {"ApplyCenteredRMSProp", 8, -1, "var mg ms mom lr rho momentum epsilon grad"},
    {"ApplyAdagrad", 3, -1, "var accum lr grad"},
    {"ApplyAdagradV2", 4, -1, "var accum lr epsilon grad"},
    {"ApplyAdadelta", 6, -1, "var accum accum_update lr rho epsilon grad"},
    {"ApplyFtrl", 3, -1, "var accum linear grad lr l1 l2 lr_power"},
    {"ApplyFtrlV2", 3, -1, "var accum linear grad lr l1 l2 l2_shrinkage lr_power"},
    {"ApplyAdaMax", 8, -1, "var m v beta1_power lr beta1 beta2 epsilon grad"},
    {"ApplyProximalGradientDescent", 4, -1, "var alpha l1 l2 delta"},
    {"SparseApplyMomentum", 3, 4, "var accum lr grad indices momentum"},
    {"SparseApplyAdagrad", 3, 4, "var accum lr grad indices"},
    {"SparseApplyAdadelta", 6, 7, "var accum accum_update lr rho epsilon grad indices"},
    {"SparseApplyFtrl", 3, 4, "var accum linear grad indices lr l1 l2 lr_power"},
    {"SparseApplyFtrlV2", 3, 4, "var accum linear grad indices lr l1 l2 l2_shrinkage lr_power"},
    {"SparseApplyRMSProp", 7, 8, "var ms mom lr rho momentum epsilon grad indices"},
    {"SparseApplyProximalGradientDescent", 4, 5, "var alpha l1 l2 grad indices"},
    {"ScatterAdd", 2, 1, "ref indices updates"},
    {"ScatterSub", 2, 1, "ref indices updates"},
    {"ResourceScatterAdd", 2, 1, "resource indices updates"},
    {"ResourceScatterSub", 2, 1, "resource indices updates"},
};

void CheckApplyRow(const OpSchema& op, const ApplyRow& row) {
  INFO(op.name);
  REQUIRE(op.apply.has_value());
  CHECK(op.apply->var_input == 0);
  CHECK(op.apply->grad_input == row.grad);
  CHECK(op.apply->indices_input == row.indices);
  CHECK(op.is_sparse_apply() == (row.indices >= 0));
  CHECK(op.is_stateful);
  std::string names;
  for (const ArgSchema& arg : op.inputs) names += (names.empty() ? "" : " ") + arg.name;
  CHECK(names == row.inputs);
  for (int slot : op.apply->slot_inputs) {
    CHECK(slot > 0);
    CHECK(slot != row.grad);
    CHECK(slot != row.indices);
    CHECK(op.inputs[slot].is_ref == op.inputs[0].is_ref);
    CHECK(op.inputs[slot].fixed_type == op.inputs[0].fixed_type);
  }
  const bool resource = op.name.rfind("Resource", 0) == 0;
  if (resource) {
    CHECK(op.inputs[0].fixed_type == tensorflow::DT_RESOURCE);
    CHECK(op.outputs.empty());
  } else {
    CHECK(op.inputs[0].is_ref);
    REQUIRE(op.outputs.size() == 1);
    CHECK(op.outputs[0].is_ref);
  }
}

TEST_CASE("apply ops match the reference table, in ref and resource forms") {
  for (const ApplyRow& row : kReferenceApplyTable) {
    const OpSchema* op = FindOpSchema(row.op);
    INFO(row.op);
    REQUIRE(op != nullptr);
    CheckApplyRow(*op, row);
    // The Resource* variant has the same inputs (scatters have their own rows).
    if (row.op.rfind("Resource", 0) != 0 && row.op.rfind("Scatter", 0) != 0) {
      const OpSchema* resource = FindOpSchema("Resource" + std::string(row.op));
      REQUIRE(resource != nullptr);
      CheckApplyRow(*resource, row);
    }
  }
  CHECK(FindOpSchema("SparseApplyAdam") == nullptr);  // not a TF op (reference)
  CHECK(FindOpSchema("ApplyKerasMomentum") == nullptr);
  CHECK_FALSE(FindOpSchema("ScatterUpdate")->apply.has_value());
  // Every Apply-family op carries an ApplySchema.
  int apply_ops = 0;
  for (const OpSchema* op : AllOpSchemas()) {
    std::string_view name = op->name;
    if (name.rfind("Resource", 0) == 0) name.remove_prefix(8);
    if (name.rfind("Sparse", 0) == 0) name.remove_prefix(6);
    if (name.rfind("Apply", 0) != 0) continue;
    INFO(op->name);
    CHECK(op->apply.has_value());
    CHECK(op->apply->grad_input >= 0);
    ++apply_ops;
  }
  CHECK(apply_ops >= 57);  // 27 rules in both forms, 3 resource-only
}

// ---- Real graphs: shared/testdata/tf (read in place, never copied). ----

TEST_CASE("every op in the shared test graphs is registered, with the right arity") {
  const std::vector<std::string> files = testing::SharedTfGraphFiles();
  if (files.empty()) return;  // skipped, or failed under CI
  for (const std::string& path : files) {
    INFO(path);
    // Loaded as Parallax loads them (text or binary; GraphDef or MetaGraphDef), then
    // checked against the registry as plain NodeDefs.
    StatusOr<Graph> loaded = LoadGraph(path);
    INFO(loaded.status().ToString());
    REQUIRE(loaded.ok());
    tensorflow::GraphDef graph;
    REQUIRE(graph.ParseFromString(SerializeGraphDef(*loaded)));
    REQUIRE(graph.node_size() > 0);
    std::set<std::string> unregistered;
    for (const tensorflow::NodeDef& node : graph.node()) {
      if (FindOpSchema(node.op()) == nullptr) unregistered.insert(node.op());
    }
    std::string list;
    for (const std::string& op : unregistered) list += " " + op;
    INFO("unregistered:" << list);
    CHECK(unregistered.empty());
    if (!unregistered.empty()) continue;
    std::map<std::string, int> num_outputs;  // node name -> output count
    for (const tensorflow::NodeDef& node : graph.node()) {
      INFO("node '" << node.name() << "' op " << node.op());
      const OpSchema* op = FindOpSchema(node.op());
      REQUIRE(op != nullptr);
      StatusOr<int> outputs = NumOutputs(*op, NodeAttrLookup(node));
      INFO(outputs.status().ToString());
      REQUIRE(outputs.ok());
      num_outputs[node.name()] = *outputs;
      StatusOr<int> inputs = NumInputs(*op, NodeAttrLookup(node));
      REQUIRE(inputs.ok());
      int data_inputs = 0;
      for (const std::string& input : node.input()) data_inputs += input[0] != '^';
      CHECK(data_inputs == *inputs);
      auto shapes = node.attr().find("_output_shapes");
      if (shapes != node.attr().end()) CHECK(shapes->second.list().shape_size() == *outputs);
      for (const auto& [name, value] : node.attr()) {
        INFO("attr " << name);
        if (name[0] != '_') CHECK(op->FindAttr(name) != nullptr);
      }
    }
    // Every "node:port" names an output the producer has.
    for (const tensorflow::NodeDef& node : graph.node()) {
      for (const std::string& input : node.input()) {
        if (input[0] == '^') continue;
        size_t colon = input.rfind(':');
        std::string producer = input.substr(0, colon);
        int port = colon == std::string::npos ? 0 : std::stoi(input.substr(colon + 1));
        INFO("node '" << node.name() << "' input '" << input << "'");
        REQUIRE(num_outputs.count(producer) == 1);
        CHECK(port < num_outputs[producer]);
      }
    }
  }
}

}  // namespace
}  // namespace parallax
