// Tests of the lookup tables, run as small graphs (table, initializer, lookups) on one
// session: HashTable initialise-once semantics (find before init, re-init, duplicate
// keys), a naive std::map reference on random keys and values, mutable tables (insert,
// overwrite, import, export, vector values), TF1 Ref(string) handles, sharing by
// shared_name, and InitializeTableFromTextFile with every key/value index, vocab_size,
// offset, delimiter, CRLF lines and the file's errors.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "lib/base/status.h"
#include "lib/graph/graph_io.h"
#include "lib/runtime/device.h"
#include "lib/runtime/executor.h"
#include "lib/runtime/testing/op_test_util.h"
#include "lib/testing/testdata.h"

namespace parallax {
namespace {

using testing::CompareTensors;

std::string Attr(const std::string& key, const std::string& value) {
  return "attr { key: '" + key + "' value { " + value + " } } ";
}
std::string Type(const std::string& key, const std::string& dtype) {
  return Attr(key, "type: " + dtype);
}

// "node { name: 'n' op: 'Op' input: 'a' ... attrs }".
std::string Node(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& attrs = "") {
  std::string text = "node { name: '" + name + "' op: '" + op + "' ";
  for (const std::string& in : inputs) text += "input: '" + in + "' ";
  return text + attrs + "}\n";
}
std::string Placeholder(const std::string& name, const std::string& dtype) {
  return Node(name, "Placeholder", {}, Type("dtype", dtype));
}
std::string Table(const std::string& name, const std::string& op, const std::string& key,
                  const std::string& value, const std::string& extra = "") {
  return Node(name, op, {}, Type("key_dtype", key) + Type("value_dtype", value) + extra);
}
// Find/Insert/Import/Initialize on `table` with placeholders `a`, `b` as inputs 1 and 2.
std::string TableOp(const std::string& name, const std::string& op, const std::string& table,
                    const std::string& a, const std::string& b, const std::string& type_attrs) {
  return Node(name, op, {table, a, b}, type_attrs);
}

// One graph and one session: tables live across Run calls.
class TableSession {
 public:
  explicit TableSession(const std::string& text, InputOptions input = {}) {
    StatusOr<Graph> graph = ParseGraph(text, "tables.pbtxt");
    INFO(graph.status().ToString());
    REQUIRE(graph.ok());
    graph_ = std::move(*graph);
    executor_ = std::make_unique<Executor>(graph_, device_, std::move(input));
  }

  StatusOr<std::vector<Tensor>> Try(const std::vector<std::string>& fetches,
                                    const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                                    const std::vector<std::string>& targets = {}) {
    return executor_->Run({.feeds = feeds, .fetches = fetches, .targets = targets});
  }
  std::vector<Tensor> Run(const std::vector<std::string>& fetches,
                          const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                          const std::vector<std::string>& targets = {}) {
    StatusOr<std::vector<Tensor>> out = Try(fetches, feeds, targets);
    INFO(out.status().ToString());
    REQUIRE(out.ok());
    return std::move(*out);
  }
  std::string ErrorOf(const std::vector<std::string>& fetches,
                      const std::vector<std::pair<std::string, Tensor>>& feeds = {},
                      const std::vector<std::string>& targets = {}) {
    StatusOr<std::vector<Tensor>> out = Try(fetches, feeds, targets);
    return out.ok() ? "" : out.status().message();
  }

