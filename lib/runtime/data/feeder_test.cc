#include "lib/runtime/data/feeder.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "lib/graph/graph_io.h"

namespace parallax {
namespace {

// x: float [?,784]; y: int64 [?]; y1: float [?,10]; img: float [?,28,28,1]; fixed: float [100,4];
// logits = MatMul(x, w) with w [784,10]; SparseSoftmaxCrossEntropyWithLogits(logits, y);
// SoftmaxCrossEntropyWithLogits(logits, y1); and an input queue.
constexpr const char* kGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 784 } } } } }
  node { name: "y" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } } }
  node { name: "y32" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } } }
  node { name: "y1" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 10 } } } } }
  node { name: "img" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 28 } dim { size: 28 } dim { size: 1 } } } } }
  node { name: "open" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: -1 } } } } }
  node { name: "open3" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: -1 } dim { size: -1 } } } } }
  node { name: "fixed" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 100 } dim { size: 4 } } } } }
  node { name: "fixed50" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 50 } dim { size: 4 } } } } }
  node { name: "lr" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { } } } }
  node { name: "w" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: 784 } dim { size: 10 } } } } }
  node { name: "w/read" op: "Identity" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "logits" op: "MatMul" input: "x" input: "w/read" attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "labels" op: "Identity" input: "y" attr { key: "T" value { type: DT_INT64 } } }
  node { name: "xent" op: "SparseSoftmaxCrossEntropyWithLogits" input: "logits" input: "labels"
         attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tlabels" value { type: DT_INT64 } } }
  node { name: "xent1" op: "SoftmaxCrossEntropyWithLogits" input: "logits" input: "y1"
         attr { key: "T" value { type: DT_FLOAT } } }
  node { name: "queue" op: "RandomShuffleQueueV2"
         attr { key: "component_types" value { list { type: DT_FLOAT type: DT_INT64 } } }
         attr { key: "shapes" value { list { shape { dim { size: 28 } dim { size: 28 } dim { size: 1 } } shape { } } } } }
  node { name: "n" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 200 } } } }
  node { name: "dequeue" op: "QueueDequeueManyV2" input: "queue" input: "n"
         attr { key: "component_types" value { list { type: DT_FLOAT type: DT_INT64 } } } }
  node { name: "depth" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 7 } } } }
  node { name: "one_hot" op: "OneHot" input: "dequeue:1" input: "depth" }
)pb";

Graph TestGraph() {
  StatusOr<Graph> g = ParseGraph(kGraph, "feeder.pbtxt");
  if (!g.ok()) FAIL(g.status().message());
  return std::move(g).value();
}

FeedTarget Target(const Graph& g, std::string_view name) {
  StatusOr<FeedTarget> t = DescribeFeedTarget(g, name);
  if (!t.ok()) FAIL(t.status().message());
  return *t;
}

std::shared_ptr<const Column> FileColumn(std::string source, Tensor data) {
  auto column = TensorColumn::Create(std::move(source), std::move(data));
  if (!column.ok()) FAIL(column.status().message());
  return *column;
}

Tensor Images(int64_t n) {  // n uint8 images 28x28, pixel = (example + position) % 256
  Tensor t(tensorflow::DT_UINT8, TensorShape({n, 28, 28}));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>((i / 784 + i % 784) % 256);
  return t;
}

std::string CreateError(const Graph& g, std::string_view target, std::shared_ptr<const Column> column,
                        int64_t batch = 0) {
  StatusOr<Feeder> f = Feeder::Create({{Target(g, target), std::move(column)}}, batch);
  REQUIRE_FALSE(f.ok());
  return f.status().message();
}

TEST_CASE("feed targets: placeholders, queue dequeue outputs, unknown names") {
  Graph g = TestGraph();
  CHECK(Target(g, "x").DebugString() == "placeholder 'x' (float [?,784])");
  CHECK(Target(g, "x:0").DebugString() == "placeholder 'x:0' (float [?,784])");
  CHECK(Target(g, "dequeue:0").DebugString() == "tensor 'dequeue:0' (float [200,28,28,1])");
  CHECK(Target(g, "dequeue:1").DebugString() == "tensor 'dequeue:1' (int64 [200])");
  CHECK(Target(g, "logits").DebugString() == "tensor 'logits' (float <unknown>)");
  CHECK(DescribeFeedTarget(g, "nope").status().message() == "'nope' names no node in the graph");
}

