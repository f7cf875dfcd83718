// Element-wise GPU kernels: one grid-stride template per arity (cwise_launch.h). The
// functors follow the CPU kernels' formulas (cpu/cwise_ops.cc, cpu/nn_ops.cc,
// cpu/activation_ops.cc); results differ from the CPU's only by the device's libm (a few
// ulps for exp, log, tanh...), which the kernel table's tolerances state.
#include <cfloat>
#include <cmath>

#include "lib/runtime/kernels/anomaly.h"
#include "lib/runtime/kernels/cuda/cwise_launch.h"
#include "lib/runtime/kernels/cuda/grid.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T>
__device__ T SoftplusThreshold() {
  return log(T(sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON)) + T(2);
}

template <typename T>
__device__ T ApplyUnary(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return abs(x);
    case UnaryOp::kExp: return exp(x);
    case UnaryOp::kLog: return log(x);
    case UnaryOp::kLog1p: return log1p(x);
    case UnaryOp::kExpm1: return expm1(x);
    case UnaryOp::kSqrt: return sqrt(x);
    case UnaryOp::kRsqrt: return T(1) / sqrt(x);
    case UnaryOp::kSquare: return x * x;
    case UnaryOp::kReciprocal: return T(1) / x;
    case UnaryOp::kTanh: return tanh(x);
    case UnaryOp::kSigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryOp::kRelu: return x > T(0) ? x : T(0);
    case UnaryOp::kRelu6: return x > T(0) ? (x < T(6) ? x : T(6)) : T(0);
    case UnaryOp::kElu: return x < T(0) ? expm1(x) : x;
    case UnaryOp::kSoftplus: {
      const T t = SoftplusThreshold<T>();
      if (x > -t) return x;
      if (x < t) return exp(x);
      return log1p(exp(x));
    }
    case UnaryOp::kSign: return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    case UnaryOp::kFloor: return floor(x);
    case UnaryOp::kCeil: return ceil(x);
    case UnaryOp::kErf: return erf(x);
    case UnaryOp::kErfc: return erfc(x);
  }
  return x;
}

template <typename T>
__device__ T ApplyBinary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kMaximum: return isnan(a) || isnan(b) ? a + b : (a > b ? a : b);
    case BinaryOp::kMinimum: return isnan(a) || isnan(b) ? a + b : (a < b ? a : b);
    case BinaryOp::kSquaredDifference: return (a - b) * (a - b);
    case BinaryOp::kPow: return pow(a, b);
    case BinaryOp::kReluGrad: return b > T(0) ? a : T(0);
    case BinaryOp::kRelu6Grad: return b > T(0) && b < T(6) ? a : T(0);
    case BinaryOp::kEluGrad: return b < T(0) ? a * (b + T(1)) : a;
    case BinaryOp::kTanhGrad: return b * (T(1) - a * a);
    case BinaryOp::kSigmoidGrad: return b * a * (T(1) - a);
    case BinaryOp::kRsqrtGrad: return b * a * a * a * T(-0.5);
    case BinaryOp::kSqrtGrad: return b * T(0.5) / a;
    case BinaryOp::kReciprocalGrad: return -b * a * a;
  }
  return a;
}

// The elements of a and b that output element i combines.
__device__ void BroadcastIndex(const Broadcast& shape, int64_t i, int64_t* a_index,
                               int64_t* b_index) {
  int64_t rest = i;
  *a_index = 0;
  *b_index = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    const int64_t coordinate = rest % shape.dims[d];
    rest /= shape.dims[d];
    *a_index += coordinate * shape.a_strides[d];
    *b_index += coordinate * shape.b_strides[d];
  }
}

template <typename T>
__global__ void UnaryKernel(UnaryOp op, const T* in, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = ApplyUnary(op, in[i]);
  }
}

template <typename T>
__global__ void FlatBinaryKernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                                 int64_t a_step, int64_t b_step) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = ApplyBinary(op, a[i * a_step], b[i * b_step]);
  }
}

template <typename T>
__global__ void BroadcastBinaryKernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                                      Broadcast shape) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t a_index, b_index;
    BroadcastIndex(shape, i, &a_index, &b_index);
    out[i] = ApplyBinary(op, a[a_index], b[b_index]);
  }
}

template <typename T>
__device__ bool ApplyCompare(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::kEqual: return a == b;
    case CompareOp::kNotEqual: return a != b;
    case CompareOp::kGreater: return a > b;
    case CompareOp::kGreaterEqual: return a >= b;
    case CompareOp::kLess: return a < b;
    case CompareOp::kLessEqual: return a <= b;
  }
  return false;
}

