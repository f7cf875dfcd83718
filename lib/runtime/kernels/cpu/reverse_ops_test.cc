// Tests of ReverseV2 and ReverseSequence against naive index loops on random inputs
// (every rank up to 4, negative axes, empty dimensions, several dtypes including
// strings, int32 and int64 lengths, seq_dim before and after batch_dim, 1 and 3
// threads), TF's documented examples, and the exact errors.
#include <catch2/catch.hpp>

#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::F32;
using kernel_test::I32Vec;
using kernel_test::I64Vec;
using kernel_test::Iota;
using kernel_test::Ravel;
using kernel_test::Run;
using kernel_test::Unravel;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using tensorflow::DT_STRING;
using tensorflow::DT_UINT8;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

// A random tensor of `dtype`; strings are "s<i>" with i random.
Tensor Input(DataType dtype, const std::vector<int64_t>& dims, uint64_t seed) {
  if (dtype != DT_STRING) return RandomTensor(dtype, TensorShape(dims), seed, 0, 100);
  Tensor t(DT_STRING, TensorShape(dims));
  const Tensor r = RandomTensor(DT_INT32, TensorShape(dims), seed, 0, 1000);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<std::string>()[i] = "s" + std::to_string(r.data<int32_t>()[i]);
  return t;
}

void CopyElement(const Tensor& from, int64_t i, Tensor& to, int64_t j) {
  if (from.dtype() == DT_STRING) {
    to.data<std::string>()[j] = from.data<std::string>()[i];
    return;
  }
  const size_t size = from.bytes() / static_cast<size_t>(from.num_elements());
  std::memcpy(static_cast<char*>(to.raw_data()) + static_cast<size_t>(j) * size,
              static_cast<const char*>(from.raw_data()) + static_cast<size_t>(i) * size, size);
}

bool SameElements(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DT_STRING) {
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    }
    return true;
  }
  // An empty tensor has no buffer, and memcmp's pointers must not be null even for 0 bytes.
  return a.bytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

Tensor NaiveReverse(const Tensor& in, const std::vector<bool>& reversed) {
  const std::vector<int64_t>& dims = in.shape().dims();
  Tensor out(in.dtype(), in.shape());
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    std::vector<int64_t> index = Unravel(i, dims);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (reversed[d]) index[d] = dims[d] - 1 - index[d];
    }
    CopyElement(in, Ravel(index, dims), out, i);
  }
  return out;
}

AttrMap ReverseAttrs(DataType type, DataType tidx) {
  return {{"T", TypeAttr(type)}, {"Tidx", TypeAttr(tidx)}};
}

TEST_CASE("ReverseV2 matches a naive loop for every set of axes, rank and dtype") {
  int seed = 0;
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{}, {5}, {2, 3}, {3, 1, 4}, {2, 3, 2, 5}, {2, 0, 3}}) {
    const int rank = static_cast<int>(dims.size());
    for (int mask = 0; mask < (1 << rank); ++mask) {
      for (DataType dtype : {DT_FLOAT, DT_INT64, DT_UINT8, DT_STRING}) {
        const Tensor in = Input(dtype, dims, static_cast<uint64_t>(++seed));
        std::vector<bool> reversed(static_cast<size_t>(rank));
        std::vector<int64_t> axes;
        for (int d = 0; d < rank; ++d) {
          reversed[static_cast<size_t>(d)] = (mask >> d) & 1;
          // Every other axis given as negative.
          if (reversed[static_cast<size_t>(d)]) axes.push_back(axes.size() % 2 ? d - rank : d);
        }
        for (int threads : {1, 3}) {
          INFO("dims " << TensorShape(dims).DebugString() << " mask " << mask << " dtype "
                       << dtype);
          const DataType tidx = seed % 2 ? DT_INT32 : DT_INT64;
          const Tensor axis = kernel_test::Iota(tidx, {static_cast<int64_t>(axes.size())});
          Tensor a = axis;
          for (size_t k = 0; k < axes.size(); ++k) {
            if (tidx == DT_INT32)
              a.data<int32_t>()[k] = static_cast<int32_t>(axes[k]);
            else
              a.data<int64_t>()[k] = axes[k];
          }
          const std::vector<Tensor> out =
              Run("ReverseV2", {in, a}, ReverseAttrs(dtype, tidx), threads);
          CHECK(SameElements(out[0], NaiveReverse(in, reversed)));
        }
      }
    }
  }
}

