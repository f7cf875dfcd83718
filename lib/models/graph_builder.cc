// GraphBuilder: node creation with TF's names and attrs, and the static shape rules of
// the ops the zoo and the gradient functions use.
#include "lib/models/graph_builder.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace parallax::models {

using tensorflow::AttrValue;

// ---- Shapes and attrs ----

StaticShape StaticShape::Unknown() {
  StaticShape s;
  s.known_rank = false;
  return s;
}

bool StaticShape::fully_defined() const {
  if (!known_rank) return false;
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

int64_t StaticShape::num_elements() const {
  if (!fully_defined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string StaticShape::DebugString() const {
  if (!known_rank) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    out += dims[i] < 0 ? "?" : std::to_string(dims[i]);
  }
  return out + "]";
}

tensorflow::TensorShapeProto StaticShape::ToProto() const {
  tensorflow::TensorShapeProto proto;
  if (!known_rank) {
    proto.set_unknown_rank(true);
    return proto;
  }
  for (int64_t d : dims) proto.add_dim()->set_size(d < 0 ? -1 : d);
  return proto;
}

AttrValue ShapeAttr(const StaticShape& shape) {
  AttrValue v;
  *v.mutable_shape() = shape.ToProto();
  return v;
}

DataType RefDataType(DataType type) {
  const int t = static_cast<int>(type);
  return t > 100 ? type : static_cast<DataType>(t + 100);
}
bool IsFloatingType(DataType type) {
  switch (BaseType(type)) {
    case tensorflow::DT_FLOAT:
    case tensorflow::DT_DOUBLE:
    case tensorflow::DT_HALF:
    case tensorflow::DT_BFLOAT16:
      return true;
    default:
      return false;
  }
}

StatusOr<StaticShape> BroadcastShapes(const StaticShape& a, const StaticShape& b) {
  if (!a.known_rank || !b.known_rank) return StaticShape::Unknown();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dims[static_cast<size_t>(ia)] : 1;
    const int64_t db = ib >= 0 ? b.dims[static_cast<size_t>(ib)] : 1;
    int64_t d;
    if (da == 1) d = db;
    else if (db == 1) d = da;
    else if (da < 0) d = db;
    else if (db < 0) d = da;
    else if (da == db) d = da;
    else {
      return InvalidArgumentError("shapes {} and {} do not broadcast", a.DebugString(),
                                  b.DebugString());
    }
    dims[static_cast<size_t>(i)] = d;
  }
  return StaticShape(std::move(dims));
}

namespace {

AttrValue ClassAttr(std::string_view node_name) {
  AttrValue v;
  v.mutable_list()->add_s("loc:@" + std::string(node_name));
  return v;
}

// A TensorProto of `shape` filled with `value` (one *_val entry fills the shape).
tensorflow::TensorProto FillProto(DataType dtype, const StaticShape& shape, double value) {
  tensorflow::TensorProto t;
  t.set_dtype(dtype);
  *t.mutable_tensor_shape() = shape.ToProto();
  switch (dtype) {
    case tensorflow::DT_DOUBLE: t.add_double_val(value); break;
    case tensorflow::DT_INT32: t.add_int_val(static_cast<int32_t>(value)); break;
    case tensorflow::DT_INT64: t.add_int64_val(static_cast<int64_t>(value)); break;
    case tensorflow::DT_BOOL: t.add_bool_val(value != 0); break;
    default: t.add_float_val(static_cast<float>(value)); break;
  }
  return t;
}

// Output size of a windowed op along one spatial dim (TF's SAME/VALID rule).
int64_t WindowedSize(int64_t in, int64_t window, int64_t stride, std::string_view padding) {
  if (in < 0) return -1;
  if (padding == "SAME") return (in + stride - 1) / stride;
  return (in - window + stride) / stride;
}

// The spatial shape of a 4-D window op's output: [n, h', w', c] in `data_format`'s
// order; `window_h/w` and `stride_h/w` are the spatial entries.
StaticShape WindowedShape(const std::vector<int64_t>& in, std::string_view data_format,
                          int64_t window_h, int64_t window_w, int64_t stride_h, int64_t stride_w,
                          std::string_view padding, int64_t channels) {
  if (data_format == "NCHW") {
    return StaticShape{in[0], channels, WindowedSize(in[2], window_h, stride_h, padding),
                       WindowedSize(in[3], window_w, stride_w, padding)};
  }
  return StaticShape{in[0], WindowedSize(in[1], window_h, stride_h, padding),
                     WindowedSize(in[2], window_w, stride_w, padding), channels};
}

}  // namespace

// ---- State ----

struct GraphBuilder::State {
  Graph* graph = nullptr;
  int64_t seed = 0;
  int64_t next_seed2 = 1;
  Status status;
  std::vector<std::vector<TensorInfo>> infos;  // by NodeId
  std::map<NodeId, std::vector<int64_t>> constants;
  std::vector<VariableInfo> variables;
  std::set<std::string> unique_scopes;
  std::vector<int> frame_parents = {0};  // by frame; the root is its own parent
  std::vector<int> frame_of;             // by NodeId; missing: the root
  std::map<int, std::shared_ptr<WhileLoop>> loops;  // by body frame
};

GraphBuilder::GraphBuilder(Graph* graph, int64_t seed) : state_(std::make_shared<State>()) {
  state_->graph = graph;
  state_->seed = seed;
}

GraphBuilder GraphBuilder::WithScope(std::string_view scope) const {
  if (scope.empty()) return *this;
  return GraphBuilder(state_, scope_ + std::string(scope) + "/", deps_, colocation_, context_);
}

GraphBuilder GraphBuilder::WithUniqueScope(std::string_view base) const {
  std::string name(base);
  for (int i = 1;; ++i) {
    const std::string full = scope_ + name;
    bool used = state_->unique_scopes.count(full) > 0 || graph().FindNode(full) != kNoNode;
    if (!used) {
      // A node already inside the scope also makes it taken.
      for (NodeId id : graph().NodeIds()) {
        if (graph().node(id).name().starts_with(full + "/")) {
          used = true;
          break;
        }
      }
    }
    if (!used) {
      state_->unique_scopes.insert(full);
      return WithScope(name);
    }
    name = fmt::format("{}_{}", base, i);
  }
}

GraphBuilder GraphBuilder::WithControlDependencies(std::vector<NodeId> deps) const {
  std::vector<NodeId> all = deps_;
  all.insert(all.end(), deps.begin(), deps.end());
  return GraphBuilder(state_, scope_, std::move(all), colocation_, context_);
}

GraphBuilder GraphBuilder::ColocatedWith(std::string_view node_name) const {
  return GraphBuilder(state_, scope_, deps_, std::string(node_name), context_);
}

GraphBuilder GraphBuilder::Root() const { return GraphBuilder(state_, "", {}, "", nullptr); }

GraphBuilder GraphBuilder::WithContext(std::shared_ptr<ControlFlowContext> context) const {
  return GraphBuilder(state_, scope_, deps_, colocation_, std::move(context));
}

int GraphBuilder::NewFrame(int parent) const {
  state_->frame_parents.push_back(parent);
  return static_cast<int>(state_->frame_parents.size()) - 1;
}

int GraphBuilder::FrameParent(int frame) const {
  if (frame <= 0 || static_cast<size_t>(frame) >= state_->frame_parents.size()) return 0;
  return state_->frame_parents[static_cast<size_t>(frame)];
}

int GraphBuilder::FrameOf(NodeId node) const {
  if (node < 0 || static_cast<size_t>(node) >= state_->frame_of.size()) return 0;
  return state_->frame_of[static_cast<size_t>(node)];
}

void GraphBuilder::SetFrame(NodeId node, int frame) const {
  if (node < 0) return;
  if (state_->frame_of.size() <= static_cast<size_t>(node)) {
    state_->frame_of.resize(static_cast<size_t>(node) + 1, 0);
  }
  state_->frame_of[static_cast<size_t>(node)] = frame;
}

void GraphBuilder::RegisterLoop(int frame, std::shared_ptr<WhileLoop> loop) const {
  state_->loops[frame] = std::move(loop);
}

std::shared_ptr<WhileLoop> GraphBuilder::FindLoop(int frame) const {
  auto it = state_->loops.find(frame);
  return it == state_->loops.end() ? nullptr : it->second;
}

Graph& GraphBuilder::graph() const { return *state_->graph; }
Status GraphBuilder::status() const { return state_->status; }

void GraphBuilder::SetError(Status error) const {
  if (state_->status.ok() && !error.ok()) state_->status = std::move(error);
}

std::string GraphBuilder::UniqueName(std::string_view base) const {
  return graph().UniqueName(scope_ + std::string(base));
}

static GraphBuilder::TensorInfo LookupInfo(const std::vector<std::vector<GraphBuilder::TensorInfo>>& infos,
                                    OutputRef ref) {
  if (ref.node < 0 || static_cast<size_t>(ref.node) >= infos.size()) return {};
  const auto& outs = infos[static_cast<size_t>(ref.node)];
  if (ref.port < 0 || static_cast<size_t>(ref.port) >= outs.size()) return {};
  return outs[static_cast<size_t>(ref.port)];
}

Output GraphBuilder::Info(OutputRef ref) const {
  const TensorInfo info = LookupInfo(state_->infos, ref);
  return Output{ref, info.dtype, info.shape};
}

std::optional<std::vector<int64_t>> GraphBuilder::ConstantValue(const Output& x) const {
  if (!x.valid() || x.ref.port != 0) return std::nullopt;
  auto it = state_->constants.find(x.node());
  if (it == state_->constants.end()) return std::nullopt;
  return it->second;
}

bool GraphBuilder::CheckInputs(std::string_view what, const std::vector<Output>& inputs) const {
  if (!state_->status.ok()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      SetError(InternalError("building {}{}: input {} is not a tensor", scope_, what, i));
      return false;
    }
  }
  return true;
}