 private:
  Graph graph_;
  CpuDevice device_{2};
  std::unique_ptr<Executor> executor_;
};

Tensor Strs(std::vector<std::string> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<std::string>(v, TensorShape(std::move(shape)));
}
Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int64_t>(v, TensorShape(std::move(shape)));
}

// string -> int64 HashTableV2 with an initializer and a lookup, fed through placeholders.
std::string StringToIdGraph(const std::string& table_op = "HashTableV2",
                            const std::string& suffix = "V2") {
  const std::string kv = Type("Tkey", "DT_STRING") + Type("Tval", "DT_INT64");
  const std::string io = Type("Tin", "DT_STRING") + Type("Tout", "DT_INT64");
  return Placeholder("init_keys", "DT_STRING") + Placeholder("init_values", "DT_INT64") +
         Placeholder("keys", "DT_STRING") + Placeholder("default", "DT_INT64") +
         Table("table", table_op, "DT_STRING", "DT_INT64") +
         TableOp("init", "InitializeTable" + suffix, "table", "init_keys", "init_values", kv) +
         TableOp("find", "LookupTableFind" + suffix, "table", "keys", "default", io) +
         Node("size", "LookupTableSize" + suffix, {"table"}) +
         Node("export", "LookupTableExport" + suffix, {"table"},
              Type("Tkeys", "DT_STRING") + Type("Tvalues", "DT_INT64"));
}

TEST_CASE("HashTable: initialised once, then read; find before init is an error") {
  TableSession s(StringToIdGraph());
  const std::vector<std::pair<std::string, Tensor>> query = {
      {"keys", Strs({"emerson", "lake", "and", "palmer"}, {2, 2})},
      {"default", Tensor::Scalar<int64_t>(-1)}};
  CHECK(s.ErrorOf({"find"}, query) ==
        "node 'find' (LookupTableFindV2): table 'table' is not initialized: run its initializer "
        "(tf.tables_initializer()) first");
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 0);
  const std::vector<std::pair<std::string, Tensor>> init = {
      {"init_keys", Strs({"emerson", "lake", "palmer", "lake"}, {4})},
      {"init_values", I64({0, 1, 2, 1}, {4})}};  // a key twice with the same value is fine
  s.Run({}, init, {"init"});
  // TF's documented example: emerson -> 0, lake -> 1, palmer -> 2, others -> default.
  Tensor found = s.Run({"find"}, query)[0];
  CHECK(CompareTensors(found, I64({0, 1, -1, 2}, {2, 2})) == "");
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 3);
  // Export: keys in the order they were added.
  std::vector<Tensor> exported = s.Run({"export:0", "export:1"});
  CHECK(CompareTensors(exported[0], Strs({"emerson", "lake", "palmer"}, {3})) == "");
  CHECK(CompareTensors(exported[1], I64({0, 1, 2}, {3})) == "");
  // Initialising again with as many keys as the table has entries is a no-op; with
  // another count an error, as in TF (which counts the keys given, duplicates too: the
  // first initializer again fails).
  s.Run({}, {{"init_keys", Strs({"x", "y", "z"}, {3})}, {"init_values", I64({7, 7, 7}, {3})}},
        {"init"});
  CHECK(CompareTensors(s.Run({"find"}, query)[0], I64({0, 1, -1, 2}, {2, 2})) == "");
  CHECK(s.ErrorOf({}, init, {"init"}) ==
        "node 'init' (InitializeTableV2): table 'table' was already initialized with different "
        "data: 3 entries, now 4 keys");
  // One default per key, and empty keys.
  found = s.Run({"find"}, {{"keys", Strs({"lake", "nope"}, {2})}, {"default", I64({10, 20}, {2})}})[0];
  CHECK(CompareTensors(found, I64({1, 20}, {2})) == "");
  found = s.Run({"find"}, {{"keys", Strs({}, {0, 3})}, {"default", Tensor::Scalar<int64_t>(-1)}})[0];
  CHECK(found.shape() == TensorShape({0, 3}));
}

