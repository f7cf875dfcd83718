// The op registry: what Parallax knows about each TensorFlow op, keyed by op name.
//
// An OpSchema is the op's signature in TensorFlow's registration language (inputs,
// outputs and attrs, e.g. "var: Ref(T)", "values: N * T", "components: Tcomponents")
// plus the traits that the analyses and passes ask about: is it a variable, a reader or
// queue of the input pipeline, stateful, an optimizer update (and which of its inputs is
// the variable, the gradient, the indices and the slots), a collective.
//
// Terms:
//  - an *apply op* updates a variable in place from a gradient: ApplyAdam,
//    SparseApplyMomentum, ScatterSub, ResourceApplyGradientDescent, ...
//  - it is *sparse* when it takes an indices input (IndexedSlices: values + indices).
//  - ops that are not registered are *opaque*: legal in any graph, passed through
//    untouched by the transformer; only their output count is unknown.
//
// Registration sits beside the op family it describes (array_ops.cc, math_ops.cc, ...)
// through PX_REGISTER_OP; the registry is immutable after static initialisation.
#ifndef PARALLAX_LIB_OPS_OP_REGISTRY_H_
#define PARALLAX_LIB_OPS_OP_REGISTRY_H_

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "protos/graph.pb.h"

namespace parallax {

// One input or output argument, parsed from "name: TYPE" where TYPE is one of
//   T            a type attr          float | int32 | resource | ...  a fixed DataType
//   Ref(T)       a reference input    N * T | N * int32              N copies (number attr)
//   Tlist        a list(type) attr:   as many tensors as the list has types
struct ArgSchema {
  std::string name;
  tensorflow::DataType fixed_type = tensorflow::DT_INVALID;  // set for fixed types
  std::string type_attr;       // "T" in "x: T"
  std::string number_attr;     // "N" in "values: N * T"
  std::string type_list_attr;  // "Tcomponents" in "components: Tcomponents"
  bool is_ref = false;         // Ref(...): the op reads or writes the variable itself
};

struct AttrSchema {
  std::string name;
  std::string type;  // "type", "int", "list(type)", "shape", "bool", "string", "tensor", ...
  std::optional<tensorflow::AttrValue> default_value;
};

// What an apply op (optimizer update) consumes, by input index.
struct ApplySchema {
  int var_input = 0;               // the variable (ref or resource handle)
  int grad_input = -1;             // the gradient (values, for sparse updates)
  int indices_input = -1;          // >= 0 for sparse updates
  std::vector<int> slot_inputs;    // optimizer slots updated with the variable (m, v, accum)
};

struct OpSchema {
  std::string name;
  std::vector<ArgSchema> inputs;
  std::vector<ArgSchema> outputs;
  std::vector<AttrSchema> attrs;

  // Traits.
  bool is_stateful = false;        // must not be pruned, deduplicated or constant-folded
  bool is_variable = false;        // VariableV2, Variable, VarHandleOp
  bool is_resource_variable = false;
  bool is_input_pipeline = false;  // readers, queues, iterators, decoders of input data
  bool is_collective = false;      // communication between replicas
  std::optional<ApplySchema> apply;  // set for optimizer updates and scatter updates

  bool is_sparse_apply() const { return apply && apply->indices_input >= 0; }
  const AttrSchema* FindAttr(std::string_view attr_name) const;
};

// Looks up a node's attr by name; returns nullptr when the node does not set it (the
// schema's default then applies).
using AttrLookup = std::function<const tensorflow::AttrValue*(std::string_view)>;

// The number of outputs an op produces for a node with these attrs. Outputs declared
// with a number attr or type-list attr take their count from the node's attrs (or the
// schema's default). An error names the missing or malformed attr.
StatusOr<int> NumOutputs(const OpSchema& op, const AttrLookup& attrs);

// The number of data inputs, counted the same way (control inputs are not counted).
StatusOr<int> NumInputs(const OpSchema& op, const AttrLookup& attrs);

// The first output port of output arg `arg_name` (function bodies name outputs
// "node:arg:index"). Errors: no such output arg, or a count attr that is missing.
StatusOr<int> OutputArgPort(const OpSchema& op, const AttrLookup& attrs,
                            std::string_view arg_name);

// Looks attrs up in `node`, which must outlive the returned function.
AttrLookup NodeAttrLookup(const tensorflow::NodeDef& node);

// The op's schema, or nullptr for an opaque (unregistered) op.
const OpSchema* FindOpSchema(std::string_view op_name);

// Every registered op, sorted by name.
std::vector<const OpSchema*> AllOpSchemas();

// Builds a schema from TensorFlow-style specs; registration helper.
class OpSchemaBuilder {
 public:
  explicit OpSchemaBuilder(std::string name);
  OpSchemaBuilder& Input(std::string_view spec);    // "var: Ref(T)"
  OpSchemaBuilder& Output(std::string_view spec);   // "out: Ref(T)"
  OpSchemaBuilder& Attr(std::string_view spec);     // "T: type", "use_locking: bool = false"
  OpSchemaBuilder& Stateful();
  OpSchemaBuilder& Variable(bool resource);
  OpSchemaBuilder& InputPipeline();
  OpSchemaBuilder& Collective();
  OpSchemaBuilder& Apply(ApplySchema apply);
  // Parses the specs; a malformed spec is a programming error reported at startup.
  StatusOr<OpSchema> Build() const;

 private:
  OpSchema schema_;
  std::vector<std::string> input_specs_, output_specs_, attr_specs_;
};

namespace ops_internal {
// Registers at static-initialisation time; aborts with the spec error on a bad spec.
struct OpRegistration {
  explicit OpRegistration(const OpSchemaBuilder& builder);
};
}  // namespace ops_internal

#define PX_REGISTER_OP_CONCAT_INNER_(a, b) a##b
#define PX_REGISTER_OP_CONCAT_(a, b) PX_REGISTER_OP_CONCAT_INNER_(a, b)
// PX_REGISTER_OP(OpSchemaBuilder("MatMul").Input("a: T").Input("b: T").Output(...)...);
#define PX_REGISTER_OP(builder)                                                       \
  static ::parallax::ops_internal::OpRegistration PX_REGISTER_OP_CONCAT_(             \
      px_op_registration_, __COUNTER__)(builder)

}  // namespace parallax

#endif  // PARALLAX_LIB_OPS_OP_REGISTRY_H_
