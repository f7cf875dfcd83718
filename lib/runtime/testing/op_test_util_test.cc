#include "lib/runtime/testing/op_test_util.h"

#include <catch2/catch.hpp>

namespace parallax::testing {
namespace {

TEST_CASE("RunOp runs an op on fed inputs and on variables") {
  Tensor x = RandomTensor(tensorflow::DT_FLOAT, {3}, 1);
  StatusOr<OpRun> identity = RunOp("Identity", {x}, {{"T", TypeAttr(tensorflow::DT_FLOAT)}});
  REQUIRE(identity.ok());
  CHECK(CompareTensors(identity->outputs[0], x) == "");

  Tensor value = Tensor::FromVector<float>({1, 2, 3}, {3});
  StatusOr<OpRun> assign = RunOp("Assign", {RandomTensor(tensorflow::DT_FLOAT, {3}, 2), value},
                                 {{"T", TypeAttr(tensorflow::DT_FLOAT)}}, {0});
  REQUIRE(assign.ok());
  CHECK(CompareTensors(assign->variables.at(0), value) == "");
  CHECK(CompareTensors(assign->outputs[0], value) == "");
  CHECK(CompareTensors(value, Tensor::FromVector<float>({1, 2, 4}, {3})) ==
        "element 2 differs: 3 vs expected 4 (of 3 elements)");
}

}  // namespace
}  // namespace parallax::testing
