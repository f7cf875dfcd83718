// End-to-end test of a TF 1.x feature-column graph (testdata/feature_columns): a
// vocabulary-file column with out-of-vocabulary buckets, a hash-bucket column on int64
// ids and a crossed column, run as `parallax run` runs a graph (tables initialised by
// init_all_tables, the vocabulary found through --input-dir). The ids are checked
// against TF's definitions: line numbers of the vocabulary, Fingerprint64 buckets and
// FingerprintCat64 crosses (lib/base/tf_hash.h, itself checked against published values),
// and TF's documented index_table_from_file example.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "lib/base/tf_hash.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

std::vector<int64_t> Ints(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
}

int64_t Bucket(const std::string& s, uint64_t buckets) {
  return static_cast<int64_t>(tf_hash::Fingerprint64(s) % buckets);
}

TEST_CASE("a TF1 wide model's feature columns give TF's ids") {
  const std::string dir = std::filesystem::absolute(testing::RepoPath("testdata/feature_columns"));
  StatusOr<Graph> graph = LoadGraph(dir + "/wide_columns_tf1.pbtxt");
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  CpuDevice device(2);
  // The graph names the vocabulary by the path of the machine that exported it.
  Executor executor(*graph, device, InputOptions{.input_dir = dir});
  // Lookups before the tables are initialised fail; then init_all_tables, twice (the
  // second run is a no-op, as in TF).
  StatusOr<std::vector<Tensor>> early = executor.Run({.fetches = {"occupation_lookup_Lookup"}});
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().message().find("is not initialized") != std::string::npos);
  REQUIRE(executor.Run({.targets = {"init_all_tables"}}).ok());
  REQUIRE(executor.Run({.targets = {"init_all_tables"}}).ok());

  StatusOr<std::vector<Tensor>> out = executor.Run(
      {.fetches = {"occupation_lookup_Lookup", "city_lookup/lookup",
                   "occupation_X_education/SparseCross:0", "occupation_X_education/SparseCross:1",
                   "occupation_X_education/SparseCross:2"}});
  INFO(out.status().ToString());
  REQUIRE(out.ok());

  // Vocabulary ids are line numbers; "astronaut" is out of vocabulary: 4 + its bucket.
  const int64_t astronaut = 4 + Bucket("astronaut", 2);
  const std::vector<int64_t> occupation = {0, 1, astronaut, 2};
  CHECK(Ints((*out)[0]) == occupation);
  // Hash buckets of the ids' decimal strings.
  CHECK(Ints((*out)[1]) ==
        std::vector<int64_t>{Bucket("1001", 100), Bucket("7", 100), Bucket("-3", 100)});
  // Crosses of each row's occupation ids with its education, hash key 0xDECAFCAFFE.
  auto cross = [](int64_t id, const std::string& education) {
    uint64_t h = tf_hash::FingerprintCat64(0xDECAFCAFFEULL, static_cast<uint64_t>(id));
    h = tf_hash::FingerprintCat64(h, tf_hash::Fingerprint64(education));
    return static_cast<int64_t>(h % 1000);
  };
  CHECK(Ints((*out)[2]) == std::vector<int64_t>{0, 0, 1, 0, 1, 1, 3, 0});
  CHECK(Ints((*out)[3]) == std::vector<int64_t>{cross(0, "phd"), cross(1, "bachelors"),
                                                cross(astronaut, "bachelors"), cross(2, "masters")});
  CHECK(Ints((*out)[4]) == std::vector<int64_t>{4, 2});
}

TEST_CASE("index_table_from_file gives TF's documented example") {
  // tf.lookup.index_table_from_file's doc: vocabulary emerson, lake, palmer and one OOV
  // bucket; ["emerson", "lake", "and", "palmer", "krugman"] -> [0, 1, 3, 2, 3].
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/test.txt") << "emerson\nlake\npalmer\n";
  const std::string text = R"pb(
    node { name: "features" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
      attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 5 } }
        string_val: "emerson" string_val: "lake" string_val: "and" string_val: "palmer"
        string_val: "krugman" } } } }
    node { name: "file" op: "Const" attr { key: "dtype" value { type: DT_STRING } }
      attr { key: "value" value { tensor { dtype: DT_STRING tensor_shape {} string_val: "test.txt" } } } }
    node { name: "table" op: "HashTableV2" attr { key: "key_dtype" value { type: DT_STRING } }
      attr { key: "value_dtype" value { type: DT_INT64 } } }
    node { name: "init" op: "InitializeTableFromTextFileV2" input: "table" input: "file"
      attr { key: "key_index" value { i: -2 } } attr { key: "value_index" value { i: -1 } } }
    node { name: "default" op: "Const" attr { key: "dtype" value { type: DT_INT64 } }
      attr { key: "value" value { tensor { dtype: DT_INT64 tensor_shape {} int64_val: -1 } } } }
    node { name: "bucket" op: "StringToHashBucketFast" input: "features"
      attr { key: "num_buckets" value { i: 1 } } }
    node { name: "find" op: "LookupTableFindV2" input: "table" input: "features" input: "default"
      attr { key: "Tin" value { type: DT_STRING } } attr { key: "Tout" value { type: DT_INT64 } } }
    node { name: "size" op: "LookupTableSizeV2" input: "table" }
    node { name: "oov" op: "Add" input: "bucket" input: "size" attr { key: "T" value { type: DT_INT64 } } }
    node { name: "known" op: "NotEqual" input: "find" input: "default"
      attr { key: "T" value { type: DT_INT64 } } }
    node { name: "ids" op: "Select" input: "known" input: "find" input: "oov"
      attr { key: "T" value { type: DT_INT64 } } }
  )pb";
  StatusOr<Graph> graph = ParseGraph(text, "index_table_from_file.pbtxt");
  REQUIRE(graph.ok());
  CpuDevice device(1);
  Executor executor(*graph, device, InputOptions{.input_dir = dir});
  REQUIRE(executor.Run({.targets = {"init"}}).ok());
  StatusOr<std::vector<Tensor>> ids = executor.Run({.fetches = {"ids"}});
  INFO(ids.status().ToString());
  REQUIRE(ids.ok());
  CHECK(Ints((*ids)[0]) == std::vector<int64_t>{0, 1, 3, 2, 3});
}

}  // namespace
}  // namespace parallax
