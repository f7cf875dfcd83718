// See gpu.h.
#include "lib/testing/gpu.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace parallax::testing {

bool GpuRequired() {
  const char* value = std::getenv("PARALLAX_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

std::unique_ptr<Device> OpenTestGpu(std::string* why_not, GpuPrecision precision) {
  StatusOr<std::unique_ptr<Device>> gpu = OpenGpuDevice(0, 2, precision);
  if (!gpu.ok()) {
    *why_not = gpu.status().message();
    return nullptr;
  }
  return std::move(gpu).value();
}

void SkipGpuCase(const std::string& name, const std::string& why) {
  if (GpuRequired()) FAIL(name << ": " << why << " (PARALLAX_REQUIRE_GPU=1 requires a GPU)");
  std::cout << "SKIP " << name << ": " << why << std::endl;
}

}  // namespace parallax::testing