TEST_CASE("HashTable: duplicate keys with different values, and wrong dtypes and shapes") {
  TableSession s(StringToIdGraph());
  CHECK(s.ErrorOf({}, {{"init_keys", Strs({"a", "b", "a"}, {3})}, {"init_values", I64({0, 1, 2}, {3})}},
                  {"init"}) ==
        "node 'init' (InitializeTableV2): keys[2]: key 'a' is already in table 'table' with "
        "value 0, not 2");
  // The failed initialisation left the table uninitialised: a good one works.
  s.Run({}, {{"init_keys", Strs({"a", "b"}, {2})}, {"init_values", I64({0, 1}, {2})}}, {"init"});
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 2);
  CHECK(s.ErrorOf({"find"}, {{"keys", Strs({"a"}, {1})}, {"default", I64({1, 2}, {2})}}) ==
        "node 'find' (LookupTableFindV2): input 2 (default_value) has shape [2]; table 'table' "
        "takes [] (one value) or [1] (one per key)");

  // Keys of the wrong dtype (a graph whose lookup feeds int64 keys to a string table).
  const std::string bad = Placeholder("k", "DT_INT64") + Placeholder("d", "DT_INT64") +
                          Table("t", "HashTableV2", "DT_STRING", "DT_INT64") +
                          TableOp("find", "LookupTableFindV2", "t", "k", "d",
                                  Type("Tin", "DT_INT64") + Type("Tout", "DT_INT64"));
  TableSession wrong(bad);
  CHECK(wrong.ErrorOf({"find"}, {{"k", I64({1}, {1})}, {"d", Tensor::Scalar<int64_t>(0)}}) ==
        "node 'find' (LookupTableFindV2): input 1 (keys) is int64, table 't' has string keys");
  // Keys and values that do not pair up.
  TableSession pairs(StringToIdGraph());
  CHECK(pairs.ErrorOf({}, {{"init_keys", Strs({"a", "b"}, {2})}, {"init_values", I64({0}, {1})}},
                      {"init"}) ==
        "node 'init' (InitializeTableV2): input 2 (values) has shape [1]; for keys of shape [2] "
        "table 'table' takes [2]");
}

TEST_CASE("HashTable lookups match a std::map reference on random keys, all dtypes") {
  std::mt19937_64 rng(23);
  for (const auto& [key_type, value_type] :
       std::vector<std::pair<std::string, std::string>>{{"DT_INT64", "DT_FLOAT"},
                                                        {"DT_INT32", "DT_DOUBLE"},
                                                        {"DT_STRING", "DT_STRING"},
                                                        {"DT_INT64", "DT_BOOL"},
                                                        {"DT_STRING", "DT_INT32"}}) {
    INFO(key_type << " -> " << value_type);
    const std::string kv = Type("Tkey", key_type) + Type("Tval", value_type);
    const std::string io = Type("Tin", key_type) + Type("Tout", value_type);
    TableSession s(Placeholder("ik", key_type) + Placeholder("iv", value_type) +
                   Placeholder("k", key_type) + Placeholder("d", value_type) +
                   Table("t", "HashTableV2", key_type, value_type) +
                   TableOp("init", "InitializeTableV2", "t", "ik", "iv", kv) +
                   TableOp("find", "LookupTableFindV2", "t", "k", "d", io));
    // Keys drawn from a small range so that queries hit and miss; distinct keys only.
    auto key_of = [&](int64_t k) -> std::string { return "k" + std::to_string(k); };
    std::map<int64_t, int64_t> reference;
    while (reference.size() < 300) reference[static_cast<int64_t>(rng() % 1000) - 500] = static_cast<int64_t>(rng() % 100000);
    auto make = [&](const std::string& type, const std::vector<int64_t>& v, bool is_key) {
      const TensorShape shape({static_cast<int64_t>(v.size())});
      if (type == "DT_STRING") {
        std::vector<std::string> s;
        for (int64_t x : v) s.push_back(is_key ? key_of(x) : std::to_string(x));
        return Tensor::FromVector<std::string>(s, shape);
      }
      if (type == "DT_INT32") return Tensor::FromVector<int32_t>(std::vector<int32_t>(v.begin(), v.end()), shape);
      if (type == "DT_FLOAT") return Tensor::FromVector<float>(std::vector<float>(v.begin(), v.end()), shape);
      if (type == "DT_DOUBLE") return Tensor::FromVector<double>(std::vector<double>(v.begin(), v.end()), shape);
      if (type == "DT_BOOL") {
        std::vector<bool> b;
        for (int64_t x : v) b.push_back(x % 2 != 0);
        Tensor t(tensorflow::DT_BOOL, shape);
        for (size_t i = 0; i < b.size(); ++i) t.data<bool>()[i] = b[i];
        return t;
      }
      return Tensor::FromVector<int64_t>(v, shape);
    };
    std::vector<int64_t> keys, values;
    for (const auto& [k, v] : reference) {
      keys.push_back(k);
      values.push_back(v);
    }
    s.Run({}, {{"ik", make(key_type, keys, true)}, {"iv", make(value_type, values, false)}}, {"init"});
    // 20000 queries: enough for the parallel lookup path.
    std::vector<int64_t> queries(20000), expected;
    for (int64_t& q : queries) q = static_cast<int64_t>(rng() % 1200) - 600;
    for (int64_t q : queries) expected.push_back(reference.count(q) ? reference[q] : 7);
    const Tensor default_value = make(value_type, {7}, false);
    const Tensor scalar_default = *default_value.Reshaped(TensorShape({}));
    const Tensor found = s.Run({"find"}, {{"k", make(key_type, queries, true)}, {"d", scalar_default}})[0];
    CHECK(CompareTensors(found, make(value_type, expected, false), 0, 0) == "");
  }
}