std::vector<Output> GraphBuilder::AddOp(const OpSpec& spec, const std::vector<TensorInfo>& outputs,
                                        NodeId* created) const {
  std::vector<Output> result(outputs.size());
  if (created != nullptr) *created = kNoNode;
  if (!CheckInputs(spec.name, spec.inputs)) return result;
  NodeSpec node;
  node.name = UniqueName(spec.name);
  node.op = spec.op;
  for (const Output& in : spec.inputs) {
    if (context_ == nullptr) {
      node.inputs.push_back(in.ref);
      continue;
    }
    const Output mapped = context_->AddValue(in, node.name);
    if (!mapped.valid()) {
      SetError(InternalError("building {}: input {} has no value in its loop frame", node.name,
                             graph().TensorName(in.ref)));
      return result;
    }
    node.inputs.push_back(mapped.ref);
  }
  std::vector<NodeId> controls = deps_;
  controls.insert(controls.end(), spec.control_inputs.begin(), spec.control_inputs.end());
  if (context_ != nullptr && spec.inputs.empty() && controls.empty() &&
      context_->pivot() != kNoNode) {
    controls.push_back(context_->pivot());
  }
  std::set<NodeId> seen;
  for (NodeId c : controls) {
    if (c != kNoNode && seen.insert(c).second) node.inputs.push_back({c, kControlPort});
  }
  node.attrs = spec.attrs;
  if (!colocation_.empty() && !node.attrs.count("_class")) {
    node.attrs["_class"] = ClassAttr(colocation_);
  }
  StatusOr<NodeId> id = graph().AddNode(node);
  if (!id.ok()) {
    SetError(Status(id.status().code(),
                    fmt::format("building node '{}': {}", node.name, id.status().message())));
    return result;
  }
  if (state_->infos.size() <= static_cast<size_t>(*id)) {
    state_->infos.resize(static_cast<size_t>(*id) + 1);
  }
  state_->infos[static_cast<size_t>(*id)] = outputs;
  SetFrame(*id, context_ != nullptr ? context_->frame() : 0);
  if (created != nullptr) *created = *id;
  for (size_t i = 0; i < outputs.size(); ++i) {
    result[i] = Output{{*id, static_cast<int32_t>(i)}, outputs[i].dtype, outputs[i].shape};
  }
  return result;
}

