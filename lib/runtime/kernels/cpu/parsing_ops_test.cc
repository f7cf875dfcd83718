// Tests of the parsing kernels: ParseExample / ParseExampleV2 / ParseSingleExample
// against a naive reference built from the same generated examples (dense with and
// without defaults, scalar and multi-dim, variable length, sparse and ragged of every
// type, empty batches) and against TF's own records (tfx MNIST, BERT MRPC) read from the
// shared folder; DecodeCSV, DecodeRaw and StringToNumber on literal cases and TF's exact
// errors.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <random>

#include "lib/runtime/data/tfrecord.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/testdata.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RunOp;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;

std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs, int num_outputs = -1) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs, {}, num_outputs);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const AttrMap& attrs, int num_outputs = -1) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs, {}, num_outputs);
  return run.ok() ? "" : run.status().message();
}

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<std::string>(v, TensorShape(std::move(shape)));
}
Tensor StringVec(std::vector<std::string> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Strings(std::move(v), {n});
}
Tensor F32(std::vector<float> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<float>(v, TensorShape(std::move(shape)));
}
Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int64_t>(v, TensorShape(std::move(shape)));
}

tensorflow::AttrValue Types(const std::vector<DataType>& types) {
  tensorflow::AttrValue v;
  v.mutable_list();
  for (DataType t : types) v.mutable_list()->add_type(t);
  return v;
}
tensorflow::AttrValue Shapes(const std::vector<std::vector<int64_t>>& shapes) {
  tensorflow::AttrValue v;
  v.mutable_list();
  for (const auto& dims : shapes) {
    tensorflow::TensorShapeProto* s = v.mutable_list()->add_shape();
    for (int64_t d : dims) s->add_dim()->set_size(d);
  }
  return v;
}
tensorflow::AttrValue StringList(const std::vector<std::string>& values) {
  tensorflow::AttrValue v;
  v.mutable_list();
  for (const std::string& s : values) v.mutable_list()->add_s(s);
  return v;
}

// An Example builder: Feature lists by key.
struct ExampleBuilder {
  tensorflow::Example example;
  ExampleBuilder& Floats(const std::string& key, std::vector<float> values) {
    auto* list = (*example.mutable_features()->mutable_feature())[key].mutable_float_list();
    for (float v : values) list->add_value(v);
    return *this;
  }
  ExampleBuilder& Ints(const std::string& key, std::vector<int64_t> values) {
    auto* list = (*example.mutable_features()->mutable_feature())[key].mutable_int64_list();
    for (int64_t v : values) list->add_value(v);
    return *this;
  }
  ExampleBuilder& Bytes(const std::string& key, std::vector<std::string> values) {
    auto* list = (*example.mutable_features()->mutable_feature())[key].mutable_bytes_list();
    for (const std::string& v : values) list->add_value(v);
    return *this;
  }
  ExampleBuilder& Empty(const std::string& key) {
    (*example.mutable_features()->mutable_feature())[key];
    return *this;
  }
  std::string Serialize() const { return example.SerializeAsString(); }
};

// ParseExample's inputs and attrs for dense features (key, type, shape, default) and
// sparse features (key, type).
struct DenseFeature {
  std::string key;
  DataType dtype;
  std::vector<int64_t> shape;
  Tensor default_value;
};
struct SparseFeature {
  std::string key;
  DataType dtype;
};

std::vector<Tensor> ParseExample(const std::vector<std::string>& serialized,
                                 const std::vector<SparseFeature>& sparse,
                                 const std::vector<DenseFeature>& dense, std::string* error) {
  std::vector<Tensor> inputs = {StringVec(serialized), Strings({}, {0})};
  std::vector<DataType> sparse_types, dense_types;
  std::vector<std::vector<int64_t>> shapes;
  for (const SparseFeature& s : sparse) {
    inputs.push_back(Tensor::Scalar<std::string>(s.key));
    sparse_types.push_back(s.dtype);
  }
  for (const DenseFeature& d : dense) inputs.push_back(Tensor::Scalar<std::string>(d.key));
  for (const DenseFeature& d : dense) {
    inputs.push_back(d.default_value);
    dense_types.push_back(d.dtype);
    shapes.push_back(d.shape);
  }
  const AttrMap attrs = {{"Nsparse", IntAttr(static_cast<int64_t>(sparse.size()))},
                         {"Ndense", IntAttr(static_cast<int64_t>(dense.size()))},
                         {"sparse_types", Types(sparse_types)},
                         {"Tdense", Types(dense_types)},
                         {"dense_shapes", Shapes(shapes)}};
  StatusOr<testing::OpRun> run = RunOp("ParseExample", inputs, attrs);
  if (!run.ok()) {
    *error = run.status().message();
    return {};
  }
  *error = "";
  return std::move(run->outputs);
}