TEST_CASE("MutableHashTable: insert, overwrite, import, export; vector values") {
  const std::string io = Type("Tin", "DT_INT64") + Type("Tout", "DT_FLOAT");
  TableSession s(Placeholder("k", "DT_INT64") + Placeholder("v", "DT_FLOAT") +
                 Placeholder("d", "DT_FLOAT") +
                 Table("t", "MutableHashTableV2", "DT_INT64", "DT_FLOAT") +
                 TableOp("insert", "LookupTableInsertV2", "t", "k", "v", io) +
                 TableOp("import", "LookupTableImportV2", "t", "k", "v", io) +
                 TableOp("find", "LookupTableFindV2", "t", "k", "d", io) +
                 Node("size", "LookupTableSizeV2", {"t"}) +
                 Node("export", "LookupTableExportV2", {"t"},
                      Type("Tkeys", "DT_INT64") + Type("Tvalues", "DT_FLOAT")));
  auto f32 = [](std::vector<float> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return Tensor::FromVector<float>(v, TensorShape({n}));
  };
  // Empty: every key takes the default; no initializer needed.
  CHECK(CompareTensors(s.Run({"find"}, {{"k", I64({1}, {1})}, {"d", Tensor::Scalar<float>(-1)}})[0],
                       f32({-1})) == "");
  s.Run({}, {{"k", I64({1, 2, 3}, {3})}, {"v", f32({0.5f, 1.5f, 2.5f})}}, {"insert"});
  s.Run({}, {{"k", I64({2, 4}, {2})}, {"v", f32({9, 4})}}, {"insert"});  // 2 overwritten
  CHECK(CompareTensors(s.Run({"find"}, {{"k", I64({4, 3, 2, 1, 0}, {5})},
                                        {"d", Tensor::Scalar<float>(-1)}})[0],
                       f32({4, 2.5f, 9, 0.5f, -1})) == "");
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 4);
  std::vector<Tensor> exported = s.Run({"export:0", "export:1"});
  CHECK(CompareTensors(exported[0], I64({1, 2, 3, 4}, {4})) == "");
  CHECK(CompareTensors(exported[1], f32({0.5f, 9, 2.5f, 4})) == "");
  // Import replaces the contents.
  s.Run({}, {{"k", I64({8}, {1})}, {"v", f32({8})}}, {"import"});
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 1);
  CHECK(s.ErrorOf({}, {{"k", I64({1, 2}, {2})}, {"v", f32({1})}}, {"insert"}) ==
        "node 'insert' (LookupTableInsertV2): input 2 (values) has shape [1]; for keys of shape "
        "[2] table 't' takes [2]");

  // MutableHashTableOfTensors: string -> int64[3].
  const std::string tio = Type("Tin", "DT_STRING") + Type("Tout", "DT_INT64");
  TableSession v(Placeholder("k", "DT_STRING") + Placeholder("v", "DT_INT64") +
                 Placeholder("d", "DT_INT64") +
                 Table("t", "MutableHashTableOfTensorsV2", "DT_STRING", "DT_INT64",
                       Attr("value_shape", "shape { dim { size: 3 } }")) +
                 TableOp("insert", "LookupTableInsertV2", "t", "k", "v", tio) +
                 TableOp("find", "LookupTableFindV2", "t", "k", "d", tio) +
                 Node("export", "LookupTableExportV2", {"t"},
                      Type("Tkeys", "DT_STRING") + Type("Tvalues", "DT_INT64")));
  v.Run({}, {{"k", Strs({"a", "b"}, {2})}, {"v", I64({1, 2, 3, 4, 5, 6}, {2, 3})}}, {"insert"});
  CHECK(CompareTensors(v.Run({"find"}, {{"k", Strs({"b", "z", "a"}, {3})},
                                        {"d", I64({0, 0, -1}, {3})}})[0],
                       I64({4, 5, 6, 0, 0, -1, 1, 2, 3}, {3, 3})) == "");
  // One default per key: [keys, 3].
  CHECK(CompareTensors(v.Run({"find"}, {{"k", Strs({"z", "a"}, {2})},
                                        {"d", I64({7, 8, 9, 0, 0, 0}, {2, 3})}})[0],
                       I64({7, 8, 9, 1, 2, 3}, {2, 3})) == "");
  exported = v.Run({"export:0", "export:1"});
  CHECK(CompareTensors(exported[1], I64({1, 2, 3, 4, 5, 6}, {2, 3})) == "");
}

