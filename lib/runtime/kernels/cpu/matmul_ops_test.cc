// Tests of MatMul and BatchMatMul(V2) against naive loops: every transpose/adjoint
// combination, odd and empty sizes, broadcast batches, float and double, and the exact
// shape errors.
#include <catch2/catch.hpp>

#include "lib/runtime/testing/op_test_util.h"

namespace parallax {
namespace {

using testing::AttrMap;
using testing::CompareTensors;
using testing::RandomTensor;
using testing::RunOp;

// Element (r, c) of op(M) for a row-major matrix M stored at `data` with `cols` columns.
template <typename T>
double At(const T* data, int64_t cols, bool transpose, int64_t r, int64_t c) {
  return transpose ? data[c * cols + r] : data[r * cols + c];
}

// Naive product of batch matrices with numpy broadcasting; the expectation in T.
template <typename T>
Tensor NaiveBatchMatMul(const Tensor& x, const Tensor& y, bool adj_x, bool adj_y) {
  const int xr = x.rank(), yr = y.rank();
  const int64_t m = x.dim(adj_x ? xr - 1 : xr - 2), k = x.dim(adj_x ? xr - 2 : xr - 1);
  const int64_t n = y.dim(adj_y ? yr - 2 : yr - 1);
  const int br = std::max(xr, yr) - 2;
  std::vector<int64_t> batch(br), xb(br, 1), yb(br, 1);
  for (int i = 0; i < br; ++i) {
    if (i - (br - (xr - 2)) >= 0) xb[i] = x.dim(i - (br - (xr - 2)));
    if (i - (br - (yr - 2)) >= 0) yb[i] = y.dim(i - (br - (yr - 2)));
    batch[i] = xb[i] == 1 ? yb[i] : xb[i];
  }
  TensorShape shape(batch);
  shape.AddDim(m);
  shape.AddDim(n);
  Tensor out(x.dtype(), shape);
  int64_t total = 1;
  for (int64_t b : batch) total *= b;
  for (int64_t bi = 0; bi < total; ++bi) {
    int64_t rest = bi, xo = 0, yo = 0, xs = 1, ys = 1;
    for (int i = br - 1; i >= 0; --i) {
      const int64_t idx = rest % batch[i];
      rest /= batch[i];
      xo += (xb[i] == 1 ? 0 : idx) * xs;
      yo += (yb[i] == 1 ? 0 : idx) * ys;
      xs *= xb[i];
      ys *= yb[i];
    }
    const T* a = x.data<T>() + xo * m * k;
    const T* b = y.data<T>() + yo * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          sum += At(a, adj_x ? m : k, adj_x, i, p) * At(b, adj_y ? k : n, adj_y, p, j);
        }
        out.data<T>()[(bi * m + i) * n + j] = static_cast<T>(sum);
      }
    }
  }
  return out;
}

TEMPLATE_TEST_CASE("MatMul matches a naive loop for every transpose combination", "", float,
                   double) {
  const DataType dtype = DataTypeOf<TestType>::value;
  const double rtol = std::is_same_v<TestType, float> ? 1e-4 : 1e-10;
  // {m, k, n}
  const std::vector<std::array<int64_t, 3>> sizes = {
      {1, 1, 1}, {7, 13, 5}, {64, 33, 17}, {130, 100, 70}, {0, 4, 3}, {3, 0, 4}, {3, 4, 0}};
  uint64_t seed = 1;
  for (const auto& [m, k, n] : sizes) {
    for (int combo = 0; combo < 4; ++combo) {
      const bool ta = combo & 1, tb = combo & 2;
      CAPTURE(m, k, n, ta, tb);
      Tensor a = RandomTensor(dtype, ta ? TensorShape{k, m} : TensorShape{m, k}, seed++);
      Tensor b = RandomTensor(dtype, tb ? TensorShape{n, k} : TensorShape{k, n}, seed++);
      StatusOr<testing::OpRun> run =
          RunOp("MatMul", {a, b},
                {{"T", TypeAttr(dtype)}, {"transpose_a", BoolAttr(ta)},
                 {"transpose_b", BoolAttr(tb)}});
      REQUIRE(run.ok());
      // A 2-D MatMul is a batch product without batch dimensions.
      Tensor expected = NaiveBatchMatMul<TestType>(a, b, ta, tb);
      CHECK(CompareTensors(run->outputs[0], expected, rtol, 1e-5) == "");
    }
  }
}

