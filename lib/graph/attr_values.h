// Builders for AttrValue and Const tensors: the one place that spells out how an int, a
// type, a shape or a small tensor becomes an attr, for passes, the model builder and
// tests alike.
#ifndef PARALLAX_LIB_GRAPH_ATTR_VALUES_H_
#define PARALLAX_LIB_GRAPH_ATTR_VALUES_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "protos/graph.pb.h"

namespace parallax {

tensorflow::AttrValue TypeAttr(tensorflow::DataType type);
tensorflow::AttrValue IntAttr(int64_t value);
tensorflow::AttrValue FloatAttr(float value);
tensorflow::AttrValue BoolAttr(bool value);
tensorflow::AttrValue StringAttr(std::string_view value);
tensorflow::AttrValue IntListAttr(const std::vector<int64_t>& values);
tensorflow::AttrValue ShapeAttr(const std::vector<int64_t>& dims);  // -1: unknown dim
// A scalar (`scalar`) or 1-D int32/int64 tensor attr, and a scalar float, for Consts.
tensorflow::AttrValue Int32TensorAttr(const std::vector<int32_t>& values, bool scalar);
tensorflow::AttrValue Int64TensorAttr(const std::vector<int64_t>& values, bool scalar);
tensorflow::AttrValue FloatTensorAttr(float value);

}  // namespace parallax

#endif  // PARALLAX_LIB_GRAPH_ATTR_VALUES_H_
