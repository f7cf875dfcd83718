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
// The N-d forms name the dtype attr T (not dtype) and lock by default, as in TF.
PX_REGISTER_OP(OpSchemaBuilder("ResourceScatterNdUpdate").Input("ref: resource")
                   .Input("indices: Tindices").Input("updates: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}").Attr("use_locking: bool = true").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("ResourceScatterNdAdd").Input("ref: resource")
                   .Input("indices: Tindices").Input("updates: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}").Attr("use_locking: bool = true").Stateful());
PX_REGISTER_OP(OpSchemaBuilder("ResourceScatterNdSub").Input("ref: resource")
                   .Input("indices: Tindices").Input("updates: T").Attr("T: type")
                   .Attr("Tindices: {int32, int64}").Attr("use_locking: bool = true").Stateful());

// Lookup tables: state initialised once (HashTable) or updated (MutableHashTable*), read
// by feature columns. V2 ops pass a resource handle; the TF1 ops they replaced a
// Ref(string) one.
std::string TableHandle(bool v2) { return v2 ? "resource" : "Ref(string)"; }
std::string TableOpName(std::string name, bool v2) { return v2 ? name + "V2" : name; }

OpSchemaBuilder Table(std::string name, bool v2, bool with_value_shape) {
  OpSchemaBuilder b(TableOpName(std::move(name), v2));
  b.Output("table_handle: " + TableHandle(v2)).Attr("container: string = ''")
      .Attr("shared_name: string = ''").Attr("use_node_name_sharing: bool = false")
      .Attr("key_dtype: type").Attr("value_dtype: type").Stateful();
  if (with_value_shape) b.Attr("value_shape: shape = {}");
  return b;
}

// Find, Insert, Import: (table, keys, default_value or values), typed Tin and Tout.
OpSchemaBuilder TableKeysValues(std::string name, bool v2, std::string_view second,
                                bool has_output) {
  OpSchemaBuilder b(TableOpName(std::move(name), v2));
  b.Input("table_handle: " + TableHandle(v2)).Input("keys: Tin")
      .Input(std::string(second) + ": Tout").Attr("Tin: type").Attr("Tout: type").Stateful();
  if (has_output) b.Output("values: Tout");
  return b;
}

OpSchemaBuilder TableSize(bool v2) {
  OpSchemaBuilder b(TableOpName("LookupTableSize", v2));
  b.Input("table_handle: " + TableHandle(v2)).Output("size: int64").Stateful();
  return b;
}

OpSchemaBuilder TableExport(bool v2) {
  OpSchemaBuilder b(TableOpName("LookupTableExport", v2));
  b.Input("table_handle: " + TableHandle(v2)).Output("keys: Tkeys").Output("values: Tvalues")
      .Attr("Tkeys: type").Attr("Tvalues: type").Stateful();
  return b;
}

OpSchemaBuilder InitializeTable(bool v2) {
  OpSchemaBuilder b(TableOpName("InitializeTable", v2));
  b.Input("table_handle: " + TableHandle(v2)).Input("keys: Tkey").Input("values: Tval")
      .Attr("Tkey: type").Attr("Tval: type").Stateful();
  return b;
}

OpSchemaBuilder InitializeTableFromTextFile(bool v2) {
  OpSchemaBuilder b(TableOpName("InitializeTableFromTextFile", v2));
  b.Input("table_handle: " + TableHandle(v2)).Input("filename: string")
      .Attr("key_index: int >= -2").Attr("value_index: int >= -2")
      .Attr("vocab_size: int >= -1 = -1").Attr("delimiter: string = '\\t'")
      .Attr("offset: int = 0").Stateful();
  return b;
}

PX_REGISTER_OP(Table("HashTable", true, false));
PX_REGISTER_OP(Table("HashTable", false, false));
PX_REGISTER_OP(Table("MutableHashTable", true, false));
PX_REGISTER_OP(Table("MutableHashTable", false, false));
PX_REGISTER_OP(Table("MutableHashTableOfTensors", true, true));
PX_REGISTER_OP(Table("MutableHashTableOfTensors", false, true));
PX_REGISTER_OP(TableKeysValues("LookupTableFind", true, "default_value", true));
PX_REGISTER_OP(TableKeysValues("LookupTableFind", false, "default_value", true));
PX_REGISTER_OP(TableKeysValues("LookupTableInsert", true, "values", false));
PX_REGISTER_OP(TableKeysValues("LookupTableInsert", false, "values", false));
PX_REGISTER_OP(TableKeysValues("LookupTableImport", true, "values", false));
PX_REGISTER_OP(TableKeysValues("LookupTableImport", false, "values", false));
PX_REGISTER_OP(TableSize(true));
PX_REGISTER_OP(TableSize(false));
PX_REGISTER_OP(TableExport(true));
PX_REGISTER_OP(TableExport(false));
PX_REGISTER_OP(InitializeTable(true));
PX_REGISTER_OP(InitializeTable(false));
PX_REGISTER_OP(InitializeTableFromTextFile(true));
PX_REGISTER_OP(InitializeTableFromTextFile(false));

}  // namespace
}  // namespace parallax
