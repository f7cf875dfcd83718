// Device model: a device described by its published peak figures instead of measured —
// `parallax estimate --device FILE` for a GPU one does not have. Each node's time on the
// device is a roofline of the work a measured profile recorded for it (op_profile.h):
//
//   time = runs x op_overhead + max(flops / (peak flops x compute_efficiency),
//                                   memory bytes / (memory bandwidth x memory_efficiency))
//
// per step, `runs` being its kernel runs per step, for a node that did work; a node that did none (constants, variables, views) takes no
// time. The step's overhead is the device's (its input pipeline: 0 for data already on
// the device), and the copy bandwidth (bucket concatenation, parameter-server rows) half
// the effective memory bandwidth (each byte read and written).
//
// The file (YAML; docs/estimate.md, examples/devices/ has published GPUs):
//   name: NVIDIA H100 SXM5 80GB            # required
//   flops_per_second: 67e12                # required: the peak at the precision run
//   memory_bytes_per_second: 3.35e12       # required: device memory bandwidth
//   compute_efficiency: 0.7                # optional, 0 < x <= 1 (default 0.7)
//   memory_efficiency: 0.8                 # optional, 0 < x <= 1 (default 0.8)
//   op_overhead_us: 5                      # optional: per kernel run with work (default 5)
//   step_overhead_us: 0                    # optional: per step (default 0)
#ifndef PARALLAX_LIB_ESTIMATE_DEVICE_MODEL_H_
#define PARALLAX_LIB_ESTIMATE_DEVICE_MODEL_H_

#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/estimate/op_profile.h"

namespace parallax {

struct DeviceModel {
  std::string name;
  double flops_per_second = 0;
  double memory_bytes_per_second = 0;
  double compute_efficiency = 0.7;
  double memory_efficiency = 0.8;
  double op_overhead_us = 5;
  double step_overhead_us = 0;

  // A node's time per step on the device, in microseconds, for its work per step: the
  // roofline, and the op overhead once per kernel run; 0 for a node that did no work.
  double NodeMicros(const OpWorkPerStep& work) const;
};

// Errors name `source`, the line and the key: not YAML, an unknown or missing key, a
// value that is not a number in range.
StatusOr<DeviceModel> ParseDeviceModel(std::string_view yaml_text, std::string_view source);

// `measured`'s graph on `device`: every node with work priced by NodeMicros, the
// device's step overhead and copy bandwidth; batch, threads and processes kept (they
// say what was measured). Errors: `measured` has no work per node (a version 1 profile
// from `profile_source`).
StatusOr<OpProfile> ProfileOnDevice(const OpProfile& measured, std::string_view profile_source,
                                    const DeviceModel& device);

}  // namespace parallax

#endif  // PARALLAX_LIB_ESTIMATE_DEVICE_MODEL_H_
