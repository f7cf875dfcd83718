// Tests of the sorted segment reductions Segment{Sum,Mean,Max,Min,Prod} and of the
// SparseSegment*WithNumSegments forms: naive reference loops on random sorted ids with
// gaps (several data ranks, dtypes, empty inputs), TF's documented examples, TF's errors
// for unsorted and negative ids, thread-count independence, the SparseSegment*Grad ops
// against central differences of their forward ops, and the gradient compositions TF
// builds for SegmentSum, SegmentMean and SegmentMax from other ops.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "lib/ops/dtypes.h"
#include "lib/runtime/kernels/cpu/testing/kernel_test_helpers.h"
#include "lib/runtime/kernels/cpu/testing/numeric_gradient.h"

namespace parallax {
namespace {

using kernel_test::ErrorOf;
using kernel_test::Get;
using kernel_test::Set;
using kernel_test::F32;
using kernel_test::I32;
using kernel_test::I32Vec;
using kernel_test::I64Vec;
using kernel_test::NumericGradient;
using kernel_test::Run;
using tensorflow::DT_BOOL;
using tensorflow::DT_DOUBLE;
using tensorflow::DT_FLOAT;
using tensorflow::DT_INT32;
using tensorflow::DT_INT64;
using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;

AttrMap SegmentAttrs(DataType type, DataType ids = DT_INT32) {
  return {{"T", TypeAttr(type)}, {"Tindices", TypeAttr(ids)}};
}
AttrMap SparseAttrs(DataType type) {
  return {{"T", TypeAttr(type)},
          {"Tidx", TypeAttr(DT_INT32)},
          {"Tsegmentids", TypeAttr(DT_INT32)},
          {"Tnumsegments", TypeAttr(DT_INT32)}};
}

// Sorted ids for n rows, with repeats and gaps.
std::vector<int64_t> SortedIds(int64_t n, std::mt19937& rng) {
  std::vector<int64_t> ids;
  int64_t id = std::uniform_int_distribution<int64_t>(0, 2)(rng);
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(id);
    id += std::uniform_int_distribution<int64_t>(0, 2)(rng);
  }
  return ids;
}

Tensor IdTensor(DataType type, const std::vector<int64_t>& ids) {
  Tensor t(type, TensorShape({static_cast<int64_t>(ids.size())}));
  for (size_t i = 0; i < ids.size(); ++i)
    Set(t, static_cast<int64_t>(i), static_cast<double>(ids[i]));
  return t;
}

Tensor NaiveSegment(const std::string& reduce, const Tensor& data,
                    const std::vector<int64_t>& ids) {
  const int64_t rows = ids.empty() ? 0 : ids.back() + 1;
  TensorShape shape = data.shape();
  shape.set_dim(0, rows);
  Tensor out(data.dtype(), shape);
  const int64_t inner = data.dim(0) == 0 ? 0 : data.num_elements() / data.dim(0);
  for (int64_t s = 0; s < rows; ++s) {
    for (int64_t c = 0; c < inner; ++c) {
      std::vector<double> xs;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] == s) xs.push_back(Get(data, static_cast<int64_t>(i) * inner + c));
      }
      double v = reduce == "Prod" ? 1 : 0;
      if (!xs.empty()) {
        if (reduce == "Sum" || reduce == "Mean") {
          v = 0;
          for (double x : xs) v += x;
          if (reduce == "Mean") {
            v = data.dtype() == DT_INT32 || data.dtype() == DT_INT64
                    ? std::trunc(v / static_cast<double>(xs.size()))
                    : v / static_cast<double>(xs.size());
          }
        } else if (reduce == "Prod") {
          for (double x : xs) v *= x;
        } else if (reduce == "Max") {
          v = *std::max_element(xs.begin(), xs.end());
        } else {
          v = *std::min_element(xs.begin(), xs.end());
        }
      }
      Set(out, s * inner + c, v);
    }
  }
  return out;
}

const char* const kReduces[] = {"Sum", "Mean", "Max", "Min", "Prod"};