Tensor Empty(DataType dtype) { return Tensor(dtype, TensorShape({0})); }

TEST_CASE("ParseExample matches a naive reference on random examples") {
  std::mt19937 rng(11);
  for (int64_t batch : {0, 1, 7}) {
    // Generated data: per example, whether each dense feature is present, and the lists.
    std::vector<std::string> serialized;
    std::vector<std::vector<float>> image(static_cast<size_t>(batch));
    std::vector<bool> has_image(static_cast<size_t>(batch));
    std::vector<int64_t> label(static_cast<size_t>(batch));
    std::vector<std::vector<std::string>> words(static_cast<size_t>(batch));
    std::vector<std::vector<std::string>> tags(static_cast<size_t>(batch));
    std::vector<std::vector<int64_t>> ids(static_cast<size_t>(batch));
    std::vector<std::vector<float>> weights(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const size_t i = static_cast<size_t>(b);
      ExampleBuilder e;
      has_image[i] = rng() % 3 != 0;
      if (has_image[i]) {
        for (int k = 0; k < 6; ++k) image[i].push_back(static_cast<float>(rng() % 100) / 8);
        e.Floats("image", image[i]);
      }
      label[i] = static_cast<int64_t>(rng() % 10) - 3;
      e.Ints("label", {label[i]});
      for (int k = 0; k < 4; ++k) words[i].push_back(std::string(rng() % 4, 'a' + k));
      e.Bytes("words", words[i]);
      for (size_t k = rng() % 4; k > 0; --k) ids[i].push_back(static_cast<int64_t>(rng()));
      if (!ids[i].empty() || rng() % 2) e.Ints("ids", ids[i]);
      for (size_t k = rng() % 3; k > 0; --k) weights[i].push_back(static_cast<float>(rng() % 7));
      e.Floats("weights", weights[i]);
      for (size_t k = rng() % 3; k > 0; --k) tags[i].push_back("t" + std::to_string(rng() % 9));
      e.Bytes("tags", tags[i]);
      e.Floats("unused", {1, 2, 3});
      serialized.push_back(e.Serialize());
    }
    const Tensor image_default = F32({9, 8, 7, 6, 5, 4}, {2, 3});
    std::string error;
    std::vector<Tensor> out = ParseExample(
        serialized, {{"ids", DT_INT64}, {"weights", DT_FLOAT}, {"tags", DT_STRING}},
        {{"image", DT_FLOAT, {2, 3}, image_default},
         {"label", DT_INT64, {}, Empty(DT_INT64)},
         {"words", DT_STRING, {2, 2}, Empty(DT_STRING)}},
        &error);
    INFO("batch " << batch << ": " << error);
    REQUIRE(out.size() == 12);

    // Dense, by the reference.
    Tensor image_ref(DT_FLOAT, TensorShape({batch, 2, 3}));
    Tensor label_ref(DT_INT64, TensorShape({batch}));
    Tensor words_ref(DT_STRING, TensorShape({batch, 2, 2}));
    for (int64_t b = 0; b < batch; ++b) {
      const size_t i = static_cast<size_t>(b);
      for (int k = 0; k < 6; ++k) {
        image_ref.data<float>()[b * 6 + k] =
            has_image[i] ? image[i][static_cast<size_t>(k)] : image_default.data<float>()[k];
      }
      label_ref.data<int64_t>()[b] = label[i];
      for (int k = 0; k < 4; ++k) words_ref.data<std::string>()[b * 4 + k] = words[i][static_cast<size_t>(k)];
    }
    CHECK(CompareTensors(out[9], image_ref) == "");
    CHECK(CompareTensors(out[10], label_ref) == "");
    CHECK(TensorsBitEqual(out[11], words_ref));

    // Sparse, by the reference: indices (b, j), concatenated values, [batch, longest].
    auto check_sparse = [&](int s, auto lists, DataType dtype) {
      std::vector<int64_t> indices;
      int64_t longest = 0;
      int64_t total = 0;
      for (int64_t b = 0; b < batch; ++b) {
        const auto& list = lists[static_cast<size_t>(b)];
        for (size_t j = 0; j < list.size(); ++j) {
          indices.push_back(b);
          indices.push_back(static_cast<int64_t>(j));
        }
        longest = std::max<int64_t>(longest, static_cast<int64_t>(list.size()));
        total += static_cast<int64_t>(list.size());
      }
      INFO("sparse " << s);
      CHECK(CompareTensors(out[static_cast<size_t>(s)], I64(indices, {total, 2})) == "");
      CHECK(CompareTensors(out[static_cast<size_t>(6 + s)], I64({batch, longest}, {2})) == "");
      const Tensor& values = out[static_cast<size_t>(3 + s)];
      REQUIRE(values.dtype() == dtype);
      REQUIRE(values.num_elements() == total);
      int64_t at = 0;
      for (const auto& list : lists) {
        for (const auto& v : list) {
          using V = std::decay_t<decltype(v)>;
          CHECK(values.data<V>()[at++] == v);
        }
      }
    };
    check_sparse(0, ids, DT_INT64);
    check_sparse(1, weights, DT_FLOAT);
    check_sparse(2, tags, DT_STRING);
  }
}

