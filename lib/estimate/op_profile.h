// Op profile: how long each node of one graph takes per training step on one device,
// measured, for `parallax estimate` (step_estimate.h).
//
// Terms:
//  - a node's *time* is its self time per step (trace_summary.h: nested spans left out;
//    a node that runs several times a step, in a loop, adds up), averaged over the
//    measured steps of a `parallax run --timeline` of the graph on the device;
//  - the *overhead* is what a step takes besides its nodes: its input (synthetic or
//    fed batches), the executor's dispatch between kernels: the mean step less the
//    nodes' times and (a profile of a job's rank) its collectives' times, waits included:
//    the estimate prices collectives itself;
//  - *copy bandwidth*: the device's memory copy rate, for the data the transform adds
//    (bucket concatenation and splits) that no node of the profiled graph did;
//  - a node's *work* per step: the flops and memory bytes its kernel runs did (the
//    timeline's args, lib/runtime/op_work.h), for estimates on a device described by
//    its peak figures instead of measured (device_model.h). Version 1 files have none.
// A profile is one graph (its file's fingerprint) at one batch per process, one thread
// count and one number of processes run side by side (a host's ranks share its cores and
// memory bandwidth); `parallax estimate` measures it on first use and caches it as JSON
// (docs/estimate.md has the format), and a profile file made elsewhere (another
// machine) describes that machine.
#ifndef PARALLAX_LIB_ESTIMATE_OP_PROFILE_H_
#define PARALLAX_LIB_ESTIMATE_OP_PROFILE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/runtime/trace_summary.h"

namespace parallax {

struct OpProfile {
  static constexpr int kVersion = 2;  // version 1 (no node_work) is read too
  std::string device;             // "Intel(R) Xeon(R) ... (2 cores)", for the reader
  std::string graph_fingerprint;  // 16 hex digits of the graph file's FNV-1a hash
  int64_t batch = 0;              // examples per step
  int threads = 0;                // kernel threads per process
  int processes = 1;              // processes run side by side, their times averaged
  int64_t steps = 0;              // steps measured
  double step_us = 0;             // mean step
  double overhead_us = 0;         // the step less its nodes' times (>= 0)
  double copy_bytes_per_s = 0;    // memory copy bandwidth
  std::map<std::string, double> node_us;  // node name -> time per step
  std::map<std::string, OpWorkPerStep> node_work;  // node name -> work per step
};

// The profile of a measured run's trace (its first `skip_steps` steps left out): times,
// overhead and work; the other fields are the caller's. Errors: ProfileSteps's.
StatusOr<OpProfile> ProfileFromTrace(const Trace& trace, int skip_steps);

std::string OpProfileToJson(const OpProfile& profile);
// Errors name `source` and the field: not JSON, another version, a field missing or of
// the wrong type, a negative time or work.
StatusOr<OpProfile> ParseOpProfile(std::string_view text, std::string_view source);

}  // namespace parallax

#endif  // PARALLAX_LIB_ESTIMATE_OP_PROFILE_H_