TEST_CASE("Segment reductions match a naive loop; gaps hold 0 (1 for Prod)") {
  std::mt19937 rng(51);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{7}, {9, 3}, {6, 2, 2}, {0, 3}, {1}, {5, 0}}) {
    for (DataType dtype : {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}) {
      for (DataType itype : {DT_INT32, DT_INT64}) {
        const Tensor data = RandomTensor(dtype, TensorShape(dims), rng(), -4, 4);
        const std::vector<int64_t> ids = SortedIds(dims[0], rng);
        for (const char* reduce : kReduces) {
          INFO("Segment" << reduce << " " << data.shape().DebugString() << " "
                         << DataTypeShortName(dtype) << " ids "
                         << IdTensor(DT_INT64, ids).DebugString(20));
          CHECK(CompareTensors(Run(std::string("Segment") + reduce, {data, IdTensor(itype, ids)},
                                   SegmentAttrs(dtype, itype))[0],
                               NaiveSegment(reduce, data, ids), 1e-5, 1e-5) == "");
        }
      }
    }
  }
}

TEST_CASE("Segment reductions: TF's documented examples") {
  const Tensor c = I32({1, 2, 3, 4, 4, 3, 2, 1, 5, 6, 7, 8}, {3, 4});
  const Tensor ids = I32Vec({0, 0, 1});
  const AttrMap attrs = SegmentAttrs(DT_INT32);
  CHECK(CompareTensors(Run("SegmentSum", {c, ids}, attrs)[0],
                       I32({5, 5, 5, 5, 5, 6, 7, 8}, {2, 4})) == "");
  CHECK(CompareTensors(Run("SegmentMax", {c, ids}, attrs)[0],
                       I32({4, 3, 3, 4, 5, 6, 7, 8}, {2, 4})) == "");
  CHECK(CompareTensors(Run("SegmentMin", {c, ids}, attrs)[0],
                       I32({1, 2, 2, 1, 5, 6, 7, 8}, {2, 4})) == "");
  CHECK(CompareTensors(Run("SegmentProd", {c, ids}, attrs)[0],
                       I32({4, 6, 6, 4, 5, 6, 7, 8}, {2, 4})) == "");
  const Tensor cf = F32({1, 2, 3, 4, 4, 3, 2, 1, 5, 6, 7, 8}, {3, 4});
  CHECK(CompareTensors(Run("SegmentMean", {cf, ids}, SegmentAttrs(DT_FLOAT))[0],
                       F32({2.5, 2.5, 2.5, 2.5, 5, 6, 7, 8}, {2, 4})) == "");
  // A gap (id 1) holds the default, also for Max and Prod.
  const Tensor x = F32({-3, -5}, {2});
  CHECK(CompareTensors(Run("SegmentMax", {x, I32Vec({0, 2})}, SegmentAttrs(DT_FLOAT))[0],
                       F32({-3, 0, -5}, {3})) == "");
  CHECK(CompareTensors(Run("SegmentProd", {x, I32Vec({0, 2})}, SegmentAttrs(DT_FLOAT))[0],
                       F32({-3, 1, -5}, {3})) == "");
}

TEST_CASE("Segment reductions reject unsorted and negative ids with TF's errors") {
  const Tensor data = F32({1, 2, 3, 4}, {4});
  const AttrMap attrs = SegmentAttrs(DT_FLOAT);
  CHECK(ErrorOf("SegmentSum", {data, I32Vec({0, 2, 1, 2})}, attrs) ==
        "node 'op' (SegmentSum): segment ids are not increasing");
  CHECK(ErrorOf("SegmentMax", {data, I32Vec({-1, 0, 1, 1})}, attrs) ==
        "node 'op' (SegmentMax): Segment id -1 out of range [0, 2), possibly because "
        "'segment_ids' input is not sorted.");
  CHECK(ErrorOf("SegmentMean", {data, I32Vec({-3, -3, -2, -2})}, attrs) ==
        "node 'op' (SegmentMean): segment ids must be >= 0");
  CHECK(ErrorOf("SegmentProd", {data, I32Vec({0, 0, 1})}, attrs) ==
        "node 'op' (SegmentProd): segment_ids should be the same size as dimension 0 of input.");
  CHECK(ErrorOf("SegmentMin", {data, I32({0, 0, 1, 1}, {2, 2})}, attrs) ==
        "node 'op' (SegmentMin): segment_ids should be a vector.");
  CHECK(ErrorOf("SegmentSum", {Tensor::Scalar<float>(1), I32Vec({0})}, attrs) ==
        "node 'op' (SegmentSum): input must be at least rank 1");
}