TEST_CASE("uint8 images are scaled to [0,1] and reshaped 28x28 -> 784 and -> 28x28x1") {
  Graph g = TestGraph();
  auto images = FileColumn("train-images.idx", Images(5));
  StatusOr<Feeder> f = Feeder::Create({{Target(g, "x"), images}, {Target(g, "img"), images}}, 2);
  REQUIRE(f.ok());
  CHECK(f->batch_size() == 2);
  CHECK(f->Describe() == std::vector<std::string>{
                             "x <- train-images.idx: scale uint8 [28,28] to float [784]",
                             "img <- train-images.idx: scale uint8 [28,28] to float [28,28,1]"});
  const std::vector<int64_t> ids = {3, 1};
  auto feeds = f->Feeds(ids);
  REQUIRE(feeds.ok());
  const Tensor& x = (*feeds)[0].second;
  CHECK((*feeds)[0].first == "x");
  CHECK(x.shape() == TensorShape({2, 784}));
  CHECK(x.data<float>()[0] == Approx(3 / 255.0));        // example 3, pixel 0
  CHECK(x.data<float>()[784 + 5] == Approx(6 / 255.0));  // example 1, pixel 5
  CHECK((*feeds)[1].second.shape() == TensorShape({2, 28, 28, 1}));
}

TEST_CASE("class ids become one-hot rows, int64 <-> int32 labels cast, out-of-range ids fail") {
  Graph g = TestGraph();
  auto labels = FileColumn("labels.idx", Tensor::FromVector<uint8_t>({3, 0, 9, 12}, TensorShape({4})));
  StatusOr<Feeder> f = Feeder::Create(
      {{Target(g, "y1"), labels}, {Target(g, "y"), labels}, {Target(g, "y32"), labels}}, 3);
  REQUIRE(f.ok());
  auto feeds = f->Feeds(std::vector<int64_t>{0, 2});
  REQUIRE(feeds.ok());
  CHECK((*feeds)[0].second.DebugString(20) ==
        "float[2,10] {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}");
  CHECK((*feeds)[1].second.DebugString() == "int64[2] {3, 9}");
  CHECK((*feeds)[2].second.DebugString() == "int32[2] {3, 9}");
  CHECK(f->Feeds(std::vector<int64_t>{3}).status().message() ==
        "placeholder 'y1': label 12 of example 3 in labels.idx is outside [0, 10)");

  auto big = FileColumn("big.npy", Tensor::FromVector<int64_t>({1, int64_t{1} << 33}, TensorShape({2})));
  StatusOr<Feeder> narrow = Feeder::Create({{Target(g, "y32"), big}}, 2);
  REQUIRE(narrow.ok());
  CHECK(narrow->Feeds(std::vector<int64_t>{0, 1}).status().message() ==
        "placeholder 'y32': value 8589934592 of example 1 in big.npy does not fit int32");
}

