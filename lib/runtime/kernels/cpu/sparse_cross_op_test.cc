// Tests of SparseCross, SparseCrossV2 and SparseCrossHashed: TF's sparse_cross_op_test
// expectations (string crosses, the exact hashed ids TF pins), a naive reference on
// random batches (recursive product over the columns, hashes from lib/base/tf_hash) with
// a batch large enough to run in parallel, empty columns and batches, and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <random>

#include "lib/base/tf_hash.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Run;
using testing::AttrMap;

constexpr int64_t kDefaultHashKey = 0xDECAFCAFFE;  // sparse_ops._DEFAULT_HASH_KEY

// A column: per batch row, its features (strings, or int64 as their decimal text).
struct Col {
  std::vector<std::vector<std::string>> rows;
  bool ints = false;
  bool dense = false;
  int64_t batch = -1;  // -1: rows.size()
};

Col Strs(std::vector<std::vector<std::string>> rows, int64_t batch = -1) {
  return {.rows = std::move(rows), .batch = batch};
}
Col Ints(std::vector<std::vector<std::string>> rows) { return {.rows = std::move(rows), .ints = true}; }
Col Dense(std::vector<std::vector<std::string>> rows, bool ints = false) {
  return {.rows = std::move(rows), .ints = ints, .dense = true};
}

tensorflow::AttrValue TypeList(const std::vector<DataType>& types) {
  tensorflow::AttrValue v;
  v.mutable_list();  // set, even when empty
  for (DataType t : types) v.mutable_list()->add_type(t);
  return v;
}

Tensor Values(const Col& c, const std::vector<std::string>& flat, TensorShape shape) {
  if (!c.ints) return Tensor::FromVector<std::string>(flat, std::move(shape));
  std::vector<int64_t> ints;
  for (const std::string& s : flat) ints.push_back(std::stoll(s));
  return Tensor::FromVector<int64_t>(ints, std::move(shape));
}

// The op's inputs (indices..., values..., shapes..., dense...) and its list attrs.
struct CrossInputs {
  std::vector<Tensor> inputs;
  AttrMap attrs;
};

CrossInputs Inputs(const std::vector<Col>& cols) {
  std::vector<Tensor> indices, values, shapes, dense;
  std::vector<DataType> sparse_types, dense_types;
  for (const Col& c : cols) {
    const DataType t = c.ints ? tensorflow::DT_INT64 : tensorflow::DT_STRING;
    std::vector<std::string> flat;
    if (c.dense) {
      const int64_t width = c.rows.empty() ? 0 : static_cast<int64_t>(c.rows[0].size());
      for (const auto& row : c.rows) flat.insert(flat.end(), row.begin(), row.end());
      dense.push_back(Values(c, flat, TensorShape({static_cast<int64_t>(c.rows.size()), width})));
      dense_types.push_back(t);
      continue;
    }
    std::vector<int64_t> idx;
    int64_t widest = 0;
    for (size_t b = 0; b < c.rows.size(); ++b) {
      for (size_t j = 0; j < c.rows[b].size(); ++j) {
        idx.push_back(static_cast<int64_t>(b));
        idx.push_back(static_cast<int64_t>(j));
        flat.push_back(c.rows[b][j]);
      }
      widest = std::max(widest, static_cast<int64_t>(c.rows[b].size()));
    }
    const int64_t nnz = static_cast<int64_t>(flat.size());
    indices.push_back(Tensor::FromVector<int64_t>(idx, TensorShape({nnz, 2})));
    values.push_back(Values(c, flat, TensorShape({nnz})));
    const int64_t batch = c.batch >= 0 ? c.batch : static_cast<int64_t>(c.rows.size());
    shapes.push_back(Tensor::FromVector<int64_t>({batch, widest}, TensorShape({2})));
    sparse_types.push_back(t);
  }
  CrossInputs in;
  for (auto* part : {&indices, &values, &shapes, &dense}) {
    in.inputs.insert(in.inputs.end(), part->begin(), part->end());
  }
  in.attrs = {{"N", IntAttr(static_cast<int64_t>(indices.size()))},
              {"sparse_types", TypeList(sparse_types)},
              {"dense_types", TypeList(dense_types)}};
  return in;
}

struct Sparse {
  std::vector<std::vector<int64_t>> indices;
  std::vector<std::string> strings;
  std::vector<int64_t> ids;
  std::vector<int64_t> shape;
};