TEST_CASE("ParseExample errors name the example, the feature and the values") {
  const std::string good = ExampleBuilder().Floats("x", {1, 2}).Ints("y", {3}).Serialize();
  const std::string missing = ExampleBuilder().Ints("y", {3}).Serialize();
  const std::string wrong_type = ExampleBuilder().Ints("x", {1, 2}).Serialize();
  const std::string wrong_count = ExampleBuilder().Floats("x", {1, 2, 3}).Serialize();
  const std::vector<DenseFeature> dense = {{"x", DT_FLOAT, {2}, Empty(DT_FLOAT)}};
  std::string error;
  ParseExample({good, missing}, {}, dense, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Feature: x (data type: float) is "
                 "required but could not be found.");
  ParseExample({good, good, wrong_type}, {}, dense, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Key: x, Index: 2.  Data types don't "
                 "match. Data type: int64 but expected type: float");
  ParseExample({wrong_count}, {}, dense, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Key: x, Index: 0.  Number of float "
                 "values != expected.  Values size: 3 but output shape: [2]");
  ParseExample({good}, {{"x", DT_STRING}}, {}, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Key: x, Index: 0.  Data types don't "
                 "match. Data type: float but expected type: string");
  ParseExample({"not a proto \xff\xff"}, {}, dense, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Index: 0: could not parse a "
                 "tf.train.Example (14 bytes)");
  ParseExample({good}, {}, {{"x", DT_FLOAT, {2}, F32({1, 2, 3}, {3})}}, &error);
  CHECK(error == "node 'op' (ParseExample): dense_defaults[0] (x) has shape [3]; dense_shapes[0] "
                 "needs 2 elements");
  // Names, when given, name the example.
  const AttrMap attrs = {{"Nsparse", IntAttr(0)}, {"Ndense", IntAttr(1)},
                         {"sparse_types", Types({})}, {"Tdense", Types({DT_FLOAT})},
                         {"dense_shapes", Shapes({{2}})}};
  CHECK(ErrorOf("ParseExample", {StringVec({good, missing}), StringVec({"rec0", "rec1"}),
                                 Tensor::Scalar<std::string>("x"), Empty(DT_FLOAT)}, attrs) ==
        "node 'op' (ParseExample): Name: rec1, Feature: x (data type: float) is required but "
        "could not be found.");
  CHECK(ErrorOf("ParseExample", {Strings({good}, {1, 1}), Strings({}, {0}),
                                 Tensor::Scalar<std::string>("x"), Empty(DT_FLOAT)}, attrs) ==
        "node 'op' (ParseExample): Expected serialized to be a vector, got shape: [1,1]");
}

TEST_CASE("ParseExample pads variable-length dense features and treats an empty Feature as empty") {
  const std::vector<std::string> serialized = {
      ExampleBuilder().Ints("seq", {1, 2, 3, 4}).Serialize(),
      ExampleBuilder().Serialize(),
      ExampleBuilder().Ints("seq", {5, 6}).Serialize(),
      ExampleBuilder().Empty("seq").Serialize()};
  std::string error;
  // [-1, 2]: rows of 2, padded with the default's element (-1).
  std::vector<Tensor> out =
      ParseExample(serialized, {}, {{"seq", DT_INT64, {-1, 2}, I64({-1}, {})}}, &error);
  INFO(error);
  REQUIRE(out.size() == 1);
  CHECK(CompareTensors(out[0], I64({1, 2, 3, 4, -1, -1, -1, -1, 5, 6, -1, -1, -1, -1, -1, -1},
                                   {4, 2, 2})) == "");
  // No default: pad with 0.
  out = ParseExample(serialized, {}, {{"seq", DT_INT64, {-1}, Empty(DT_INT64)}}, &error);
  REQUIRE(out.size() == 1);
  CHECK(CompareTensors(out[0], I64({1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0}, {4, 4})) == "");
  ParseExample({ExampleBuilder().Ints("seq", {1, 2, 3}).Serialize()}, {},
               {{"seq", DT_INT64, {-1, 2}, I64({0}, {})}}, &error);
  CHECK(error == "node 'op' (ParseExample): Name: <unknown>, Key: seq, Index: 0.  Number of int64 "
                 "values is not a multiple of stride length. Saw 3 values but output shape is: "
                 "[-1,2]");
  // A sparse feature whose Feature has no list: no values.
  out = ParseExample(serialized, {{"seq", DT_INT64}}, {}, &error);
  REQUIRE(out.size() == 3);
  CHECK(CompareTensors(out[2], I64({4, 4}, {2})) == "");
  CHECK(out[0].shape() == TensorShape({6, 2}));
}

