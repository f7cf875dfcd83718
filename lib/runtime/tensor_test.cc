#include "lib/runtime/tensor.h"

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>

namespace parallax {
namespace {

tensorflow::TensorProto Proto(const char* text) {
  tensorflow::TensorProto proto;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &proto));
  return proto;
}

TEST_CASE("tensors are aligned, shared on copy and deep-copied on request") {
  Tensor t(tensorflow::DT_FLOAT, {2, 3});
  CHECK(t.num_elements() == 6);
  CHECK(t.bytes() == 24);
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>(i);
  Tensor shared = t;
  CHECK(shared.SharesBufferWith(t));
  Tensor copy = t.DeepCopy();
  CHECK_FALSE(copy.SharesBufferWith(t));
  CHECK(TensorsBitEqual(copy, t));
  copy.data<float>()[0] = 7;
  CHECK_FALSE(TensorsBitEqual(copy, t));
  CHECK(t.DebugString(4) == "float[2,3] {0, 1, 2, 3, ...}");
  StatusOr<Tensor> reshaped = t.Reshaped({3, 2});
  REQUIRE(reshaped.ok());
  CHECK(reshaped->SharesBufferWith(t));
  CHECK(t.Reshaped({4}).status().message() == "cannot reshape 6 elements of shape [2,3] to [4]");
  Tensor empty(tensorflow::DT_FLOAT, {0, 5});
  CHECK(empty.num_elements() == 0);
  CHECK(empty.DeepCopy().shape() == TensorShape({0, 5}));
}

TEST_CASE("FromProto reads content, typed lists, one value filling the shape, and repeats") {
  StatusOr<Tensor> filled = Tensor::FromProto(Proto(
      "dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } } float_val: 0.5"));
  REQUIRE(filled.ok());
  for (float v : filled->flat<float>()) CHECK(v == 0.5f);
  StatusOr<Tensor> repeat = Tensor::FromProto(Proto(
      "dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1 int_val: 2"));
  REQUIRE(repeat.ok());
  CHECK(repeat->DebugString() == "int32[4] {1, 2, 2, 2}");
  StatusOr<Tensor> ints_as_float = Tensor::FromProto(Proto(
      "dtype: DT_FLOAT tensor_shape { dim { size: 2 } } int_val: 3"));
  REQUIRE(ints_as_float.ok());
  CHECK(ints_as_float->DebugString() == "float[2] {3, 3}");
  StatusOr<Tensor> content = Tensor::FromProto(Proto(
      "dtype: DT_INT32 tensor_shape { dim { size: 2 } } tensor_content: \"\\001\\000\\000\\000\\002\\000\\000\\000\""));
  REQUIRE(content.ok());
  CHECK(content->DebugString() == "int32[2] {1, 2}");
  StatusOr<Tensor> strings = Tensor::FromProto(Proto(
      "dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: \"a\" string_val: \"b\""));
  REQUIRE(strings.ok());
  CHECK(strings->DebugString() == "string[2] {\"a\", \"b\"}");
  StatusOr<Tensor> scalar = Tensor::FromProto(Proto("dtype: DT_INT64 int64_val: 9"));
  REQUIRE(scalar.ok());
  CHECK(scalar->rank() == 0);
  CHECK(scalar->data<int64_t>()[0] == 9);
  // Round trip.
  StatusOr<Tensor> back = Tensor::FromProto(filled->ToProto());
  REQUIRE(back.ok());
  CHECK(TensorsBitEqual(*back, *filled));
}

TEST_CASE("FromProto errors name the field") {
  CHECK(Tensor::FromProto(Proto("dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: \"abc\""))
            .status().message() == "tensor_content has 3 bytes; shape [2] of float needs 8");
  CHECK(Tensor::FromProto(Proto("dtype: DT_INT32 tensor_shape { dim { size: 1 } } int_val: 1 int_val: 2"))
            .status().message() == "int_val has 2 values for a tensor of 1 elements");
  CHECK(Tensor::FromProto(Proto("dtype: DT_FLOAT tensor_shape { dim { size: -1 } }")).status().message() ==
        "tensor_shape: shape has an unknown dimension");
  CHECK(Tensor::FromProto(Proto("tensor_shape { }")).status().message() ==
        "tensor has invalid dtype invalid");
}

}  // namespace
}  // namespace parallax
