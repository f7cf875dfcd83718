// Tests of the TensorArray kernels, run as small graphs (an array lives for one step, so
// each test writes and reads it in one run): values against the inputs they came from
// (Gather/Concat against naive stacking and joining, Scatter/Split against naive rows),
// several element shapes and dtypes including empty ones, and TF's rules: write-once,
// clear_after_read, dynamic_size, element_shape and identical_element_shapes, zeros
// for unwritten elements, gradient arrays (one per source, aggregating, sized like the
// forward array), and the exact errors.
#include <catch2/catch.hpp>
#include <random>

#include "lib/graph/graph_io.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::F32;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64Vec;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using testing::CompareTensors;
using testing::RandomTensor;

// ---- Graph text ----

std::string Attr(const std::string& key, const std::string& value) {
  return "attr { key: '" + key + "' value { " + value + " } } ";
}
std::string TypeAttr(const std::string& key, DataType type) {
  return Attr(key, "type: " + tensorflow::DataType_Name(type));
}
std::string BoolAttr(const std::string& key, bool b) {
  return Attr(key, b ? "b: true" : "b: false");
}
// A shape attr; nullopt is unknown rank, -1 an unknown size.
std::string ShapeAttr(const std::string& key, const std::optional<std::vector<int64_t>>& dims) {
  if (!dims) return Attr(key, "shape { unknown_rank: true }");
  std::string s = "shape {";
  for (int64_t d : *dims) s += " dim { size: " + std::to_string(d) + " }";
  return Attr(key, s + " }");
}
std::string NodeText(const std::string& name, const std::string& op,
                     const std::vector<std::string>& inputs, const std::string& attrs = "") {
  std::string t = "node { name: '" + name + "' op: '" + op + "'";
  for (const std::string& in : inputs) t += " input: '" + in + "'";
  return t + " " + attrs + "}\n";
}
std::string Placeholder(const std::string& name, DataType type) {
  return NodeText(name, "Placeholder", {}, TypeAttr("dtype", type));
}