TEST_CASE("ParseSingleExample parses one example without a batch dim") {
  const std::string serialized =
      ExampleBuilder().Floats("f", {1.5f, 2.5f}).Bytes("s", {"a", "bc", ""}).Serialize();
  const AttrMap attrs = {{"num_sparse", IntAttr(1)},
                         {"sparse_keys", StringList({"s"})},
                         {"dense_keys", StringList({"f", "g"})},
                         {"sparse_types", Types({DT_STRING})},
                         {"Tdense", Types({DT_FLOAT, DT_INT64})},
                         {"dense_shapes", Shapes({{2, 1}, {}})}};
  std::vector<Tensor> out = Run("ParseSingleExample", {Tensor::Scalar<std::string>(serialized),
                                                        Empty(DT_FLOAT), I64({7}, {})}, attrs);
  REQUIRE(out.size() == 5);
  CHECK(CompareTensors(out[0], I64({0, 1, 2}, {3, 1})) == "");
  CHECK(TensorsBitEqual(out[1], StringVec({"a", "bc", ""})));
  CHECK(CompareTensors(out[2], I64({3}, {1})) == "");
  CHECK(CompareTensors(out[3], F32({1.5f, 2.5f}, {2, 1})) == "");
  CHECK(CompareTensors(out[4], I64({7}, {})) == "");  // missing: the default
  CHECK(ErrorOf("ParseSingleExample", {StringVec({serialized}), Empty(DT_FLOAT), I64({7}, {})},
                attrs) ==
        "node 'op' (ParseSingleExample): Expected serialized to be a scalar, got shape: [1]");
}

TEST_CASE("ParseExampleV2 parses vectors and scalars, with ragged features") {
  const std::vector<std::string> serialized = {
      ExampleBuilder().Ints("r", {1, 2, 3}).Floats("d", {0.5f}).Serialize(),
      ExampleBuilder().Floats("d", {1.5f}).Serialize(),
      ExampleBuilder().Ints("r", {4}).Floats("d", {2.5f}).Bytes("sp", {"x"}).Serialize()};
  const AttrMap attrs = {{"num_sparse", IntAttr(1)},
                         {"sparse_types", Types({DT_STRING})},
                         {"Tdense", Types({DT_FLOAT})},
                         {"ragged_value_types", Types({DT_INT64})},
                         {"ragged_split_types", Types({tensorflow::DT_INT32})},
                         {"dense_shapes", Shapes({{}})}};
  std::vector<Tensor> out = Run("ParseExampleV2", {StringVec(serialized), Strings({}, {0}),
                                                    StringVec({"sp"}), StringVec({"d"}),
                                                    StringVec({"r"}), Empty(DT_FLOAT)}, attrs);
  REQUIRE(out.size() == 6);
  CHECK(CompareTensors(out[0], I64({2, 0}, {1, 2})) == "");
  CHECK(TensorsBitEqual(out[1], StringVec({"x"})));
  CHECK(CompareTensors(out[2], I64({3, 1}, {2})) == "");
  CHECK(CompareTensors(out[3], F32({0.5f, 1.5f, 2.5f}, {3})) == "");
  CHECK(CompareTensors(out[4], I64({1, 2, 3, 4}, {4})) == "");
  CHECK(CompareTensors(out[5], Tensor::FromVector<int32_t>({0, 3, 3, 4}, {4})) == "");

  // A scalar: no batch dim (sparse indices [N, 1], shape [longest]).
  out = Run("ParseExampleV2", {Tensor::Scalar<std::string>(serialized[2]), Strings({}, {0}),
                               StringVec({"sp"}), StringVec({"d"}), StringVec({"r"}),
                               Empty(DT_FLOAT)}, attrs);
  CHECK(CompareTensors(out[0], I64({0}, {1, 1})) == "");
  CHECK(CompareTensors(out[2], I64({1}, {1})) == "");
  CHECK(CompareTensors(out[3], F32({2.5f}, {})) == "");
  CHECK(CompareTensors(out[4], I64({4}, {1})) == "");
  CHECK(CompareTensors(out[5], Tensor::FromVector<int32_t>({0, 1}, {2})) == "");
}

