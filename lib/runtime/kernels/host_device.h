// PX_HOST_DEVICE: marks a function of the headers CPU and GPU kernels share (update_rules.h,
// batch_norm_rules.h, lrn_rules.h, segment_reduce.h) as host and device code under nvcc,
// and plain host code under g++.
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_HOST_DEVICE_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_HOST_DEVICE_H_

#ifdef __CUDACC__
#define PX_HOST_DEVICE __host__ __device__
#else
#define PX_HOST_DEVICE
#endif

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_HOST_DEVICE_H_
