// tf.data kernels, run as graphs the way TF1 builds them: datasets, a FunctionDef
// library for the functions, IteratorV2 + MakeIterator + IteratorGetNext.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"

namespace parallax {
namespace {

// Attrs of a dataset node with one int64 scalar component.
constexpr const char* kInt64Types =
    R"(attr { key: "output_types" value { list { type: DT_INT64 } } }
       attr { key: "output_shapes" value { list { shape { } } } })";

std::string Int64Const(const std::string& name, const std::vector<int64_t>& values,
                       bool scalar = false) {
  std::string text = "node { name: \"" + name + "\" op: \"Const\" attr { key: \"dtype\" value "
                     "{ type: DT_INT64 } } attr { key: \"value\" value { tensor { dtype: DT_INT64 "
                     "tensor_shape { ";
  if (!scalar) text += "dim { size: " + std::to_string(values.size()) + " } ";
  text += "} ";
  for (int64_t v : values) text += "int64_val: " + std::to_string(v) + " ";
  return text + "} } } }\n";
}

std::string BoolConst(const std::string& name, bool value) {
  return "node { name: \"" + name + "\" op: \"Const\" attr { key: \"dtype\" value { type: "
         "DT_BOOL } } attr { key: \"value\" value { tensor { dtype: DT_BOOL tensor_shape { } "
         "bool_val: " + (value ? "true" : "false") + " } } } }\n";
}

// range(0, n) as a TensorSliceDataset named "source".
std::string Source(int n) {
  std::vector<int64_t> values;
  for (int i = 0; i < n; ++i) values.push_back(i);
  return Int64Const("values", values) +
         R"(node { name: "source" op: "TensorSliceDataset" input: "values"
                attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
                attr { key: "output_shapes" value { list { shape { } } } } })";
}

// An iterator over dataset node `last`, initialised by "make".
std::string IteratorOver(const std::string& last, const std::string& shapes = "shape { }") {
  return R"(node { name: "iterator" op: "IteratorV2"
                attr { key: "shared_name" value { s: "" } } attr { key: "container" value { s: "" } }
                attr { key: "output_types" value { list { type: DT_INT64 } } }
                attr { key: "output_shapes" value { list { )" + shapes + R"( } } } }
         node { name: "make" op: "MakeIterator" input: ")" + last + R"(" input: "iterator" }
         node { name: "next" op: "IteratorGetNext" input: "iterator"
                attr { key: "output_types" value { list { type: DT_INT64 } } }
                attr { key: "output_shapes" value { list { )" + shapes + R"( } } } })";
}

// Every element the iterator yields (flattened int64 values per element).
std::vector<std::vector<int64_t>> Drain(const std::string& text, InputOptions input = {},
                                        Status* error = nullptr) {
  StatusOr<Graph> graph = ParseGraph(text, "datasets.pbtxt");
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device, std::move(input));
  StatusOr<std::vector<Tensor>> made = executor.Run({.targets = {"make"}});
  INFO(made.status().ToString());
  REQUIRE(made.ok());
  std::vector<std::vector<int64_t>> elements;
  for (int i = 0; i < 10000; ++i) {
    StatusOr<std::vector<Tensor>> next = executor.Run({.fetches = {"next:0"}});
    if (!next.ok()) {
      if (error != nullptr) {
        *error = next.status();
      } else {
        CHECK(next.status().code() == StatusCode::kOutOfRange);
        CHECK(next.status().message() ==
              "node 'next' (IteratorGetNext): end of sequence (iterator 'iterator')");
      }
      break;
    }
    const Tensor& t = (*next)[0];
    REQUIRE(t.dtype() == tensorflow::DT_INT64);
    elements.emplace_back(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
  }
  return elements;
}

using Elements = std::vector<std::vector<int64_t>>;

// times_two(x) = x * 2, with a Const inside the body (output arg form "two:output:0").
constexpr const char* kTimesTwo = R"(
  library { function {
    signature { name: "times_two" input_arg { name: "x" type: DT_INT64 }
                output_arg { name: "y" type: DT_INT64 } }
    node_def { name: "two" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 2 } } } }
    node_def { name: "mul" op: "Mul" input: "x" input: "two:output:0"
               attr { key: "T" value { type: DT_INT64 } } }
    ret { key: "y" value: "mul:z:0" } } })";

