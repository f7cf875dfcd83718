// Single-process tests of the communication kernels: group_size 1 (the local result),
// the error without a communicator, and attr and input checks. The multi-process tests
// against references over every rank's inputs are collective_ops_mpitest.cc.
#include <catch2/catch.hpp>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64Vec;
using kernel_test::Iota;
using kernel_test::Run;
using testing::AttrMap;
using testing::RandomTensor;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;

AttrMap ReduceAttrs(DataType dtype, const std::string& merge, const std::string& final_op) {
  return {{"T", TypeAttr(dtype)},
          {"merge_op", StringAttr(merge)},
          {"final_op", StringAttr(final_op)}};
}

// input, group_size, group_key, instance_key
std::vector<Tensor> V2Inputs(const Tensor& input, int32_t group_size) {
  return {input, Tensor::Scalar<int32_t>(group_size), Tensor::Scalar<int32_t>(1),
          Tensor::Scalar<int32_t>(7)};
}

AttrMap PartitionAttrs(DataType dtype, DataType index_type, const std::vector<int64_t>& splits,
                       const std::vector<int64_t>& owners, int64_t group_size = 1) {
  return {{"T", TypeAttr(dtype)},
          {"Tindices", TypeAttr(index_type)},
          {"num_rows", IntAttr(splits.back())},
          {"row_splits", IntListAttr(splits)},
          {"owners", IntListAttr(owners)},
          {"group_size", IntAttr(group_size)},
          {"instance_key", IntAttr(3)}};
}

TEST_CASE("CollectiveReduceV2 over one rank is its input") {
  for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
    const Tensor input = RandomTensor(dtype, TensorShape{3, 5}, 11, -50, 50);
    for (const auto& [merge, final_op] : std::vector<std::pair<std::string, std::string>>{
             {"Add", "Id"}, {"Add", "Div"}, {"Min", "Id"}, {"Max", "Id"}, {"Mul", "Id"}}) {
      const std::vector<Tensor> out =
          Run("CollectiveReduceV2", V2Inputs(input, 1), ReduceAttrs(dtype, merge, final_op));
      CHECK(TensorsBitEqual(out[0], input));
    }
  }
}

TEST_CASE("CollectiveReduceV2 over several ranks needs a communicator") {
  CHECK(ErrorOf("CollectiveReduceV2", V2Inputs(F32({1, 2}, {2}), 2),
                ReduceAttrs(DT_FLOAT, "Add", "Div")) ==
        "node 'op' (CollectiveReduceV2): CollectiveReduceV2 with group_size 2 needs a "
        "communicator: run the job under mpirun (parallax launch)");
  CHECK(ErrorOf("CollectiveReduceV2", V2Inputs(F32({1, 2}, {2}), 0),
                ReduceAttrs(DT_FLOAT, "Add", "Div")) ==
        "node 'op' (CollectiveReduceV2): group_size must be >= 1, got 0");
}

TEST_CASE("CollectiveReduceV2 checks its attrs and inputs") {
  CHECK(ErrorOf("CollectiveReduceV2", V2Inputs(F32({1}, {1}), 1),
                ReduceAttrs(DT_FLOAT, "Max", "Div")) ==
        "node 'op' (CollectiveReduceV2): attr 'final_op' Div with merge_op Max (only Add is "
        "divided)");
  std::vector<Tensor> inputs = V2Inputs(F32({1}, {1}), 1);
  inputs[1] = I32Vec({1, 1});
  CHECK(ErrorOf("CollectiveReduceV2", inputs, ReduceAttrs(DT_FLOAT, "Add", "Id")) ==
        "node 'op' (CollectiveReduceV2): input 1 (group_size) must be an int32 scalar, got "
        "int32[2] {1, 1}");
}

