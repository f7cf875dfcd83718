#include "lib/graph/attr_values.h"

#include <string>

namespace parallax {

tensorflow::AttrValue TypeAttr(tensorflow::DataType type) {
  tensorflow::AttrValue v;
  v.set_type(type);
  return v;
}
tensorflow::AttrValue IntAttr(int64_t value) {
  tensorflow::AttrValue v;
  v.set_i(value);
  return v;
}
tensorflow::AttrValue FloatAttr(float value) {
  tensorflow::AttrValue v;
  v.set_f(value);
  return v;
}
tensorflow::AttrValue BoolAttr(bool value) {
  tensorflow::AttrValue v;
  v.set_b(value);
  return v;
}
tensorflow::AttrValue StringAttr(std::string_view value) {
  tensorflow::AttrValue v;
  v.set_s(std::string(value));
  return v;
}
tensorflow::AttrValue IntListAttr(const std::vector<int64_t>& values) {
  tensorflow::AttrValue v;
  auto* list = v.mutable_list();
  for (int64_t x : values) list->add_i(x);
  return v;
}
tensorflow::AttrValue ShapeAttr(const std::vector<int64_t>& dims) {
  tensorflow::AttrValue v;
  auto* shape = v.mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_size(d);
  return v;
}
tensorflow::AttrValue Int32TensorAttr(const std::vector<int32_t>& values, bool scalar) {
  tensorflow::AttrValue v;
  auto* tensor = v.mutable_tensor();
  tensor->set_dtype(tensorflow::DT_INT32);
  if (!scalar) tensor->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
  for (int32_t x : values) tensor->add_int_val(x);
  return v;
}
tensorflow::AttrValue Int64TensorAttr(const std::vector<int64_t>& values, bool scalar) {
  tensorflow::AttrValue v;
  auto* tensor = v.mutable_tensor();
  tensor->set_dtype(tensorflow::DT_INT64);
  if (!scalar) tensor->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
  for (int64_t x : values) tensor->add_int64_val(x);
  return v;
}
tensorflow::AttrValue FloatTensorAttr(float value) {
  tensorflow::AttrValue v;
  auto* tensor = v.mutable_tensor();
  tensor->set_dtype(tensorflow::DT_FLOAT);
  tensor->add_float_val(value);
  return v;
}

}  // namespace parallax
