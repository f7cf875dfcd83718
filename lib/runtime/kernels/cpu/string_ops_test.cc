// Tests of the string kernels: Substr against a naive reference on broadcast shapes and
// TF's documented examples, Equal/NotEqual on strings, and the hash-bucket ops against
// TF's documented and tested buckets (and a reference loop over lib/base/tf_hash).
#include <catch2/catch.hpp>

#include <random>

#include "lib/base/tf_hash.h"
#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RunOp;

Tensor Strings(std::vector<std::string> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<std::string>(v, TensorShape(std::move(shape)));
}
Tensor I32(std::vector<int32_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int32_t>(v, TensorShape(std::move(shape)));
}

std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                        const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                    const AttrMap& attrs) {
  StatusOr<testing::OpRun> run = RunOp(op, inputs, attrs);
  return run.ok() ? "" : run.status().message();
}

std::vector<std::string> Flat(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.num_elements());
}

AttrMap SubstrAttrs(DataType t, const std::string& unit = "BYTE") {
  return {{"T", TypeAttr(t)}, {"unit", StringAttr(unit)}};
}

TEST_CASE("Substr gives TF's documented examples") {
  const AttrMap attrs = SubstrAttrs(tensorflow::DT_INT32);
  // Scalar pos and len.
  Tensor out = Run("Substr", {Strings({"Hello", "World"}, {2}), Tensor::Scalar<int32_t>(1),
                              Tensor::Scalar<int32_t>(3)}, attrs)[0];
  CHECK(Flat(out) == std::vector<std::string>{"ell", "orl"});
  // pos and len broadcast onto a [4,3] input.
  const Tensor input = Strings({"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
                                "twentyone"}, {4, 3});
  out = Run("Substr", {input, I32({1, 2, 3}, {3}), I32({1, 2, 3}, {3})}, attrs)[0];
  CHECK(out.shape() == TensorShape({4, 3}));
  CHECK(Flat(out) == std::vector<std::string>{"e", "ev", "lve", "h", "ur", "tee", "i", "ve",
                                              "hte", "i", "en", "nty"});
  // The input broadcast onto pos and len.
  out = Run("Substr", {Tensor::Scalar<std::string>("thirteen"), I32({1, 5, 7}, {3}),
                       I32({3, 2, 1}, {3})}, attrs)[0];
  CHECK(Flat(out) == std::vector<std::string>{"hir", "ee", "n"});
  // Negative pos counts from the end; negative or long len takes the rest.
  out = Run("Substr", {Strings({"Hello", "World"}, {2}), I32({-2, 0}, {2}), I32({5, -1}, {2})},
            attrs)[0];
  CHECK(Flat(out) == std::vector<std::string>{"lo", "World"});
  // pos == size is an empty substring; int64 pos works the same.
  out = Run("Substr", {Strings({"abc"}, {1}), Tensor::FromVector<int64_t>({3}, {1}),
                       Tensor::FromVector<int64_t>({2}, {1})},
            SubstrAttrs(tensorflow::DT_INT64))[0];
  CHECK(Flat(out) == std::vector<std::string>{""});
}

TEST_CASE("Substr matches a naive reference on random broadcast shapes") {
  std::mt19937 rng(7);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{0}, {}}, {{5}, {5}}, {{2, 3}, {3}}, {{2, 1, 4}, {3, 1}}, {{1}, {2, 2}}, {{3, 0}, {1}}};
  for (const auto& [in_shape, pos_shape] : shapes) {
    Tensor input(tensorflow::DT_STRING, TensorShape(in_shape));
    for (std::string& s : input.flat<std::string>()) s = std::string(rng() % 8, 'a' + rng() % 26);
    // Strings of every length: choose pos within the shortest (0..).
    Tensor pos(tensorflow::DT_INT32, TensorShape(pos_shape));
    Tensor len(tensorflow::DT_INT32, TensorShape(pos_shape));
    for (int32_t& p : pos.flat<int32_t>()) p = 0;
    for (int32_t& l : len.flat<int32_t>()) l = static_cast<int32_t>(rng() % 10) - 2;
    Tensor out = Run("Substr", {input, pos, len}, SubstrAttrs(tensorflow::DT_INT32))[0];
    // Reference: index arithmetic per output element.
    const int rank = out.rank();
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      std::vector<int64_t> index(static_cast<size_t>(rank));
      int64_t rest = i;
      for (int d = rank - 1; d >= 0; --d) {
        index[static_cast<size_t>(d)] = rest % out.dim(d);
        rest /= out.dim(d);
      }
      auto offset = [&](const Tensor& t) {
        int64_t flat = 0;
        for (int d = 0; d < t.rank(); ++d) {
          const int64_t at = index[static_cast<size_t>(rank - t.rank() + d)];
          flat = flat * t.dim(d) + (t.dim(d) == 1 ? 0 : at);
        }
        return flat;
      };
      const std::string& s = input.data<std::string>()[offset(input)];
      const int32_t l = len.data<int32_t>()[offset(len)];
      const std::string expected = l < 0 ? s : s.substr(0, static_cast<size_t>(l));
      INFO("element " << i);
      CHECK(out.data<std::string>()[i] == expected);
    }
  }
}