TEST_CASE("TensorSlice -> Map (a library function) -> Batch, through an iterator") {
  const std::string text = Source(7) + R"(
    node { name: "map" op: "MapDataset" input: "source"
           attr { key: "f" value { func { name: "times_two" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + R"( }
    )" + Int64Const("batch_size", {3}, true) + BoolConst("drop", false) + R"(
    node { name: "batch" op: "BatchDatasetV2" input: "map" input: "batch_size" input: "drop"
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } } } } } }
    )" + IteratorOver("batch", "shape { dim { size: -1 } }") + kTimesTwo;
  CHECK(Drain(text) == Elements{{0, 2, 4}, {6, 8, 10}, {12}});
}

TEST_CASE("drop_remainder drops the last short batch; MapAndBatch maps then batches") {
  const std::string text = Source(7) + Int64Const("batch_size", {3}, true) +
                           Int64Const("calls", {4}, true) + BoolConst("drop", true) + R"(
    node { name: "batch" op: "MapAndBatchDataset" input: "source" input: "batch_size"
           input: "calls" input: "drop"
           attr { key: "f" value { func { name: "times_two" } } }
           attr { key: "Targuments" value { list { } } }
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: 3 } } } } } }
    )" + IteratorOver("batch", "shape { dim { size: 3 } }") + kTimesTwo;
  CHECK(Drain(text) == Elements{{0, 2, 4}, {6, 8, 10}});
}

TEST_CASE("Repeat, Take, Skip and Shard count elements as tf.data does") {
  auto chain = [](const std::string& op, int64_t count) {
    return Source(5) + Int64Const("count", {count}, true) + "node { name: \"ds\" op: \"" + op +
           "\" input: \"source\" input: \"count\" " + kInt64Types + " }\n" + IteratorOver("ds");
  };
  CHECK(Drain(chain("RepeatDataset", 2)) == Elements{{0}, {1}, {2}, {3}, {4}, {0}, {1}, {2}, {3}, {4}});
  CHECK(Drain(chain("TakeDataset", 3)) == Elements{{0}, {1}, {2}});
  CHECK(Drain(chain("TakeDataset", -1)).size() == 5);
  CHECK(Drain(chain("SkipDataset", 3)) == Elements{{3}, {4}});
  const std::string shard = Source(7) + Int64Const("n", {3}, true) + Int64Const("i", {1}, true) +
                            R"(node { name: "ds" op: "ShardDataset" input: "source" input: "n"
                                      input: "i" )" + kInt64Types + " }\n" + IteratorOver("ds");
  CHECK(Drain(shard) == Elements{{1}, {4}});
}

TEST_CASE("Shuffle is a seeded permutation, reshuffled per epoch, the same every run") {
  const std::string text = Source(20) + Int64Const("buffer", {8}, true) +
                           Int64Const("seed", {7}, true) + Int64Const("seed2", {11}, true) +
                           Int64Const("count", {2}, true) + R"(
    node { name: "shuffle" op: "ShuffleDataset" input: "source" input: "buffer" input: "seed"
           input: "seed2" )" + kInt64Types + R"( }
    node { name: "repeat" op: "RepeatDataset" input: "shuffle" input: "count" )" + kInt64Types +
                           " }\n" + IteratorOver("repeat");
  const Elements a = Drain(text);
  REQUIRE(a.size() == 40);
  CHECK(Drain(text) == a);  // deterministic
  Elements first(a.begin(), a.begin() + 20), second(a.begin() + 20, a.end());
  CHECK(first != second);  // each epoch its own order
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  Elements all;
  for (int i = 0; i < 20; ++i) all.push_back({i});
  CHECK(first == all);  // a permutation
  CHECK(second == all);
}