// ---- Real records written by TensorFlow ----

std::vector<std::string> ReadRecords(const std::string& path, size_t limit) {
  StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(path);
  REQUIRE(reader.ok());
  std::vector<std::string> records;
  std::string record;
  while (records.size() < limit) {
    StatusOr<bool> more = (*reader)->Next(&record);
    REQUIRE(more.ok());
    if (!*more) break;
    records.push_back(record);
  }
  return records;
}

TEST_CASE("ParseExample reads TF's MNIST records (tfx_mnist.tfrecord)") {
  const std::optional<std::string> path =
      testing::SharedDataPath("testdata/tf-files/tfrecords/tfx_mnist.tfrecord");
  if (!path) return;
  const std::vector<std::string> records = ReadRecords(*path, 1000);
  REQUIRE(records.size() == 1000);
  std::string error;
  std::vector<Tensor> out =
      ParseExample(records, {}, {{"image_floats", DT_FLOAT, {28, 28}, Empty(DT_FLOAT)},
                                 {"image_class", DT_INT64, {}, I64({-1}, {})}},
                   &error);
  INFO(error);
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape() == TensorShape({1000, 28, 28}));
  // The reference: protobuf's own parse of each record.
  for (size_t b = 0; b < records.size(); ++b) {
    tensorflow::Example example;
    REQUIRE(example.ParseFromString(records[b]));
    const auto& features = example.features().feature();
    const auto& pixels = features.at("image_floats").float_list().value();
    REQUIRE(pixels.size() == 784);
    CHECK(std::memcmp(out[0].data<float>() + b * 784, pixels.data(), 784 * sizeof(float)) == 0);
    const int64_t label = features.at("image_class").int64_list().value(0);
    CHECK(out[1].data<int64_t>()[b] == label);
    CHECK((label >= 0 && label < 10));
  }
  for (float v : out[0].flat<float>()) REQUIRE((v >= -0.5f && v <= 0.5f));
}

TEST_CASE("ParseSingleExample and ParseExample read TF's BERT MRPC records") {
  const std::optional<std::string> path =
      testing::SharedDataPath("testdata/tf-files/bert_mrpc/train.tf_record");
  if (!path) return;
  const std::vector<std::string> records = ReadRecords(*path, 32);
  REQUIRE(records.size() == 32);
  // As run_classifier.py's input_fn: int64 [128] x 3, label_ids [] , is_real_example [].
  const std::vector<std::string> keys = {"input_ids", "input_mask", "segment_ids", "label_ids",
                                         "is_real_example"};
  const AttrMap attrs = {{"num_sparse", IntAttr(0)},
                         {"sparse_keys", StringList({})},
                         {"dense_keys", StringList(keys)},
                         {"sparse_types", Types({})},
                         {"Tdense", Types({DT_INT64, DT_INT64, DT_INT64, DT_INT64, DT_INT64})},
                         {"dense_shapes", Shapes({{128}, {128}, {128}, {}, {}})}};
  std::string error;
  std::vector<Tensor> batch = ParseExample(
      records, {},
      {{"input_ids", DT_INT64, {128}, Empty(DT_INT64)},
       {"input_mask", DT_INT64, {128}, Empty(DT_INT64)},
       {"segment_ids", DT_INT64, {128}, Empty(DT_INT64)},
       {"label_ids", DT_INT64, {}, Empty(DT_INT64)},
       {"is_real_example", DT_INT64, {}, Empty(DT_INT64)}},
      &error);
  INFO(error);
  REQUIRE(batch.size() == 5);
  for (size_t b = 0; b < records.size(); ++b) {
    std::vector<Tensor> one = Run(
        "ParseSingleExample",
        {Tensor::Scalar<std::string>(records[b]), Empty(DT_INT64), Empty(DT_INT64),
         Empty(DT_INT64), Empty(DT_INT64), Empty(DT_INT64)},
        attrs);
    tensorflow::Example example;
    REQUIRE(example.ParseFromString(records[b]));
    for (size_t k = 0; k < keys.size(); ++k) {
      const auto& values = example.features().feature().at(keys[k]).int64_list().value();
      const Tensor& single = one[k];
      REQUIRE(single.num_elements() == values.size());
      const int64_t n = single.num_elements();
      for (int64_t i = 0; i < n; ++i) {
        CHECK(single.data<int64_t>()[i] == values[static_cast<int>(i)]);
        CHECK(batch[k].data<int64_t>()[static_cast<int64_t>(b) * n + i] == values[static_cast<int>(i)]);
      }
    }
    // The mask is 1 exactly where input_ids are nonzero, and segment ids are 0 or 1.
    for (int64_t i = 0; i < 128; ++i) {
      CHECK(one[1].data<int64_t>()[i] == (one[0].data<int64_t>()[i] != 0 ? 1 : 0));
      CHECK(one[2].data<int64_t>()[i] <= 1);
    }
  }
}

