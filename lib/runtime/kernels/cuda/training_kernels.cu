// The fused optimizer updates and the sparse row updates (training_launch.h): one
// grid-stride kernel per rule, each element updated by ../update_rules.h, the CPU
// kernels' functions.
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/training_launch.h"

namespace parallax::cuda_kernels {
namespace {

template <typename T, DenseRule kRule, bool kNesterov>
__global__ void DenseUpdateKernel(DenseUpdate<T> u, int64_t n) {
  T h[8];
  ReadScalars(u.h, h);
  PX_GRID_LOOP(i, n) { DenseElement<T, kRule, kNesterov>(u, h, i); }
}

// Nesterov's variant is built only for the rules that have one.
template <typename T, DenseRule kRule>
void Launch(const DenseUpdate<T>& u, int64_t n, cudaStream_t stream) {
  constexpr bool kHasNesterov = kRule == DenseRule::kMomentum ||
                                kRule == DenseRule::kKerasMomentum || kRule == DenseRule::kAdam;
  if constexpr (kHasNesterov) {
    if (u.use_nesterov) {
      DenseUpdateKernel<T, kRule, true><<<Blocks(n), kThreads, 0, stream>>>(u, n);
      return;
    }
  }
  DenseUpdateKernel<T, kRule, false><<<Blocks(n), kThreads, 0, stream>>>(u, n);
}

// One thread per (group, column): the group's gradient rows, in index order, into its
// variable row's element.
template <typename T, SparseRule kRule, bool kNesterov>
__global__ void SparseUpdateKernel(SparseUpdate<T> u, DeviceRowGroups groups) {
  T h[8];
  ReadScalars(u.h, h);
  const bool single = u.row_size == 1;  // TF's scalar loop, for rows of one element
  PX_GRID_LOOP(item, groups.count * u.row_size) {
    const int64_t group = item / u.row_size;
    const int64_t column = item % u.row_size;
    const int64_t v = groups.rows[group] * u.row_size + column;
    for (int64_t p = groups.starts[group]; p < groups.starts[group + 1]; ++p) {
      const T g = u.scalar_grad ? u.grad[0] : u.grad[groups.positions[p] * u.row_size + column];
      SparseElement<T, kRule, kNesterov>(u, h, v, g, single);
    }
  }
}

template <typename T, SparseRule kRule>
void LaunchSparse(const SparseUpdate<T>& u, const DeviceRowGroups& groups, cudaStream_t stream) {
  const int64_t n = groups.count * u.row_size;
  constexpr bool kHasNesterov =
      kRule == SparseRule::kMomentum || kRule == SparseRule::kKerasMomentum;
  if constexpr (kHasNesterov) {
    if (u.use_nesterov) {
      SparseUpdateKernel<T, kRule, true><<<Blocks(n), kThreads, 0, stream>>>(u, groups);
      return;
    }
  }
  SparseUpdateKernel<T, kRule, false><<<Blocks(n), kThreads, 0, stream>>>(u, groups);
}

}  // namespace

template <typename T>
cudaError_t LaunchSparseUpdate(SparseRule rule, const SparseUpdate<T>& update,
                               const DeviceRowGroups& groups, cudaStream_t stream) {
  if (groups.count == 0 || update.row_size == 0) return cudaSuccess;
  using enum SparseRule;
  switch (rule) {
    case kMomentum:
      LaunchSparse<T, kMomentum>(update, groups, stream);
      break;
    case kKerasMomentum:
      LaunchSparse<T, kKerasMomentum>(update, groups, stream);
      break;
    case kAdagrad:
      LaunchSparse<T, kAdagrad>(update, groups, stream);
      break;
    case kAdagradV2:
      LaunchSparse<T, kAdagradV2>(update, groups, stream);
      break;
    case kRMSProp:
      LaunchSparse<T, kRMSProp>(update, groups, stream);
      break;
    case kCenteredRMSProp:
      LaunchSparse<T, kCenteredRMSProp>(update, groups, stream);
      break;
    case kAdadelta:
      LaunchSparse<T, kAdadelta>(update, groups, stream);
      break;
    case kProximalGradientDescent:
      LaunchSparse<T, kProximalGradientDescent>(update, groups, stream);
      break;
    case kProximalAdagrad:
      LaunchSparse<T, kProximalAdagrad>(update, groups, stream);
      break;
    case kAdagradDA:
      LaunchSparse<T, kAdagradDA>(update, groups, stream);
      break;
    case kFtrl:
      LaunchSparse<T, kFtrl>(update, groups, stream);
      break;
    case kFtrlV2:
      LaunchSparse<T, kFtrlV2>(update, groups, stream);
      break;
    case kScatterAdd:
      LaunchSparse<T, kScatterAdd>(update, groups, stream);
      break;
    case kScatterSub:
      LaunchSparse<T, kScatterSub>(update, groups, stream);
      break;
    case kScatterUpdate:
      LaunchSparse<T, kScatterUpdate>(update, groups, stream);
      break;
  }
  return cudaGetLastError();
}

template cudaError_t LaunchSparseUpdate<float>(SparseRule, const SparseUpdate<float>&,
                                               const DeviceRowGroups&, cudaStream_t);
template cudaError_t LaunchSparseUpdate<double>(SparseRule, const SparseUpdate<double>&,
                                                const DeviceRowGroups&, cudaStream_t);

template <typename T>
cudaError_t LaunchDenseUpdate(DenseRule rule, const DenseUpdate<T>& update, int64_t n,
                              cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  using enum DenseRule;
  switch (rule) {
    case kGradientDescent:
      Launch<T, kGradientDescent>(update, n, stream);
      break;
    case kMomentum:
      Launch<T, kMomentum>(update, n, stream);
      break;
    case kKerasMomentum:
      Launch<T, kKerasMomentum>(update, n, stream);
      break;
    case kAdam:
      Launch<T, kAdam>(update, n, stream);
      break;
    case kAdamWithAmsgrad:
      Launch<T, kAdamWithAmsgrad>(update, n, stream);
      break;
    case kAdaMax:
      Launch<T, kAdaMax>(update, n, stream);
      break;
    case kRMSProp:
      Launch<T, kRMSProp>(update, n, stream);
      break;
    case kCenteredRMSProp:
      Launch<T, kCenteredRMSProp>(update, n, stream);
      break;
    case kAdagrad:
      Launch<T, kAdagrad>(update, n, stream);
      break;
    case kAdagradV2:
      Launch<T, kAdagradV2>(update, n, stream);
      break;
    case kAdadelta:
      Launch<T, kAdadelta>(update, n, stream);
      break;
    case kProximalGradientDescent:
      Launch<T, kProximalGradientDescent>(update, n, stream);
      break;
    case kProximalAdagrad:
      Launch<T, kProximalAdagrad>(update, n, stream);
      break;
    case kAdagradDA:
      Launch<T, kAdagradDA>(update, n, stream);
      break;
    case kFtrl:
      Launch<T, kFtrl>(update, n, stream);
      break;
    case kFtrlV2:
      Launch<T, kFtrlV2>(update, n, stream);
      break;
    case kAddSign:
      Launch<T, kAddSign>(update, n, stream);
      break;
    case kPowerSign:
      Launch<T, kPowerSign>(update, n, stream);
      break;
  }
  return cudaGetLastError();
}

template cudaError_t LaunchDenseUpdate<float>(DenseRule, const DenseUpdate<float>&, int64_t,
                                              cudaStream_t);
template cudaError_t LaunchDenseUpdate<double>(DenseRule, const DenseUpdate<double>&, int64_t,
                                               cudaStream_t);

}  // namespace parallax::cuda_kernels