TEST_CASE("TF1 tables: Ref(string) handles, shared names, conflicting creators") {
  // TF1's HashTable / InitializeTable / LookupTableFind / LookupTableSize, and a V2 table
  // under the same shared_name: the same table.
  const std::string kv = Type("Tkey", "DT_STRING") + Type("Tval", "DT_INT64");
  const std::string io = Type("Tin", "DT_STRING") + Type("Tout", "DT_INT64");
  const std::string shared = Attr("shared_name", "s: 'vocab'");
  TableSession s(Placeholder("ik", "DT_STRING") + Placeholder("iv", "DT_INT64") +
                 Placeholder("k", "DT_STRING") + Placeholder("d", "DT_INT64") +
                 Table("t1", "HashTable", "DT_STRING", "DT_INT64", shared) +
                 Table("t2", "HashTableV2", "DT_STRING", "DT_INT64", shared) +
                 Table("t3", "MutableHashTableV2", "DT_STRING", "DT_INT64", shared) +
                 TableOp("init", "InitializeTable", "t1", "ik", "iv", kv) +
                 TableOp("find1", "LookupTableFind", "t1", "k", "d", io) +
                 TableOp("find2", "LookupTableFindV2", "t2", "k", "d", io) +
                 Node("size", "LookupTableSize", {"t1"}));
  const Tensor handle = s.Run({"t1"})[0];
  REQUIRE(handle.shape() == TensorShape({2}));
  CHECK(handle.data<std::string>()[1] == "vocab");
  s.Run({}, {{"ik", Strs({"a", "b"}, {2})}, {"iv", I64({10, 20}, {2})}}, {"init"});
  const std::vector<std::pair<std::string, Tensor>> query = {{"k", Strs({"b", "c"}, {2})},
                                                             {"d", Tensor::Scalar<int64_t>(0)}};
  CHECK(CompareTensors(s.Run({"find1"}, query)[0], I64({20, 0}, {2})) == "");
  CHECK(CompareTensors(s.Run({"find2"}, query)[0], I64({20, 0}, {2})) == "");
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 2);
  CHECK(s.ErrorOf({"t3"}) ==
        "node 't3' (MutableHashTableV2): table 'vocab' exists as a HashTable string->int64; this "
        "op makes a MutableHashTable string->int64");
}

