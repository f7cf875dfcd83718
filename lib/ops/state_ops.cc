// State ops: ref and resource variables, Assign*, Scatter* updates, lookup tables.
#include "lib/ops/op_registry.h"

namespace parallax {
namespace {

// ScatterAdd/ScatterSub are how sparse SGD and sparse Adam update a variable: the
// "gradient" is the updates input (reference table). Other scatters overwrite or scale
// rows, so they carry no ApplySchema and analyses treat them as plain state writes.
const ApplySchema kScatterApply = {
    .var_input = 0, .grad_input = 2, .indices_input = 1, .slot_inputs = {}};

OpSchemaBuilder RefScatter(std::string name, std::string_view types, bool use_locking,
                           bool is_update) {
  OpSchemaBuilder b(std::move(name));
  b.Input("ref: Ref(T)").Input("indices: Tindices").Input("updates: T")
      .Output("output_ref: Ref(T)").Attr("T: " + std::string(types))
      .Attr("Tindices: {int32, int64}")
      .Attr(use_locking ? "use_locking: bool = true" : "use_locking: bool = false")
      .Stateful();
  if (is_update) b.Apply(kScatterApply);
  return b;
}

OpSchemaBuilder ResourceScatter(std::string name, std::string_view types, bool is_update) {
  OpSchemaBuilder b(std::move(name));
  b.Input("resource: resource").Input("indices: Tindices").Input("updates: dtype")
      .Attr("dtype: " + std::string(types)).Attr("Tindices: {int32, int64}").Stateful();
  if (is_update) b.Apply(kScatterApply);
  return b;
}

OpSchemaBuilder RefVariable(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Output("ref: Ref(dtype)").Attr("shape: shape").Attr("dtype: type")
      .Attr("container: string = ''").Attr("shared_name: string = ''").Variable(false);
  return b;
}

OpSchemaBuilder AssignUpdate(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("ref: Ref(T)").Input("value: T").Output("output_ref: Ref(T)")
      .Attr("T: numbertype").Attr("use_locking: bool = false").Stateful();
  return b;
}

OpSchemaBuilder AssignVariableUpdate(std::string name) {
  OpSchemaBuilder b(std::move(name));
  b.Input("resource: resource").Input("value: dtype").Attr("dtype: type").Stateful();
  return b;
}

// Ref variables (TF1).
PX_REGISTER_OP(RefVariable("VariableV2"));
PX_REGISTER_OP(RefVariable("Variable"));
PX_REGISTER_OP(OpSchemaBuilder("TemporaryVariable").Output("ref: Ref(dtype)")
                   .Attr("shape: shape").Attr("dtype: type")
                   .Attr("var_name: string = ''").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("IsVariableInitialized").Input("ref: Ref(dtype)")
                   .Output("is_initialized: bool").Attr("dtype: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("Assign").Input("ref: Ref(T)").Input("value: T")
                   .Output("output_ref: Ref(T)").Attr("T: type")
                   .Attr("validate_shape: bool = true").Attr("use_locking: bool = true")
                   .Stateful());
PX_REGISTER_OP(AssignUpdate("AssignAdd"));
PX_REGISTER_OP(AssignUpdate("AssignSub"));
PX_REGISTER_OP(OpSchemaBuilder("CountUpTo").Input("ref: Ref(T)").Output("output: T")
                   .Attr("limit: int").Attr("T: {int32, int64}").Stateful());
PX_REGISTER_OP(RefScatter("ScatterAdd", "numbertype", false, true));
PX_REGISTER_OP(RefScatter("ScatterSub", "numbertype", false, true));
PX_REGISTER_OP(RefScatter("ScatterUpdate", "type", true, false));
PX_REGISTER_OP(RefScatter("ScatterMul", "numbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterDiv", "numbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterMax", "realnumbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterMin", "realnumbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterNdAdd", "numbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterNdSub", "numbertype", false, false));
PX_REGISTER_OP(RefScatter("ScatterNdUpdate", "type", true, false));

// Resource variables (TF2 and tf.compat.v1 with use_resource=True).
PX_REGISTER_OP(OpSchemaBuilder("VarHandleOp").Output("resource: resource")
                   .Attr("container: string = ''").Attr("shared_name: string = ''")
                   .Attr("debug_name: string = ''").Attr("dtype: type").Attr("shape: shape")
                   .Attr("allowed_devices: list(string) = []").Variable(true));
// Stateful in TF: the value read depends on when it runs relative to assignments.
PX_REGISTER_OP(OpSchemaBuilder("ReadVariableOp").Input("resource: resource")
                   .Output("value: dtype").Attr("dtype: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("AssignVariableOp").Input("resource: resource")
                   .Input("value: dtype").Attr("dtype: type")
                   .Attr("validate_shape: bool = false").Stateful());
PX_REGISTER_OP(AssignVariableUpdate("AssignAddVariableOp"));
PX_REGISTER_OP(AssignVariableUpdate("AssignSubVariableOp"));
PX_REGISTER_OP(OpSchemaBuilder("VarIsInitializedOp").Input("resource: resource")
                   .Output("is_initialized: bool").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("VariableShape").Input("input: resource")
                   .Output("output: out_type").Attr("out_type: {int32, int64} = DT_INT32")
                   .Stateful());
PX_REGISTER_OP(OpSchemaBuilder("DestroyResourceOp").Input("resource: resource")
                   .Attr("ignore_lookup_error: bool = true").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("ResourceGather").Input("resource: resource")
                   .Input("indices: Tindices").Output("output: dtype")
                   .Attr("batch_dims: int = 0").Attr("validate_indices: bool = true")
                   .Attr("dtype: type").Attr("Tindices: {int32, int64}").Stateful());
PX_REGISTER_OP(ResourceScatter("ResourceScatterAdd", "numbertype", true));
PX_REGISTER_OP(ResourceScatter("ResourceScatterSub", "numbertype", true));
PX_REGISTER_OP(ResourceScatter("ResourceScatterUpdate", "type", false));
PX_REGISTER_OP(ResourceScatter("ResourceScatterMul", "numbertype", false));
PX_REGISTER_OP(ResourceScatter("ResourceScatterDiv", "numbertype", false));
PX_REGISTER_OP(ResourceScatter("ResourceScatterMax", "numbertype", false));
PX_REGISTER_OP(ResourceScatter("ResourceScatterMin", "numbertype", false));

// Lookup tables: state initialised once, read by feature columns.
PX_REGISTER_OP(OpSchemaBuilder("HashTableV2").Output("table_handle: resource")
                   .Attr("container: string = ''").Attr("shared_name: string = ''")
                   .Attr("use_node_name_sharing: bool = false").Attr("key_dtype: type")
                   .Attr("value_dtype: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("MutableHashTableV2").Output("table_handle: resource")
                   .Attr("container: string = ''").Attr("shared_name: string = ''")
                   .Attr("use_node_name_sharing: bool = false").Attr("key_dtype: type")
                   .Attr("value_dtype: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("LookupTableFindV2").Input("table_handle: resource")
                   .Input("keys: Tin").Input("default_value: Tout").Output("values: Tout")
                   .Attr("Tin: type").Attr("Tout: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("LookupTableSizeV2").Input("table_handle: resource")
                   .Output("size: int64").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("InitializeTableV2").Input("table_handle: resource")
                   .Input("keys: Tkey").Input("values: Tval").Attr("Tkey: type")
                   .Attr("Tval: type").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("InitializeTableFromTextFileV2")
                   .Input("table_handle: resource").Input("filename: string")
                   .Attr("key_index: int >= -2").Attr("value_index: int >= -2")
                   .Attr("vocab_size: int >= -1 = -1").Attr("delimiter: string = '\\t'")
                   .Attr("offset: int = 0").Stateful());

}  // namespace
}  // namespace parallax