TEST_CASE("MatMul reports shape errors naming both inputs") {
  const AttrMap attrs = {{"T", TypeAttr(tensorflow::DT_FLOAT)}};
  Tensor a = RandomTensor(tensorflow::DT_FLOAT, {2, 3}, 1);
  Tensor b = RandomTensor(tensorflow::DT_FLOAT, {4, 5}, 2);
  StatusOr<testing::OpRun> run = RunOp("MatMul", {a, b}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (MatMul): Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5] "
        "(transpose_a=false, transpose_b=false)");
  run = RunOp("MatMul", {RandomTensor(tensorflow::DT_FLOAT, {2, 3, 4}, 3), b}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (MatMul): In[0] is not a matrix. Instead it has shape [2,3,4]");
  run = RunOp("MatMul", {a, RandomTensor(tensorflow::DT_DOUBLE, {3, 2}, 4)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() == "node 'op' (MatMul): input 1 (b) must be float, got double");
}

TEMPLATE_TEST_CASE("BatchMatMulV2 broadcasts batch dimensions", "", float, double) {
  const DataType dtype = DataTypeOf<TestType>::value;
  const double rtol = std::is_same_v<TestType, float> ? 1e-4 : 1e-10;
  struct Case {
    std::vector<int64_t> x_batch, y_batch;
    int64_t m, k, n;
  };
  const std::vector<Case> cases = {
      {{}, {}, 3, 4, 5},          {{2}, {2}, 7, 13, 5},   {{3}, {}, 4, 6, 2},
      {{}, {3}, 4, 6, 2},         {{2, 1}, {1, 3}, 2, 3, 4}, {{4, 2}, {2}, 1, 1, 1},
      {{0}, {1}, 2, 3, 4},        {{2}, {2}, 3, 0, 2},
  };
  uint64_t seed = 100;
  for (const Case& c : cases) {
    for (int combo = 0; combo < 4; ++combo) {
      const bool ax = combo & 1, ay = combo & 2;
      TensorShape xs(c.x_batch), ys(c.y_batch);
      xs.AddDim(ax ? c.k : c.m);
      xs.AddDim(ax ? c.m : c.k);
      ys.AddDim(ay ? c.n : c.k);
      ys.AddDim(ay ? c.k : c.n);
      CAPTURE(xs.DebugString(), ys.DebugString(), ax, ay);
      Tensor x = RandomTensor(dtype, xs, seed++);
      Tensor y = RandomTensor(dtype, ys, seed++);
      StatusOr<testing::OpRun> run =
          RunOp("BatchMatMulV2", {x, y},
                {{"T", TypeAttr(dtype)}, {"adj_x", BoolAttr(ax)},
                 {"adj_y", BoolAttr(ay)}});
      REQUIRE(run.ok());
      CHECK(CompareTensors(run->outputs[0], NaiveBatchMatMul<TestType>(x, y, ax, ay), rtol,
                           1e-5) == "");
    }
  }
}

TEST_CASE("BatchMatMul requires equal batch dimensions; V2 requires broadcastable ones") {
  const AttrMap attrs = {{"T", TypeAttr(tensorflow::DT_FLOAT)}};
  Tensor x = RandomTensor(tensorflow::DT_FLOAT, {2, 3, 4}, 1);
  Tensor y = RandomTensor(tensorflow::DT_FLOAT, {2, 4, 5}, 2);
  StatusOr<testing::OpRun> run = RunOp("BatchMatMul", {x, y}, attrs);
  REQUIRE(run.ok());
  CHECK(CompareTensors(run->outputs[0], NaiveBatchMatMul<float>(x, y, false, false), 1e-4,
                       1e-5) == "");

  run = RunOp("BatchMatMul", {x, RandomTensor(tensorflow::DT_FLOAT, {1, 4, 5}, 3)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (BatchMatMul): In[0] and In[1] must have the same batch dimensions: "
        "[2,3,4] vs [1,4,5]");
  run = RunOp("BatchMatMulV2", {x, RandomTensor(tensorflow::DT_FLOAT, {3, 4, 5}, 4)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (BatchMatMulV2): In[0] and In[1] must have broadcastable batch dimensions: "
        "[2,3,4] vs [3,4,5]");
  run = RunOp("BatchMatMulV2", {x, RandomTensor(tensorflow::DT_FLOAT, {2, 5, 5}, 5)}, attrs);
  REQUIRE_FALSE(run.ok());
  CHECK(run.status().message() ==
        "node 'op' (BatchMatMulV2): Matrix size-incompatible: In[0]: [2,3,4], In[1]: [2,5,5] "
        "(adj_x=false, adj_y=false)");
}

}  // namespace
}  // namespace parallax