Sparse Unpack(const std::vector<Tensor>& out) {
  REQUIRE(out.size() == 3);
  Sparse s;
  for (int64_t k = 0; k < out[0].dim(0); ++k) {
    s.indices.push_back({out[0].data<int64_t>()[2 * k], out[0].data<int64_t>()[2 * k + 1]});
  }
  REQUIRE(out[1].dim(0) == out[0].dim(0));
  if (out[1].dtype() == tensorflow::DT_STRING) {
    s.strings.assign(out[1].data<std::string>(), out[1].data<std::string>() + out[1].dim(0));
  } else {
    s.ids.assign(out[1].data<int64_t>(), out[1].data<int64_t>() + out[1].dim(0));
  }
  s.shape.assign(out[2].data<int64_t>(), out[2].data<int64_t>() + 2);
  return s;
}

// SparseCross (TF1's tf.sparse.cross / cross_hashed, crossed_column).
Sparse Cross(const std::vector<Col>& cols, bool hashed = false, int64_t num_buckets = 0,
             int64_t hash_key = kDefaultHashKey, int threads = 2) {
  CrossInputs in = Inputs(cols);
  bool any_int = false;
  for (const Col& c : cols) any_int |= c.ints;
  in.attrs["hashed_output"] = BoolAttr(hashed);
  in.attrs["num_buckets"] = IntAttr(num_buckets);
  in.attrs["hash_key"] = IntAttr(hash_key);
  in.attrs["out_type"] = TypeAttr(hashed ? tensorflow::DT_INT64 : tensorflow::DT_STRING);
  in.attrs["internal_type"] = TypeAttr(any_int ? tensorflow::DT_INT64 : tensorflow::DT_STRING);
  return Unpack(Run("SparseCross", in.inputs, in.attrs, threads));
}

Sparse CrossV2(const std::vector<Col>& cols, const std::string& sep) {
  CrossInputs in = Inputs(cols);
  in.inputs.push_back(Tensor::Scalar<std::string>(sep));
  return Unpack(Run("SparseCrossV2", in.inputs, in.attrs));
}

Sparse CrossHashed(const std::vector<Col>& cols, int64_t num_buckets, bool strong,
                   std::vector<int64_t> salt) {
  CrossInputs in = Inputs(cols);
  in.inputs.push_back(Tensor::Scalar<int64_t>(num_buckets));
  in.inputs.push_back(Tensor::Scalar<bool>(strong));
  in.inputs.push_back(Tensor::FromVector<int64_t>(salt, TensorShape({2})));
  return Unpack(Run("SparseCrossHashed", in.inputs, in.attrs));
}

// Indices of a result whose row b has counts[b] crosses.
std::vector<std::vector<int64_t>> IndicesFor(const std::vector<int64_t>& counts) {
  std::vector<std::vector<int64_t>> indices;
  for (size_t b = 0; b < counts.size(); ++b) {
    for (int64_t j = 0; j < counts[b]; ++j) indices.push_back({static_cast<int64_t>(b), j});
  }
  return indices;
}

using Strings = std::vector<std::string>;

TEST_CASE("SparseCross gives TF's string crosses") {
  const Col fc1 = Strs({{"batch1-FC1-F1"}, {"batch2-FC1-F1", "batch2-FC1-F2"}});
  const Col fc2 = Strs({{"batch1-FC2-F1"}, {"batch2-FC2-F1", "batch2-FC2-F2"}});
  Sparse out = Cross({fc1, fc2});
  CHECK(out.strings == Strings{"batch1-FC1-F1_X_batch1-FC2-F1", "batch2-FC1-F1_X_batch2-FC2-F1",
                               "batch2-FC1-F1_X_batch2-FC2-F2", "batch2-FC1-F2_X_batch2-FC2-F1",
                               "batch2-FC1-F2_X_batch2-FC2-F2"});
  CHECK(out.indices == IndicesFor({1, 4}));
  CHECK(out.shape == std::vector<int64_t>{2, 4});
  // Dense inputs, and int64 features written in decimal.
  out = Cross({Dense({{"11", "333"}, {"55555", "999999"}}, true),
               Dense({{"batch1-FC2-F1", "batch1-FC2-F2"}, {"batch2-FC2-F1", "batch2-FC2-F2"}})});
  CHECK(out.strings == Strings{"11_X_batch1-FC2-F1", "11_X_batch1-FC2-F2", "333_X_batch1-FC2-F1",
                               "333_X_batch1-FC2-F2", "55555_X_batch2-FC2-F1",
                               "55555_X_batch2-FC2-F2", "999999_X_batch2-FC2-F1",
                               "999999_X_batch2-FC2-F2"});
  CHECK(out.shape == std::vector<int64_t>{2, 4});
  // Sparse crossed with dense: the sparse column's features first.
  out = Cross({Ints({{"11"}, {"333", "5555"}}),
               Dense({{"batch1-FC2-F1", "batch1-FC2-F2"}, {"batch2-FC2-F1", "batch2-FC2-F2"}})});
  CHECK(out.strings == Strings{"11_X_batch1-FC2-F1", "11_X_batch1-FC2-F2", "333_X_batch2-FC2-F1",
                               "333_X_batch2-FC2-F2", "5555_X_batch2-FC2-F1",
                               "5555_X_batch2-FC2-F2"});
  // 3x1x2: the last column varies fastest.
  out = Cross({Strs({{"a1", "a2", "a3"}}), Strs({{"b1"}}), Strs({{"c1", "c2"}})});
  CHECK(out.strings == Strings{"a1_X_b1_X_c1", "a1_X_b1_X_c2", "a2_X_b1_X_c1", "a2_X_b1_X_c2",
                               "a3_X_b1_X_c1", "a3_X_b1_X_c2"});
}