TEST_CASE("Segment reductions give the same bits for 1 and 3 threads") {
  std::mt19937 rng(52);
  const Tensor data = RandomTensor(DT_FLOAT, TensorShape({4000, 37}), 53);
  const Tensor ids = IdTensor(DT_INT64, SortedIds(4000, rng));
  for (const char* reduce : kReduces) {
    const std::string op = std::string("Segment") + reduce;
    CHECK(TensorsBitEqual(Run(op, {data, ids}, SegmentAttrs(DT_FLOAT, DT_INT64), 1)[0],
                          Run(op, {data, ids}, SegmentAttrs(DT_FLOAT, DT_INT64), 3)[0]));
  }
}

// ---- SparseSegment*WithNumSegments ----

Tensor NaiveSparseSegment(const std::string& kind, const Tensor& data,
                          const std::vector<int64_t>& indices, const std::vector<int64_t>& ids,
                          int64_t rows) {
  TensorShape shape = data.shape();
  shape.set_dim(0, rows);
  Tensor out(data.dtype(), shape);
  const int64_t inner = data.num_elements() / data.dim(0);
  for (int64_t s = 0; s < rows; ++s) {
    int64_t count = 0;
    for (int64_t id : ids) count += id == s;
    const double scale = count == 0 || kind == "Sum" ? 1
                         : kind == "Mean"            ? 1.0 / static_cast<double>(count)
                                                     : 1.0 / std::sqrt(static_cast<double>(count));
    for (int64_t c = 0; c < inner; ++c) {
      double v = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] == s) v += Get(data, indices[i] * inner + c);
      }
      Set(out, s * inner + c, v * scale);
    }
  }
  return out;
}

TEST_CASE("SparseSegment*WithNumSegments: num_segments rows, extra ones zero") {
  std::mt19937 rng(54);
  const Tensor data = RandomTensor(DT_FLOAT, TensorShape({6, 3}), 55);
  const std::vector<int64_t> indices = {5, 0, 0, 3, 2, 1, 4};
  const std::vector<int64_t> ids = {0, 0, 2, 2, 2, 3, 5};
  for (const std::string kind : {"Sum", "Mean", "SqrtN"}) {
    for (int64_t num_segments : {6, 9}) {
      INFO(kind << " " << num_segments);
      const Tensor out = Run("SparseSegment" + kind + "WithNumSegments",
                             {data, IdTensor(DT_INT32, indices), IdTensor(DT_INT32, ids),
                              Tensor::Scalar<int32_t>(static_cast<int32_t>(num_segments))},
                             SparseAttrs(DT_FLOAT))[0];
      CHECK(CompareTensors(out, NaiveSparseSegment(kind, data, indices, ids, num_segments)) == "");
    }
    // No ids: num_segments zero rows.
    CHECK(CompareTensors(Run("SparseSegment" + kind + "WithNumSegments",
                             {data, I32Vec({}), I32Vec({}), Tensor::Scalar<int32_t>(2)},
                             SparseAttrs(DT_FLOAT))[0],
                         F32({0, 0, 0, 0, 0, 0}, {2, 3})) == "");
  }
  CHECK(ErrorOf("SparseSegmentSumWithNumSegments",
                {data, I32Vec({0, 1}), I32Vec({0, 5}), Tensor::Scalar<int32_t>(5)},
                SparseAttrs(DT_FLOAT)) ==
        "node 'op' (SparseSegmentSumWithNumSegments): segment ids must be < num_segments");
  CHECK(ErrorOf("SparseSegmentMeanWithNumSegments",
                {data, I32Vec({0, 1}), I32Vec({0, 1}), I32Vec({5})}, SparseAttrs(DT_FLOAT)) ==
        "node 'op' (SparseSegmentMeanWithNumSegments): num_segments should be a scalar, not shape "
        "[1]");
  CHECK(ErrorOf("SparseSegmentSqrtNWithNumSegments",
                {data, I32Vec({0, 1}), I32Vec({1, 0}), Tensor::Scalar<int32_t>(5)},
                SparseAttrs(DT_FLOAT)) ==
        "node 'op' (SparseSegmentSqrtNWithNumSegments): segment ids are not increasing");
}