// flat_map / interleave over per-element datasets: x -> range(10x, 10x + 3).
constexpr const char* kSmallRange = R"(
  library { function {
    signature { name: "small_range" input_arg { name: "x" type: DT_INT64 }
                output_arg { name: "ds" type: DT_VARIANT } }
    node_def { name: "ten" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 10 } } } }
    node_def { name: "three" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 3 } } } }
    node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 1 } } } }
    node_def { name: "start" op: "Mul" input: "x" input: "ten:output:0" attr { key: "T" value { type: DT_INT64 } } }
    node_def { name: "stop" op: "AddV2" input: "start:z:0" input: "three:output:0" attr { key: "T" value { type: DT_INT64 } } }
    node_def { name: "range" op: "RangeDataset" input: "start:z:0" input: "stop:z:0" input: "one:output:0"
               attr { key: "output_types" value { list { type: DT_INT64 } } }
               attr { key: "output_shapes" value { list { shape { } } } } }
    ret { key: "ds" value: "range:handle:0" } } })";

TEST_CASE("FlatMap and Interleave (cycle 2, block 2) visit elements in tf.data's order") {
  const std::string flat = Source(3) + R"(
    node { name: "ds" op: "FlatMapDataset" input: "source"
           attr { key: "f" value { func { name: "small_range" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                           IteratorOver("ds") + kSmallRange;
  CHECK(Drain(flat) == Elements{{0}, {1}, {2}, {10}, {11}, {12}, {20}, {21}, {22}});
  const std::string interleave = Source(3) + Int64Const("cycle", {2}, true) +
                                 Int64Const("block", {2}, true) + R"(
    node { name: "ds" op: "InterleaveDataset" input: "source" input: "cycle" input: "block"
           attr { key: "f" value { func { name: "small_range" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                                 IteratorOver("ds") + kSmallRange;
  // TF's loop: a slot that runs out closes and the turn moves on; an empty slot takes
  // the next input element's dataset when its turn comes.
  CHECK(Drain(interleave) == Elements{{0}, {1}, {10}, {11}, {2}, {12}, {20}, {21}, {22}});
}

TEST_CASE("in a job a flat_map over fewer names than ranks is sharded by record") {
  const std::string flat = Source(1) + R"(
    node { name: "ds" op: "FlatMapDataset" input: "source"
           attr { key: "f" value { func { name: "small_range" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                           IteratorOver("ds") + kSmallRange;
  InputOptions rank0, rank1;
  rank0.shard_count = rank1.shard_count = 2;
  rank1.shard_index = 1;
  CHECK(Drain(flat, rank0) == Elements{{0}, {2}});
  CHECK(Drain(flat, rank1) == Elements{{1}});
  // As many names as ranks: by name (rank 1 reads element 1's dataset, 10..12).
  const std::string two = Source(2) + R"(
    node { name: "ds" op: "FlatMapDataset" input: "source"
           attr { key: "f" value { func { name: "small_range" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                          IteratorOver("ds") + kSmallRange;
  CHECK(Drain(two, rank1) == Elements{{10}, {11}, {12}});
}

// The example of tf.data.Dataset.interleave's documentation:
// Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
//                                cycle_length=2, block_length=4)
constexpr const char* kRepeatSix = R"(
  library { function {
    signature { name: "repeat_six" input_arg { name: "x" type: DT_INT64 }
                output_arg { name: "ds" type: DT_VARIANT } }
    node_def { name: "six" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
               attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 6 } } } }
    node_def { name: "one" op: "TensorDataset" input: "x"
               attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
               attr { key: "output_shapes" value { list { shape { } } } } }
    node_def { name: "repeat" op: "RepeatDataset" input: "one:handle:0" input: "six:output:0"
               attr { key: "output_types" value { list { type: DT_INT64 } } }
               attr { key: "output_shapes" value { list { shape { } } } } }
    ret { key: "ds" value: "repeat:handle:0" } } })";

TEST_CASE("Interleave reproduces the example of tf.data's documentation") {
  const std::string text = Int64Const("values", {1, 2, 3, 4, 5}) + R"(
    node { name: "source" op: "TensorSliceDataset" input: "values"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    )" + Int64Const("cycle", {2}, true) + Int64Const("block", {4}, true) + R"(
    node { name: "ds" op: "InterleaveDataset" input: "source" input: "cycle" input: "block"
           attr { key: "f" value { func { name: "repeat_six" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                           IteratorOver("ds") + kRepeatSix;
  Elements expected;
  for (int64_t v : {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                    5, 5, 5, 5, 5, 5}) {
    expected.push_back({v});
  }
  CHECK(Drain(text) == expected);
}

TEST_CASE("in a job every source is sharded: rank r keeps elements r, r+N, ...") {
  const std::string text = Source(10) + Int64Const("batch_size", {2}, true) + BoolConst("drop", false) + R"(
    node { name: "batch" op: "BatchDatasetV2" input: "source" input: "batch_size" input: "drop"
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } } } } } }
    )" + IteratorOver("batch", "shape { dim { size: -1 } }");
  InputOptions rank1;
  rank1.shard_index = 1;
  rank1.shard_count = 3;
  CHECK(Drain(text, rank1) == Elements{{1, 4}, {7}});
  InputOptions rank0;
  rank0.shard_count = 3;
  CHECK(Drain(text, rank0) == Elements{{0, 3}, {6, 9}});
}

// x -> x > 2 (a predicate), x -> [x, x] of length... range(x) (ragged elements).
constexpr const char* kPredicateAndRange = R"(
  library {
    function {
      signature { name: "greater_than_two" input_arg { name: "x" type: DT_INT64 }
                  output_arg { name: "keep" type: DT_BOOL } }
      node_def { name: "two" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 2 } } } }
      node_def { name: "greater" op: "Greater" input: "x" input: "two:output:0"
                 attr { key: "T" value { type: DT_INT64 } } }
      ret { key: "keep" value: "greater:z:0" }
    }
    function {
      signature { name: "iota" input_arg { name: "x" type: DT_INT64 }
                  output_arg { name: "v" type: DT_INT64 } }
      node_def { name: "zero" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 0 } } } }
      node_def { name: "one" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 1 } } } }
      node_def { name: "range" op: "Range" input: "zero:output:0" input: "x" input: "one:output:0"
                 attr { key: "Tidx" value { type: DT_INT64 } } }
      ret { key: "v" value: "range:output:0" }
    }
  })";

TEST_CASE("Filter keeps what its predicate accepts; PaddedBatch pads ragged elements") {
  const std::string filter = Source(6) + R"(
    node { name: "ds" op: "FilterDataset" input: "source"
           attr { key: "predicate" value { func { name: "greater_than_two" } } }
           attr { key: "Targuments" value { list { } } } )" + kInt64Types + " }\n" +
                             IteratorOver("ds") + kPredicateAndRange;
  CHECK(Drain(filter) == Elements{{3}, {4}, {5}});
  // range(x) for x in 1, 2, 3, padded with -1 to the batch's longest (padded shape [-1]).
  const std::string padded = Int64Const("values", {1, 2, 3}) + R"(
    node { name: "source" op: "TensorSliceDataset" input: "values"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    node { name: "ragged" op: "MapDataset" input: "source"
           attr { key: "f" value { func { name: "iota" } } } attr { key: "Targuments" value { list { } } }
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } } } } } }
    )" + Int64Const("batch_size", {2}, true) + Int64Const("shape", {-1}) +
                             Int64Const("pad", {-1}, true) + BoolConst("drop", false) + R"(
    node { name: "batch" op: "PaddedBatchDatasetV2" input: "ragged" input: "batch_size" input: "shape"
           input: "pad" input: "drop"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } } attr { key: "N" value { i: 1 } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } dim { size: -1 } } } } } }
    )" + IteratorOver("batch", "shape { dim { size: -1 } dim { size: -1 } }") + kPredicateAndRange;
  CHECK(Drain(padded) == Elements{{0, -1, 0, 1}, {0, 1, 2}});
}

