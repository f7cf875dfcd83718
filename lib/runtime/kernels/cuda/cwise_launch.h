// Launch functions of the element-wise GPU kernels (cwise_kernels.cu), called by their
// OpKernels (cwise_ops.cc). Plain types only: this header is read by nvcc and g++ alike.
//
// One template serves every element-wise op: a unary functor, or a binary one over two
// inputs broadcast to the output's shape (NumPy's rules, as the CPU kernels: each input's
// dimensions aligned to the output's last ones, a size-1 or missing dimension repeated,
// which a stride of 0 expresses). Same-shape and scalar operands take a flat fast path.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CWISE_LAUNCH_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CWISE_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallax::cuda_kernels {

enum class UnaryOp {
  kNeg, kAbs, kExp, kLog, kLog1p, kExpm1, kSqrt, kRsqrt, kSquare, kReciprocal, kTanh,
  kSigmoid, kRelu, kRelu6, kElu, kSoftplus, kSign, kFloor, kCeil, kErf, kErfc,
};

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kSquaredDifference, kPow,
  // Gradients, TF's argument order: (gradients, features) for ReluGrad/Relu6Grad/EluGrad's
  // (gradients, outputs); (y, dy) for TanhGrad, SigmoidGrad, RsqrtGrad, SqrtGrad,
  // ReciprocalGrad.
  kReluGrad, kRelu6Grad, kEluGrad, kTanhGrad, kSigmoidGrad, kRsqrtGrad, kSqrtGrad,
  kReciprocalGrad,
};

inline constexpr int kMaxRank = 8;

// The output's shape and each input's element strides in it (0 where broadcast).
struct Broadcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};

// `n` elements; T is float or double. Errors are the launch's (cudaGetLastError).
template <typename T>
cudaError_t LaunchUnary(UnaryOp op, const T* in, T* out, int64_t n, cudaStream_t stream);

// `broadcast` nullptr: a and b hold n elements each, or one (a scalar) where a_scalar /
// b_scalar says so.
template <typename T>
cudaError_t LaunchBinary(BinaryOp op, const T* a, const T* b, T* out, int64_t n, bool a_scalar,
                         bool b_scalar, const Broadcast* broadcast, cudaStream_t stream);

enum class CompareOp { kEqual, kNotEqual, kGreater, kGreaterEqual, kLess, kLessEqual };

// out[i] = a op b over `broadcast` (rank >= 1; a flat same-shape compare is rank 1).
template <typename T>
cudaError_t LaunchCompare(CompareOp op, const T* a, const T* b, bool* out, int64_t n,
                          const Broadcast& broadcast, cudaStream_t stream);

// IsFinite, IsNan, IsInf: out[i] = the test of in[i].
enum class ClassifyOp { kIsFinite, kIsNan, kIsInf };
template <typename T>
cudaError_t LaunchClassify(ClassifyOp op, const T* in, bool* out, int64_t n, cudaStream_t stream);

// CheckNumerics: ORs the anomaly bits (../anomaly.h) of the n values into *bits (device
// memory, zeroed by the caller).
template <typename T>
cudaError_t LaunchFindAnomalies(const T* in, int64_t n, int* bits, cudaStream_t stream);

// Select: out[i] = cond ? t : e, the three broadcast against each other.
struct Broadcast3 {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};  // cond, t, e
};
template <typename T>
cudaError_t LaunchSelect(const bool* cond, const T* t, const T* e, T* out, int64_t n,
                         const Broadcast3& broadcast, cudaStream_t stream);

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_CWISE_LAUNCH_H_