TEST_CASE("ReverseV2: TF's example, and its errors") {
  // t is [1, 2, 3, 4] of 0..23; reversing dimension 3 (or -1) reverses each row of 4.
  const Tensor t = Iota(DT_INT32, {1, 2, 3, 4});
  Tensor expected = t;
  expected = Tensor(DT_INT32, t.shape());
  for (int row = 0; row < 6; ++row) {
    for (int j = 0; j < 4; ++j) expected.data<int32_t>()[row * 4 + j] = row * 4 + 3 - j;
  }
  for (int32_t axis : {3, -1}) {
    CHECK(CompareTensors(Run("ReverseV2", {t, I32Vec({axis})}, ReverseAttrs(DT_INT32, DT_INT32))[0],
                         expected) == "");
  }
  CHECK(ErrorOf("ReverseV2", {t, I32Vec({4})}, ReverseAttrs(DT_INT32, DT_INT32)) ==
        "node 'op' (ReverseV2): input 1 (axis)[0] = 4 is not in [-4, 4)");
  CHECK(ErrorOf("ReverseV2", {t, I32Vec({1, -3})}, ReverseAttrs(DT_INT32, DT_INT32)) ==
        "node 'op' (ReverseV2): input 1 (axis) names dimension 1 more than once");
  CHECK(ErrorOf("ReverseV2", {t, Tensor::Scalar<int32_t>(1)}, ReverseAttrs(DT_INT32, DT_INT32)) ==
        "node 'op' (ReverseV2): input 1 (axis) must be an int32 or int64 vector, got int32 []");
  // No axis: the input itself.
  CHECK(CompareTensors(Run("ReverseV2", {t, I32Vec({})}, ReverseAttrs(DT_INT32, DT_INT32))[0], t) ==
        "");
}

Tensor NaiveReverseSequence(const Tensor& in, const std::vector<int64_t>& lengths, int seq_dim,
                            int batch_dim) {
  const std::vector<int64_t>& dims = in.shape().dims();
  Tensor out(in.dtype(), in.shape());
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    std::vector<int64_t> index = Unravel(i, dims);
    const int64_t l = lengths[static_cast<size_t>(index[static_cast<size_t>(batch_dim)])];
    int64_t& s = index[static_cast<size_t>(seq_dim)];
    if (s < l) s = l - 1 - s;
    CopyElement(in, Ravel(index, dims), out, i);
  }
  return out;
}

AttrMap SequenceAttrs(DataType type, DataType tlen, int64_t seq_dim, int64_t batch_dim) {
  return {{"T", TypeAttr(type)},
          {"Tlen", TypeAttr(tlen)},
          {"seq_dim", IntAttr(seq_dim)},
          {"batch_dim", IntAttr(batch_dim)}};
}

Tensor Lengths(DataType tlen, const std::vector<int64_t>& lengths) {
  if (tlen == DT_INT64) return I64Vec(lengths);
  return I32Vec(std::vector<int32_t>(lengths.begin(), lengths.end()));
}