// ---- DecodeCSV ----

AttrMap CsvAttrs(const std::vector<DataType>& types) { return {{"OUT_TYPE", Types(types)}}; }

TEST_CASE("DecodeCSV parses every column type, quotes, defaults and na_value") {
  const std::vector<DataType> types = {DT_FLOAT, tensorflow::DT_DOUBLE, tensorflow::DT_INT32,
                                       DT_INT64, DT_STRING};
  const std::vector<Tensor> defaults = {F32({-1}, {1}), Tensor::FromVector<double>({-2}, {1}),
                                        Tensor::FromVector<int32_t>({-3}, {1}), I64({-4}, {}),
                                        StringVec({"dflt"})};
  const Tensor records = Strings({"1.5,2.25,3,4,five", ",,,,", "1e3, 7 ,-8,9000000000,\"a,\"\"b\"\"\"",
                                  "0.5,0.25,1,2,"}, {2, 2});
  std::vector<Tensor> inputs = {records};
  inputs.insert(inputs.end(), defaults.begin(), defaults.end());
  std::vector<Tensor> out = Run("DecodeCSV", inputs, CsvAttrs(types));
  REQUIRE(out.size() == 5);
  CHECK(CompareTensors(out[0], F32({1.5f, -1, 1000, 0.5f}, {2, 2})) == "");
  CHECK(CompareTensors(out[1], Tensor::FromVector<double>({2.25, -2, 7, 0.25}, {2, 2})) == "");
  CHECK(CompareTensors(out[2], Tensor::FromVector<int32_t>({3, -3, -8, 1}, {2, 2})) == "");
  CHECK(CompareTensors(out[3], I64({4, -4, 9000000000LL, 2}, {2, 2})) == "");
  CHECK(TensorsBitEqual(out[4], Strings({"five", "dflt", "a,\"b\"", "dflt"}, {2, 2})));

  // na_value, another delimiter, select_cols, quotes off.
  AttrMap attrs = CsvAttrs({DT_INT32, DT_STRING});
  attrs["field_delim"] = StringAttr("|");
  attrs["na_value"] = StringAttr("NA");
  attrs["select_cols"] = IntListAttr({1, 3});
  attrs["use_quote_delim"] = BoolAttr(false);
  out = Run("DecodeCSV", {StringVec({"x|NA|y|\"q\"", "x|5|y|z|extra"}),
                          Tensor::FromVector<int32_t>({0}, {1}), StringVec({""})}, attrs);
  CHECK(CompareTensors(out[0], Tensor::FromVector<int32_t>({0, 5}, {2})) == "");
  CHECK(TensorsBitEqual(out[1], StringVec({"\"q\"", "z"})));

  // No records: empty outputs of the records' shape.
  out = Run("DecodeCSV", {Strings({}, {0, 3}), F32({}, {0})}, CsvAttrs({DT_FLOAT}));
  CHECK(out[0].shape() == TensorShape({0, 3}));
}

TEST_CASE("DecodeCSV errors name the field and the record") {
  const AttrMap attrs = CsvAttrs({DT_INT32, DT_FLOAT});
  const Tensor int_default = Tensor::FromVector<int32_t>({0}, {1});
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2", "3,"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Field 1 is required but missing in record 1!");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2", "x,2"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Field 0 in record 1 is not a valid int32: x");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"99999999999,2"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Field 0 in record 0 is not a valid int32: 99999999999");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2.5x"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Field 1 in record 0 is not a valid float: 2.5x");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2,3"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Expect 2 fields but have 3 in record 0");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,\"2"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Quoted field has to end with quote followed by delim or end "
        "(record 0)");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,\"2\"x"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Quoted field has to end with quote followed by delim or end "
        "(record 0)");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2\"3"}), int_default, F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): Unquoted fields cannot have quotes/CRLFs inside (record 0)");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2"}), Tensor::FromVector<int32_t>({0, 1}, {2}),
                              F32({}, {0})}, attrs) ==
        "node 'op' (DecodeCSV): There should only be 1 default per field but field 0 has 2");
  AttrMap bad = attrs;
  bad["field_delim"] = StringAttr("::");
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2"}), int_default, F32({}, {0})}, bad) ==
        "node 'op' (DecodeCSV): field_delim should be only 1 char");
  bad = attrs;
  bad["select_cols"] = IntListAttr({2, 1});
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2"}), int_default, F32({}, {0})}, bad) ==
        "node 'op' (DecodeCSV): select_cols is not strictly increasing.");
  bad["select_cols"] = IntListAttr({0, 5});
  CHECK(ErrorOf("DecodeCSV", {StringVec({"1,2"}), int_default, F32({0}, {1})}, bad) ==
        "node 'op' (DecodeCSV): Expect 6 fields but have 2 in record 0");
}