TEST_CASE("Zip pairs datasets until the shorter ends; Cache replays its first pass") {
  const std::string zip = Source(3) + Int64Const("other", {10, 11}) + R"(
    node { name: "second" op: "TensorSliceDataset" input: "other"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    node { name: "zip" op: "ZipDataset" input: "source" input: "second" attr { key: "N" value { i: 2 } }
           attr { key: "output_types" value { list { type: DT_INT64 type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } shape { } } } } }
    node { name: "iterator" op: "IteratorV2" attr { key: "shared_name" value { s: "" } }
           attr { key: "container" value { s: "" } }
           attr { key: "output_types" value { list { type: DT_INT64 type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } shape { } } } } }
    node { name: "make" op: "MakeIterator" input: "zip" input: "iterator" }
    node { name: "next" op: "IteratorGetNext" input: "iterator"
           attr { key: "output_types" value { list { type: DT_INT64 type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } shape { } } } } })";
  CHECK(Drain(zip) == Elements{{0}, {1}});  // the first components of (0, 10), (1, 11)
  const std::string cached = Source(3) + R"(
    node { name: "cache_name" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { } string_val: "" } } } }
    node { name: "cache" op: "CacheDataset" input: "source" input: "cache_name" )" + kInt64Types + R"( }
    )" + Int64Const("count", {2}, true) + R"(
    node { name: "repeat" op: "RepeatDataset" input: "cache" input: "count" )" + kInt64Types + " }\n" +
                             IteratorOver("repeat");
  CHECK(Drain(cached) == Elements{{0}, {1}, {2}, {0}, {1}, {2}});
}