TEST_CASE("Substr counts UTF-8 characters with unit UTF8_CHAR") {
  // "héllo wörld": é and ö are two bytes each.
  const Tensor input = Strings({"h\xC3\xA9llo", "w\xC3\xB6rld"}, {2});
  Tensor out = Run("Substr", {input, I32({1, -4}, {2}), I32({2, 2}, {2})},
                   SubstrAttrs(tensorflow::DT_INT32, "UTF8_CHAR"))[0];
  CHECK(Flat(out) == std::vector<std::string>{"\xC3\xA9l", "\xC3\xB6r"});
}

TEST_CASE("Substr errors name pos, the string and the index") {
  const AttrMap attrs = SubstrAttrs(tensorflow::DT_INT32);
  CHECK(ErrorOf("Substr", {Strings({"ab", "abc"}, {2}), Tensor::Scalar<int32_t>(3),
                           Tensor::Scalar<int32_t>(1)}, attrs) ==
        "node 'op' (Substr): pos 3 out of range for string b'ab' at index 0");
  CHECK(ErrorOf("Substr", {Strings({"abc"}, {1}), I32({-4}, {1}), I32({1}, {1})}, attrs) ==
        "node 'op' (Substr): pos -4 out of range for string b'abc' at index 0");
  CHECK(ErrorOf("Substr", {Strings({"abc"}, {1}), I32({1, 2}, {2}), I32({1}, {1})}, attrs) ==
        "node 'op' (Substr): pos and len should have the same shape, got: [2] vs. [1]");
  CHECK(ErrorOf("Substr", {Strings({"a", "b", "c"}, {3}), I32({1, 2}, {2}), I32({1, 1}, {2})},
                attrs) == "node 'op' (Substr): input and pos do not broadcast: [3] vs. [2]");
}

TEST_CASE("Equal and NotEqual compare strings with broadcasting") {
  const AttrMap attrs = {{"T", TypeAttr(tensorflow::DT_STRING)}};
  const Tensor x = Strings({"a", "b", "c", "a"}, {2, 2});
  const Tensor y = Strings({"a", "c"}, {2});
  Tensor eq = Run("Equal", {x, y}, attrs)[0];
  CHECK(CompareTensors(eq, Tensor::FromVector<bool>({true, false, false, false}, {2, 2})) == "");
  Tensor ne = Run("NotEqual", {x, Tensor::Scalar<std::string>("a")}, attrs)[0];
  CHECK(CompareTensors(ne, Tensor::FromVector<bool>({false, true, true, false}, {2, 2})) == "");
  Tensor empty = Run("Equal", {Strings({}, {0}), Tensor::Scalar<std::string>("a")}, attrs)[0];
  CHECK(empty.shape() == TensorShape({0}));
  // Shapes that do not broadcast: an error, or a scalar when incompatible_shape_error=false.
  const Tensor z = Strings({"a", "b", "c"}, {3});
  CHECK(ErrorOf("Equal", {y, z}, attrs) == "node 'op' (Equal): incompatible shapes: [2] vs. [3]");
  AttrMap lenient = attrs;
  lenient["incompatible_shape_error"] = BoolAttr(false);
  CHECK(CompareTensors(Run("Equal", {y, z}, lenient)[0], Tensor::Scalar<bool>(false)) == "");
  CHECK(CompareTensors(Run("NotEqual", {y, z}, lenient)[0], Tensor::Scalar<bool>(true)) == "");
}

