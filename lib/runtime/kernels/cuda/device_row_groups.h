// Row groups (cpu/gather_plan.h: RowGroups) as the GPU's sparse kernels read them: group
// g names row rows[g] and the index positions positions[starts[g] .. starts[g + 1]), in
// increasing order. Plain types only: read by nvcc and g++ alike; the host side copies
// them in (cuda_kernel_util.h: UploadRowGroups).
#ifndef PARALLAX_LIB_RUNTIME_KERNELS_CUDA_DEVICE_ROW_GROUPS_H_
#define PARALLAX_LIB_RUNTIME_KERNELS_CUDA_DEVICE_ROW_GROUPS_H_

#include <cstdint>

namespace parallax::cuda_kernels {

struct DeviceRowGroups {
  const int64_t* rows = nullptr;
  const int64_t* starts = nullptr;  // count + 1 entries
  const int64_t* positions = nullptr;
  int64_t count = 0;
};

}  // namespace parallax::cuda_kernels

#endif  // PARALLAX_LIB_RUNTIME_KERNELS_CUDA_DEVICE_ROW_GROUPS_H_