NodeId GraphBuilder::AddNoOp(std::string_view name, const std::vector<NodeId>& control_inputs) const {
  NodeId id = kNoNode;
  AddOp({"NoOp", std::string(name), {}, {}, control_inputs}, {}, &id);
  return id;
}

// ---- Sources ----

Output GraphBuilder::Placeholder(std::string_view name, DataType dtype, StaticShape shape) const {
  return AddOp({"Placeholder", std::string(name), {},
                {{"dtype", TypeAttr(dtype)}, {"shape", ShapeAttr(shape)}}},
               {{dtype, shape}})[0];
}

Output GraphBuilder::Fill(std::string_view name, DataType dtype, const StaticShape& shape,
                          double value) const {
  AttrValue tensor;
  *tensor.mutable_tensor() = FillProto(dtype, shape, value);
  Output out = AddOp({"Const", std::string(name), {},
                      {{"dtype", TypeAttr(dtype)}, {"value", tensor}}},
                     {{dtype, shape}})[0];
  if (out.valid() && (dtype == tensorflow::DT_INT32 || dtype == tensorflow::DT_INT64) &&
      shape.fully_defined() && shape.num_elements() <= 16) {
    state_->constants[out.node()] =
        std::vector<int64_t>(static_cast<size_t>(shape.num_elements()), static_cast<int64_t>(value));
  }
  return out;
}

Output GraphBuilder::Scalar(std::string_view name, DataType dtype, double value) const {
  return Fill(name, dtype, StaticShape{}, value);
}

Output GraphBuilder::IntVector(std::string_view name, DataType dtype,
                               const std::vector<int64_t>& values, bool scalar) const {
  return IntTensor(name, dtype,
                   scalar ? StaticShape{} : StaticShape{static_cast<int64_t>(values.size())},
                   values);
}

Output GraphBuilder::IntTensor(std::string_view name, DataType dtype, const StaticShape& shape,
                               const std::vector<int64_t>& values) const {
  if (shape.num_elements() != static_cast<int64_t>(values.size())) {
    SetError(InvalidArgumentError("building {}{}: {} values for a Const of shape {}", scope_, name,
                                  values.size(), shape.DebugString()));
    return {};
  }
  tensorflow::TensorProto t;
  t.set_dtype(dtype);
  *t.mutable_tensor_shape() = shape.ToProto();
  for (int64_t v : values) {
    if (dtype == tensorflow::DT_INT64) t.add_int64_val(v);
    else t.add_int_val(static_cast<int32_t>(v));
  }
  AttrValue tensor;
  *tensor.mutable_tensor() = std::move(t);
  Output out = AddOp({"Const", std::string(name), {},
                      {{"dtype", TypeAttr(dtype)}, {"value", tensor}}},
                     {{dtype, shape}})[0];
  if (out.valid()) state_->constants[out.node()] = values;
  return out;
}

Output GraphBuilder::Int32s(std::string_view name, const std::vector<int64_t>& values) const {
  return IntVector(name, tensorflow::DT_INT32, values);
}
Output GraphBuilder::Int64s(std::string_view name, const std::vector<int64_t>& values) const {
  return IntVector(name, tensorflow::DT_INT64, values);
}
Output GraphBuilder::Int32Scalar(std::string_view name, int64_t value) const {
  return IntVector(name, tensorflow::DT_INT32, {value}, /*scalar=*/true);
}

// ---- Variables ----

Output GraphBuilder::InitialValue(const GraphBuilder& init, const StaticShape& shape,
                                  DataType dtype, const Initializer& spec) const {
  using Kind = Initializer::Kind;
  switch (spec.kind) {
    case Kind::kZeros: return init.Fill("zeros", dtype, shape, 0.0);
    case Kind::kOnes: return init.Fill("ones", dtype, shape, 1.0);
    case Kind::kConstant: return init.Fill("Const", dtype, shape, spec.a);
    default: break;
  }
  const bool normal = spec.kind == Kind::kTruncatedNormal;
  const std::string scope_name = normal ? "truncated_normal" : "random_uniform";
  const GraphBuilder s = init.WithScope(scope_name);
  const Output shape_t = s.Int32s("shape", shape.dims);
  std::map<std::string, AttrValue> attrs = {{"seed", IntAttr(state_->seed)},
                                            {"seed2", IntAttr(state_->next_seed2++)},
                                            {"dtype", TypeAttr(dtype)},
                                            {"T", TypeAttr(tensorflow::DT_INT32)}};
  if (normal) {
    const Output mean = s.Scalar("mean", dtype, 0.0);
    const Output stddev = s.Scalar("stddev", dtype, spec.a);
    const Output r = s.AddOp({"TruncatedNormal", "TruncatedNormal", {shape_t}, attrs},
                             {{dtype, shape}})[0];
    return init.Add(s.Mul(r, stddev, "mul"), mean, scope_name);
  }
  double lo = spec.a, hi = spec.b;
  if (spec.kind == Kind::kGlorotUniform) {
    double fan_in = 1, fan_out = 1;
    if (shape.rank() == 2) {
      fan_in = static_cast<double>(shape.dims[0]);
      fan_out = static_cast<double>(shape.dims[1]);
    } else if (shape.rank() > 2) {
      double receptive = 1;
      for (int i = 0; i + 2 < shape.rank(); ++i) receptive *= static_cast<double>(shape.dims[static_cast<size_t>(i)]);
      fan_in = receptive * static_cast<double>(shape.dims[static_cast<size_t>(shape.rank() - 2)]);
      fan_out = receptive * static_cast<double>(shape.dims[static_cast<size_t>(shape.rank() - 1)]);
    } else if (shape.rank() == 1) {
      fan_in = fan_out = static_cast<double>(shape.dims[0]);
    }
    hi = std::sqrt(6.0 / (fan_in + fan_out));
    lo = -hi;
  }
  const Output min = s.Scalar("min", dtype, lo);
  const Output max = s.Scalar("max", dtype, hi);
  const Output r = s.AddOp({"RandomUniform", "RandomUniform", {shape_t}, attrs},
                           {{dtype, shape}})[0];
  const Output range = s.Sub(max, min, "sub");
  return init.Add(s.Mul(r, range, "mul"), min, scope_name);
}

