// Tests of Assert and CheckNumerics(V2): passing checks pass their input through, failing
// ones give TF's exact messages (Assert's data summarised as TF's SummarizeValue does).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::RunOp;

// "" when the op succeeds, else its message.
std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                    int num_outputs = -1) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs, {}, num_outputs);
  return run.ok() ? "" : run.status().message();
}

AttrMap AssertAttrs(const std::vector<Tensor>& data, int64_t summarize = 3) {
  tensorflow::AttrValue types;
  types.mutable_list();
  for (const Tensor& t : data) types.mutable_list()->add_type(t.dtype());
  return {{"T", types}, {"summarize", IntAttr(summarize)}};
}

std::string AssertError(bool condition, const std::vector<Tensor>& data, int64_t summarize = 3) {
  std::vector<Tensor> inputs = {Tensor::Scalar<bool>(condition)};
  inputs.insert(inputs.end(), data.begin(), data.end());
  return ErrorOf("Assert", inputs, AssertAttrs(data, summarize), 0);
}

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<std::string>(v, TensorShape(std::move(shape)));
}

TEST_CASE("Assert passes on true and fails with TF's message on false") {
  const Tensor msg = Tensor::Scalar<std::string>("x must be positive:");
  const Tensor x = Tensor::FromVector<int32_t>({1, -2, 3, 4, 5}, {5});
  CHECK(AssertError(true, {msg, x}) == "");
  CHECK(AssertError(false, {msg, x}) ==
        "node 'op' (Assert): assertion failed: [x must be positive:] [1 -2 3...]");
  // summarize < 0 prints everything; summarize 0 prints nothing but the ellipsis.
  CHECK(AssertError(false, {x}, -1) == "node 'op' (Assert): assertion failed: [1 -2 3 4 5]");
  CHECK(AssertError(false, {x}, 0) == "node 'op' (Assert): assertion failed: [...]");
  CHECK(AssertError(false, {}) == "node 'op' (Assert): assertion failed: ");
}

TEST_CASE("Assert summarises every dtype and rank as TF's SummarizeValue") {
  const Tensor m = Tensor::FromVector<float>({0.5f, 1.0f / 3, -2, 1e20f}, {2, 2});
  CHECK(AssertError(false, {m}, 10) ==
        "node 'op' (Assert): assertion failed: [[0.5 0.333333343][-2 1e+20]]");
  CHECK(AssertError(false, {m}, 3) ==
        "node 'op' (Assert): assertion failed: [[0.5 0.333333343][-2...]...]");
  const Tensor d = Tensor::FromVector<double>({0.1, std::numeric_limits<double>::infinity(),
                                               std::nan("")}, {3});
  CHECK(AssertError(false, {d}) == "node 'op' (Assert): assertion failed: [0.1 inf nan]");
  const Tensor b = Tensor::FromVector<bool>({true, false}, {2});
  CHECK(AssertError(false, {b}) == "node 'op' (Assert): assertion failed: [1 0]");
  const Tensor s = Strings({"a\"b", "new\nline"}, {2});
  CHECK(AssertError(false, {s}) == "node 'op' (Assert): assertion failed: [a\\\"b new\\nline]");
  const Tensor empty(tensorflow::DT_INT64, TensorShape({0, 3}));
  CHECK(AssertError(false, {empty}) == "node 'op' (Assert): assertion failed: []");
  const Tensor i64 = Tensor::Scalar<int64_t>(-9000000000LL);
  CHECK(AssertError(false, {i64}) == "node 'op' (Assert): assertion failed: [-9000000000]");
}

TEST_CASE("Assert wants a scalar condition") {
  const Tensor cond = Tensor::FromVector<bool>({false, false}, {2});
  CHECK(ErrorOf("Assert", {cond}, AssertAttrs({}), 0) ==
        "node 'op' (Assert): In[0] should be a scalar: [2]");
  // TF's legacy scalar: shape [1].
  const Tensor legacy = Tensor::FromVector<bool>({true}, {1});
  CHECK(ErrorOf("Assert", {legacy}, AssertAttrs({}), 0) == "");
}