// ---- InitializeTableFromTextFile ----

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A table from `file`; `find` looks `k` up with default `d`.
std::string TextFileGraph(const std::string& file, const std::string& key_type,
                          const std::string& value_type, int64_t key_index, int64_t value_index,
                          const std::string& extra = "") {
  return Node("filename", "Const", {},
              Type("dtype", "DT_STRING") +
                  Attr("value", "tensor { dtype: DT_STRING tensor_shape {} string_val: '" + file +
                                    "' }")) +
         Placeholder("k", key_type) + Placeholder("d", value_type) +
         Table("t", "HashTableV2", key_type, value_type) +
         Node("init", "InitializeTableFromTextFileV2", {"t", "filename"},
              Attr("key_index", "i: " + std::to_string(key_index)) +
                  Attr("value_index", "i: " + std::to_string(value_index)) + extra) +
         TableOp("find", "LookupTableFindV2", "t", "k", "d",
                 Type("Tin", key_type) + Type("Tout", value_type)) +
         Node("size", "LookupTableSizeV2", {"t"});
}

TEST_CASE("InitializeTableFromTextFile: whole lines, line numbers, fields") {
  const std::string dir = testing::TempDir();
  // index_table_from_file: key = whole line (-2), value = line number (-1). CRLF and a
  // last line without a newline.
  const std::string vocab = WriteFile(dir, "vocab.txt", "emerson\r\nlake\npalmer");
  TableSession s(TextFileGraph(vocab, "DT_STRING", "DT_INT64", -2, -1));
  s.Run({}, {}, {"init"});
  s.Run({}, {}, {"init"});  // again: a no-op
  CHECK(CompareTensors(s.Run({"find"}, {{"k", Strs({"palmer", "lake", "emerson", "king"}, {4})},
                                        {"d", Tensor::Scalar<int64_t>(-1)}})[0],
                       I64({2, 1, 0, -1}, {4})) == "");
  CHECK(s.Run({"size"})[0].data<int64_t>()[0] == 3);

  // index_to_string_table_from_file: line number -> whole line, with an offset.
  TableSession inverse(TextFileGraph(vocab, "DT_INT64", "DT_STRING", -1, -2,
                                     Attr("offset", "i: 10")));
  inverse.Run({}, {}, {"init"});
  CHECK(CompareTensors(inverse.Run({"find"}, {{"k", I64({12, 10, 0}, {3})},
                                              {"d", Tensor::Scalar<std::string>("UNK")}})[0],
                       Strs({"palmer", "emerson", "UNK"}, {3})) == "");

  // Fields split at a delimiter, parsed as the table's dtypes; vocab_size reads a prefix.
  const std::string fields = WriteFile(dir, "fields.csv", "a,1, 2.5\nb,2,-1e3\nc,3,7\n");
  TableSession floats(TextFileGraph(fields, "DT_STRING", "DT_FLOAT", 0, 2,
                                    Attr("delimiter", "s: ','") + Attr("vocab_size", "i: 2")));
  floats.Run({}, {}, {"init"});
  CHECK(CompareTensors(floats.Run({"find"}, {{"k", Strs({"a", "b", "c"}, {3})},
                                             {"d", Tensor::Scalar<float>(0)}})[0],
                       Tensor::FromVector<float>({2.5f, -1000, 0}, TensorShape({3}))) == "");
  TableSession ints(TextFileGraph(fields, "DT_INT64", "DT_STRING", 1, 0, Attr("delimiter", "s: ','")));
  ints.Run({}, {}, {"init"});
  CHECK(CompareTensors(ints.Run({"find"}, {{"k", I64({3, 1}, {2})},
                                           {"d", Tensor::Scalar<std::string>("")}})[0],
                       Strs({"c", "a"}, {2})) == "");
}

