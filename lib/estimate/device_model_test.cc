// Device models: the file's keys and their errors, the roofline per node, and a measured
// profile moved onto a device.
#include "lib/estimate/device_model.h"

#include <catch2/catch.hpp>

namespace parallax {
namespace {

constexpr const char* kDevice = R"(name: Test GPU
flops_per_second: 10e12
memory_bytes_per_second: 1e12
compute_efficiency: 0.5
memory_efficiency: 0.5
op_overhead_us: 4
step_overhead_us: 100
)";

TEST_CASE("a device file: figures and defaults") {
  StatusOr<DeviceModel> device = ParseDeviceModel(kDevice, "gpu.yaml");
  REQUIRE(device.ok());
  CHECK(device->name == "Test GPU");
  CHECK(device->flops_per_second == 10e12);
  CHECK(device->memory_bytes_per_second == 1e12);
  CHECK(device->compute_efficiency == 0.5);
  CHECK(device->op_overhead_us == 4);
  CHECK(device->step_overhead_us == 100);

  StatusOr<DeviceModel> plain =
      ParseDeviceModel("name: G\nflops_per_second: 1e12\nmemory_bytes_per_second: 1e11\n", "g.yaml");
  REQUIRE(plain.ok());
  CHECK(plain->compute_efficiency == 0.7);
  CHECK(plain->memory_efficiency == 0.8);
  CHECK(plain->op_overhead_us == 5);
  CHECK(plain->step_overhead_us == 0);
}

TEST_CASE("a device file's errors name the file, the line and the key") {
  struct Case {
    std::string text, error;
  };
  const Case cases[] = {
      {"name: G\nflops_per_second: 1e12\n",
       "g.yaml:1: memory_bytes_per_second: missing required key"},
      {"name: G\nflops_per_second: fast\nmemory_bytes_per_second: 1e11\n",
       "g.yaml:2: flops_per_second: expected a number, got 'fast'"},
      {"name: G\nflops_per_second: 0\nmemory_bytes_per_second: 1e11\n",
       "g.yaml:2: flops_per_second: must be above 0, got 0"},
      {"name: G\nflops_per_second: 1e12\nmemory_bytes_per_second: 1e11\ncompute_efficiency: 1.5\n",
       "g.yaml:4: compute_efficiency: must be in (0, 1], got 1.5"},
      {"name: G\nflops_per_second: 1e12\nmemory_bytes_per_second: 1e11\nop_overhead_us: -1\n",
       "g.yaml:4: op_overhead_us: must be at least 0, got -1"},
      {"name: G\nflops_per_second: 1e12\nmemory_bytes_per_second: 1e11\nflop_per_second: 1\n",
       "g.yaml:4: flop_per_second: unknown key"},
      {"flops_per_second: 1e12\nmemory_bytes_per_second: 1e11\n",
       "g.yaml:1: name: missing or not a string"},
      {"- a\n- b\n", "g.yaml: expected a mapping of device figures"},
      {"name: [G\n", "g.yaml:2:1: end of sequence flow not found"},
  };
  for (const Case& c : cases) {
    StatusOr<DeviceModel> bad = ParseDeviceModel(c.text, "g.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message() == c.error);
  }
}

TEST_CASE("a node's time: the slower of compute and memory, plus the overhead per run") {
  const DeviceModel device = *ParseDeviceModel(kDevice, "gpu.yaml");
  // Compute bound: 5e9 flops at 5 TFLOP/s effective = 1000 us; 1 MB at 0.5 TB/s = 2 us.
  CHECK(device.NodeMicros({.flops = 5e9, .memory_bytes = 1e6, .runs = 1}) == Approx(1004));
  // Memory bound, two runs a step: 1e9 bytes at 0.5 TB/s = 2000 us.
  CHECK(device.NodeMicros({.flops = 1e6, .memory_bytes = 1e9, .runs = 2}) == Approx(2008));
  // No work: no time, not even the overhead.
  CHECK(device.NodeMicros({.flops = 0, .memory_bytes = 0, .runs = 3}) == 0);
}

TEST_CASE("a measured profile on a device") {
  const DeviceModel device = *ParseDeviceModel(kDevice, "gpu.yaml");
  OpProfile measured;
  measured.device = "a CPU";
  measured.batch = 32;
  measured.threads = 2;
  measured.overhead_us = 900;
  measured.copy_bytes_per_s = 5e9;
  measured.node_us = {{"conv", 50000}, {"w/read", 1}};
  measured.node_work = {{"conv", {.flops = 5e9, .memory_bytes = 1e6, .runs = 1}},
                        {"w/read", {.flops = 0, .memory_bytes = 0, .runs = 1}}};
  StatusOr<OpProfile> on = ProfileOnDevice(measured, "p.json", device);
  REQUIRE(on.ok());
  CHECK(on->device == "Test GPU");
  CHECK(on->batch == 32);
  CHECK(on->node_us.at("conv") == Approx(1004));
  CHECK(on->node_us.at("w/read") == 0);
  CHECK(on->overhead_us == 100);
  CHECK(on->step_us == Approx(1104));
  CHECK(on->copy_bytes_per_s == Approx(0.25e12));  // half of 0.5 TB/s effective

  measured.node_work.clear();
  StatusOr<OpProfile> old = ProfileOnDevice(measured, "p.json", device);
  REQUIRE_FALSE(old.ok());
  CHECK(old.status().message() ==
        "p.json: the profile records no work per node (a version 1 profile): measure it again "
        "(estimate without --profile) to estimate on a device");
}

}  // namespace
}  // namespace parallax