VariableInfo GraphBuilder::Variable(std::string_view name, const StaticShape& shape,
                                    DataType dtype, const Initializer& init,
                                    bool trainable) const {
  VariableInfo info;
  info.name = scope_ + std::string(name);
  info.trainable = trainable;
  if (!state_->status.ok()) return info;
  if (!shape.fully_defined()) {
    SetError(InvalidArgumentError("variable '{}': shape {} is not fully defined", info.name,
                                  shape.DebugString()));
    return info;
  }
  if (graph().FindNode(info.name) != kNoNode) {
    SetError(InvalidArgumentError("variable '{}' already exists", info.name));
    return info;
  }
  // Like TF's init_scope: no control dependencies on variables and their initialisers.
  const GraphBuilder clean(state_, scope_, {}, colocation_, nullptr);
  info.ref = clean.AddOp({"VariableV2", std::string(name), {},
                    {{"dtype", TypeAttr(dtype)},
                     {"shape", ShapeAttr(shape)},
                     {"container", StringAttr("")},
                     {"shared_name", StringAttr("")}}},
                   {{RefDataType(dtype), shape}})[0];
  const GraphBuilder colocated =
      clean.ColocatedWith(colocation_.empty() ? info.name : colocation_);
  const GraphBuilder var_scope = colocated.WithScope(name);
  info.initial_value =
      init.kind == Initializer::Kind::kInitialValue
          ? var_scope.Fill("initial_value", dtype, shape, init.a)
          : InitialValue(var_scope.WithScope("Initializer"), shape, dtype, init);
  const Output assign = var_scope.AssignOp("Assign", info.ref, info.initial_value, "Assign",
                                           /*use_locking=*/true, /*validate=*/true);
  info.initializer = assign.node();
  info.read = var_scope.Identity(info.ref, "read");
  if (state_->status.ok()) state_->variables.push_back(info);
  return info;
}

const std::vector<VariableInfo>& GraphBuilder::variables() const { return state_->variables; }

std::vector<VariableInfo> GraphBuilder::trainable_variables() const {
  std::vector<VariableInfo> out;
  for (const VariableInfo& v : state_->variables) {
    if (v.trainable) out.push_back(v);
  }
  return out;
}

// ---- Ops ----

Output GraphBuilder::Unary(std::string_view op, const Output& x, std::string_view name) const {
  const DataType t = BaseType(x.dtype);
  return AddOp({std::string(op), std::string(name), {x}, {{"T", TypeAttr(t)}}}, {{t, x.shape}})[0];
}