TEST_CASE("StringToHashBucketFast gives TF's buckets (FarmHash Fingerprint64)") {
  // tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3) == [0, 2, 2] (TF docs).
  Tensor out = Run("StringToHashBucketFast", {Strings({"Hello", "TensorFlow", "2.x"}, {3})},
                   {{"num_buckets", IntAttr(3)}})[0];
  CHECK(CompareTensors(out, Tensor::FromVector<int64_t>({0, 2, 2}, {3})) == "");
  // Deterministic, in range, shape kept (one bucket: all 0).
  out = Run("StringToHashBucketFast", {Strings({"a", "b", "", "a"}, {2, 2})},
            {{"num_buckets", IntAttr(1000)}})[0];
  CHECK(out.shape() == TensorShape({2, 2}));
  CHECK(out.data<int64_t>()[0] == out.data<int64_t>()[3]);
  for (int64_t v : out.flat<int64_t>()) CHECK((v >= 0 && v < 1000));
  out = Run("StringToHashBucketFast", {Strings({"x", "y"}, {2})}, {{"num_buckets", IntAttr(1)}})[0];
  CHECK(CompareTensors(out, Tensor::FromVector<int64_t>({0, 0}, {2})) == "");
  CHECK(ErrorOf("StringToHashBucketFast", {Strings({"x"}, {1})}, {{"num_buckets", IntAttr(0)}}) ==
        "node 'op' (StringToHashBucketFast): attr 'num_buckets' must be >= 1, got 0");
}

TEST_CASE("StringToHashBucketFast gives TF's tested buckets and rejects non-strings") {
  // TF's string_to_hash_bucket_op_test: ["a", "b", "c", "d"] into 10 buckets.
  Tensor out = Run("StringToHashBucketFast", {Strings({"a", "b", "c", "d"}, {4})},
                   {{"num_buckets", IntAttr(10)}})[0];
  CHECK(CompareTensors(out, Tensor::FromVector<int64_t>({9, 2, 2, 5}, {4})) == "");
  // An empty tensor keeps its shape.
  out = Run("StringToHashBucketFast", {Strings({}, {0, 3})}, {{"num_buckets", IntAttr(7)}})[0];
  CHECK(out.shape() == TensorShape({0, 3}));
  CHECK(ErrorOf("StringToHashBucketFast", {Tensor::FromVector<int64_t>({1}, {1})},
                {{"num_buckets", IntAttr(3)}}) ==
        "node 'op' (StringToHashBucketFast): input 0 must be string, got int64");
}

TEST_CASE("StringToHashBucketStrong is keyed SipHash mod num_buckets, as TF's tests say") {
  auto attrs = [](int64_t buckets, std::vector<int64_t> key) {
    return AttrMap{{"num_buckets", IntAttr(buckets)}, {"key", IntListAttr(key)}};
  };
  const Tensor abc = Strings({"a", "b", "c"}, {3});
  CHECK(CompareTensors(Run("StringToHashBucketStrong", {abc}, attrs(10, {98765, 132}))[0],
                       Tensor::FromVector<int64_t>({4, 2, 8}, {3})) == "");
  CHECK(CompareTensors(Run("StringToHashBucketStrong", {abc}, attrs(1, {123, 345}))[0],
                       Tensor::FromVector<int64_t>({0, 0, 0}, {3})) == "");
  // A reference loop on a [2, 3] tensor, with keys whose high bit is set.
  const Tensor words = Strings({"", "x", "hello world", "feature", "col", "\xff\x00"}, {2, 3});
  const Tensor out = Run("StringToHashBucketStrong", {words}, attrs(1000, {-1, 77}))[0];
  REQUIRE(out.shape() == TensorShape({2, 3}));
  for (int64_t i = 0; i < 6; ++i) {
    const uint64_t h = tf_hash::StrongKeyedHash({~uint64_t{0}, 77}, words.data<std::string>()[i]);
    CHECK(out.data<int64_t>()[i] == static_cast<int64_t>(h % 1000));
  }
  CHECK(ErrorOf("StringToHashBucketStrong", {abc}, attrs(10, {98765})) ==
        "node 'op' (StringToHashBucketStrong): attr 'key' must have 2 elements, got 1");
}

TEST_CASE("StringToHashBucket (legacy) is TF's Hash64 mod num_buckets") {
  const AttrMap attrs = {{"num_buckets", IntAttr(10)}};
  // TF's string_to_hash_bucket_op_test: Hash64 of a, b, c mod 10 = 8, 0, 7.
  CHECK(CompareTensors(Run("StringToHashBucket", {Strings({"a", "b", "c"}, {3})}, attrs)[0],
                       Tensor::FromVector<int64_t>({8, 0, 7}, {3})) == "");
  CHECK(CompareTensors(Run("StringToHashBucket", {Strings({"a", "b", "c"}, {3})},
                           {{"num_buckets", IntAttr(1)}})[0],
                       Tensor::FromVector<int64_t>({0, 0, 0}, {3})) == "");
  CHECK(ErrorOf("StringToHashBucket", {Strings({"a"}, {1})}, {{"num_buckets", IntAttr(0)}}) ==
        "node 'op' (StringToHashBucket): attr 'num_buckets' must be >= 1, got 0");
}

}  // namespace
}  // namespace parallax
