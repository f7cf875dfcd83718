// GPU test cases: the GPU they run on, or the skip they report without one.
//
// Without a usable GPU (a build without CUDA, no driver, no device) a GPU case is
// *skipped*: one stdout line `SKIP <case>: <why>`, which scripts/summarize_tests.py counts
// as skipped, never as passed. With PARALLAX_REQUIRE_GPU=1 (scripts/device_check.sh, on a
// GPU machine) it FAILs instead. CI=true does not require a GPU: CI machines have none.
// Catch2-dependent: call from inside a running test case.
#ifndef PARALLAX_LIB_TESTING_GPU_H_
#define PARALLAX_LIB_TESTING_GPU_H_

#include <memory>
#include <string>

#include "lib/runtime/device.h"

namespace parallax::testing {

// True under PARALLAX_REQUIRE_GPU=1.
bool GpuRequired();

// GPU 0 with a 2-thread host device computing at `precision`, or nullptr and *why_not
// ("this parallax was built without CUDA ...", "no usable GPU: cudaGetDeviceCount: ...").
std::unique_ptr<Device> OpenTestGpu(std::string* why_not,
                                    GpuPrecision precision = GpuPrecision::kFp32);

// Case `name` cannot run for `why`: prints its SKIP line, or FAILs under GpuRequired().
void SkipGpuCase(const std::string& name, const std::string& why);

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_TESTING_GPU_H_