template <typename T>
__global__ void CompareKernel(CompareOp op, const T* a, const T* b, bool* out, int64_t n,
                              Broadcast shape) {
  PX_GRID_LOOP(i, n) {
    int64_t a_index, b_index;
    BroadcastIndex(shape, i, &a_index, &b_index);
    out[i] = ApplyCompare(op, a[a_index], b[b_index]);
  }
}

template <typename T>
__global__ void SelectKernel(const bool* cond, const T* t, const T* e, T* out, int64_t n,
                             Broadcast3 shape) {
  PX_GRID_LOOP(i, n) {
    int64_t rest = i, index[3] = {0, 0, 0};
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % shape.dims[d];
      rest /= shape.dims[d];
      for (int k = 0; k < 3; ++k) index[k] += coordinate * shape.strides[k][d];
    }
    out[i] = cond[index[0]] ? t[index[1]] : e[index[2]];
  }
}

template <typename T>
__global__ void ClassifyKernel(ClassifyOp op, const T* in, bool* out, int64_t n) {
  PX_GRID_LOOP(i, n) {
    const int bits = anomaly::AnomalyBits(in[i]);
    switch (op) {
      case ClassifyOp::kIsFinite: out[i] = bits == 0; break;
      case ClassifyOp::kIsNan: out[i] = bits == anomaly::kNaN; break;
      case ClassifyOp::kIsInf: out[i] = bits != 0 && bits != anomaly::kNaN; break;
    }
  }
}

// Each thread ORs its values' bits, then one atomicOr per thread that found any.
template <typename T>
__global__ void FindAnomaliesKernel(const T* in, int64_t n, int* bits) {
  int found = 0;
  PX_GRID_LOOP(i, n) { found |= anomaly::AnomalyBits(in[i]); }
  if (found != 0) atomicOr(bits, found);
}

}  // namespace

template <typename T>
cudaError_t LaunchClassify(ClassifyOp op, const T* in, bool* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ClassifyKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, in, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchFindAnomalies(const T* in, int64_t n, int* bits, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FindAnomaliesKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, n, bits);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchCompare(CompareOp op, const T* a, const T* b, bool* out, int64_t n,
                          const Broadcast& broadcast, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CompareKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, a, b, out, n, broadcast);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSelect(const bool* cond, const T* t, const T* e, T* out, int64_t n,
                         const Broadcast3& broadcast, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SelectKernel<T><<<Blocks(n), kThreads, 0, stream>>>(cond, t, e, out, n, broadcast);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchUnary(UnaryOp op, const T* in, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  UnaryKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, in, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBinary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, bool a_scalar,
                         bool b_scalar, const Broadcast* broadcast, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (broadcast == nullptr) {
    FlatBinaryKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, a, b, out, n, a_scalar ? 0 : 1,
                                                            b_scalar ? 0 : 1);
  } else {
    BroadcastBinaryKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, a, b, out, n, *broadcast);
  }
  return cudaGetLastError();
}

template cudaError_t LaunchClassify<float>(ClassifyOp, const float*, bool*, int64_t, cudaStream_t);
template cudaError_t LaunchClassify<double>(ClassifyOp, const double*, bool*, int64_t,
                                            cudaStream_t);
template cudaError_t LaunchFindAnomalies<float>(const float*, int64_t, int*, cudaStream_t);
template cudaError_t LaunchFindAnomalies<double>(const double*, int64_t, int*, cudaStream_t);
template cudaError_t LaunchCompare<float>(CompareOp, const float*, const float*, bool*, int64_t,
                                          const Broadcast&, cudaStream_t);
template cudaError_t LaunchCompare<double>(CompareOp, const double*, const double*, bool*, int64_t,
                                           const Broadcast&, cudaStream_t);
template cudaError_t LaunchSelect<float>(const bool*, const float*, const float*, float*, int64_t,
                                         const Broadcast3&, cudaStream_t);
template cudaError_t LaunchSelect<double>(const bool*, const double*, const double*, double*,
                                          int64_t, const Broadcast3&, cudaStream_t);
template cudaError_t LaunchUnary<float>(UnaryOp, const float*, float*, int64_t, cudaStream_t);
template cudaError_t LaunchUnary<double>(UnaryOp, const double*, double*, int64_t, cudaStream_t);
template cudaError_t LaunchBinary<float>(BinaryOp, const float*, const float*, float*, int64_t,
                                         bool, bool, const Broadcast*, cudaStream_t);
template cudaError_t LaunchBinary<double>(BinaryOp, const double*, const double*, double*,
                                          int64_t, bool, bool, const Broadcast*, cudaStream_t);

}  // namespace parallax::cuda_kernels