TEST_CASE("SparseCross with empty columns and batches") {
  // One column empty: no crosses at all.
  Sparse out = Cross({Strs({{"a", "b"}}), Strs({}, 1), Strs({{"c", "d"}})});
  CHECK(out.strings.empty());
  CHECK(out.shape == std::vector<int64_t>{1, 0});
  // A column empty in the second row only: that row has none.
  out = Cross({Strs({{"a1", "a2"}}, 2), Strs({{"b1"}, {"b2"}}, 2), Strs({{"c1", "c2"}}, 2)});
  CHECK(out.strings == Strings{"a1_X_b1_X_c1", "a1_X_b1_X_c2", "a2_X_b1_X_c1", "a2_X_b1_X_c2"});
  CHECK(out.shape == std::vector<int64_t>{2, 4});
  // All empty, and no columns at all.
  out = Cross({Strs({}, 0), Strs({}, 0)});
  CHECK(out.strings.empty());
  CHECK(out.shape == std::vector<int64_t>{0, 0});
  out = Cross({});
  CHECK(out.shape == std::vector<int64_t>{0, 0});
}

TEST_CASE("SparseCross with hashed_output gives the ids TF pins") {
  const std::vector<Col> cols = {Strs({{"batch1-FC1-F1"}}), Strs({{"batch1-FC2-F1"}}),
                                 Strs({{"batch1-FC3-F1"}})};
  CHECK(Cross(cols, true, 0).ids == std::vector<int64_t>{1971693436396284976});
  CHECK(Cross(cols, true, 0, kDefaultHashKey + 1).ids == std::vector<int64_t>{4847552627144134031});
  CHECK(Cross(cols, true, 100).ids == std::vector<int64_t>{83});
  CHECK(Cross(cols, true, 100, kDefaultHashKey + 1).ids == std::vector<int64_t>{31});
  // 359 and 1024 + 359 share their last 10 bits, yet no cross collides (TF's test).
  const Sparse a = Cross({Dense({{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"},
                                 {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}}, true),
                          Dense({{"359"}, {"1383"}}, true)},
                         true, 1024, kDefaultHashKey + 1);
  REQUIRE(a.ids.size() == 20);
  for (size_t j = 0; j < 10; ++j) CHECK(a.ids[j] != a.ids[10 + j]);
}

TEST_CASE("SparseCrossV2 joins with its separator; SparseCrossHashed gives TF's ids") {
  const Col fc1 = Strs({{"batch1-FC1-F1"}, {"batch2-FC1-F1", "batch2-FC1-F2"}});
  const Col fc2 = Strs({{"batch1-FC2-F1"}, {"batch2-FC2-F1", "batch2-FC2-F2"}});
  CHECK(CrossV2({fc1, fc2}, "_Y_").strings ==
        Strings{"batch1-FC1-F1_Y_batch1-FC2-F1", "batch2-FC1-F1_Y_batch2-FC2-F1",
                "batch2-FC1-F1_Y_batch2-FC2-F2", "batch2-FC1-F2_Y_batch2-FC2-F1",
                "batch2-FC1-F2_Y_batch2-FC2-F2"});
  CHECK(CrossV2({Dense({{"a", "b"}}), Dense({{"c"}})}, "_").strings == Strings{"a_c", "b_c"});

  const std::vector<Col> cols = {Strs({{"batch1-FC1-F1"}}), Strs({{"batch1-FC2-F1"}}),
                                 Strs({{"batch1-FC3-F1"}})};
  // The salt is unused without strong_hash.
  CHECK(CrossHashed(cols, 0, false, {1, 1}).ids == std::vector<int64_t>{9186962005966787372});
  CHECK(CrossHashed(cols, 0, false, {137, 173}).ids == std::vector<int64_t>{9186962005966787372});
  CHECK(CrossHashed(cols, 100, false, {137, 173}).ids == std::vector<int64_t>{79});
  // A strong hash depends on the salt and differs from the fingerprint.
  const std::vector<Col> three = {Strs({{"a1", "a2", "a3"}}), Strs({{"b1"}}), Strs({{"c1", "c2"}})};
  const Sparse weak = CrossHashed(three, 1000, false, {137, 173});
  const Sparse strong = CrossHashed(three, 1000, true, {137, 1});
  CHECK(weak.indices == strong.indices);
  CHECK(weak.ids != strong.ids);
  CHECK(strong.ids == CrossHashed(three, 1000, true, {137, 1}).ids);
  CHECK(strong.ids != CrossHashed(three, 1000, true, {137, 2}).ids);
}

// The reference: each row's crosses by recursion over the columns, values as the
// semantics in sparse_cross_op.cc say.
enum class Mode { kStrings, kHashed, kHashedV2 };

uint64_t Feature(const Col& c, const std::string& f, Mode mode, bool strong,
                 const std::array<uint64_t, 2>& salt) {
  if (!c.ints) {
    return mode == Mode::kHashedV2 && strong ? tf_hash::StrongKeyedHash(salt, f)
                                             : tf_hash::Fingerprint64(f);
  }
  const int64_t v = std::stoll(f);
  if (mode == Mode::kHashed) return static_cast<uint64_t>(v);
  char low[4];
  std::memcpy(low, &v, 4);
  if (strong) return tf_hash::StrongKeyedHash(salt, std::string_view(low, 4));
  return c.dense ? static_cast<uint64_t>(v) : tf_hash::Fingerprint64(std::string_view(low, 4));
}

void ReferenceRow(const std::vector<Col>& cols, size_t b, Mode mode, int64_t buckets,
                  uint64_t key, bool strong, const std::array<uint64_t, 2>& salt,
                  std::vector<std::string>* strings, std::vector<int64_t>* ids) {
  std::vector<size_t> pick;
  std::function<void(size_t)> recurse = [&](size_t i) {
    if (i == cols.size()) {
      if (mode == Mode::kStrings) {
        std::string s;
        for (size_t k = 0; k < cols.size(); ++k) s += (k ? "_X_" : "") + cols[k].rows[b][pick[k]];
        strings->push_back(s);
        return;
      }
      uint64_t h = key;
      for (size_t k = 0; k < cols.size(); ++k) {
        const uint64_t f = Feature(cols[k], cols[k].rows[b][pick[k]], mode, strong, salt);
        h = mode == Mode::kHashedV2 && k == 0 ? f : tf_hash::FingerprintCat64(h, f);
      }
      ids->push_back(static_cast<int64_t>(
          h % (buckets > 0 ? static_cast<uint64_t>(buckets) : uint64_t{0x7fffffffffffffff})));
      return;
    }
    for (size_t j = 0; j < cols[i].rows[b].size(); ++j) {
      pick.push_back(j);
      recurse(i + 1);
      pick.pop_back();
    }
  };
  if (!cols.empty()) recurse(0);
}

TEST_CASE("SparseCross* match a naive reference on random batches") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 12; ++trial) {
    const size_t batch = trial == 0 ? 700 : rng() % 5;  // 700 rows: the parallel path
    std::vector<Col> cols;
    const size_t num_cols = 1 + rng() % 3;
    for (size_t c = 0; c < num_cols; ++c) {
      Col col{.ints = rng() % 2 == 0, .dense = rng() % 3 == 0};
      const size_t width = 1 + rng() % 3;
      for (size_t b = 0; b < batch; ++b) {
        std::vector<std::string> row(col.dense ? width : rng() % 4);
        for (std::string& f : row) {
          f = col.ints ? std::to_string(static_cast<int64_t>(rng()) * 65537 - 99)
                       : "f" + std::to_string(rng() % 50);
        }
        col.rows.push_back(row);
      }
      col.batch = static_cast<int64_t>(batch);
      cols.push_back(col);
    }
    // Sparse columns before dense ones, as the op orders its inputs.
    std::stable_partition(cols.begin(), cols.end(), [](const Col& c) { return !c.dense; });
    const int64_t buckets = trial % 2 == 0 ? 0 : 1000;
    const std::array<uint64_t, 2> salt = {12345, 678};
    for (int threads : {1, 3}) {
      std::vector<std::string> strings;
      std::vector<int64_t> ids, ids_v2, ids_strong;
      std::vector<int64_t> counts;
      for (size_t b = 0; b < batch; ++b) {
        const size_t before = strings.size();
        ReferenceRow(cols, b, Mode::kStrings, 0, 0, false, salt, &strings, nullptr);
        counts.push_back(static_cast<int64_t>(strings.size() - before));
        ReferenceRow(cols, b, Mode::kHashed, buckets, kDefaultHashKey, false, salt, nullptr, &ids);
        ReferenceRow(cols, b, Mode::kHashedV2, buckets, 0, false, salt, nullptr, &ids_v2);
        ReferenceRow(cols, b, Mode::kHashedV2, buckets, 0, true, salt, nullptr, &ids_strong);
      }
      INFO("trial " << trial << ", " << batch << " rows, " << cols.size() << " columns");
      const Sparse s = Cross(cols, false, 0, 0, threads);
      CHECK(s.strings == strings);
      CHECK(s.indices == IndicesFor(counts));
      const Sparse h = Cross(cols, true, buckets, kDefaultHashKey, threads);
      CHECK(h.ids == ids);
      CHECK(h.indices == IndicesFor(counts));
      CHECK(CrossV2(cols, "_X_").strings == strings);
      CHECK(CrossHashed(cols, buckets, false, {12345, 678}).ids == ids_v2);
      CHECK(CrossHashed(cols, buckets, true, {12345, 678}).ids == ids_strong);
    }
  }
}