// ---- DecodeRaw ----

// Bytes of `values` as little-endian (this machine's order).
template <typename T>
std::string RawBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <typename T>
void CheckDecodeRaw(DataType dtype, std::vector<T> a, std::vector<T> b) {
  INFO("dtype " << dtype);
  const Tensor out = Run("DecodeRaw", {StringVec({RawBytes(a), RawBytes(b)})},
                         {{"out_type", TypeAttr(dtype)}})[0];
  // Complex elements are two T each.
  const bool complex = dtype == tensorflow::DT_COMPLEX64 || dtype == tensorflow::DT_COMPLEX128;
  const int64_t n = static_cast<int64_t>(a.size()) / (complex ? 2 : 1);
  REQUIRE(out.shape() == TensorShape({2, n}));
  CHECK(std::memcmp(out.raw_data(), RawBytes(a).data(), a.size() * sizeof(T)) == 0);
  CHECK(std::memcmp(static_cast<const char*>(out.raw_data()) + a.size() * sizeof(T),
                    RawBytes(b).data(), b.size() * sizeof(T)) == 0);
  // Big-endian input: each element's bytes reversed give the same values.
  if (sizeof(T) > 1 && dtype != tensorflow::DT_COMPLEX64 && dtype != tensorflow::DT_COMPLEX128) {
    std::string swapped = RawBytes(a);
    for (size_t i = 0; i < swapped.size(); i += sizeof(T)) {
      std::reverse(swapped.begin() + static_cast<std::ptrdiff_t>(i),
                   swapped.begin() + static_cast<std::ptrdiff_t>(i + sizeof(T)));
    }
    const Tensor big = Run("DecodeRaw", {StringVec({swapped})},
                           {{"out_type", TypeAttr(dtype)}, {"little_endian", BoolAttr(false)}})[0];
    CHECK(std::memcmp(big.raw_data(), RawBytes(a).data(), a.size() * sizeof(T)) == 0);
  }
}

TEST_CASE("DecodeRaw reinterprets bytes as every listed dtype, in either byte order") {
  CheckDecodeRaw<float>(DT_FLOAT, {1.5f, -2}, {3, 4e10f});
  CheckDecodeRaw<double>(tensorflow::DT_DOUBLE, {0.1, -1e300}, {2, 3});
  CheckDecodeRaw<int32_t>(tensorflow::DT_INT32, {1, -2, 3}, {1 << 30, 0, -1});
  CheckDecodeRaw<int64_t>(DT_INT64, {-5}, {1LL << 40});
  CheckDecodeRaw<uint16_t>(tensorflow::DT_UINT16, {0xEEFF, 1}, {0xCCDD, 2});
  CheckDecodeRaw<int16_t>(tensorflow::DT_INT16, {-300, 7}, {0, 300});
  CheckDecodeRaw<uint8_t>(tensorflow::DT_UINT8, {0, 255, 65}, {1, 2, 3});
  CheckDecodeRaw<int8_t>(tensorflow::DT_INT8, {-128, 127}, {0, -1});
  CheckDecodeRaw<uint16_t>(tensorflow::DT_HALF, {0x3C00, 0xC000}, {0x7C00, 0});  // 1, -2, inf, 0
  CheckDecodeRaw<uint16_t>(tensorflow::DT_BFLOAT16, {0x3F80, 0x4000}, {0, 0xBF80});
  CheckDecodeRaw<uint8_t>(tensorflow::DT_BOOL, {1, 0}, {0, 1});
  CheckDecodeRaw<float>(tensorflow::DT_COMPLEX64, {1, 2, 3, 4}, {5, 6, 7, 8});
  CheckDecodeRaw<double>(tensorflow::DT_COMPLEX128, {1, 2}, {3, 4});

  // TF's endianness examples.
  const AttrMap i32 = {{"out_type", TypeAttr(tensorflow::DT_INT32)}};
  CHECK(CompareTensors(Run("DecodeRaw", {StringVec({"\x01\x02\x03\x04"})}, i32)[0],
                       Tensor::FromVector<int32_t>({0x04030201}, {1, 1})) == "");
  AttrMap i32_big = i32;
  i32_big["little_endian"] = BoolAttr(false);
  CHECK(CompareTensors(Run("DecodeRaw", {StringVec({"\x01\x02\x03\x04"})}, i32_big)[0],
                       Tensor::FromVector<int32_t>({0x01020304}, {1, 1})) == "");
  // complex64 1+2j big-endian: each float's bytes swapped, real part first.
  const Tensor c = Run("DecodeRaw", {StringVec({std::string("?\x80\x00\x00@\x00\x00\x00", 8)})},
                       {{"out_type", TypeAttr(tensorflow::DT_COMPLEX64)},
                        {"little_endian", BoolAttr(false)}})[0];
  const float* parts = static_cast<const float*>(c.raw_data());
  CHECK(parts[0] == 1.0f);
  CHECK(parts[1] == 2.0f);

  // Empty inputs and empty strings: a trailing dim of 0.
  CHECK(Run("DecodeRaw", {Strings({}, {0, 2})}, i32)[0].shape() == TensorShape({0, 2, 0}));
  CHECK(Run("DecodeRaw", {StringVec({"", ""})}, i32)[0].shape() == TensorShape({2, 0}));
  // A scalar string gives a vector.
  CHECK(Run("DecodeRaw", {Tensor::Scalar<std::string>("AaBC")},
            {{"out_type", TypeAttr(tensorflow::DT_UINT16)}})[0]
            .shape() == TensorShape({2}));
}