TEST_CASE("ReverseSequence matches a naive loop for every seq_dim and batch_dim") {
  int seed = 0;
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{3, 5}, {4, 8, 2}, {2, 3, 4, 2}, {3, 0, 2}, {0, 4}}) {
    const int rank = static_cast<int>(dims.size());
    for (int seq_dim = 0; seq_dim < rank; ++seq_dim) {
      for (int batch_dim = 0; batch_dim < rank; ++batch_dim) {
        if (seq_dim == batch_dim) continue;
        for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_STRING}) {
          const Tensor in = Input(dtype, dims, static_cast<uint64_t>(++seed));
          const int64_t batch = dims[static_cast<size_t>(batch_dim)];
          const int64_t seq = dims[static_cast<size_t>(seq_dim)];
          const Tensor r = RandomTensor(DT_INT64, TensorShape({batch}), static_cast<uint64_t>(seed),
                                        0, static_cast<double>(seq + 1));
          std::vector<int64_t> lengths(r.data<int64_t>(), r.data<int64_t>() + batch);
          if (batch > 0) lengths[0] = seq;  // the whole sequence, and
          if (batch > 1) lengths[1] = 0;    // none of it
          for (DataType tlen : {DT_INT32, DT_INT64}) {
            for (int threads : {1, 3}) {
              INFO("dims " << TensorShape(dims).DebugString() << " seq_dim " << seq_dim
                           << " batch_dim " << batch_dim << " dtype " << dtype << " threads "
                           << threads);
              const std::vector<Tensor> out =
                  Run("ReverseSequence", {in, Lengths(tlen, lengths)},
                      SequenceAttrs(dtype, tlen, seq_dim, batch_dim), threads);
              CHECK(SameElements(out[0], NaiveReverseSequence(in, lengths, seq_dim, batch_dim)));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ReverseSequence: TF's examples") {
  // batch_dim 0, seq_dim 1, input [4, 8, 2], seq_lengths [7, 2, 3, 5]:
  // output[0, 0:7] = input[0, 6::-1], output[1, 0:2] = input[1, 1::-1], ...; the rest copied.
  const Tensor in = Iota(DT_FLOAT, {4, 8, 2});
  const std::vector<int64_t> lengths = {7, 2, 3, 5};
  const Tensor out =
      Run("ReverseSequence", {in, I64Vec(lengths)}, SequenceAttrs(DT_FLOAT, DT_INT64, 1, 0))[0];
  for (int b = 0; b < 4; ++b) {
    for (int s = 0; s < 8; ++s) {
      const int from = s < lengths[static_cast<size_t>(b)]
                           ? static_cast<int>(lengths[static_cast<size_t>(b)]) - 1 - s
                           : s;
      for (int k = 0; k < 2; ++k) {
        CHECK(out.data<float>()[(b * 8 + s) * 2 + k] == in.data<float>()[(b * 8 + from) * 2 + k]);
      }
    }
  }
  // batch_dim 2, seq_dim 0, input [8, 3, 4], seq_lengths [7, 2, 3, 5].
  const Tensor in2 = Iota(DT_FLOAT, {8, 3, 4});
  const Tensor out2 = Run("ReverseSequence", {in2, I32Vec({7, 2, 3, 5})},
                          SequenceAttrs(DT_FLOAT, DT_INT32, 0, 2))[0];
  CHECK(CompareTensors(out2, NaiveReverseSequence(in2, lengths, 0, 2)) == "");
  CHECK(out2.data<float>()[0] == in2.data<float>()[6 * 12]);  // output[0, 0, 0] = input[6, 0, 0]
}

TEST_CASE("ReverseSequence: errors name the attr or input and the bad value") {
  const Tensor in = Iota(DT_FLOAT, {2, 3});
  CHECK(ErrorOf("ReverseSequence", {in, I64Vec({1, 1})}, SequenceAttrs(DT_FLOAT, DT_INT64, 2, 0)) ==
        "node 'op' (ReverseSequence): attr seq_dim = 2 is not a dimension of input 0 (input), of "
        "shape [2,3]");
  CHECK(
      ErrorOf("ReverseSequence", {in, I64Vec({1, 1})}, SequenceAttrs(DT_FLOAT, DT_INT64, 1, -1)) ==
      "node 'op' (ReverseSequence): attr batch_dim = -1 is not a dimension of input 0 (input), of "
      "shape [2,3]");
  CHECK(ErrorOf("ReverseSequence", {in, I64Vec({1, 1})}, SequenceAttrs(DT_FLOAT, DT_INT64, 1, 1)) ==
        "node 'op' (ReverseSequence): attrs seq_dim and batch_dim are both 1");
  CHECK(ErrorOf("ReverseSequence", {in, I64Vec({1, 1, 1})},
                SequenceAttrs(DT_FLOAT, DT_INT64, 1, 0)) ==
        "node 'op' (ReverseSequence): input 1 (seq_lengths) has 3 elements but input 0 (input) has "
        "2 along batch_dim 0");
  CHECK(ErrorOf("ReverseSequence", {in, I64Vec({1, 4})}, SequenceAttrs(DT_FLOAT, DT_INT64, 1, 0)) ==
        "node 'op' (ReverseSequence): input 1 (seq_lengths)[1] = 4 is not in [0, 3] (the size of "
        "seq_dim 1)");
  CHECK(
      ErrorOf("ReverseSequence", {in, I32Vec({-1, 0})}, SequenceAttrs(DT_FLOAT, DT_INT32, 1, 0)) ==
      "node 'op' (ReverseSequence): input 1 (seq_lengths)[0] = -1 is not in [0, 3] (the size of "
      "seq_dim 1)");
  CHECK(ErrorOf("ReverseSequence", {in, I64Vec({1, 1}).Reshaped(TensorShape({1, 2})).value()},
                SequenceAttrs(DT_FLOAT, DT_INT64, 1, 0)) ==
        "node 'op' (ReverseSequence): input 1 (seq_lengths) must be an int32 or int64 vector, got "
        "int64 [1,2]");
}

}  // namespace
}  // namespace parallax
