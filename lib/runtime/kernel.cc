#include "lib/runtime/kernel.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/ranges.h>

#include "lib/ops/dtypes.h"
#include "lib/ops/op_registry.h"

namespace parallax {

// ---- KernelInit ----

const tensorflow::AttrValue* KernelInit::FindAttr(std::string_view name) const {
  auto it = attrs_.find(std::string(name));
  return it == attrs_.end() ? nullptr : &it->second;
}

namespace {

Status Missing(std::string_view name) { return InvalidArgumentError("attr '{}' is missing", name); }
Status WrongKind(std::string_view name, std::string_view expected) {
  return InvalidArgumentError("attr '{}' is not {}", name, expected);
}

}  // namespace

Status KernelInit::GetAttr(std::string_view name, tensorflow::DataType* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kType) return WrongKind(name, "a type");
  *value = attr->type();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, int64_t* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kI) return WrongKind(name, "an int");
  *value = attr->i();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, float* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kF) return WrongKind(name, "a float");
  *value = attr->f();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, bool* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kB) return WrongKind(name, "a bool");
  *value = attr->b();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, std::string* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kS) return WrongKind(name, "a string");
  *value = attr->s();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, std::vector<int64_t>* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kList) return WrongKind(name, "a list of ints");
  value->assign(attr->list().i().begin(), attr->list().i().end());
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, std::vector<tensorflow::DataType>* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kList) return WrongKind(name, "a list of types");
  value->clear();
  for (int t : attr->list().type()) value->push_back(static_cast<tensorflow::DataType>(t));
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, const tensorflow::TensorProto** value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kTensor) return WrongKind(name, "a tensor");
  *value = &attr->tensor();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name,
                           const tensorflow::TensorShapeProto** value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kShape) return WrongKind(name, "a shape");
  *value = &attr->shape();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, const tensorflow::NameAttrList** value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kFunc) return WrongKind(name, "a function");
  *value = &attr->func();
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name, std::vector<std::string>* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kList) return WrongKind(name, "a list");
  value->assign(attr->list().s().begin(), attr->list().s().end());
  return Status::Ok();
}

Status KernelInit::GetAttr(std::string_view name,
                           std::vector<const tensorflow::TensorShapeProto*>* value) const {
  const tensorflow::AttrValue* attr = FindAttr(name);
  if (attr == nullptr) return Missing(name);
  if (attr->value_case() != tensorflow::AttrValue::kList) return WrongKind(name, "a list");
  value->clear();
  for (const tensorflow::TensorShapeProto& shape : attr->list().shape()) value->push_back(&shape);
  return Status::Ok();
}

// ---- Registry ----

namespace {

struct Registration {
  KernelKey key;
  KernelFactory factory;
};

std::vector<Registration>& Registry() {
  static auto* registry = new std::vector<Registration>();  // never destroyed
  return *registry;
}

// The registration for `node`: a typed one whose constraint holds, else an untyped one.
const Registration* Lookup(const Node& node, DeviceType device) {
  const Registration* untyped = nullptr;
  for (const Registration& r : Registry()) {
    if (r.key.op != node.op() || r.key.device != device) continue;
    if (r.key.type_attr.empty()) {
      untyped = &r;
      continue;
    }
    const std::optional<tensorflow::AttrValue> attr = node.FindAttr(r.key.type_attr);
    if (attr && attr->type() == r.key.type) return &r;
  }
  return untyped;
}

}  // namespace

void RegisterKernel(KernelKey key, KernelFactory factory) {
  Registry().push_back(Registration{std::move(key), std::move(factory)});
}

bool HasKernel(const Node& node, DeviceType device) { return Lookup(node, device) != nullptr; }

StatusOr<std::unique_ptr<OpKernel>> CreateKernel(const Node& node, Device& device) {
  const Registration* registration = Lookup(node, device.type());
  if (registration == nullptr) {
    // Say which type was asked for when the op has kernels for other types.
    for (const Registration& r : Registry()) {
      if (r.key.op == node.op() && r.key.device == device.type() && !r.key.type_attr.empty()) {
        const auto attr = node.FindAttr(r.key.type_attr);
        return NotFoundError("no {} kernel for {} with {}={}", DeviceTypeName(device.type()),
                             node.op(), r.key.type_attr,
                             attr ? DataTypeShortName(attr->type()) : std::string("(unset)"));
      }
    }
    return NotFoundError("no {} kernel for {}", DeviceTypeName(device.type()), node.op());
  }
  // A kernel reads its inputs by position: a node with too few or too many (a malformed
  // graph) is refused here rather than read out of bounds.
  if (const OpSchema* schema = FindOpSchema(node.op()); schema != nullptr) {
    const std::map<std::string, tensorflow::AttrValue> attrs = node.DecodeAttrs();
    const StatusOr<int> expected =
        NumInputs(*schema, [&](std::string_view name) -> const tensorflow::AttrValue* {
          const auto it = attrs.find(std::string(name));
          return it == attrs.end() ? nullptr : &it->second;
        });
    if (expected.ok() && *expected != node.num_data_inputs()) {
      std::vector<std::string> names;
      for (const ArgSchema& arg : schema->inputs) names.push_back(arg.name);
      return InvalidArgumentError("{} takes {} input{} ({}), the node has {}", node.op(),
                                  *expected, *expected == 1 ? "" : "s", fmt::join(names, ", "),
                                  node.num_data_inputs());
    }
  }
  return registration->factory(KernelInit(node, device));
}

std::vector<KernelKey> AllKernelKeys() {
  std::vector<KernelKey> keys;
  for (const Registration& r : Registry()) keys.push_back(r.key);
  std::sort(keys.begin(), keys.end(), [](const KernelKey& a, const KernelKey& b) {
    return std::tie(a.op, a.device, a.type_attr, a.type) <
           std::tie(b.op, b.device, b.type_attr, b.type);
  });
  return keys;
}

}  // namespace parallax