template <typename T>
Tensor Values(std::vector<T> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<T>(v, {n});
}

// Half and bfloat16 tensors from bit patterns.
Tensor Bits16(DataType dtype, std::vector<uint16_t> bits) {
  Tensor t(dtype, TensorShape({static_cast<int64_t>(bits.size())}));
  std::copy(bits.begin(), bits.end(), static_cast<uint16_t*>(t.raw_data()));
  return t;
}

TEST_CASE("CheckNumerics passes finite tensors through and names NaN and Inf as TF") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  AttrMap attrs = {{"T", TypeAttr(tensorflow::DT_FLOAT)}, {"message", StringAttr("grads")}};
  const Tensor ok = Values<float>({1, -2, 3e38f});
  StatusOr<testing::OpRun> run = RunOp("CheckNumerics", {ok}, attrs);
  REQUIRE(run.ok());
  CHECK(TensorsBitEqual(run->outputs[0], ok));
  CHECK(ErrorOf("CheckNumerics", {Values<float>({})}, attrs) == "");
  CHECK(ErrorOf("CheckNumerics", {Values<float>({1, nan})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had NaN values");
  CHECK(ErrorOf("CheckNumerics", {Values<float>({-inf, 1})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had Inf values");
  CHECK(ErrorOf("CheckNumerics", {Values<float>({inf, nan})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had Inf and NaN values");

  attrs["T"] = TypeAttr(tensorflow::DT_DOUBLE);
  CHECK(ErrorOf("CheckNumerics", {Values<double>({0, std::nan("")})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had NaN values");
  // Half: 0x7C00 is +Inf, 0xFE00 a NaN, 0x3C00 is 1.
  attrs["T"] = TypeAttr(tensorflow::DT_HALF);
  CHECK(ErrorOf("CheckNumerics", {Bits16(tensorflow::DT_HALF, {0x3C00, 0x7BFF})}, attrs) == "");
  CHECK(ErrorOf("CheckNumerics", {Bits16(tensorflow::DT_HALF, {0x3C00, 0x7C00})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had Inf values");
  CHECK(ErrorOf("CheckNumerics", {Bits16(tensorflow::DT_HALF, {0xFE00})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had NaN values");
  // bfloat16: 0xFF80 is -Inf, 0x7FC0 a NaN.
  attrs["T"] = TypeAttr(tensorflow::DT_BFLOAT16);
  CHECK(ErrorOf("CheckNumerics", {Bits16(tensorflow::DT_BFLOAT16, {0x3F80, 0x7F7F})}, attrs) == "");
  CHECK(ErrorOf("CheckNumerics", {Bits16(tensorflow::DT_BFLOAT16, {0xFF80, 0x7FC0})}, attrs) ==
        "node 'op' (CheckNumerics): grads : Tensor had Inf and NaN values");
}

TEST_CASE("CheckNumericsV2 tells -Inf from +Inf") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const AttrMap attrs = {{"T", TypeAttr(tensorflow::DT_FLOAT)}, {"message", StringAttr("m")}};
  const std::string prefix = "node 'op' (CheckNumericsV2): m : Tensor had ";
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({1, 2})}, attrs) == "");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({-inf})}, attrs) == prefix + "-Inf values");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({inf})}, attrs) == prefix + "+Inf values");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({nan})}, attrs) == prefix + "NaN values");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({inf, -inf})}, attrs) ==
        prefix + "-Inf and +Inf values");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({nan, inf})}, attrs) ==
        prefix + "+Inf and NaN values");
  CHECK(ErrorOf("CheckNumericsV2", {Values<float>({nan, inf, -inf})}, attrs) ==
        prefix + "-Inf, +Inf, and NaN values");
}

}  // namespace
}  // namespace parallax