// ---- Gradients ----

TEST_CASE("SparseSegment{Sum,Mean,SqrtN}Grad match central differences of the forward ops") {
  const Tensor data = RandomTensor(DT_DOUBLE, TensorShape({5, 3}), 56);
  const Tensor indices = I32Vec({4, 0, 0, 2, 4, 1});
  const Tensor ids = I32Vec({0, 0, 1, 3, 3, 3});
  for (const std::string kind : {"Sum", "Mean", "SqrtN"}) {
    INFO(kind);
    const auto forward = [&](const Tensor& x) {
      return Run("SparseSegment" + kind, {x, indices, ids}, SparseAttrs(DT_DOUBLE))[0];
    };
    const Tensor w = RandomTensor(DT_DOUBLE, forward(data).shape(), 57);
    const Tensor analytic =
        Run("SparseSegment" + kind + "Grad", {w, indices, ids, Tensor::Scalar<int32_t>(5)},
            SparseAttrs(DT_DOUBLE))[0];
    CHECK(CompareTensors(analytic, NumericGradient(data, w, forward), 1e-6, 1e-8) == "");
  }
}

// TF's gradients of the sorted reductions are other ops: SegmentSum's is
// Gather(grad, ids); SegmentMean's divides grad by SegmentSum(ones) first; SegmentMax's
// sends grad to the rows equal to the max (shared among ties).
TEST_CASE(
    "SegmentSum, SegmentMean and SegmentMax gradients built from other ops match central "
    "differences") {
  const Tensor data = RandomTensor(DT_DOUBLE, TensorShape({6, 2}), 58);
  const Tensor ids = I32Vec({0, 0, 1, 3, 3, 3});
  const AttrMap attrs = SegmentAttrs(DT_DOUBLE);
  const AttrMap gather_attrs = {{"Tparams", TypeAttr(DT_DOUBLE)},
                                {"Tindices", TypeAttr(DT_INT32)},
                                {"Taxis", TypeAttr(DT_INT32)}};
  const AttrMap binary = {{"T", TypeAttr(DT_DOUBLE)}};
  const auto gather = [&](const Tensor& x) {
    return Run("GatherV2", {x, ids, Tensor::Scalar<int32_t>(0)}, gather_attrs)[0];
  };
  for (const std::string reduce : {"Sum", "Mean", "Max"}) {
    INFO(reduce);
    const auto forward = [&](const Tensor& x) {
      return Run("Segment" + reduce, {x, ids}, attrs)[0];
    };
    const Tensor w = RandomTensor(DT_DOUBLE, forward(data).shape(), 59);
    Tensor analytic;
    if (reduce == "Sum") {
      analytic = gather(w);
    } else if (reduce == "Mean") {
      Tensor ones(DT_DOUBLE, TensorShape({6, 1}));
      std::fill_n(ones.data<double>(), 6, 1.0);
      const Tensor counts = Run("SegmentSum", {ones, ids}, attrs)[0];
      analytic = gather(Run("RealDiv", {w, counts}, binary)[0]);
    } else {
      const Tensor selected = Run("Equal", {data, gather(forward(data))}, binary)[0];
      const Tensor as_double =
          Run("Cast", {selected}, {{"SrcT", TypeAttr(DT_BOOL)}, {"DstT", TypeAttr(DT_DOUBLE)}})[0];
      const Tensor num_selected = Run("SegmentSum", {as_double, ids}, attrs)[0];
      const Tensor weighted = gather(Run("RealDiv", {w, num_selected}, binary)[0]);
      const Tensor zeros = Run("ZerosLike", {data}, binary)[0];
      analytic = Run("Select", {selected, weighted, zeros}, binary)[0];
    }
    CHECK(CompareTensors(analytic, NumericGradient(data, w, forward), 1e-6, 1e-8) == "");
  }
}

}  // namespace
}  // namespace parallax
