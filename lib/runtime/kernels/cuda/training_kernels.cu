// The fused optimizer updates and the sparse row updates (training_launch.h): one
// grid-stride kernel per rule, each element updated by ../update_rules.h, the CPU
// kernels' functions.
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/training_launch.h"
#include "lib/runtime/kernels/update_rules.h"

namespace parallax::cuda_kernels {
namespace {

// The update is passed by value: its pointers sit in the kernel's parameters. Each thread
// reads the scalars and computes what the CPU kernel computes once per step (Adam's alpha,
// 1 - beta): the same operations, so the same bits.
template <typename T, DenseRule kRule, bool kNesterov>
__global__ void DenseUpdateKernel(DenseUpdate<T> u, int64_t n) {
  T h[8];
  for (int k = 0; k < 8; ++k) h[k] = u.h[k] != nullptr ? *u.h[k] : T(0);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T g = u.grad[i];
    if constexpr (kRule == DenseRule::kGradientDescent) {
      update_rules::GradientDescent(u.var[0][i], g, h[0]);
    } else if constexpr (kRule == DenseRule::kMomentum) {
      update_rules::Momentum<kNesterov>(u.var[0][i], u.var[1][i], g, h[0], h[1]);
    } else if constexpr (kRule == DenseRule::kAdam) {
      const T alpha = update_rules::AdamAlpha(h[0], h[1], h[2]);
      update_rules::Adam<kNesterov>(u.var[0][i], u.var[1][i], u.var[2][i], g, alpha, h[3],
                                    T(1) - h[3], T(1) - h[4], h[5]);
    } else if constexpr (kRule == DenseRule::kRMSProp) {
      update_rules::RMSProp(u.var[0][i], u.var[1][i], u.var[2][i], g, h[0], h[1], h[2], h[3]);
    } else if constexpr (kRule == DenseRule::kAdagrad) {
      update_rules::Adagrad(u.var[0][i], u.var[1][i], g, h[0], u.update_slots);
    } else {
      update_rules::AdagradV2(u.var[0][i], u.var[1][i], g, h[0], h[1], u.update_slots);
    }
  }
}

template <typename T, DenseRule kRule>
void Launch(const DenseUpdate<T>& u, int64_t n, cudaStream_t stream) {
  if (u.use_nesterov) {
    DenseUpdateKernel<T, kRule, true><<<Blocks(n), kThreads, 0, stream>>>(u, n);
  } else {
    DenseUpdateKernel<T, kRule, false><<<Blocks(n), kThreads, 0, stream>>>(u, n);
  }
}

// One thread per (group, column): the group's gradient rows, in index order, into its
// variable row's element.
template <typename T, SparseRule kRule, bool kNesterov>
__global__ void SparseUpdateKernel(SparseUpdate<T> u, DeviceRowGroups groups) {
  T h[8];
  for (int k = 0; k < 8; ++k) h[k] = u.h[k] != nullptr ? *u.h[k] : T(0);
  const bool single = u.row_size == 1;
  PX_GRID_LOOP(item, groups.count * u.row_size) {
    const int64_t group = item / u.row_size;
    const int64_t column = item % u.row_size;
    const int64_t v = groups.rows[group] * u.row_size + column;
    for (int64_t p = groups.starts[group]; p < groups.starts[group + 1]; ++p) {
      const T g = u.scalar_grad ? u.grad[0] : u.grad[groups.positions[p] * u.row_size + column];
      if constexpr (kRule == SparseRule::kMomentum) {
        update_rules::SparseMomentum<kNesterov>(u.var[0][v], u.var[1][v], g, h[0], h[1]);
      } else if constexpr (kRule == SparseRule::kAdagrad) {
        update_rules::SparseAdagrad(u.var[0][v], u.var[1][v], g, h[0], u.update_slots, single);
      } else if constexpr (kRule == SparseRule::kAdagradV2) {
        update_rules::SparseAdagradV2(u.var[0][v], u.var[1][v], g, h[0], h[1], u.update_slots);
      } else if constexpr (kRule == SparseRule::kRMSProp) {
        update_rules::SparseRMSProp(u.var[0][v], u.var[1][v], u.var[2][v], g, h[0], h[1], h[2],
                                    h[3]);
      } else if constexpr (kRule == SparseRule::kScatterAdd) {
        u.var[0][v] += g;
      } else if constexpr (kRule == SparseRule::kScatterSub) {
        u.var[0][v] -= g;
      } else {
        u.var[0][v] = g;
      }
    }
  }
}

template <typename T, SparseRule kRule>
void LaunchSparse(const SparseUpdate<T>& u, const DeviceRowGroups& groups, cudaStream_t stream) {
  const int64_t n = groups.count * u.row_size;
  if (u.use_nesterov) {
    SparseUpdateKernel<T, kRule, true><<<Blocks(n), kThreads, 0, stream>>>(u, groups);
  } else {
    SparseUpdateKernel<T, kRule, false><<<Blocks(n), kThreads, 0, stream>>>(u, groups);
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchSparseUpdate(SparseRule rule, const SparseUpdate<T>& update,
                               const DeviceRowGroups& groups, cudaStream_t stream) {
  if (groups.count == 0 || update.row_size == 0) return cudaSuccess;
  switch (rule) {
    case SparseRule::kMomentum:
      LaunchSparse<T, SparseRule::kMomentum>(update, groups, stream);
      break;
    case SparseRule::kAdagrad:
      LaunchSparse<T, SparseRule::kAdagrad>(update, groups, stream);
      break;
    case SparseRule::kAdagradV2:
      LaunchSparse<T, SparseRule::kAdagradV2>(update, groups, stream);
      break;
    case SparseRule::kRMSProp:
      LaunchSparse<T, SparseRule::kRMSProp>(update, groups, stream);
      break;
    case SparseRule::kScatterAdd:
      LaunchSparse<T, SparseRule::kScatterAdd>(update, groups, stream);
      break;
    case SparseRule::kScatterSub:
      LaunchSparse<T, SparseRule::kScatterSub>(update, groups, stream);
      break;
    case SparseRule::kScatterUpdate:
      LaunchSparse<T, SparseRule::kScatterUpdate>(update, groups, stream);
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
  switch (rule) {
    case DenseRule::kGradientDescent:
      Launch<T, DenseRule::kGradientDescent>(update, n, stream);
      break;
    case DenseRule::kMomentum: Launch<T, DenseRule::kMomentum>(update, n, stream); break;
    case DenseRule::kAdam: Launch<T, DenseRule::kAdam>(update, n, stream); break;
    case DenseRule::kRMSProp: Launch<T, DenseRule::kRMSProp>(update, n, stream); break;
    case DenseRule::kAdagrad: Launch<T, DenseRule::kAdagrad>(update, n, stream); break;
    case DenseRule::kAdagradV2: Launch<T, DenseRule::kAdagradV2>(update, n, stream); break;
  }
  return cudaGetLastError();
}

template cudaError_t LaunchDenseUpdate<float>(DenseRule, const DenseUpdate<float>&, int64_t,
                                              cudaStream_t);
template cudaError_t LaunchDenseUpdate<double>(DenseRule, const DenseUpdate<double>&, int64_t,
                                               cudaStream_t);

}  // namespace parallax::cuda_kernels
