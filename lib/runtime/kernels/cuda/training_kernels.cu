// The fused optimizer updates and the sparse row updates (training_launch.h): one
// grid-stride kernel per rule, each element updated by ../update_rules.h, the CPU
// kernels' functions.
#include "lib/runtime/kernels/cuda/grid.h"
#include "lib/runtime/kernels/cuda/training_launch.h"
#include "lib/runtime/kernels/update_rules.h"

namespace parallax::cuda_kernels {
namespace {

namespace rules = update_rules;

// The update is passed by value: its pointers sit in the kernel's parameters. Each thread
// reads the scalars and computes what the CPU kernel computes once per step (Adam's alpha,
// 1 - beta): the same operations, so the same bits.
template <typename T>
__device__ void ReadScalars(const UpdateScalars<T>& scalars, T (&h)[8]) {
  for (int k = 0; k < 8; ++k) {
    h[k] = scalars.on_device[k] != nullptr ? *scalars.on_device[k] : scalars.on_host[k];
  }
}

template <typename T, DenseRule kRule, bool kNesterov>
__global__ void DenseUpdateKernel(DenseUpdate<T> u, int64_t n) {
  T h[8];
  ReadScalars(u.h, h);
  PX_GRID_LOOP(i, n) {
    const T g = u.grad[i];
    T& var = u.var[0][i];
    if constexpr (kRule == DenseRule::kGradientDescent) {
      rules::GradientDescent(var, g, h[0]);
    } else if constexpr (kRule == DenseRule::kMomentum) {
      rules::Momentum<kNesterov>(var, u.var[1][i], g, h[0], h[1]);
    } else if constexpr (kRule == DenseRule::kKerasMomentum) {
      rules::KerasMomentum<kNesterov>(var, u.var[1][i], g, h[0], h[1]);
    } else if constexpr (kRule == DenseRule::kAdam) {
      const T alpha = rules::AdamAlpha(h[0], h[1], h[2]);
      rules::Adam<kNesterov>(var, u.var[1][i], u.var[2][i], g, alpha, h[3], T(1) - h[3],
                             T(1) - h[4], h[5]);
    } else if constexpr (kRule == DenseRule::kAdamWithAmsgrad) {
      const T alpha = rules::AdamAlpha(h[0], h[1], h[2]);
      rules::AdamWithAmsgrad(var, u.var[1][i], u.var[2][i], u.var[3][i], g, alpha, h[3], h[4],
                             h[5]);
    } else if constexpr (kRule == DenseRule::kAdaMax) {
      rules::AdaMax(var, u.var[1][i], u.var[2][i], g, rules::AdaMaxStep(h[0], h[1]), h[2], h[3],
                    h[4]);
    } else if constexpr (kRule == DenseRule::kRMSProp) {
      rules::RMSProp(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2], h[3]);
    } else if constexpr (kRule == DenseRule::kCenteredRMSProp) {
      rules::CenteredRMSProp(var, u.var[1][i], u.var[2][i], u.var[3][i], g, h[0], h[1], h[2], h[3]);
    } else if constexpr (kRule == DenseRule::kAdagrad) {
      rules::Adagrad(var, u.var[1][i], g, h[0], u.update_slots);
    } else if constexpr (kRule == DenseRule::kAdagradV2) {
      rules::AdagradV2(var, u.var[1][i], g, h[0], h[1], u.update_slots);
    } else if constexpr (kRule == DenseRule::kAdadelta) {
      rules::Adadelta(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2]);
    } else if constexpr (kRule == DenseRule::kProximalGradientDescent) {
      rules::ProximalGradientDescent(var, g, h[0], h[1], h[2], false);
    } else if constexpr (kRule == DenseRule::kProximalAdagrad) {
      rules::ProximalAdagrad(var, u.var[1][i], g, h[0], h[1], h[2], false);
    } else if constexpr (kRule == DenseRule::kAdagradDA) {
      rules::AdagradDA(var, u.var[1][i], u.var[2][i], g, h[0], h[1], h[2], u.h.global_step);
    } else if constexpr (kRule == DenseRule::kFtrl || kRule == DenseRule::kFtrlV2) {
      constexpr bool kShrinkage = kRule == DenseRule::kFtrlV2;
      rules::Ftrl<kShrinkage, false>(var, u.var[1][i], u.var[2][i], g,
                                     rules::FtrlHyperOf<kShrinkage>(h), u.multiply_linear_by_lr,
                                     false);
    } else if constexpr (kRule == DenseRule::kAddSign) {
      rules::AddSign(var, u.var[1][i], g, h[0], h[1], h[2], h[3]);
    } else {
      static_assert(kRule == DenseRule::kPowerSign);
      rules::PowerSign(var, u.var[1][i], g, h[0], h[3], rules::PowerSignScalesFor(h[1], h[2]));
    }
  }
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
    T& var = u.var[0][v];
    for (int64_t p = groups.starts[group]; p < groups.starts[group + 1]; ++p) {
      const T g = u.scalar_grad ? u.grad[0] : u.grad[groups.positions[p] * u.row_size + column];
      if constexpr (kRule == SparseRule::kMomentum) {
        rules::SparseMomentum<kNesterov>(var, u.var[1][v], g, h[0], h[1]);
      } else if constexpr (kRule == SparseRule::kKerasMomentum) {
        rules::KerasMomentum<kNesterov>(var, u.var[1][v], g, h[0], h[1]);
      } else if constexpr (kRule == SparseRule::kAdagrad) {
        rules::SparseAdagrad(var, u.var[1][v], g, h[0], u.update_slots, single);
      } else if constexpr (kRule == SparseRule::kAdagradV2) {
        rules::SparseAdagradV2(var, u.var[1][v], g, h[0], h[1], u.update_slots);
      } else if constexpr (kRule == SparseRule::kRMSProp) {
        rules::SparseRMSProp(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2], h[3]);
      } else if constexpr (kRule == SparseRule::kCenteredRMSProp) {
        rules::SparseCenteredRMSProp(var, u.var[1][v], u.var[2][v], u.var[3][v], g, h[0], h[1],
                                     h[2], h[3]);
      } else if constexpr (kRule == SparseRule::kAdadelta) {
        rules::Adadelta(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2]);
      } else if constexpr (kRule == SparseRule::kProximalGradientDescent) {
        rules::ProximalGradientDescent(var, g, h[0], h[1], h[2], single);
      } else if constexpr (kRule == SparseRule::kProximalAdagrad) {
        rules::ProximalAdagrad(var, u.var[1][v], g, h[0], h[1], h[2], single);
      } else if constexpr (kRule == SparseRule::kAdagradDA) {
        rules::SparseAdagradDA(var, u.var[1][v], u.var[2][v], g, h[0], h[1], h[2], u.h.global_step,
                               single);
      } else if constexpr (kRule == SparseRule::kFtrl || kRule == SparseRule::kFtrlV2) {
        constexpr bool kShrinkage = kRule == SparseRule::kFtrlV2;
        rules::Ftrl<kShrinkage, true>(var, u.var[1][v], u.var[2][v], g,
                                      rules::FtrlHyperOf<kShrinkage>(h), u.multiply_linear_by_lr,
                                      single);
      } else if constexpr (kRule == SparseRule::kScatterAdd) {
        var += g;
      } else if constexpr (kRule == SparseRule::kScatterSub) {
        var -= g;
      } else {
        static_assert(kRule == SparseRule::kScatterUpdate);
        var = g;
      }
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