TEST_CASE("what cannot be adapted is one error naming placeholder, source and shapes") {
  Graph g = TestGraph();
  CHECK(CreateError(g, "x", FileColumn("small.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({6, 10})))) ==
        "placeholder 'x' (float [?,784]): cannot feed small.npy (float, 6 examples of [10]): 10 "
        "elements per example, the target takes 784");
  CHECK(CreateError(g, "y", FileColumn("f.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({6})))) ==
        "placeholder 'y' (int64 [?]): cannot feed f.npy (float, 6 examples of []): float data "
        "cannot be converted to int64");
  CHECK(CreateError(g, "x", FileColumn("b.npy", Tensor(tensorflow::DT_BOOL, TensorShape({6, 784})))) ==
        "placeholder 'x' (float [?,784]): cannot feed b.npy (bool, 6 examples of [784]): bool "
        "data cannot be converted to float");
  CHECK(CreateError(g, "lr", FileColumn("f.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({6})))) ==
        "placeholder 'lr' (float []): cannot feed f.npy (float, 6 examples of []): the target is "
        "a scalar, it takes no batch of examples");
  CHECK(CreateError(g, "open3", FileColumn("c.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({6, 24})))) ==
        "placeholder 'open3' (float [?,?,?]): cannot feed c.npy (float, 6 examples of [24]): the "
        "target's example shape has several unknown dimensions that the source's shape does not "
        "settle");
}

TEST_CASE("the batch size: fixed dims win, conflicts are errors, open dims take --batch or 32") {
  Graph g = TestGraph();
  auto four = FileColumn("f4.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({200, 4})));
  StatusOr<Feeder> fixed = Feeder::Create({{Target(g, "fixed"), four}}, 0);
  REQUIRE(fixed.ok());
  CHECK(fixed->batch_size() == 100);
  CHECK(fixed->batch_fixed());
  CHECK(CreateError(g, "fixed", four, 64) ==
        "--batch 64 conflicts with placeholder 'fixed' (float [100,4]), whose batch dimension is "
        "fixed at 100");
  StatusOr<Feeder> both = Feeder::Create({{Target(g, "fixed"), four}, {Target(g, "fixed50"), four}}, 0);
  CHECK(both.status().message() ==
        "placeholder 'fixed50' (float [50,4]) has batch dimension 50, but placeholder 'fixed' "
        "(float [100,4]) has 100");
  auto wide = FileColumn("w.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({200, 784})));
  StatusOr<Feeder> open = Feeder::Create({{Target(g, "x"), wide}}, 0);
  REQUIRE(open.ok());
  CHECK(open->batch_size() == kDefaultBatchSize);
  CHECK_FALSE(open->batch_fixed());
  // One unknown example dim is inferred; a target of unknown rank takes the source's shape.
  auto flat = FileColumn("flat.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({3, 12})));
  StatusOr<Feeder> inferred = Feeder::Create({{Target(g, "logits"), flat}}, 0);
  REQUIRE(inferred.ok());
  CHECK(inferred->Describe()[0] == "logits <- flat.npy: copy float [12] to float [12]");
  auto grid = FileColumn("grid.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({3, 2, 6})));
  StatusOr<Feeder> one_unknown = Feeder::Create({{Target(g, "open"), grid}}, 0);
  REQUIRE(one_unknown.ok());
  CHECK(one_unknown->Describe()[0] == "open <- grid.npy: copy float [2,6] to float [12]");
  StatusOr<Feeder> several = Feeder::Create({{Target(g, "open3"), grid}}, 0);
  REQUIRE(several.ok());
  CHECK(several->Describe()[0] == "open3 <- grid.npy: copy float [2,6] to float [2,6]");
}

TEST_CASE("synthetic data: class ids from the logits' shape, one-hot labels, floats in [0,1)") {
  Graph g = TestGraph();
  CHECK(InferNumClasses(g, Target(g, "y").ref) == 10);        // via Identity -> Sparse xent
  CHECK(InferNumClasses(g, Target(g, "dequeue:1").ref) == 7);  // OneHot depth
  CHECK(InferNumClasses(g, Target(g, "x").ref) == -1);

  StatusOr<std::shared_ptr<const Column>> y = MakeSyntheticColumn(g, Target(g, "y"), 1);
  REQUIRE(y.ok());
  StatusOr<std::shared_ptr<const Column>> y1 = MakeSyntheticColumn(g, Target(g, "y1"), 1);
  REQUIRE(y1.ok());
  CHECK((*y1)->dtype() == tensorflow::DT_INT64);  // class ids, one-hot encoded when fed
  StatusOr<std::shared_ptr<const Column>> x = MakeSyntheticColumn(g, Target(g, "x"), 1);
  REQUIRE(x.ok());
  StatusOr<Feeder> f = Feeder::Create({{Target(g, "x"), *x}, {Target(g, "y"), *y}, {Target(g, "y1"), *y1}}, 0);
  REQUIRE(f.ok());
  std::vector<int64_t> ids(64);
  for (int i = 0; i < 64; ++i) ids[static_cast<size_t>(i)] = i * 1000;
  auto feeds = f->Feeds(ids);
  REQUIRE(feeds.ok());
  for (float v : (*feeds)[0].second.flat<float>()) REQUIRE((v >= 0 && v < 1));
  std::set<int64_t> classes;
  for (int64_t v : (*feeds)[1].second.flat<int64_t>()) {
    REQUIRE((v >= 0 && v < 10));
    classes.insert(v);
  }
  CHECK(classes.size() > 5);
  for (int64_t i = 0; i < 64; ++i) {
    float row = 0;
    for (int k = 0; k < 10; ++k) row += (*feeds)[2].second.data<float>()[i * 10 + k];
    CHECK(row == 1);
  }
  // The same example ids give the same data (resume, any shard), other ids other data.
  auto again = f->Feeds(ids);
  REQUIRE(again.ok());
  CHECK(TensorsBitEqual((*feeds)[0].second, (*again)[0].second));
  CHECK(MakeSyntheticColumn(g, Target(g, "open"), 1).status().message() ==
        "placeholder 'open' (float [?,?]): cannot make synthetic data: dimension 1 is unknown");
}

TEST_CASE("synthetic strings: the decimal text of class ids, the same for the same example") {
  StatusOr<Graph> g = ParseGraph(R"pb(
    node { name: "words" op: "Placeholder" attr { key: "dtype" value { type: DT_STRING } }
           attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } })pb",
                                 "words.pbtxt");
  REQUIRE(g.ok());
  StatusOr<std::shared_ptr<const Column>> words = MakeSyntheticColumn(*g, Target(*g, "words"), 1);
  INFO(words.status().message());
  REQUIRE(words.ok());
  const std::vector<int64_t> ids = {0, 1, 2, 3, 4, 5, 6, 7};
  const Tensor a = (*words)->Gather(ids), b = (*words)->Gather(ids);
  REQUIRE(a.shape() == TensorShape({8, 3}));
  std::set<std::string> seen;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const std::string& w = a.data<std::string>()[i];
    CHECK(w == b.data<std::string>()[i]);
    REQUIRE(w.size() == 1);
    CHECK((w[0] >= '0' && w[0] <= '9'));
    seen.insert(w);
  }
  CHECK(seen.size() > 3);
}

// The zoo's rules on placeholders: x uniform in [2, 4), labels from x's first 3 values
// (int64 and one-hot), ids uniform in [5, 50), labels voted by ids.
constexpr const char* kRuleGraph = R"pb(
  node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 2 } dim { size: 3 } } } }
         attr { key: "_parallax_synthetic" value { s: "uniform:2:4" } } }
  node { name: "y" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "argmax_prefix:x:3" } } }
  node { name: "y1" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }
         attr { key: "_parallax_synthetic" value { s: "argmax_prefix:x:3" } } }
  node { name: "ids" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 5 } } } }
         attr { key: "_parallax_synthetic" value { s: "uniform_int:5:50" } } }
  node { name: "v" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "token_vote:ids:4" } } }
  node { name: "bad" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "argmax_prefix:x" } } }
  node { name: "misfit" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "uniform:0:1" } } }
  node { name: "unknown" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "gaussian:0:1" } } }
)pb";