TEST_CASE("CollectiveGatherV2 over one rank is its input") {
  const Tensor input = Iota(DT_FLOAT, {4, 2});
  const std::vector<Tensor> out =
      Run("CollectiveGatherV2", V2Inputs(input, 1), {{"T", TypeAttr(DT_FLOAT)}});
  CHECK(TensorsBitEqual(out[0], input));
  const Tensor empty = Iota(DT_INT64, {0, 3});
  CHECK(TensorsBitEqual(
      Run("CollectiveGatherV2", V2Inputs(empty, 1), {{"T", TypeAttr(DT_INT64)}})[0], empty));
  CHECK(ErrorOf("CollectiveGatherV2", V2Inputs(Tensor::Scalar<float>(1), 1),
                {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (CollectiveGatherV2): all-gather needs a tensor of rank >= 1 (it moves rows "
        "of dimension 0), got a scalar float");
  CHECK(ErrorOf("CollectiveGatherV2", V2Inputs(input, 3), {{"T", TypeAttr(DT_FLOAT)}}) ==
        "node 'op' (CollectiveGatherV2): CollectiveGatherV2 with group_size 3 needs a "
        "communicator: run the job under mpirun (parallax launch)");
}

TEST_CASE("ParallaxBroadcast over one rank is its input") {
  const Tensor input = Iota(DT_INT32, {2, 3});
  AttrMap attrs = {{"T", TypeAttr(DT_INT32)},
                   {"root_rank", IntAttr(0)},
                   {"group_size", IntAttr(1)},
                   {"instance_key", IntAttr(1)}};
  CHECK(TensorsBitEqual(Run("ParallaxBroadcast", {input}, attrs)[0], input));
  attrs["root_rank"] = IntAttr(1);
  CHECK(ErrorOf("ParallaxBroadcast", {input}, attrs) ==
        "node 'op' (ParallaxBroadcast): attr 'root_rank' is 1, outside the group of 1 rank");
  attrs["root_rank"] = IntAttr(0);
  attrs["group_size"] = IntAttr(2);
  CHECK(ErrorOf("ParallaxBroadcast", {input}, attrs) ==
        "node 'op' (ParallaxBroadcast): ParallaxBroadcast with group_size 2 needs a "
        "communicator: run the job under mpirun (parallax launch)");
}

// The row splits of P partitions of 7 rows (one partition empty when P = 3).
std::vector<int64_t> Splits(int partitions) {
  switch (partitions) {
    case 1: return {0, 7};
    case 2: return {0, 4, 7};
    default: return {0, 3, 3, 7};
  }
}

TEST_CASE("ParallaxSparsePull over one rank gathers rows of its local storage") {
  for (int partitions = 1; partitions <= 3; ++partitions) {
    for (DataType index_type : {DT_INT32, DT_INT64}) {
      // One rank owns every partition: its local storage is the whole variable.
      const Tensor params = Iota(DT_FLOAT, {7, 3});
      const std::vector<int64_t> owners(static_cast<size_t>(partitions), 0);
      const AttrMap attrs = PartitionAttrs(DT_FLOAT, index_type, Splits(partitions), owners);
      const std::vector<int64_t> ids = {6, 0, 3, 3, 6, 2};
      Tensor id_tensor(index_type, TensorShape{2, 3});
      for (size_t i = 0; i < ids.size(); ++i) {
        if (index_type == DT_INT32) {
          id_tensor.data<int32_t>()[i] = static_cast<int32_t>(ids[i]);
        } else {
          id_tensor.data<int64_t>()[i] = ids[i];
        }
      }
      const Tensor rows = Run("ParallaxSparsePull", {params, id_tensor}, attrs)[0];
      REQUIRE(rows.shape() == TensorShape{2, 3, 3});
      for (size_t i = 0; i < ids.size(); ++i) {
        for (int64_t c = 0; c < 3; ++c) {
          CHECK(rows.data<float>()[i * 3 + c] == static_cast<float>(ids[i] * 3 + c));
        }
      }
      // No ids: no rows.
      Tensor none(index_type, TensorShape{0});
      CHECK(Run("ParallaxSparsePull", {params, none}, attrs)[0].shape() == TensorShape{0, 3});
    }
  }
}

TEST_CASE("ParallaxScatterRowsSend over one rank is its input; Recv needs another rank") {
  const Tensor value = Iota(DT_FLOAT, {7, 3});
  for (int partitions = 1; partitions <= 3; ++partitions) {
    const std::vector<int64_t> owners(static_cast<size_t>(partitions), 0);
    AttrMap attrs = PartitionAttrs(DT_FLOAT, DT_INT32, Splits(partitions), owners);
    attrs.erase("Tindices");
    CHECK(TensorsBitEqual(Run("ParallaxScatterRowsSend", {value}, attrs)[0], value));
  }
  AttrMap attrs = PartitionAttrs(DT_FLOAT, DT_INT32, {0, 4, 7}, {0, 0});
  attrs.erase("Tindices");
  CHECK(ErrorOf("ParallaxScatterRowsSend", {Iota(DT_FLOAT, {6, 3})}, attrs) ==
        "node 'op' (ParallaxScatterRowsSend): value has 6 rows, the partitioned variable 7");
  attrs["shape"] = ShapeAttr({7, 3});
  CHECK(ErrorOf("ParallaxScatterRowsRecv", {}, attrs) ==
        "node 'op' (ParallaxScatterRowsRecv): the receive half of a row scatter runs on ranks "
        "other than root_rank 0, this is rank 0 (it must run ParallaxScatterRowsSend)");
  attrs["root_rank"] = IntAttr(1);
  CHECK(ErrorOf("ParallaxScatterRowsRecv", {}, attrs) ==
        "node 'op' (ParallaxScatterRowsRecv): attr 'root_rank' is 1, outside the group of 1 "
        "rank");
  attrs["root_rank"] = IntAttr(0);
  attrs["shape"] = ShapeAttr({8, 3});
  CHECK(ErrorOf("ParallaxScatterRowsRecv", {}, attrs) ==
        "node 'op' (ParallaxScatterRowsRecv): attr 'shape' has 2 dimensions and 8 rows; the "
        "partitioned variable has 7 rows");
}

TEST_CASE("ParallaxSparsePull checks ids, params and attrs") {
  const Tensor params = Iota(DT_FLOAT, {7, 2});
  const AttrMap attrs = PartitionAttrs(DT_FLOAT, DT_INT32, {0, 4, 7}, {0, 0});
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({1, 7})}, attrs) ==
        "node 'op' (ParallaxSparsePull): ids: index 7 (at position 1) is out of range: the "
        "variable has 7 rows");
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({-1})}, attrs) ==
        "node 'op' (ParallaxSparsePull): ids: index -1 (at position 0) is out of range: the "
        "variable has 7 rows");
  CHECK(ErrorOf("ParallaxSparsePull", {Iota(DT_FLOAT, {6, 2}), I32Vec({1})}, attrs) ==
        "node 'op' (ParallaxSparsePull): params (the local storage) has 6 rows, but rank 0 owns "
        "7 rows of the variable");
  CHECK(ErrorOf("ParallaxSparsePull", {params, I64Vec({1})}, attrs) ==
        "node 'op' (ParallaxSparsePull): ids are int64, but attr 'Tindices' says int32");
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({1})},
                PartitionAttrs(DT_FLOAT, DT_INT32, {0, 4, 7}, {0, 2})) ==
        "node 'op' (ParallaxSparsePull): attr 'owners': partition 1 is owned by rank 2, outside "
        "the group of 1");
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({1})},
                PartitionAttrs(DT_FLOAT, DT_INT32, {0, 5, 4, 7}, {0, 0, 0})) ==
        "node 'op' (ParallaxSparsePull): attr 'row_splits' decreases at entry 2: [0, 5, 4, 7]");
  AttrMap short_splits = PartitionAttrs(DT_FLOAT, DT_INT32, {0, 7}, {0, 0});
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({1})}, short_splits) ==
        "node 'op' (ParallaxSparsePull): attr 'row_splits' has 2 entries for 2 owners (expected "
        "one more)");
  AttrMap two_ranks = PartitionAttrs(DT_FLOAT, DT_INT32, {0, 4, 7}, {0, 1}, 2);
  CHECK(ErrorOf("ParallaxSparsePull", {params, I32Vec({1})}, two_ranks) ==
        "node 'op' (ParallaxSparsePull): ParallaxSparsePull with group_size 2 needs a "
        "communicator: run the job under mpirun (parallax launch)");
}