// A OneShotIterator's dataset comes from its dataset_factory function (no args).
TEST_CASE("OneShotIterator makes its dataset by calling its factory once") {
  const std::string text = R"(
    node { name: "iterator" op: "OneShotIterator"
           attr { key: "dataset_factory" value { func { name: "make_range" } } }
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } } } }
           attr { key: "shared_name" value { s: "" } } attr { key: "container" value { s: "" } } }
    node { name: "make" op: "NoOp" }
    node { name: "next" op: "IteratorGetNext" input: "iterator"
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { } } } } }
    library { function {
      signature { name: "make_range" output_arg { name: "ds" type: DT_VARIANT } }
      node_def { name: "start" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 5 } } } }
      node_def { name: "stop" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 8 } } } }
      node_def { name: "step" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
                 attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: 1 } } } }
      node_def { name: "range" op: "RangeDataset" input: "start:output:0" input: "stop:output:0"
                 input: "step:output:0"
                 attr { key: "output_types" value { list { type: DT_INT64 } } }
                 attr { key: "output_shapes" value { list { shape { } } } } }
      ret { key: "ds" value: "range:handle:0" } } })";
  CHECK(Drain(text) == Elements{{5}, {6}, {7}});
}

TEST_CASE("an uninitialised iterator and a batch of mismatched shapes are clear errors") {
  StatusOr<Graph> graph = ParseGraph(Source(3) + IteratorOver("source"), "g.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device);
  StatusOr<std::vector<Tensor>> next = executor.Run({.fetches = {"next:0"}});
  REQUIRE_FALSE(next.ok());
  CHECK(next.status().message() ==
        "node 'next' (IteratorGetNext): iterator 'iterator' is not initialised: run its "
        "initializer (MakeIterator) first");

  const std::string ragged = Int64Const("a", {1, 2}) + Int64Const("b", {3}) + R"(
    node { name: "da" op: "TensorDataset" input: "a"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: 2 } } } } } }
    node { name: "db" op: "TensorDataset" input: "b"
           attr { key: "Toutput_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: 1 } } } } } }
    node { name: "both" op: "ConcatenateDataset" input: "da" input: "db"
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } } } } } }
    )" + Int64Const("batch_size", {2}, true) + R"(
    node { name: "batch" op: "BatchDataset" input: "both" input: "batch_size"
           attr { key: "output_types" value { list { type: DT_INT64 } } }
           attr { key: "output_shapes" value { list { shape { dim { size: -1 } dim { size: -1 } } } } } }
    )" + IteratorOver("batch", "shape { dim { size: -1 } dim { size: -1 } }");
  Status error;
  Drain(ragged, {}, &error);
  CHECK(error.message() ==
        "node 'next' (IteratorGetNext): BatchDataset 'batch': cannot batch component 0: elements "
        "of shapes [2] and [1] (use padded_batch, or make the shapes equal)");
}

}  // namespace
}  // namespace parallax