TEST_CASE("synthetic data follows _parallax_synthetic rules: ranges and learnable labels") {
  StatusOr<Graph> parsed = ParseGraph(kRuleGraph, "rules.pbtxt");
  REQUIRE(parsed.ok());
  const Graph& g = *parsed;
  StatusOr<std::shared_ptr<const Column>> x = MakeSyntheticColumn(g, Target(g, "x"), 3);
  REQUIRE(x.ok());
  // Labels read the column bound to x (the lookup), so they match what x is fed.
  const ColumnLookup lookup = [&](OutputRef ref) -> std::shared_ptr<const Column> {
    return ref == Target(g, "x").ref ? *x : nullptr;
  };
  StatusOr<std::shared_ptr<const Column>> y = MakeSyntheticColumn(g, Target(g, "y"), 3, lookup);
  REQUIRE(y.ok());
  StatusOr<std::shared_ptr<const Column>> y1 = MakeSyntheticColumn(g, Target(g, "y1"), 3, lookup);
  REQUIRE(y1.ok());
  StatusOr<std::shared_ptr<const Column>> ids = MakeSyntheticColumn(g, Target(g, "ids"), 3);
  REQUIRE(ids.ok());
  // Without a lookup the rule makes ids' column itself, from the same seed: the same data.
  StatusOr<std::shared_ptr<const Column>> v = MakeSyntheticColumn(g, Target(g, "v"), 3);
  REQUIRE(v.ok());

  StatusOr<Feeder> f = Feeder::Create({{Target(g, "x"), *x}, {Target(g, "y"), *y},
                                       {Target(g, "y1"), *y1}, {Target(g, "ids"), *ids},
                                       {Target(g, "v"), *v}},
                                      0);
  REQUIRE(f.ok());
  std::vector<int64_t> examples(200);
  for (int i = 0; i < 200; ++i) examples[static_cast<size_t>(i)] = 7 * i + 1;
  auto feeds = f->Feeds(examples);
  REQUIRE(feeds.ok());
  const Tensor& xs = (*feeds)[0].second;
  const Tensor& ys = (*feeds)[1].second;
  const Tensor& one_hot = (*feeds)[2].second;
  const Tensor& tokens = (*feeds)[3].second;
  const Tensor& votes = (*feeds)[4].second;
  std::set<int64_t> seen_y, seen_v;
  for (int64_t i = 0; i < 200; ++i) {
    const float* row = xs.data<float>() + i * 6;
    for (int k = 0; k < 6; ++k) REQUIRE((row[k] >= 2 && row[k] < 4));
    // The index of the largest of the first 3 values (row-major over [2, 3]).
    const int64_t want = std::max_element(row, row + 3) - row;
    CHECK(ys.data<int64_t>()[i] == want);
    for (int k = 0; k < 3; ++k) CHECK(one_hot.data<float>()[i * 3 + k] == (k == want ? 1 : 0));
    seen_y.insert(want);
    std::vector<int64_t> count(4, 0);
    for (int k = 0; k < 5; ++k) {
      const int32_t t = tokens.data<int32_t>()[i * 5 + k];
      REQUIRE((t >= 5 && t < 50));
      ++count[((static_cast<uint64_t>(t) * 2654435761ull) & 0xffffffffull) % 4];
    }
    CHECK(votes.data<int32_t>()[i] == std::max_element(count.begin(), count.end()) - count.begin());
    seen_v.insert(votes.data<int32_t>()[i]);
  }
  CHECK(seen_y.size() == 3);
  CHECK(seen_v.size() >= 3);

  CHECK(MakeSyntheticColumn(g, Target(g, "bad"), 3).status().message() ==
        "placeholder 'bad': _parallax_synthetic 'argmax_prefix:x': expected "
        "argmax_prefix:FEED:CLASSES with CLASSES >= 1");
  CHECK(MakeSyntheticColumn(g, Target(g, "misfit"), 3).status().message() ==
        "placeholder 'misfit' (int64 [?]): _parallax_synthetic 'uniform:0:1' needs a float or "
        "double input");
  CHECK(MakeSyntheticColumn(g, Target(g, "unknown"), 3).status().message() ==
        "placeholder 'unknown': _parallax_synthetic 'gaussian:0:1': expected one of "
        "uniform:LO:HI, uniform_int:LO:HI, zipf_int:LO:HI, argmax_prefix:FEED:CLASSES, "
        "token_vote:FEED:CLASSES, shift:FEED");
}