TEST_CASE("DecodeRaw errors are TF's") {
  CHECK(ErrorOf("DecodeRaw", {StringVec({"123", "456"})},
                {{"out_type", TypeAttr(tensorflow::DT_INT16)}}) ==
        "node 'op' (DecodeRaw): Input to DecodeRaw has length 3 that is not a multiple of 2, "
        "the size of int16");
  CHECK(ErrorOf("DecodeRaw", {StringVec({"short", "longer"})},
                {{"out_type", TypeAttr(tensorflow::DT_UINT8)}}) ==
        "node 'op' (DecodeRaw): DecodeRaw requires input strings to all be the same size, but "
        "element 1 has size 5 != 6");
}

// ---- StringToNumber ----

TEST_CASE("StringToNumber parses decimal text and rejects the rest as TF") {
  Tensor out = Run("StringToNumber", {Strings({"1.5", " -2e3 ", "inf", "+7"}, {2, 2})}, {})[0];
  CHECK(CompareTensors(out, F32({1.5f, -2000, INFINITY, 7}, {2, 2})) == "");
  out = Run("StringToNumber", {StringVec({"-2147483648", "42"})},
            {{"out_type", TypeAttr(tensorflow::DT_INT32)}})[0];
  CHECK(CompareTensors(out, Tensor::FromVector<int32_t>({INT32_MIN, 42}, {2})) == "");
  out = Run("StringToNumber", {StringVec({"9000000000"})}, {{"out_type", TypeAttr(DT_INT64)}})[0];
  CHECK(CompareTensors(out, I64({9000000000LL}, {1})) == "");
  out = Run("StringToNumber", {StringVec({"0.1"})},
            {{"out_type", TypeAttr(tensorflow::DT_DOUBLE)}})[0];
  CHECK(out.data<double>()[0] == 0.1);
  CHECK(Run("StringToNumber", {Strings({}, {0})}, {})[0].shape() == TensorShape({0}));
  for (const std::string bad : {"", "1.5.2", "abc", "0x10", "1 2"}) {
    INFO(bad);
    CHECK(ErrorOf("StringToNumber", {StringVec({bad})}, {}) ==
          "node 'op' (StringToNumber): StringToNumberOp could not correctly convert string: " + bad);
  }
  CHECK(ErrorOf("StringToNumber", {StringVec({"2147483648"})},
                {{"out_type", TypeAttr(tensorflow::DT_INT32)}}) ==
        "node 'op' (StringToNumber): StringToNumberOp could not correctly convert string: "
        "2147483648");
  CHECK(ErrorOf("StringToNumber", {StringVec({"1.5"})},
                {{"out_type", TypeAttr(tensorflow::DT_INT32)}}) ==
        "node 'op' (StringToNumber): StringToNumberOp could not correctly convert string: 1.5");
}

}  // namespace
}  // namespace parallax