TEST_CASE("ParallaxSparsePush over one rank scales the values and keeps duplicates") {
  for (int partitions = 1; partitions <= 3; ++partitions) {
    const std::vector<int64_t> owners(static_cast<size_t>(partitions), 0);
    AttrMap attrs = PartitionAttrs(DT_FLOAT, DT_INT64, Splits(partitions), owners);
    attrs["scale"] = FloatAttr(0.5f);
    const Tensor values = F32({1, 2, 3, 4, 5, 6}, {3, 2});
    const std::vector<Tensor> out =
        Run("ParallaxSparsePush", {values, I64Vec({5, 0, 5})}, attrs);
    CHECK(TensorsBitEqual(out[0], F32({0.5f, 1, 1.5f, 2, 2.5f, 3}, {3, 2})));
    CHECK(TensorsBitEqual(out[1], I64Vec({5, 0, 5})));
    const std::vector<Tensor> empty =
        Run("ParallaxSparsePush", {F32({}, {0, 2}), I64Vec({})}, attrs);
    CHECK(empty[0].shape() == TensorShape{0, 2});
    CHECK(empty[1].shape() == TensorShape{0});
  }
}

TEST_CASE("ParallaxSparsePush checks values, indices and scale") {
  AttrMap attrs = PartitionAttrs(DT_FLOAT, DT_INT32, {0, 3}, {0});
  CHECK(ErrorOf("ParallaxSparsePush", {F32({1, 2}, {2, 1}), I32Vec({0, 3})}, attrs) ==
        "node 'op' (ParallaxSparsePush): indices: index 3 (at position 1) is out of range: the "
        "variable has 3 rows");
  CHECK(ErrorOf("ParallaxSparsePush", {F32({1, 2}, {1, 2}), I32Vec({0, 1})}, attrs) ==
        "node 'op' (ParallaxSparsePush): values [1,2] do not start with the shape of indices "
        "[2]");
  AttrMap ints = PartitionAttrs(DT_INT32, DT_INT32, {0, 3}, {0});
  ints["scale"] = FloatAttr(0.5f);
  CHECK(ErrorOf("ParallaxSparsePush", {I32({1}, {1}), I32Vec({0})}, ints) ==
        "node 'op' (ParallaxSparsePush): attr 'scale' 0.5 on int32 values (scaling needs float "
        "or double)");
  ints["scale"] = FloatAttr(1.0f);
  const std::vector<Tensor> out = Run("ParallaxSparsePush", {I32({4}, {1}), I32Vec({2})}, ints);
  CHECK(TensorsBitEqual(out[0], I32({4}, {1})));
}

}  // namespace
}  // namespace parallax
