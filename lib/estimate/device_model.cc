#include "lib/estimate/device_model.h"

#include <algorithm>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace parallax {

double DeviceModel::NodeMicros(const OpWorkPerStep& work) const {
  if (work.flops <= 0 && work.memory_bytes <= 0) return 0;
  const double compute = work.flops / (flops_per_second * compute_efficiency);
  const double memory = work.memory_bytes / (memory_bytes_per_second * memory_efficiency);
  return work.runs * op_overhead_us + std::max(compute, memory) * 1e6;
}

namespace {

struct NumberKey {
  std::string_view key;
  double DeviceModel::*field;
  bool required;
  double min;        // exclusive when `above`
  double max;        // inclusive
  bool above;        // the value must be > min (else >= min)
};

constexpr double kNoMax = 1e300;
const NumberKey kNumberKeys[] = {
    {"flops_per_second", &DeviceModel::flops_per_second, true, 0, kNoMax, true},
    {"memory_bytes_per_second", &DeviceModel::memory_bytes_per_second, true, 0, kNoMax, true},
    {"compute_efficiency", &DeviceModel::compute_efficiency, false, 0, 1, true},
    {"memory_efficiency", &DeviceModel::memory_efficiency, false, 0, 1, true},
    {"op_overhead_us", &DeviceModel::op_overhead_us, false, 0, kNoMax, false},
    {"step_overhead_us", &DeviceModel::step_overhead_us, false, 0, kNoMax, false},
};

Status ErrorAt(std::string_view source, const YAML::Node& node, std::string_view key,
               std::string_view what) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return InvalidArgumentError("{}: {}: {}", source, key, what);
  return InvalidArgumentError("{}:{}: {}: {}", source, mark.line + 1, key, what);
}

StatusOr<DeviceModel> ReadDevice(const YAML::Node& root, std::string_view source) {
  if (!root.IsMap()) return InvalidArgumentError("{}: expected a mapping of device figures", source);
  DeviceModel device;
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    const bool known = key == "name" || std::any_of(std::begin(kNumberKeys), std::end(kNumberKeys),
                                                    [&](const NumberKey& k) { return k.key == key; });
    if (!known) return ErrorAt(source, entry.first, WithControlsShown(key), "unknown key");
  }
  const YAML::Node name = root["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return ErrorAt(source, name ? name : root, "name", "missing or not a string");
  }
  device.name = name.Scalar();
  for (const NumberKey& k : kNumberKeys) {
    const YAML::Node value = root[std::string(k.key)];
    if (!value) {
      if (k.required) return ErrorAt(source, root, k.key, "missing required key");
      continue;
    }
    double number = 0;
    if (!value.IsScalar() || !YAML::convert<double>::decode(value, number)) {
      return ErrorAt(source, value, k.key,
                     fmt::format("expected a number, got '{}'",
                                 WithControlsShown(value.IsScalar() ? value.Scalar() : "a collection")));
    }
    const bool low = k.above ? !(number > k.min) : !(number >= k.min);
    if (low || !(number <= k.max)) {
      const std::string range =
          k.max < kNoMax ? fmt::format("in ({}, {}]", k.min, k.max)
                         : fmt::format("{} {}", k.above ? "above" : "at least", k.min);
      return ErrorAt(source, value, k.key, fmt::format("must be {}, got {}", range, number));
    }
    device.*k.field = number;
  }
  return device;
}

}  // namespace

StatusOr<DeviceModel> ParseDeviceModel(std::string_view yaml_text, std::string_view source) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    return ReadDevice(root, source);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1,
                                WithControlsShown(e.msg));
  }
}

StatusOr<OpProfile> ProfileOnDevice(const OpProfile& measured, std::string_view profile_source,
                                    const DeviceModel& device) {
  if (measured.node_work.empty()) {
    return InvalidArgumentError(
        "{}: the profile records no work per node (a version 1 profile): measure it again "
        "(estimate without --profile) to estimate on a device",
        profile_source);
  }
  OpProfile on = measured;
  on.device = device.name;
  on.node_us.clear();
  on.overhead_us = device.step_overhead_us;
  on.copy_bytes_per_s = device.memory_bytes_per_second * device.memory_efficiency / 2;
  on.step_us = on.overhead_us;
  for (const auto& [name, work] : measured.node_work) {
    const double us = device.NodeMicros(work);
    on.node_us[name] = us;
    on.step_us += us;
  }
  return on;
}

}  // namespace parallax
