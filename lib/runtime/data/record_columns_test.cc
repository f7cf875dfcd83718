#include "lib/runtime/data/record_columns.h"

#include <catch2/catch.hpp>

#include <fstream>

#include "lib/runtime/data/tfrecord.h"
#include "lib/testing/testdata.h"
#include "protos/example.pb.h"

namespace parallax {
namespace {

std::string Error(const StatusOr<std::shared_ptr<TensorColumn>>& column) {
  REQUIRE_FALSE(column.ok());
  return column.status().message();
}

TEST_CASE("CSV columns by header name: integers become int64, other numbers double") {
  const std::string dir = testing::TempDir();
  const std::string path = dir + "/data.csv";
  std::ofstream(path) << "label,\"x, y\",name\r\n3,0.5,\"a \"\"q\"\"\"\n1,2,b\n";
  StatusOr<std::shared_ptr<TensorColumn>> label = LoadKeyedColumn(path, "label");
  REQUIRE(label.ok());
  CHECK((*label)->data().DebugString() == "int64[2] {3, 1}");
  StatusOr<std::shared_ptr<TensorColumn>> xy = LoadKeyedColumn(path, "x, y");
  REQUIRE(xy.ok());
  CHECK((*xy)->data().DebugString() == "double[2] {0.5, 2}");
  CHECK(Error(LoadCsvColumn(path, "missing")) ==
        path + ": no column 'missing' (the header has: label, x, y, name)");
  CHECK(Error(LoadCsvColumn(path, "name")) == path + ": row 2: column 'name' holds 'a \"q\"', not a number");
  CHECK(SplitKeyedSource(path + ":label") == std::make_pair(path, std::string("label")));
  CHECK_FALSE(SplitKeyedSource(path).has_value());
  CHECK_FALSE(SplitKeyedSource(dir + "/nothere.csv:label").has_value());
}

TEST_CASE("columns from bytes in memory: CSV rows numbered as in the file, TFRecord by content") {
  // Blank lines count as rows in messages (row 4 is the third line after the header).
  const std::string csv = "x,y\n1,2\n\n3,b\n";
  StatusOr<std::shared_ptr<TensorColumn>> x = ParseCsvColumn(csv, "x", "m.csv");
  REQUIRE(x.ok());
  CHECK((*x)->data().DebugString() == "int64[2] {1, 3}");
  CHECK(Error(ParseCsvColumn(csv, "y", "m.csv")) ==
        "m.csv: row 4: column 'y' holds 'b', not a number");
  CHECK(Error(ParseCsvColumn("", "x", "e.csv")) == "e.csv: empty CSV file (no header row)");
  CHECK(Error(ParseKeyedColumn("x\n", "x", "h.csv")) == "h.csv: no data rows");

  tensorflow::Example e;
  (*e.mutable_features()->mutable_feature())["x"].mutable_float_list()->add_value(0.5f);
  std::string framed;
  AppendTFRecord(e.SerializeAsString(), &framed);
  AppendTFRecord(e.SerializeAsString(), &framed);
  StatusOr<std::shared_ptr<TensorColumn>> from_records =
      ParseKeyedColumn(framed, "x", "m.tfrecord");
  REQUIRE(from_records.ok());
  CHECK((*from_records)->data().DebugString() == "float[2] {0.5, 0.5}");
  CHECK(Error(ParseKeyedColumn(framed, "y", "m.tfrecord")) ==
        "m.tfrecord: record 0 has no feature 'y' (it has: x)");
  // Names from the file quoted on one line (found by fuzz/keyed_column_fuzzer.cc).
  tensorflow::Example odd;
  (*odd.mutable_features()->mutable_feature())["a\nb"].mutable_float_list()->add_value(1);
  framed.clear();
  AppendTFRecord(odd.SerializeAsString(), &framed);
  CHECK(Error(ParseKeyedColumn(framed, "x", "m.tfrecord")) ==
        "m.tfrecord: record 0 has no feature 'x' (it has: a\\x0ab)");
  CHECK(Error(ParseCsvColumn("a\rb,c\n", "x", "m.csv")) ==
        "m.csv: no column 'x' (the header has: a\\x0db, c)");
}

TEST_CASE("TFRecord features by key, one example per record") {
  const std::string path = testing::TempDir() + "/examples.tfrecord";
  std::vector<std::string> records;
  for (int i = 0; i < 3; ++i) {
    tensorflow::Example e;
    auto& f = *e.mutable_features()->mutable_feature();
    f["label"].mutable_int64_list()->add_value(i);
    for (int k = 0; k < 2; ++k) f["x"].mutable_float_list()->add_value(static_cast<float>(i + k));
    f["raw"].mutable_bytes_list()->add_value("bytes");
    records.push_back(e.SerializeAsString());
  }
  REQUIRE(WriteTFRecordFile(path, records).ok());
  StatusOr<std::shared_ptr<TensorColumn>> label = LoadKeyedColumn(path, "label");
  REQUIRE(label.ok());
  CHECK((*label)->data().DebugString() == "int64[3] {0, 1, 2}");
  StatusOr<std::shared_ptr<TensorColumn>> x = LoadKeyedColumn(path, "x");
  REQUIRE(x.ok());
  CHECK((*x)->data().DebugString() == "float[3,2] {0, 1, 1, 2, 2, 3}");
  CHECK(Error(LoadKeyedColumn(path, "raw")) ==
        path + ": record 0: feature 'raw' holds bytes; decode it in the graph, or feed a "
               "decoded .npy file");
  CHECK(Error(LoadKeyedColumn(path, "y")) ==
        path + ": record 0 has no feature 'y' (it has: label, raw, x)");
}

TEST_CASE("the shared MNIST TFRecord file feeds its image_class feature") {
  const std::optional<std::string> path =
      testing::SharedDataPath("testdata/tf-files/tfrecords/tfx_mnist.tfrecord");
  if (!path) return;
  StatusOr<std::shared_ptr<TensorColumn>> labels = LoadKeyedColumn(*path, "image_class");
  INFO(labels.status().ToString());
  REQUIRE(labels.ok());
  CHECK((*labels)->num_examples() == 1000);
  StatusOr<std::shared_ptr<TensorColumn>> images = LoadKeyedColumn(*path, "image_floats");
  REQUIRE(images.ok());
  CHECK((*images)->example_shape() == TensorShape({784}));
}

}  // namespace
}  // namespace parallax
