// Small helpers for the array, gather, reduction, sparse and segment kernel tests:
// literal tensors, element access by flat index, a checked RunOp, the error text of a failing run, and N-d index arithmetic for the
// naive reference loops.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_KERNEL_TEST_HELPERS_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_KERNEL_TEST_HELPERS_H_

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "lib/runtime/testing/op_test_util.h"

namespace parallax::kernel_test {

using testing::AttrMap;

inline Tensor F32(std::vector<float> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<float>(v, TensorShape(std::move(shape)));
}
inline Tensor I32(std::vector<int32_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int32_t>(v, TensorShape(std::move(shape)));
}
inline Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape) {
  return Tensor::FromVector<int64_t>(v, TensorShape(std::move(shape)));
}
inline Tensor I32Vec(std::vector<int32_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return I32(std::move(v), {n});
}
inline Tensor I64Vec(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return I64(std::move(v), {n});
}
inline Tensor F32Vec(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return F32(std::move(v), {n});
}

// 0, 1, 2, ... as `dtype` (float, double, int32, int64).
inline Tensor Iota(DataType dtype, std::vector<int64_t> shape) {
  Tensor t(dtype, TensorShape(std::move(shape)));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (dtype) {
      case tensorflow::DT_FLOAT: t.data<float>()[i] = static_cast<float>(i); break;
      case tensorflow::DT_DOUBLE: t.data<double>()[i] = static_cast<double>(i); break;
      case tensorflow::DT_INT32: t.data<int32_t>()[i] = static_cast<int32_t>(i); break;
      default: t.data<int64_t>()[i] = i; break;
    }
  }
  return t;
}

// Runs `op` and returns its outputs; fails the test with the error otherwise.
// Element i (row-major) of a float, double, int32, int64 or bool tensor, as a double.
inline double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT:
      return t.data<float>()[i];
    case tensorflow::DT_DOUBLE:
      return t.data<double>()[i];
    case tensorflow::DT_INT32:
      return t.data<int32_t>()[i];
    case tensorflow::DT_INT64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case tensorflow::DT_BOOL:
      return t.data<bool>()[i] ? 1 : 0;
    default:
      FAIL("unexpected dtype");
      return 0;
  }
}
// Sets element i of such a tensor to v (converted to its dtype).
inline void Set(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case tensorflow::DT_FLOAT:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case tensorflow::DT_DOUBLE:
      t.data<double>()[i] = v;
      break;
    case tensorflow::DT_INT32:
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case tensorflow::DT_INT64:
      t.data<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    case tensorflow::DT_BOOL:
      t.data<bool>()[i] = v != 0;
      break;
    default:
      FAIL("unexpected dtype");
  }
}

inline std::vector<Tensor> Run(const std::string& op, const std::vector<Tensor>& inputs,
                               const AttrMap& attrs, int num_threads = 2, int num_outputs = -1) {
  StatusOr<testing::OpRun> run = testing::RunOp(op, inputs, attrs, {}, num_outputs, num_threads);
  INFO(op << ": " << run.status().ToString());
  REQUIRE(run.ok());
  return std::move(run->outputs);
}

// The error message of a run that must fail ("" if it succeeded).
inline std::string ErrorOf(const std::string& op, const std::vector<Tensor>& inputs,
                           const AttrMap& attrs, int num_outputs = -1) {
  StatusOr<testing::OpRun> run = testing::RunOp(op, inputs, attrs, {}, num_outputs);
  return run.ok() ? "" : run.status().message();
}

inline std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = flat % dims[i];
    flat /= dims[i];
  }
  return index;
}
inline int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + index[i];
  return flat;
}

}  // namespace parallax::kernel_test

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CPU_TESTING_KERNEL_TEST_HELPERS_H_