struct ArrayAttrs {
  DataType dtype = DT_FLOAT;
  std::optional<std::vector<int64_t>> element_shape;
  bool dynamic_size = false;
  bool clear_after_read = true;
  bool identical_element_shapes = false;
};
// TensorArrayV3 `name` of size `size` (an int32 tensor name).
std::string ArrayNode(const std::string& name, const std::string& size, const ArrayAttrs& a = {}) {
  return NodeText(name, "TensorArrayV3", {size},
                  TypeAttr("dtype", a.dtype) + ShapeAttr("element_shape", a.element_shape) +
                      BoolAttr("dynamic_size", a.dynamic_size) +
                      BoolAttr("clear_after_read", a.clear_after_read) +
                      BoolAttr("identical_element_shapes", a.identical_element_shapes) +
                      Attr("tensor_array_name", "s: ''"));
}
std::string Write(const std::string& name, const std::string& ta, const std::string& index,
                  const std::string& value, const std::string& flow, DataType type = DT_FLOAT) {
  return NodeText(name, "TensorArrayWriteV3", {ta, index, value, flow}, TypeAttr("T", type));
}
std::string Read(const std::string& name, const std::string& ta, const std::string& index,
                 const std::string& flow, DataType type = DT_FLOAT) {
  return NodeText(name, "TensorArrayReadV3", {ta, index, flow}, TypeAttr("dtype", type));
}
std::string Gather(const std::string& name, const std::string& ta, const std::string& indices,
                   const std::string& flow, DataType type = DT_FLOAT,
                   const std::optional<std::vector<int64_t>>& element_shape = std::nullopt) {
  return NodeText(name, "TensorArrayGatherV3", {ta, indices, flow},
                  TypeAttr("dtype", type) + ShapeAttr("element_shape", element_shape));
}
std::string Scatter(const std::string& name, const std::string& ta, const std::string& indices,
                    const std::string& value, const std::string& flow, DataType type = DT_FLOAT) {
  return NodeText(name, "TensorArrayScatterV3", {ta, indices, value, flow}, TypeAttr("T", type));
}
std::string Grad(const std::string& name, const std::string& ta, const std::string& flow,
                 const std::string& source) {
  return NodeText(name, "TensorArrayGradV3", {ta, flow}, Attr("source", "s: '" + source + "'"));
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

StatusOr<std::vector<Tensor>> RunGraph(const std::string& text, Feeds feeds,
                                       std::vector<std::string> fetches,
                                       std::vector<std::string> targets = {}, int threads = 2) {
  PX_ASSIGN_OR_RETURN(Graph graph, ParseGraph(text, "test.pbtxt"));
  CpuDevice device(threads);
  Executor executor(graph, device);
  return executor.Run(
      {.feeds = std::move(feeds), .fetches = std::move(fetches), .targets = std::move(targets)});
}
std::vector<Tensor> MustRun(const std::string& text, Feeds feeds, std::vector<std::string> fetches,
                            std::vector<std::string> targets = {}, int threads = 2) {
  StatusOr<std::vector<Tensor>> out =
      RunGraph(text, std::move(feeds), std::move(fetches), std::move(targets), threads);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return std::move(out).value();
}
std::string ErrorOfGraph(const std::string& text, Feeds feeds, std::vector<std::string> fetches) {
  StatusOr<std::vector<Tensor>> out = RunGraph(text, std::move(feeds), std::move(fetches));
  return out.ok() ? "" : out.status().message();
}

Tensor Scalar32(int32_t v) { return Tensor::Scalar<int32_t>(v); }

// Row k of `t` along dimension 0, as its own tensor.
Tensor Row(const Tensor& t, int64_t k) {
  TensorShape shape = t.shape();
  shape.RemoveDim(0);
  Tensor row(t.dtype(), shape);
  const size_t size = row.bytes();
  // An empty row has no buffer, and memcpy's pointers must not be null even for 0 bytes.
  if (size == 0) return row;
  std::memcpy(row.raw_data(),
              static_cast<const char*>(t.raw_data()) + static_cast<size_t>(k) * size, size);
  return row;
}
// `rows` stacked along a new dimension 0 (the naive Gather).
Tensor Stack(const std::vector<Tensor>& rows, const TensorShape& row_shape) {
  TensorShape shape = row_shape;
  shape.InsertDim(0, static_cast<int64_t>(rows.size()));
  Tensor out(DT_FLOAT, shape);
  const int64_t n = row_shape.num_elements();
  for (size_t k = 0; k < rows.size(); ++k) {
    for (int64_t i = 0; i < n; ++i)
      out.data<float>()[static_cast<int64_t>(k) * n + i] = rows[k].data<float>()[i];
  }
  return out;
}

// ---- Write / Read / Size ----

TEST_CASE("TensorArray: writes then reads give the written values; Size and flow pass through") {
  for (const std::vector<int64_t>& elem :
       std::vector<std::vector<int64_t>>{{}, {3}, {2, 3}, {0, 4}}) {
    INFO("element shape " << TensorShape(elem).DebugString());
    const int n = 3;
    std::string t = Placeholder("size", DT_INT32) + ArrayNode("ta", "size");
    Feeds feeds = {{"size", Scalar32(n)}};
    std::vector<Tensor> values;
    std::string flow = "ta:1";
    // Written in the order 2, 0, 1.
    for (int k : {2, 0, 1}) {
      const std::string i = std::to_string(k);
      t += Placeholder("i" + i, DT_INT32) + Placeholder("v" + i, DT_FLOAT);
      t += Write("w" + i, "ta", "i" + i, "v" + i, flow);
      flow = "w" + i;
    }
    for (int k = 0; k < n; ++k) {
      const std::string i = std::to_string(k);
      values.push_back(RandomTensor(DT_FLOAT, TensorShape(elem), 10 + k));
      feeds.push_back({"i" + i, Scalar32(k)});
      feeds.push_back({"v" + i, values.back()});
      t += Read("r" + i, "ta", "i" + i, flow);
    }
    t += NodeText("size_out", "TensorArraySizeV3", {"ta", flow});
    std::vector<Tensor> out = MustRun(t, feeds, {"r0", "r1", "r2", "size_out", "ta:1", "w1"});
    for (int k = 0; k < n; ++k)
      CHECK(CompareTensors(out[static_cast<size_t>(k)], values[static_cast<size_t>(k)], 0, 0) ==
            "");
    CHECK(out[3].dtype() == DT_INT32);
    CHECK(out[3].data<int32_t>()[0] == n);
    CHECK(out[4].dtype() == DT_FLOAT);
    CHECK(out[4].data<float>()[0] == 0.0f);
    CHECK(out[5].data<float>()[0] == 0.0f);  // w1's flow_out is w0's, from ta:1
  }
}

TEST_CASE("TensorArray: the flow output is flow_in, whatever its value") {
  const std::string t = Placeholder("size", DT_INT32) + Placeholder("flow", DT_FLOAT) +
                        Placeholder("i", DT_INT32) + Placeholder("v", DT_FLOAT) +
                        ArrayNode("ta", "size") + Write("w", "ta", "i", "v", "flow");
  std::vector<Tensor> out = MustRun(t,
                                    {{"size", Scalar32(1)},
                                     {"flow", Tensor::Scalar<float>(7.5f)},
                                     {"i", Scalar32(0)},
                                     {"v", F32({1}, {})}},
                                    {"w"});
  CHECK(out[0].data<float>()[0] == 7.5f);
}

// A graph with array `ta` of size `size`, and node `w` writing placeholders v0, v1 at
// indices i0, i1 in turn (the second write flows from the first).
std::string TwoWrites(const ArrayAttrs& attrs = {}) {
  return Placeholder("size", DT_INT32) + Placeholder("i0", DT_INT32) + Placeholder("i1", DT_INT32) +
         Placeholder("v0", DT_FLOAT) + Placeholder("v1", DT_FLOAT) +
         ArrayNode("ta", "size", attrs) + Write("w0", "ta", "i0", "v0", "ta:1") +
         Write("w", "ta", "i1", "v1", "w0");
}
Feeds TwoWriteFeeds(int size, int i0, int i1, Tensor v0 = F32({1, 2}, {2}),
                    Tensor v1 = F32({3, 4}, {2})) {
  return {{"size", Scalar32(size)},
          {"i0", Scalar32(i0)},
          {"i1", Scalar32(i1)},
          {"v0", std::move(v0)},
          {"v1", std::move(v1)}};
}

TEST_CASE("TensorArray: an index is written once; out-of-range and negative writes are errors") {
  CHECK(ErrorOfGraph(TwoWrites(), TwoWriteFeeds(3, 1, 1), {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write index 1 twice");
  CHECK(ErrorOfGraph(TwoWrites(), TwoWriteFeeds(3, 0, 3), {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write index 3: the array has size "
        "3 and is not dynamically sized");
  CHECK(ErrorOfGraph(TwoWrites(), TwoWriteFeeds(3, 0, -1), {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write index -1: the array has "
        "size 3 and is not dynamically sized");
  CHECK(ErrorOfGraph(TwoWrites(), TwoWriteFeeds(3, 0, 1, F32({1, 2}, {2}), I32({3, 4}, {2})),
                     {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write a int32 value to index 1: "
        "the array holds float");
  CHECK(ErrorOfGraph(TwoWrites(), {{"size", Scalar32(-1)}}, {"ta"}) ==
        "node 'ta' (TensorArrayV3): input 0 (size) must be >= 0, got -1");
  CHECK(ErrorOfGraph(TwoWrites(), {{"size", I32Vec({1})}}, {"ta"}) ==
        "node 'ta' (TensorArrayV3): input 0 (size) must be an int32 scalar, got int32 [1]");
}

TEST_CASE("TensorArray: a dynamically sized array grows to the largest index written") {
  ArrayAttrs attrs;
  attrs.dynamic_size = true;
  const std::string t = TwoWrites(attrs) + NodeText("size_out", "TensorArraySizeV3", {"ta", "w"}) +
                        Placeholder("all", DT_INT32) + Gather("g", "ta", "all", "w");
  // Index 3 of a size-1 array: size 4; 1 and 2 are unwritten and read as zeros of [2].
  Feeds feeds = TwoWriteFeeds(1, 0, 3);
  feeds.push_back({"all", I32Vec({0, 1, 2, 3})});
  std::vector<Tensor> out = MustRun(t, feeds, {"size_out"});
  CHECK(out[0].data<int32_t>()[0] == 4);
  // Unwritten elements have no shape unless the element shape says: an error here.
  attrs.element_shape = std::vector<int64_t>{2};
  out = MustRun(TwoWrites(attrs) + Placeholder("all", DT_INT32) + Gather("g", "ta", "all", "w"),
                feeds, {"g"});
  CHECK(CompareTensors(out[0], F32({1, 2, 0, 0, 0, 0, 3, 4}, {4, 2}), 0, 0) == "");
  CHECK(ErrorOfGraph(t, feeds, {"g"}) ==
        "node 'g' (TensorArrayGatherV3): TensorArray 'ta': cannot read index 1: it was not written "
        "and the element shape <unknown> is not fully defined");
}

TEST_CASE("TensorArray: clear_after_read makes a second read an error; reads block later writes") {
  const std::string base =
      Placeholder("size", DT_INT32) + Placeholder("i", DT_INT32) + Placeholder("v", DT_FLOAT);
  const Feeds feeds = {{"size", Scalar32(2)}, {"i", Scalar32(1)}, {"v", F32({5, 6}, {2})}};
  for (bool clear : {true, false}) {
    ArrayAttrs attrs;
    attrs.clear_after_read = clear;
    const std::string t = base + ArrayNode("ta", "size", attrs) +
                          Write("w", "ta", "i", "v", "ta:1") + Read("r1", "ta", "i", "w") +
                          NodeText("after", "Identity", {"w", "^r1"}) +
                          Read("r2", "ta", "i", "after");
    StatusOr<std::vector<Tensor>> out = RunGraph(t, feeds, {"r1", "r2"});
    if (clear) {
      CHECK(out.status().message() ==
            "node 'r2' (TensorArrayReadV3): TensorArray 'ta': cannot read index 1 twice: the first "
            "read cleared it (clear_after_read is true)");
    } else {
      REQUIRE(out.ok());
      CHECK(CompareTensors(out->at(0), F32({5, 6}, {2}), 0, 0) == "");
      CHECK(CompareTensors(out->at(1), F32({5, 6}, {2}), 0, 0) == "");
    }
  }
  // A write after a read of the same index.
  const std::string t = base + ArrayNode("ta", "size") + Write("w", "ta", "i", "v", "ta:1") +
                        Read("r", "ta", "i", "w") + NodeText("after", "Identity", {"w", "^r"}) +
                        Write("w2", "ta", "i", "v", "after");
  CHECK(ErrorOfGraph(t, feeds, {"w2"}) ==
        "node 'w2' (TensorArrayWriteV3): TensorArray 'ta': cannot write index 1: it has already "
        "been read");
}

TEST_CASE("TensorArray: reads out of range, of the wrong dtype and of unwritten elements") {
  const std::string base = Placeholder("size", DT_INT32) + Placeholder("i", DT_INT32);
  Feeds feeds = {{"size", Scalar32(2)}, {"i", Scalar32(2)}};
  CHECK(
      ErrorOfGraph(base + ArrayNode("ta", "size") + Read("r", "ta", "i", "ta:1"), feeds, {"r"}) ==
      "node 'r' (TensorArrayReadV3): TensorArray 'ta': cannot read index 2: the array has size 2");
  CHECK(ErrorOfGraph(base + ArrayNode("ta", "size") + Read("r", "ta", "i", "ta:1", DT_INT32), feeds,
                     {"r"}) ==
        "node 'r' (TensorArrayReadV3): TensorArray 'ta' holds float, but the op's dtype is int32");
  feeds[1].second = Scalar32(1);
  CHECK(ErrorOfGraph(base + ArrayNode("ta", "size") + Read("r", "ta", "i", "ta:1"), feeds, {"r"}) ==
        "node 'r' (TensorArrayReadV3): TensorArray 'ta': cannot read index 1: it was not written "
        "and the element shape <unknown> is not fully defined");
  ArrayAttrs partial;
  partial.element_shape = std::vector<int64_t>{-1, 3};
  CHECK(ErrorOfGraph(base + ArrayNode("ta", "size", partial) + Read("r", "ta", "i", "ta:1"), feeds,
                     {"r"}) ==
        "node 'r' (TensorArrayReadV3): TensorArray 'ta': cannot read index 1: it was not written "
        "and the element shape [?,3] is not fully defined");
  // TF fills zeros when the element shape is known.
  ArrayAttrs full;
  full.element_shape = std::vector<int64_t>{2, 3};
  std::vector<Tensor> out =
      MustRun(base + ArrayNode("ta", "size", full) + Read("r", "ta", "i", "ta:1"), feeds, {"r"});
  CHECK(CompareTensors(out[0], F32(std::vector<float>(6, 0.0f), {2, 3}), 0, 0) == "");
}

TEST_CASE("TensorArray: element_shape and identical_element_shapes check writes") {
  ArrayAttrs attrs;
  attrs.element_shape = std::vector<int64_t>{-1, 2};
  CHECK(ErrorOfGraph(TwoWrites(attrs),
                     TwoWriteFeeds(2, 0, 1, F32({1, 2}, {1, 2}), F32({1, 2}, {2})), {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write a value of shape [2] to "
        "index 1: the element shape is [?,2]");
  // Partial shapes allow any size where they say -1.
  CHECK(MustRun(TwoWrites(attrs),
                TwoWriteFeeds(2, 0, 1, F32({1, 2}, {1, 2}), F32({1, 2, 3, 4}, {2, 2})), {"w"})
            .size() == 1);
  // With identical_element_shapes the first write fixes the shape.
  attrs.identical_element_shapes = true;
  CHECK(ErrorOfGraph(TwoWrites(attrs),
                     TwoWriteFeeds(2, 0, 1, F32({1, 2}, {1, 2}), F32({1, 2, 3, 4}, {2, 2})),
                     {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write a value of shape [2,2] to "
        "index 1: the element shape is [1,2]");
  attrs.element_shape = std::nullopt;
  CHECK(ErrorOfGraph(TwoWrites(attrs), TwoWriteFeeds(2, 0, 1, F32({1}, {1}), F32({1, 2}, {2})),
                     {"w"}) ==
        "node 'w' (TensorArrayWriteV3): TensorArray 'ta': cannot write a value of shape [2] to "
        "index 1: the element shape is [1]");
}

// ---- Gather / Scatter ----

TEST_CASE("TensorArray: Scatter then Gather match naive rows and stacking, any order") {
  std::mt19937 rng(5);
  for (const std::vector<int64_t>& elem :
       std::vector<std::vector<int64_t>>{{}, {4}, {2, 3}, {3, 0}}) {
    for (int n : {1, 2, 5}) {
      for (int threads : {1, 3}) {
        INFO("element " << TensorShape(elem).DebugString() << " n " << n << " threads " << threads);
        std::vector<int32_t> perm(static_cast<size_t>(n));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<int64_t> vdims = elem;
        vdims.insert(vdims.begin(), n);
        const Tensor value = RandomTensor(DT_FLOAT, TensorShape(vdims), 40 + n);
        // Gather all indices, reversed, and twice the same is not allowed (cleared): use a
        // second array without clear_after_read for the repeated-index gather.
        ArrayAttrs keep;
        keep.clear_after_read = false;
        const std::string t = Placeholder("size", DT_INT32) + Placeholder("idx", DT_INT32) +
                              Placeholder("value", DT_FLOAT) + Placeholder("gidx", DT_INT32) +
                              ArrayNode("ta", "size", keep) +
                              Scatter("s", "ta", "idx", "value", "ta:1") +
                              Gather("g", "ta", "gidx", "s");
        std::vector<int32_t> gidx;
        for (int k = n - 1; k >= 0; --k) gidx.push_back(k);
        gidx.push_back(0);
        const std::vector<Tensor> out = MustRun(t,
                                                {{"size", Scalar32(n)},
                                                 {"idx", I32Vec(perm)},
                                                 {"value", value},
                                                 {"gidx", I32Vec(gidx)}},
                                                {"g"}, {}, threads);
        // Element perm[k] is row k; the gather of j is the row k with perm[k] == j.
        std::vector<Tensor> rows;
        for (int32_t j : gidx) {
          const int64_t k = std::find(perm.begin(), perm.end(), j) - perm.begin();
          rows.push_back(Row(value, k));
        }
        CHECK(CompareTensors(out[0], Stack(rows, TensorShape(elem)), 0, 0) == "");
      }
    }
  }
}

TEST_CASE("TensorArray: Gather of no elements needs the element shape; Gather checks shapes") {
  const std::string base = Placeholder("size", DT_INT32) + Placeholder("none", DT_INT32);
  const Feeds feeds = {{"size", Scalar32(0)}, {"none", I32({}, {0})}};
  // The element shape from the array or from Gather's attr.
  ArrayAttrs attrs;
  attrs.element_shape = std::vector<int64_t>{2, 3};
  std::vector<Tensor> out = MustRun(
      base + ArrayNode("ta", "size", attrs) + Gather("g", "ta", "none", "ta:1"), feeds, {"g"});
  CHECK(out[0].shape() == TensorShape({0, 2, 3}));
  out = MustRun(base + ArrayNode("ta", "size") +
                    Gather("g", "ta", "none", "ta:1", DT_FLOAT, std::vector<int64_t>{4}),
                feeds, {"g"});
  CHECK(out[0].shape() == TensorShape({0, 4}));
  CHECK(ErrorOfGraph(base + ArrayNode("ta", "size") + Gather("g", "ta", "none", "ta:1"), feeds,
                     {"g"}) ==
        "node 'g' (TensorArrayGatherV3): TensorArray 'ta': gathering no elements needs a fully "
        "defined element shape, got <unknown>");
  CHECK(ErrorOfGraph(base + ArrayNode("ta", "size", attrs) +
                         Gather("g", "ta", "none", "ta:1", DT_FLOAT, std::vector<int64_t>{2, 4}),
                     feeds, {"g"}) ==
        "node 'g' (TensorArrayGatherV3): TensorArray 'ta': element_shape [2,4] does not match the "
        "array's element shape [2,3]");
  // Elements of different shapes.
  const std::string t = TwoWrites() + Placeholder("all", DT_INT32) + Gather("g", "ta", "all", "w");
  Feeds f = TwoWriteFeeds(2, 0, 1, F32({1, 2}, {2}), F32({1, 2, 3}, {3}));
  f.push_back({"all", I32Vec({0, 1})});
  CHECK(ErrorOfGraph(t, f, {"g"}) ==
        "node 'g' (TensorArrayGatherV3): TensorArray 'ta': cannot gather elements of different "
        "shapes: index 0 has shape [2], index 1 has shape [3]");
}

TEST_CASE("TensorArray: Scatter checks its indices and value") {
  const std::string t = Placeholder("size", DT_INT32) + Placeholder("idx", DT_INT32) +
                        Placeholder("value", DT_FLOAT) + ArrayNode("ta", "size") +
                        Scatter("s", "ta", "idx", "value", "ta:1");
  CHECK(ErrorOfGraph(t,
                     {{"size", Scalar32(2)}, {"idx", I32Vec({0, 2})}, {"value", F32({1, 2}, {2})}},
                     {"s"}) ==
        "node 's' (TensorArrayScatterV3): TensorArray 'ta': indices[1] = 2 is not in [0, 2)");
  CHECK(ErrorOfGraph(t, {{"size", Scalar32(2)}, {"idx", I32Vec({0})}, {"value", F32({1, 2}, {2})}},
                     {"s"}) ==
        "node 's' (TensorArrayScatterV3): input 1 (indices) has 1 elements but input 2 (value) has "
        "2 rows");
  CHECK(ErrorOfGraph(t, {{"size", Scalar32(2)}, {"idx", I32({}, {0})}, {"value", F32({1}, {})}},
                     {"s"}) ==
        "node 's' (TensorArrayScatterV3): TensorArray 'ta': cannot scatter a scalar value (it "
        "needs a dimension 0)");
  CHECK(ErrorOfGraph(t,
                     {{"size", Scalar32(2)}, {"idx", I32Vec({1, 1})}, {"value", F32({1, 2}, {2})}},
                     {"s"}) ==
        "node 's' (TensorArrayScatterV3): TensorArray 'ta': cannot write index 1 twice");
  // Dynamically sized: grows to the largest index.
  ArrayAttrs dynamic;
  dynamic.dynamic_size = true;
  const std::string d = Placeholder("size", DT_INT32) + Placeholder("idx", DT_INT32) +
                        Placeholder("value", DT_FLOAT) + ArrayNode("ta", "size", dynamic) +
                        Scatter("s", "ta", "idx", "value", "ta:1") +
                        NodeText("n", "TensorArraySizeV3", {"ta", "s"});
  std::vector<Tensor> out = MustRun(
      d, {{"size", Scalar32(0)}, {"idx", I32Vec({4, 1})}, {"value", F32({1, 2}, {2})}}, {"n"});
  CHECK(out[0].data<int32_t>()[0] == 5);
}

// ---- Concat / Split ----

TEST_CASE("TensorArray: Split then Concat match naive pieces, zero-length ones included") {
  for (const std::vector<int64_t>& lengths :
       std::vector<std::vector<int64_t>>{{3}, {2, 0, 3}, {0, 0}, {1, 1, 1, 1}}) {
    for (const std::vector<int64_t>& rest : std::vector<std::vector<int64_t>>{{}, {3}, {2, 2}}) {
      const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
      std::vector<int64_t> vdims = rest;
      vdims.insert(vdims.begin(), total);
      if (rest.empty() && total == 0) continue;
      const Tensor value = RandomTensor(DT_FLOAT, TensorShape(vdims), 7);
      const int n = static_cast<int>(lengths.size());
      std::string t =
          Placeholder("size", DT_INT32) + Placeholder("value", DT_FLOAT) +
          Placeholder("lengths", DT_INT64) + ArrayNode("ta", "size", {.clear_after_read = false}) +
          NodeText("split", "TensorArraySplitV3", {"ta", "value", "lengths", "ta:1"},
                   TypeAttr("T", DT_FLOAT)) +
          NodeText("concat", "TensorArrayConcatV3", {"ta", "split"},
                   TypeAttr("dtype", DT_FLOAT) + ShapeAttr("element_shape_except0", std::nullopt));
      std::vector<std::string> fetches = {"concat:0", "concat:1"};
      for (int k = 0; k < n; ++k) {
        t += Placeholder("i" + std::to_string(k), DT_INT32) +
             Read("r" + std::to_string(k), "ta", "i" + std::to_string(k), "split");
        fetches.push_back("r" + std::to_string(k));
      }
      Feeds feeds = {{"size", Scalar32(n)}, {"value", value}, {"lengths", I64Vec(lengths)}};
      for (int k = 0; k < n; ++k) feeds.push_back({"i" + std::to_string(k), Scalar32(k)});
      INFO("lengths " << TensorShape(lengths).DebugString() << " rest "
                      << TensorShape(rest).DebugString());
      const std::vector<Tensor> out = MustRun(t, feeds, fetches);
      CHECK(CompareTensors(out[0], value, 0, 0) == "");
      CHECK(CompareTensors(out[1], I64Vec(lengths), 0, 0) == "");
      const int64_t row = TensorShape(rest).num_elements();
      int64_t offset = 0;
      for (int k = 0; k < n; ++k) {
        std::vector<int64_t> pdims = rest;
        pdims.insert(pdims.begin(), lengths[static_cast<size_t>(k)]);
        Tensor piece(DT_FLOAT, TensorShape(pdims));
        for (int64_t i = 0; i < piece.num_elements(); ++i)
          piece.data<float>()[i] = value.data<float>()[offset * row + i];
        offset += lengths[static_cast<size_t>(k)];
        CHECK(CompareTensors(out[static_cast<size_t>(2 + k)], piece, 0, 0) == "");
      }
    }
  }
}

TEST_CASE("TensorArray: Split and Concat errors; Concat of an empty array") {
  const std::string split = Placeholder("size", DT_INT32) + Placeholder("value", DT_FLOAT) +
                            Placeholder("lengths", DT_INT64) + ArrayNode("ta", "size") +
                            NodeText("split", "TensorArraySplitV3",
                                     {"ta", "value", "lengths", "ta:1"}, TypeAttr("T", DT_FLOAT));
  CHECK(ErrorOfGraph(
            split,
            {{"size", Scalar32(2)}, {"value", F32({1, 2, 3}, {3})}, {"lengths", I64Vec({1, 1})}},
            {"split"}) ==
        "node 'split' (TensorArraySplitV3): input 2 (lengths) sums to 2 but input 1 (value) has 3 "
        "rows");
  CHECK(ErrorOfGraph(
            split,
            {{"size", Scalar32(3)}, {"value", F32({1, 2, 3}, {3})}, {"lengths", I64Vec({1, 2})}},
            {"split"}) ==
        "node 'split' (TensorArraySplitV3): TensorArray 'ta': cannot split into 2 pieces: the "
        "array has size 3 and is not dynamically sized");
  CHECK(ErrorOfGraph(
            split,
            {{"size", Scalar32(2)}, {"value", F32({1, 2, 3}, {3})}, {"lengths", I64Vec({4, -1})}},
            {"split"}) ==
        "node 'split' (TensorArraySplitV3): input 2 (lengths) has a negative length -1 at index 1");
  const std::string concat_attrs = TypeAttr("dtype", DT_FLOAT);
  // Empty: the shape past dimension 0 comes from element_shape_except0.
  const std::string empty =
      Placeholder("size", DT_INT32) + ArrayNode("ta", "size") +
      NodeText("c", "TensorArrayConcatV3", {"ta", "ta:1"},
               concat_attrs + ShapeAttr("element_shape_except0", std::vector<int64_t>{3}));
  std::vector<Tensor> out = MustRun(empty, {{"size", Scalar32(0)}}, {"c:0", "c:1"});
  CHECK(out[0].shape() == TensorShape({0, 3}));
  CHECK(out[1].shape() == TensorShape({0}));
  CHECK(out[1].dtype() == DT_INT64);
  const std::string unknown =
      Placeholder("size", DT_INT32) + ArrayNode("ta", "size") +
      NodeText("c", "TensorArrayConcatV3", {"ta", "ta:1"},
               concat_attrs + ShapeAttr("element_shape_except0", std::vector<int64_t>{-1}));
  CHECK(ErrorOfGraph(unknown, {{"size", Scalar32(0)}}, {"c:0"}) ==
        "node 'c' (TensorArrayConcatV3): TensorArray 'ta': concatenating no elements needs a fully "
        "defined element_shape_except0, got [?]");
  const std::string scalars =
      TwoWrites() + NodeText("c", "TensorArrayConcatV3", {"ta", "w"},
                             concat_attrs + ShapeAttr("element_shape_except0", std::nullopt));
  CHECK(ErrorOfGraph(scalars, TwoWriteFeeds(2, 0, 1, F32({1}, {}), F32({2}, {})), {"c:0"}) ==
        "node 'c' (TensorArrayConcatV3): TensorArray 'ta': cannot concatenate scalars (index 0); "
        "gather them instead");
  CHECK(ErrorOfGraph(scalars, TwoWriteFeeds(2, 0, 1, F32({1, 2}, {1, 2}), F32({2, 3, 4}, {1, 3})),
                     {"c:0"}) ==
        "node 'c' (TensorArrayConcatV3): TensorArray 'ta': cannot concatenate elements of "
        "different shapes past dimension 0: index 0 has [2], index 1 has [3]");
}

// ---- Strings, Close ----

TEST_CASE("TensorArray: string elements, and Close ends the array") {
  Tensor a(DT_STRING, TensorShape({2}));
  a.data<std::string>()[0] = "ab";
  a.data<std::string>()[1] = "";
  Tensor b(DT_STRING, TensorShape({2}));
  b.data<std::string>()[0] = "c";
  b.data<std::string>()[1] = "def";
  const std::string t =
      Placeholder("size", DT_INT32) + Placeholder("i0", DT_INT32) + Placeholder("i1", DT_INT32) +
      Placeholder("v0", DT_STRING) + Placeholder("v1", DT_STRING) + Placeholder("all", DT_INT32) +
      ArrayNode("ta", "size", {.dtype = DT_STRING}) +
      Write("w0", "ta", "i0", "v0", "ta:1", DT_STRING) +
      Write("w", "ta", "i1", "v1", "w0", DT_STRING) + Gather("g", "ta", "all", "w", DT_STRING) +
      NodeText("close", "TensorArrayCloseV3", {"ta", "^g"}) +
      NodeText("after", "Identity", {"w", "^close"}) +
      NodeText("n_after", "TensorArraySizeV3", {"ta", "after"});
  const Feeds feeds = {
      {"size", Scalar32(2)},  {"i0", Scalar32(1)}, {"i1", Scalar32(0)}, {"v0", a}, {"v1", b},
      {"all", I32Vec({0, 1})}};
  std::vector<Tensor> out = MustRun(t, feeds, {"g"});
  REQUIRE(out[0].shape() == TensorShape({2, 2}));
  const std::vector<std::string> expected = {"c", "def", "ab", ""};
  for (int i = 0; i < 4; ++i)
    CHECK(out[0].data<std::string>()[i] == expected[static_cast<size_t>(i)]);
  CHECK(ErrorOfGraph(t, feeds, {"n_after"}) ==
        "node 'n_after' (TensorArraySizeV3): TensorArray 'ta' has been closed");
}

// ---- Gradient arrays ----

// Forward array `ta` (size 3, element shape unknown) with index 0 written [1,2] and
// index 2 written [[1,2,3]]; gradient arrays of it.
std::string ForwardForGrad() {
  return Placeholder("size", DT_INT32) + Placeholder("i0", DT_INT32) + Placeholder("i2", DT_INT32) +
         Placeholder("v0", DT_FLOAT) + Placeholder("v2", DT_FLOAT) + ArrayNode("ta", "size") +
         Write("w0", "ta", "i0", "v0", "ta:1") + Write("w2", "ta", "i2", "v2", "w0");
}
Feeds ForwardFeeds() {
  return {{"size", Scalar32(3)},
          {"i0", Scalar32(0)},
          {"i2", Scalar32(2)},
          {"v0", F32({1, 2}, {2})},
          {"v2", F32({1, 2, 3}, {1, 3})}};
}

TEST_CASE("TensorArrayGradV3: one gradient array per source, sized like the forward array") {
  const std::string t =
      ForwardForGrad() + Grad("g1", "ta", "w2", "gradients") +
      NodeText("flow1", "Identity", {"w2", "^g1"}) + Grad("g2", "ta", "flow1", "gradients") +
      NodeText("flow2", "Identity", {"w2", "^g2"}) + Grad("g3", "ta", "flow2", "gradients_1") +
      NodeText("n", "TensorArraySizeV3", {"g1", "g1:1"});
  std::vector<Tensor> out = MustRun(t, ForwardFeeds(), {"g1", "g2", "g3", "n", "g1:1"});
  CHECK(out[0].resource_name() == out[1].resource_name());
  CHECK(out[0].resource_name() != out[2].resource_name());
  CHECK(out[3].data<int32_t>()[0] == 3);
  CHECK(out[4].dtype() == DT_FLOAT);
}

TEST_CASE(
    "TensorArrayGradV3: writes aggregate; unwritten elements read as zeros of the forward shape") {
  // Index 0 written twice (sum), index 2 never (zeros of [1,3]), index 1 not written in
  // the forward array either: no shape, an error.
  const std::string t = ForwardForGrad() + Grad("g", "ta", "w2", "gradients") +
                        Placeholder("d0", DT_FLOAT) + Placeholder("d1", DT_FLOAT) +
                        Placeholder("i1", DT_INT32) + Write("gw0", "g", "i0", "d0", "g:1") +
                        Write("gw1", "g", "i0", "d1", "gw0") + Read("r0", "g", "i0", "gw1") +
                        Read("r2", "g", "i2", "gw1") + Read("r1", "g", "i1", "gw1");
  Feeds feeds = ForwardFeeds();
  feeds.push_back({"d0", F32({0.5f, 1}, {2})});
  feeds.push_back({"d1", F32({2, 4}, {2})});
  feeds.push_back({"i1", Scalar32(1)});
  std::vector<Tensor> out = MustRun(t, feeds, {"r0", "r2"});
  CHECK(CompareTensors(out[0], F32({2.5f, 5}, {2}), 0, 0) == "");
  CHECK(CompareTensors(out[1], F32({0, 0, 0}, {1, 3}), 0, 0) == "");
  CHECK(ErrorOfGraph(t, feeds, {"r1"}) ==
        "node 'r1' (TensorArrayReadV3): TensorArray 'ta@gradients': cannot read index 1: it was "
        "not written and the element shape <unknown> is not fully defined");
  // A sum's shape must match.
  feeds[6].second = F32({2, 4, 5}, {3});
  CHECK(ErrorOfGraph(t, feeds, {"r0"}) ==
        "node 'gw1' (TensorArrayWriteV3): TensorArray 'ta@gradients': cannot add a value of shape "
        "[3] to index 0, which holds shape [2]");
}

TEST_CASE("TensorArrayGradV3 freezes a dynamically sized forward array") {
  ArrayAttrs dynamic;
  dynamic.dynamic_size = true;
  const std::string t = TwoWrites(dynamic) + Grad("g", "ta", "w0", "gradients") +
                        NodeText("after", "Identity", {"w0", "^g"}) +
                        Write("w_late", "ta", "i1", "v1", "after");
  CHECK(ErrorOfGraph(t, TwoWriteFeeds(1, 0, 4), {"w_late"}) ==
        "node 'w_late' (TensorArrayWriteV3): TensorArray 'ta': cannot write index 4: the array has "
        "size 1 and is not dynamically sized");
}

TEST_CASE("TensorArrayGradWithShape prepends shape_to_prepend to every element shape") {
  const std::string t = ForwardForGrad() + Placeholder("prepend", DT_INT32) +
                        NodeText("g", "TensorArrayGradWithShape", {"ta", "w2", "prepend"},
                                 Attr("source", "s: 'gradients'")) +
                        Read("r0", "g", "i0", "g:1") + Read("r2", "g", "i2", "g:1");
  Feeds feeds = ForwardFeeds();
  feeds.push_back({"prepend", I32Vec({2})});
  std::vector<Tensor> out = MustRun(t, feeds, {"r0", "r2"});
  CHECK(out[0].shape() == TensorShape({2, 2}));
  CHECK(out[1].shape() == TensorShape({2, 1, 3}));
  CHECK(std::all_of(out[1].data<float>(), out[1].data<float>() + 6,
                    [](float v) { return v == 0.0f; }));
  feeds.back().second = I32Vec({-2});
  CHECK(ErrorOfGraph(t, feeds, {"r0"}) ==
        "node 'g' (TensorArrayGradWithShape): input 2 (shape_to_prepend) has a negative size -2 at "
        "index 0");
}

TEST_CASE("TensorArray: a handle that names no array, or another resource") {
  const std::string t = Placeholder("h", tensorflow::DT_RESOURCE) + Placeholder("flow", DT_FLOAT) +
                        NodeText("n", "TensorArraySizeV3", {"h", "flow"});
  CHECK(ErrorOfGraph(t,
                     {{"h", Tensor::ResourceHandle("nothing")}, {"flow", Tensor::Scalar<float>(0)}},
                     {"n"}) ==
        "node 'n' (TensorArraySizeV3): resource 'nothing' does not exist (its creating op has not "
        "run)");
}

}  // namespace
}  // namespace parallax