TEST_CASE("InitializeTableFromTextFile errors name the file and line") {
  const std::string dir = testing::TempDir();
  auto error = [&](const std::string& file, const std::string& key, const std::string& value,
                   int64_t ki, int64_t vi, const std::string& extra = "") {
    TableSession s(TextFileGraph(file, key, value, ki, vi, extra));
    return s.ErrorOf({}, {}, {"init"});
  };
  const std::string vocab = WriteFile(dir, "v.txt", "a\nb\na\n");
  CHECK(error(vocab, "DT_STRING", "DT_INT64", -2, -1) ==
        "node 'init' (InitializeTableFromTextFileV2): " + vocab +
            " line 3: key 'a' is already in table 't' with value 0, not 2");
  CHECK(error(dir + "/missing.txt", "DT_STRING", "DT_INT64", -2, -1).find("missing.txt") !=
        std::string::npos);
  const std::string blank = WriteFile(dir, "blank.txt", "a\n\nb\n");
  CHECK(error(blank, "DT_STRING", "DT_INT64", -2, -1) ==
        "node 'init' (InitializeTableFromTextFileV2): " + blank +
            " line 2: empty line (a vocabulary file has one entry per line)");
  CHECK(error(vocab, "DT_STRING", "DT_INT64", -2, -1, Attr("vocab_size", "i: 5")) ==
        "node 'init' (InitializeTableFromTextFileV2): " + vocab +
            ": attr 'vocab_size' is 5 but the file has 3 lines");
  const std::string csv = WriteFile(dir, "c.csv", "a,1\nb\n");
  CHECK(error(csv, "DT_STRING", "DT_INT64", 0, 1, Attr("delimiter", "s: ','")) ==
        "node 'init' (InitializeTableFromTextFileV2): " + csv +
            " line 2 (b): expected at least 2 fields separated by ',', got 1");
  const std::string words = WriteFile(dir, "w.csv", "a,x\n");
  CHECK(error(words, "DT_STRING", "DT_INT64", 0, 1, Attr("delimiter", "s: ','")) ==
        "node 'init' (InitializeTableFromTextFileV2): " + words +
            " line 1: field 'x' is not a valid int64");
  CHECK(error(vocab, "DT_STRING", "DT_STRING", -2, -1) ==
        "node 'init' (InitializeTableFromTextFileV2): Value index for line number requires table "
        "value dtype of int64, got string");
  CHECK(error(vocab, "DT_STRING", "DT_INT64", -2, -1, Attr("delimiter", "s: ',;'")) ==
        "node 'init' (InitializeTableFromTextFileV2): attr 'delimiter' must be one character, "
        "got ',;'");
}

TEST_CASE("InitializeTableFromTextFile resolves the file name as the readers do") {
  const std::string dir = testing::TempDir();
  WriteFile(dir, "resolved_vocab.txt", "x\ny\n");
  // The graph names a path of another machine; --input-dir has the file.
  TableSession s(TextFileGraph("/nonexistent/build/machine/resolved_vocab.txt", "DT_STRING",
                               "DT_INT64", -2, -1),
                 InputOptions{.input_dir = dir});
  s.Run({}, {}, {"init"});
  CHECK(CompareTensors(s.Run({"find"}, {{"k", Strs({"y"}, {1})}, {"d", Tensor::Scalar<int64_t>(-1)}})[0],
                       I64({1}, {1})) == "");
}

}  // namespace
}  // namespace parallax