// The lm1b model's rules: Zipf-distributed token ids and next-token targets.
constexpr const char* kZipfGraph = R"pb(
  node { name: "ids" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } }
         attr { key: "_parallax_synthetic" value { s: "zipf_int:0:50" } } }
  node { name: "y" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } }
         attr { key: "_parallax_synthetic" value { s: "shift:ids" } } }
  node { name: "short" op: "Placeholder" attr { key: "dtype" value { type: DT_INT64 } }
         attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }
         attr { key: "_parallax_synthetic" value { s: "shift:ids" } } }
  node { name: "floats" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "zipf_int:0:5" } } }
  node { name: "bad" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } }
         attr { key: "shape" value { shape { dim { size: -1 } } } }
         attr { key: "_parallax_synthetic" value { s: "zipf_int:0:2.5" } } }
)pb";

TEST_CASE("synthetic zipf_int ids follow 1/(k+1) in range, per seed; shift gives the next ids") {
  StatusOr<Graph> parsed = ParseGraph(kZipfGraph, "zipf.pbtxt");
  REQUIRE(parsed.ok());
  const Graph& g = *parsed;
  StatusOr<std::shared_ptr<const Column>> ids = MakeSyntheticColumn(g, Target(g, "ids"), 3);
  REQUIRE(ids.ok());
  constexpr int64_t kExamples = 50000;
  std::vector<int64_t> examples(kExamples);
  for (int64_t i = 0; i < kExamples; ++i) examples[static_cast<size_t>(i)] = i;
  const Tensor tokens = (*ids)->Gather(examples);
  std::vector<int64_t> count(50, 0);
  for (int32_t t : tokens.flat<int32_t>()) {
    REQUIRE((t >= 0 && t < 50));
    ++count[static_cast<size_t>(t)];
  }
  // P(k) = (1 / (k + 1)) / H_50, H_50 = 4.499: id 0 is 22.2% of the tokens, id 1 11.1%,
  // id 49 0.44%; 200,000 draws put each within a few percent of that.
  double harmonic = 0;
  for (int k = 1; k <= 50; ++k) harmonic += 1.0 / k;
  const double n = static_cast<double>(tokens.num_elements());
  for (int k : {0, 1, 2, 9, 49}) {
    INFO("id " << k << " count " << count[static_cast<size_t>(k)]);
    const double want = n / ((k + 1) * harmonic);
    CHECK(std::abs(static_cast<double>(count[static_cast<size_t>(k)]) - want) < 0.05 * want + 30);
  }
  CHECK(count[0] > 1.8 * static_cast<double>(count[1]));
  // Deterministic per seed and example, different for another seed.
  StatusOr<std::shared_ptr<const Column>> again = MakeSyntheticColumn(g, Target(g, "ids"), 3);
  StatusOr<std::shared_ptr<const Column>> other = MakeSyntheticColumn(g, Target(g, "ids"), 4);
  REQUIRE(again.ok());
  REQUIRE(other.ok());
  const std::vector<int64_t> some = {5, 900, 77};
  const Tensor a = (*ids)->Gather(some), b = (*again)->Gather(some), c = (*other)->Gather(some);
  CHECK(std::equal(a.flat<int32_t>().begin(), a.flat<int32_t>().end(), b.flat<int32_t>().begin()));
  CHECK(!std::equal(a.flat<int32_t>().begin(), a.flat<int32_t>().end(), c.flat<int32_t>().begin()));

  // shift:ids reads the column bound to ids: y[t] = ids[(t + 1) mod 4].
  const ColumnLookup lookup = [&](OutputRef ref) -> std::shared_ptr<const Column> {
    return ref == Target(g, "ids").ref ? *ids : nullptr;
  };
  StatusOr<std::shared_ptr<const Column>> y = MakeSyntheticColumn(g, Target(g, "y"), 3, lookup);
  REQUIRE(y.ok());
  CHECK((*y)->dtype() == tensorflow::DT_INT64);
  const Tensor next = (*y)->Gather(some);
  REQUIRE(next.shape() == TensorShape({3, 4}));
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t t = 0; t < 4; ++t) {
      CHECK(next.data<int64_t>()[r * 4 + t] == a.data<int32_t>()[r * 4 + (t + 1) % 4]);
    }
  }
  // Without a lookup: ids' own column from the same seed, the same targets.
  StatusOr<std::shared_ptr<const Column>> y2 = MakeSyntheticColumn(g, Target(g, "y"), 3);
  REQUIRE(y2.ok());
  const Tensor next2 = (*y2)->Gather(some);
  CHECK(std::equal(next.flat<int64_t>().begin(), next.flat<int64_t>().end(), next2.flat<int64_t>().begin()));

  CHECK(MakeSyntheticColumn(g, Target(g, "short"), 3).status().message() ==
        "placeholder 'short' (int64 [?,3]): _parallax_synthetic 'shift:ids' needs targets of the "
        "shape of 'ids' ([4] per example), got [3]");
  CHECK(MakeSyntheticColumn(g, Target(g, "floats"), 3).status().message() ==
        "placeholder 'floats' (float [?]): _parallax_synthetic 'zipf_int:0:5' needs an integer input");
  CHECK(MakeSyntheticColumn(g, Target(g, "bad"), 3).status().message() ==
        "placeholder 'bad': _parallax_synthetic 'zipf_int:0:2.5': expected zipf_int:LO:HI with LO < "
        "HI, both integers");
}

TEST_CASE("datasets: columns agree on the example count") {
  Dataset d;
  REQUIRE(d.AddColumn("x", FileColumn("x.npy", Tensor(tensorflow::DT_FLOAT, TensorShape({6, 2})))).ok());
  REQUIRE(d.AddColumn("s", std::make_shared<SyntheticColumn>(tensorflow::DT_FLOAT, TensorShape({3}), 1)).ok());
  CHECK(d.num_examples() == 6);
  CHECK(d.AddColumn("y", FileColumn("y.npy", Tensor(tensorflow::DT_INT64, TensorShape({5})))).message() ==
        "'y' (y.npy) has 5 examples, 'x' (x.npy) has 6");
  Dataset synthetic;
  REQUIRE(synthetic.AddColumn("s", std::make_shared<SyntheticColumn>(tensorflow::DT_FLOAT, TensorShape({3}), 1)).ok());
  CHECK(synthetic.num_examples() == kSyntheticEpochExamples);
  CHECK_FALSE(synthetic.bounded());
  CHECK(LoadColumnFromFile("/nonexistent/x.npy").status().message() == "/nonexistent/x.npy: no such file");
}

}  // namespace
}  // namespace parallax