Output GraphBuilder::Transpose(const Output& x, const std::vector<int64_t>& perm,
                               std::string_view name) const {
  const Output p = WithScope(name).Int32s("perm", perm);
  StaticShape shape = StaticShape::Unknown();
  if (x.shape.known_rank && x.shape.rank() == static_cast<int>(perm.size())) {
    shape = StaticShape{};
    for (int64_t axis : perm) shape.dims.push_back(x.shape.dims[static_cast<size_t>(axis)]);
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({"Transpose", std::string(name), {x, p},
                {{"T", TypeAttr(t)}, {"Tperm", TypeAttr(tensorflow::DT_INT32)}}},
               {{t, shape}})[0];
}

Output GraphBuilder::Identity(const Output& x, std::string_view name) const {
  return Unary("Identity", x, name);
}
Output GraphBuilder::Neg(const Output& x, std::string_view name) const {
  return Unary("Neg", x, name);
}
Output GraphBuilder::Sqrt(const Output& x, std::string_view name) const {
  return Unary("Sqrt", x, name);
}
Output GraphBuilder::Relu(const Output& x, std::string_view name) const {
  return Unary("Relu", x, name);
}

Output GraphBuilder::Cast(const Output& x, DataType to, std::string_view name) const {
  return AddOp({"Cast", std::string(name), {x},
                {{"SrcT", TypeAttr(BaseType(x.dtype))},
                 {"DstT", TypeAttr(to)},
                 {"Truncate", BoolAttr(false)}}},
               {{to, x.shape}})[0];
}

Output GraphBuilder::Binary(std::string_view op, const Output& x, const Output& y,
                            std::string_view name, std::optional<DataType> out) const {
  if (!CheckInputs(name, {x, y})) return {};
  if (BaseType(x.dtype) != BaseType(y.dtype)) {
    SetError(InvalidArgumentError("building {}{}: {} of {} and {}", scope_, name, op,
                                  static_cast<int>(x.dtype), static_cast<int>(y.dtype)));
    return {};
  }
  StatusOr<StaticShape> shape = BroadcastShapes(x.shape, y.shape);
  if (!shape.ok()) {
    SetError(shape.status().WithPrefix(fmt::format("building {}{}", scope_, name)));
    return {};
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({std::string(op), std::string(name), {x, y}, {{"T", TypeAttr(t)}}},
               {{out.value_or(t), *shape}})[0];
}

Output GraphBuilder::Add(const Output& x, const Output& y, std::string_view name) const {
  return Binary("Add", x, y, name);
}
Output GraphBuilder::AddV2(const Output& x, const Output& y, std::string_view name) const {
  return Binary("AddV2", x, y, name);
}
Output GraphBuilder::Sub(const Output& x, const Output& y, std::string_view name) const {
  return Binary("Sub", x, y, name);
}
Output GraphBuilder::Mul(const Output& x, const Output& y, std::string_view name) const {
  return Binary("Mul", x, y, name);
}
Output GraphBuilder::RealDiv(const Output& x, const Output& y, std::string_view name) const {
  return Binary("RealDiv", x, y, name);
}
Output GraphBuilder::Maximum(const Output& x, const Output& y, std::string_view name) const {
  return Binary("Maximum", x, y, name);
}
Output GraphBuilder::FloorDiv(const Output& x, const Output& y, std::string_view name) const {
  return Binary("FloorDiv", x, y, name);
}

Output GraphBuilder::AddN(const std::vector<Output>& xs, std::string_view name) const {
  if (xs.empty() || !CheckInputs(name, xs)) {
    if (xs.empty()) SetError(InternalError("building {}{}: AddN of nothing", scope_, name));
    return {};
  }
  const DataType t = BaseType(xs[0].dtype);
  StaticShape shape = xs[0].shape;
  for (const Output& x : xs) {
    StatusOr<StaticShape> s = BroadcastShapes(shape, x.shape);
    if (s.ok()) shape = *s;
  }
  return AddOp({"AddN", std::string(name), xs,
                {{"T", TypeAttr(t)}, {"N", IntAttr(static_cast<int64_t>(xs.size()))}}},
               {{t, shape}})[0];
}

Output GraphBuilder::MatMul(const Output& a, const Output& b, bool transpose_a, bool transpose_b,
                            std::string_view name) const {
  if (!CheckInputs(name, {a, b})) return {};
  StaticShape shape = StaticShape::Unknown();
  if (a.shape.known_rank && b.shape.known_rank) {
    if (a.shape.rank() != 2 || b.shape.rank() != 2) {
      SetError(InvalidArgumentError("building {}{}: MatMul of {} and {} (rank 2 needed)", scope_,
                                    name, a.shape.DebugString(), b.shape.DebugString()));
      return {};
    }
    const int64_t m = a.shape.dims[transpose_a ? 1 : 0], ka = a.shape.dims[transpose_a ? 0 : 1];
    const int64_t kb = b.shape.dims[transpose_b ? 1 : 0], n = b.shape.dims[transpose_b ? 0 : 1];
    if (ka >= 0 && kb >= 0 && ka != kb) {
      SetError(InvalidArgumentError("building {}{}: MatMul inner dimensions differ: {} and {}",
                                    scope_, name, a.shape.DebugString(), b.shape.DebugString()));
      return {};
    }
    shape = StaticShape{m, n};
  }
  const DataType t = BaseType(a.dtype);
  return AddOp({"MatMul", std::string(name), {a, b},
                {{"T", TypeAttr(t)},
                 {"transpose_a", BoolAttr(transpose_a)},
                 {"transpose_b", BoolAttr(transpose_b)}}},
               {{t, shape}})[0];
}

Output GraphBuilder::BiasAdd(const Output& value, const Output& bias, std::string_view name,
                             std::string_view data_format) const {
  if (!CheckInputs(name, {value, bias})) return {};
  if (!CheckDataFormat(name, data_format)) return {};
  if (value.shape.known_rank && bias.shape.fully_defined() && value.shape.rank() > 0) {
    const bool nchw = data_format == "NCHW" && value.shape.rank() >= 3;
    const int64_t c = nchw ? value.shape.dims[1] : value.shape.dims.back();
    if (bias.shape.rank() != 1 || (c >= 0 && c != bias.shape.dims[0])) {
      SetError(InvalidArgumentError("building {}{}: bias {} does not match value {}", scope_, name,
                                    bias.shape.DebugString(), value.shape.DebugString()));
      return {};
    }
  }
  const DataType t = BaseType(value.dtype);
  return AddOp({"BiasAdd", std::string(name), {value, bias},
                {{"T", TypeAttr(t)}, {"data_format", StringAttr(data_format)}}},
               {{t, value.shape}})[0];
}

bool GraphBuilder::CheckDataFormat(std::string_view name, std::string_view data_format) const {
  if (data_format == "NHWC" || data_format == "NCHW") return true;
  SetError(InvalidArgumentError("building {}{}: data_format must be NHWC or NCHW, got '{}'", scope_,
                                name, data_format));
  return false;
}

Output GraphBuilder::Conv2D(const Output& input, const Output& filter, std::vector<int64_t> strides,
                            std::string_view padding, std::string_view name,
                            std::string_view data_format) const {
  if (!CheckInputs(name, {input, filter})) return {};
  if (!CheckDataFormat(name, data_format)) return {};
  StaticShape shape = StaticShape::Unknown();
  if (input.shape.known_rank && filter.shape.known_rank) {
    if (input.shape.rank() != 4 || filter.shape.rank() != 4 || strides.size() != 4) {
      SetError(InvalidArgumentError("building {}{}: Conv2D needs rank-4 input and filter", scope_,
                                    name));
      return {};
    }
    const auto& in = input.shape.dims;
    const auto& f = filter.shape.dims;
    const bool nchw = data_format == "NCHW";
    const int64_t in_c = in[nchw ? 1 : 3];
    if (in_c >= 0 && f[2] != in_c) {
      SetError(InvalidArgumentError("building {}{}: filter {} does not match input {} ({})", scope_,
                                    name, filter.shape.DebugString(), input.shape.DebugString(),
                                    data_format));
      return {};
    }
    shape = WindowedShape(in, data_format, f[0], f[1], strides[nchw ? 2 : 1], strides[nchw ? 3 : 2],
                          padding, f[3]);
  }
  const DataType t = BaseType(input.dtype);
  return AddOp({"Conv2D", std::string(name), {input, filter},
                {{"T", TypeAttr(t)},
                 {"strides", IntListAttr(strides)},
                 {"padding", StringAttr(padding)},
                 {"use_cudnn_on_gpu", BoolAttr(true)},
                 {"explicit_paddings", IntListAttr({})},
                 {"data_format", StringAttr(data_format)},
                 {"dilations", IntListAttr({1, 1, 1, 1})}}},
               {{t, shape}})[0];
}

Output GraphBuilder::MaxPool(const Output& input, std::vector<int64_t> ksize,
                             std::vector<int64_t> strides, std::string_view padding,
                             std::string_view name, std::string_view data_format) const {
  if (!CheckInputs(name, {input})) return {};
  if (!CheckDataFormat(name, data_format)) return {};
  StaticShape shape = StaticShape::Unknown();
  if (input.shape.known_rank) {
    if (input.shape.rank() != 4 || ksize.size() != 4 || strides.size() != 4) {
      SetError(InvalidArgumentError("building {}{}: MaxPool needs rank-4 input", scope_, name));
      return {};
    }
    const auto& in = input.shape.dims;
    const bool nchw = data_format == "NCHW";
    const int h = nchw ? 2 : 1;
    shape = WindowedShape(in, data_format, ksize[h], ksize[h + 1], strides[h], strides[h + 1],
                          padding, in[nchw ? 1 : 3]);
  }
  const DataType t = BaseType(input.dtype);
  return AddOp({"MaxPool", std::string(name), {input},
                {{"T", TypeAttr(t)},
                 {"ksize", IntListAttr(ksize)},
                 {"strides", IntListAttr(strides)},
                 {"padding", StringAttr(padding)},
                 {"data_format", StringAttr(data_format)}}},
               {{t, shape}})[0];
}

std::pair<Output, Output> GraphBuilder::SparseSoftmaxCrossEntropyWithLogits(
    const Output& logits, const Output& labels, std::string_view name) const {
  if (!CheckInputs(name, {logits, labels})) return {};
  StaticShape loss = StaticShape::Unknown();
  if (logits.shape.known_rank) {
    if (logits.shape.rank() != 2) {
      SetError(InvalidArgumentError("building {}{}: logits {} are not [batch, classes]", scope_,
                                    name, logits.shape.DebugString()));
      return {};
    }
    loss = StaticShape{logits.shape.dims[0]};
  }
  const DataType t = BaseType(logits.dtype);
  auto outs = AddOp({"SparseSoftmaxCrossEntropyWithLogits", std::string(name), {logits, labels},
                     {{"T", TypeAttr(t)}, {"Tlabels", TypeAttr(BaseType(labels.dtype))}}},
                    {{t, loss}, {t, logits.shape}});
  return {outs[0], outs[1]};
}

Output GraphBuilder::Reshape(const Output& x, const Output& shape, std::string_view name) const {
  if (!CheckInputs(name, {x, shape})) return {};
  StaticShape out = StaticShape::Unknown();
  if (auto values = ConstantValue(shape)) {
    out = StaticShape(*values);
    int unknown = -1;
    int64_t known = 1;
    for (int i = 0; i < out.rank(); ++i) {
      if (out.dims[static_cast<size_t>(i)] < 0) unknown = i;
      else known *= out.dims[static_cast<size_t>(i)];
    }
    const int64_t n = x.shape.num_elements();
    if (unknown >= 0 && n >= 0 && known > 0) out.dims[static_cast<size_t>(unknown)] = n / known;
  } else if (shape.valid() && graph().node(shape.node()).op() == "Shape") {
    out = Info(graph().node(shape.node()).input(0)).shape;  // Reshape(g, Shape(x)): x's shape
  } else if (shape.shape.fully_defined() && shape.shape.rank() == 1) {
    out = StaticShape(std::vector<int64_t>(static_cast<size_t>(shape.shape.dims[0]), -1));
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({"Reshape", std::string(name), {x, shape},
                {{"T", TypeAttr(t)}, {"Tshape", TypeAttr(BaseType(shape.dtype))}}},
               {{t, out}})[0];
}

Output GraphBuilder::Reshape(const Output& x, const std::vector<int64_t>& shape,
                             std::string_view name) const {
  const Output s = WithScope(name).Int32s("shape", shape);
  return Reshape(x, s, name);
}

Output GraphBuilder::ExpandDims(const Output& x, int64_t axis, std::string_view name) const {
  const Output dim = WithScope(name).Int32Scalar("dim", axis);
  StaticShape out = StaticShape::Unknown();
  if (x.shape.known_rank) {
    out = x.shape;
    const int64_t pos = axis < 0 ? x.shape.rank() + 1 + axis : axis;
    out.dims.insert(out.dims.begin() + pos, 1);
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({"ExpandDims", std::string(name), {x, dim},
                {{"T", TypeAttr(t)}, {"Tdim", TypeAttr(tensorflow::DT_INT32)}}},
               {{t, out}})[0];
}

Output GraphBuilder::GatherV2(const Output& params, const Output& indices, int64_t axis,
                              std::string_view name) const {
  const Output axis_t = WithScope(name).Int32Scalar("axis", axis);
  StaticShape out = StaticShape::Unknown();
  if (params.shape.known_rank && indices.shape.known_rank) {
    out.known_rank = true;
    for (int64_t i = 0; i < axis; ++i) out.dims.push_back(params.shape.dims[static_cast<size_t>(i)]);
    for (int64_t d : indices.shape.dims) out.dims.push_back(d);
    for (int i = static_cast<int>(axis) + 1; i < params.shape.rank(); ++i) {
      out.dims.push_back(params.shape.dims[static_cast<size_t>(i)]);
    }
  }
  const DataType t = BaseType(params.dtype);
  return AddOp({"GatherV2", std::string(name), {params, indices, axis_t},
                {{"Tparams", TypeAttr(t)},
                 {"Tindices", TypeAttr(BaseType(indices.dtype))},
                 {"Taxis", TypeAttr(tensorflow::DT_INT32)},
                 {"batch_dims", IntAttr(0)}}},
               {{t, out}})[0];
}

Output GraphBuilder::Reduction(std::string_view op, const Output& x, const Output& axes,
                               bool keep_dims, std::string_view name) const {
  if (!CheckInputs(name, {x, axes})) return {};
  StaticShape out = StaticShape::Unknown();
  auto values = ConstantValue(axes);
  if (values && x.shape.known_rank) {
    std::set<int64_t> reduced;
    for (int64_t a : *values) reduced.insert(a < 0 ? a + x.shape.rank() : a);
    out.known_rank = true;
    for (int i = 0; i < x.shape.rank(); ++i) {
      if (!reduced.count(i)) out.dims.push_back(x.shape.dims[static_cast<size_t>(i)]);
      else if (keep_dims) out.dims.push_back(1);
    }
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({std::string(op), std::string(name), {x, axes},
                {{"T", TypeAttr(t)},
                 {"Tidx", TypeAttr(BaseType(axes.dtype))},
                 {"keep_dims", BoolAttr(keep_dims)}}},
               {{t, out}})[0];
}

Output GraphBuilder::Mean(const Output& x, const std::vector<int64_t>& axes, bool keep_dims,
                          std::string_view name) const {
  const Output a = WithScope(name).Int32s("reduction_indices", axes);
  return Reduction("Mean", x, a, keep_dims, name);
}

Output GraphBuilder::Sum(const Output& x, const Output& axes, bool keep_dims,
                         std::string_view name) const {
  return Reduction("Sum", x, axes, keep_dims, name);
}

Output GraphBuilder::Prod(const Output& x, const Output& axes, std::string_view name) const {
  return Reduction("Prod", x, axes, false, name);
}

Output GraphBuilder::ReduceMeanAll(const Output& x, std::string_view name) const {
  if (!CheckInputs(name, {x})) return {};
  if (!x.shape.known_rank) {
    SetError(InvalidArgumentError("building {}{}: mean over all axes of a tensor of unknown rank",
                                  scope_, name));
    return {};
  }
  std::vector<int64_t> axes;
  for (int i = 0; i < x.shape.rank(); ++i) axes.push_back(i);
  return Reduction("Mean", x, Int32s("Const", axes), false, name);
}

Output GraphBuilder::Shape(const Output& x, DataType out_type, std::string_view name) const {
  StaticShape out = x.shape.known_rank ? StaticShape{x.shape.rank()} : StaticShape{-1};
  return AddOp({"Shape", std::string(name), {x},
                {{"T", TypeAttr(BaseType(x.dtype))}, {"out_type", TypeAttr(out_type)}}},
               {{out_type, out}})[0];
}

Output GraphBuilder::ShapeOf(const Output& x, DataType out_type, std::string_view name) const {
  if (x.valid() && x.shape.fully_defined()) return IntVector(name, out_type, x.shape.dims);
  return Shape(x, out_type, name);
}

Output GraphBuilder::SizeOf(const Output& x, std::string_view name) const {
  if (x.valid() && x.shape.fully_defined()) {
    return IntVector(name, tensorflow::DT_INT32, {x.shape.num_elements()}, /*scalar=*/true);
  }
  return AddOp({"Size", std::string(name), {x},
                {{"T", TypeAttr(BaseType(x.dtype))},
                 {"out_type", TypeAttr(tensorflow::DT_INT32)}}},
               {{tensorflow::DT_INT32, StaticShape{}}})[0];
}

Output GraphBuilder::FillOp(const Output& dims, const Output& value, std::string_view name) const {
  StaticShape out = StaticShape::Unknown();
  if (auto values = ConstantValue(dims)) out = StaticShape(*values);
  const DataType t = BaseType(value.dtype);
  return AddOp({"Fill", std::string(name), {dims, value},
                {{"T", TypeAttr(t)}, {"index_type", TypeAttr(BaseType(dims.dtype))}}},
               {{t, out}})[0];
}

Output GraphBuilder::Tile(const Output& x, const Output& multiples, std::string_view name) const {
  StaticShape out = StaticShape::Unknown();
  std::optional<std::vector<int64_t>> m = ConstantValue(multiples);
  if (!m && multiples.valid() && graph().node(multiples.node()).op() == "Shape") {
    const StaticShape s = Info(graph().node(multiples.node()).input(0)).shape;
    if (s.known_rank) m = s.dims;
  }
  if (m && x.shape.known_rank && static_cast<int>(m->size()) == x.shape.rank()) {
    out = x.shape;
    for (size_t i = 0; i < m->size(); ++i) {
      const int64_t a = out.dims[i], b = (*m)[i];
      out.dims[i] = (a < 0 || b < 0) ? -1 : a * b;
    }
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({"Tile", std::string(name), {x, multiples},
                {{"T", TypeAttr(t)}, {"Tmultiples", TypeAttr(BaseType(multiples.dtype))}}},
               {{t, out}})[0];
}

Output GraphBuilder::ConcatV2(const std::vector<Output>& xs, int64_t axis,
                              std::string_view name) const {
  const Output axis_t = WithScope(name).Int32Scalar("axis", axis);
  if (!CheckInputs(name, xs)) return {};
  StaticShape out = xs[0].shape;
  if (out.known_rank) {
    const size_t a = static_cast<size_t>(axis < 0 ? axis + out.rank() : axis);
    for (size_t i = 1; i < xs.size(); ++i) {
      const StaticShape& s = xs[i].shape;
      if (!s.known_rank || s.rank() != out.rank()) {
        out = StaticShape::Unknown();
        break;
      }
      out.dims[a] = (out.dims[a] < 0 || s.dims[a] < 0) ? -1 : out.dims[a] + s.dims[a];
    }
  }
  std::vector<Output> inputs = xs;
  inputs.push_back(axis_t);
  const DataType t = BaseType(xs[0].dtype);
  return AddOp({"ConcatV2", std::string(name), inputs,
                {{"T", TypeAttr(t)},
                 {"N", IntAttr(static_cast<int64_t>(xs.size()))},
                 {"Tidx", TypeAttr(tensorflow::DT_INT32)}}},
               {{t, out}})[0];
}

Output GraphBuilder::StridedSlice1D(const Output& x, int64_t begin, std::optional<int64_t> end,
                                    bool shrink, std::string_view name) const {
  const GraphBuilder s = WithScope(name);
  const Output b = s.Int32s("stack", {begin});
  const Output e = s.Int32s("stack_1", {end.value_or(shrink ? begin + 1 : 0)});
  const Output st = s.Int32s("stack_2", {1});
  StaticShape out{};
  if (!shrink) {
    int64_t n = -1;
    if (x.shape.fully_defined() && x.shape.rank() == 1) {
      const int64_t stop = end.value_or(x.shape.dims[0]);
      n = std::max<int64_t>(0, std::min(stop, x.shape.dims[0]) - begin);
    }
    out = StaticShape{n};
  }
  const DataType t = BaseType(x.dtype);
  return AddOp({"StridedSlice", std::string(name), {x, b, e, st},
                {{"T", TypeAttr(t)},
                 {"Index", TypeAttr(tensorflow::DT_INT32)},
                 {"begin_mask", IntAttr(0)},
                 {"end_mask", IntAttr(end.has_value() || shrink ? 0 : 1)},
                 {"ellipsis_mask", IntAttr(0)},
                 {"new_axis_mask", IntAttr(0)},
                 {"shrink_axis_mask", IntAttr(shrink ? 1 : 0)}}},
               {{t, out}})[0];
}

Output GraphBuilder::BroadcastGradientArgs(const Output& s0, const Output& s1, Output* r1,
                                           std::string_view name) const {
  const DataType t = BaseType(s0.dtype);
  auto outs = AddOp({"BroadcastGradientArgs", std::string(name), {s0, s1}, {{"T", TypeAttr(t)}}},
                    {{t, StaticShape{-1}}, {t, StaticShape{-1}}});
  if (r1 != nullptr) *r1 = outs[1];
  return outs[0];
}

Output GraphBuilder::PreventGradient(const Output& x, std::string_view message,
                                     std::string_view name) const {
  const DataType t = BaseType(x.dtype);
  return AddOp({"PreventGradient", std::string(name), {x},
                {{"T", TypeAttr(t)}, {"message", StringAttr(message)}}},
               {{t, x.shape}})[0];
}

Output GraphBuilder::ZerosLike(const Output& x, std::string_view name) const {
  return Unary("ZerosLike", x, name);
}

void GraphBuilder::SetShape(Output* x, const StaticShape& shape) const {
  if (!x->valid()) return;
  x->shape = shape;
  auto& outs = state_->infos[static_cast<size_t>(x->node())];
  if (static_cast<size_t>(x->ref.port) < outs.size()) outs[static_cast<size_t>(x->ref.port)].shape = shape;
}

std::pair<Output, Output> GraphBuilder::Unique(const Output& x, std::string_view name) const {
  const DataType t = BaseType(x.dtype);
  auto outs = AddOp({"Unique", std::string(name), {x},
                     {{"T", TypeAttr(t)}, {"out_idx", TypeAttr(tensorflow::DT_INT32)}}},
                    {{t, StaticShape{-1}}, {tensorflow::DT_INT32, x.shape}});
  return {outs[0], outs[1]};
}

Output GraphBuilder::UnsortedSegmentSum(const Output& data, const Output& segment_ids,
                                        const Output& num_segments, std::string_view name) const {
  StaticShape out = StaticShape::Unknown();
  if (data.shape.known_rank && segment_ids.shape.known_rank) {
    out = StaticShape{-1};
    for (int i = segment_ids.shape.rank(); i < data.shape.rank(); ++i) {
      out.dims.push_back(data.shape.dims[static_cast<size_t>(i)]);
    }
  }
  const DataType t = BaseType(data.dtype);
  return AddOp({"UnsortedSegmentSum", std::string(name), {data, segment_ids, num_segments},
                {{"T", TypeAttr(t)},
                 {"Tindices", TypeAttr(BaseType(segment_ids.dtype))},
                 {"Tnumsegments", TypeAttr(BaseType(num_segments.dtype))}}},
               {{t, out}})[0];
}

Output GraphBuilder::AssignOp(std::string_view op, const Output& ref, const Output& value,
                              std::string_view name, bool use_locking, bool validate) const {
  const DataType t = BaseType(ref.dtype);
  std::map<std::string, AttrValue> attrs = {{"T", TypeAttr(t)},
                                            {"use_locking", BoolAttr(use_locking)}};
  if (validate) attrs["validate_shape"] = BoolAttr(true);
  return AddOp({std::string(op), std::string(name), {ref, value}, attrs},
               {{RefDataType(t), ref.shape}})[0];
}

Output GraphBuilder::Assign(const Output& ref, const Output& value, std::string_view name,
                            bool use_locking) const {
  return AssignOp("Assign", ref, value, name, use_locking, /*validate=*/true);
}
Output GraphBuilder::AssignAdd(const Output& ref, const Output& value, std::string_view name) const {
  return AssignOp("AssignAdd", ref, value, name, false, false);
}
Output GraphBuilder::AssignSub(const Output& ref, const Output& value, std::string_view name) const {
  return AssignOp("AssignSub", ref, value, name, false, false);
}

Output GraphBuilder::ScatterOp(std::string_view op, const Output& ref, const Output& indices,
                               const Output& updates, std::string_view name) const {
  const DataType t = BaseType(ref.dtype);
  return AddOp({std::string(op), std::string(name), {ref, indices, updates},
                {{"T", TypeAttr(t)},
                 {"Tindices", TypeAttr(BaseType(indices.dtype))},
                 {"use_locking", BoolAttr(false)}}},
               {{RefDataType(t), ref.shape}})[0];
}

Output GraphBuilder::ScatterAdd(const Output& ref, const Output& indices, const Output& updates,
                                std::string_view name) const {
  return ScatterOp("ScatterAdd", ref, indices, updates, name);
}
Output GraphBuilder::ScatterSub(const Output& ref, const Output& indices, const Output& updates,
                                std::string_view name) const {
  return ScatterOp("ScatterSub", ref, indices, updates, name);
}

}  // namespace parallax::models