TEST_CASE("SparseCross* errors are TF's, naming the position") {
  CrossInputs in = Inputs({Strs({{"a"}}), Strs({{"b"}, {"c"}})});
  in.attrs["hashed_output"] = BoolAttr(false);
  in.attrs["num_buckets"] = IntAttr(0);
  in.attrs["hash_key"] = IntAttr(kDefaultHashKey);
  in.attrs["out_type"] = TypeAttr(tensorflow::DT_STRING);
  in.attrs["internal_type"] = TypeAttr(tensorflow::DT_STRING);
  CHECK(ErrorOf("SparseCross", in.inputs, in.attrs) ==
        "node 'op' (SparseCross): Expected batch size 1 got 2 at position 1");
  // Indices that are not a matrix; values of another length.
  std::vector<Tensor> bad = in.inputs;
  bad[0] = Tensor::FromVector<int64_t>({0, 0}, TensorShape({2}));
  CHECK(ErrorOf("SparseCross", bad, in.attrs) ==
        "node 'op' (SparseCross): Input indices should be a matrix but received shape [2] at "
        "position 0");
  bad = in.inputs;
  bad[2] = Tensor::FromVector<std::string>({"a", "b"}, TensorShape({2}));
  CHECK(ErrorOf("SparseCross", bad, in.attrs) ==
        "node 'op' (SparseCross): Expected size of values to be 1 got 2 at position 0");
  // int64 values under internal_type string.
  CrossInputs ints = Inputs({Ints({{"1"}})});
  ints.attrs.insert(in.attrs.begin(), in.attrs.end());  // keeps N and the types of `ints`
  CHECK(ErrorOf("SparseCross", ints.inputs, ints.attrs) ==
        "node 'op' (SparseCross): Input values should be of internal type string but received "
        "int64");
  // A dense input that is not a matrix; a non-scalar separator; a short salt.
  CrossInputs dense = Inputs({Dense({{"a"}})});
  dense.inputs[0] = Tensor::FromVector<std::string>({"a"}, TensorShape({1}));
  dense.inputs.push_back(Tensor::Scalar<std::string>("_"));
  CHECK(ErrorOf("SparseCrossV2", dense.inputs, dense.attrs) ==
        "node 'op' (SparseCrossV2): Dense inputs should be a matrix but received shape [1] at "
        "position 0");
  CrossInputs v2 = Inputs({Dense({{"a"}})});
  v2.inputs.push_back(Tensor::FromVector<std::string>({"a", "b"}, TensorShape({2})));
  CHECK(ErrorOf("SparseCrossV2", v2.inputs, v2.attrs) ==
        "node 'op' (SparseCrossV2): Input separator should be a scalar. Received: "
        "string[2] {\"a\", \"b\"}");
  CrossInputs hashed = Inputs({Dense({{"a"}})});
  hashed.inputs.push_back(Tensor::Scalar<int64_t>(-461));
  hashed.inputs.push_back(Tensor::Scalar<bool>(false));
  hashed.inputs.push_back(Tensor(tensorflow::DT_INT64, TensorShape({0})));
  CHECK(ErrorOf("SparseCrossHashed", hashed.inputs, hashed.attrs) ==
        "node 'op' (SparseCrossHashed): Input \"salt\" must have length 2 but has length 0");
}

}  // namespace
}  // namespace parallax
