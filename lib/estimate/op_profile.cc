#include "lib/estimate/op_profile.h"

#include <algorithm>

#include "lib/base/json_writer.h"
#include "lib/runtime/checkpoint/json_value.h"

namespace parallax {

StatusOr<OpProfile> ProfileFromTrace(const Trace& trace, int skip_steps) {
  PX_ASSIGN_OR_RETURN(const StepProfile steps, ProfileSteps(trace, skip_steps));
  OpProfile profile;
  profile.steps = steps.steps;
  profile.step_us = steps.step_us;
  profile.node_us = steps.op_self_us;
  double nodes = 0;
  for (const auto& [name, us] : steps.op_self_us) nodes += us;
  profile.overhead_us = std::max(0.0, steps.step_us - nodes - steps.collective_self_us);
  return profile;
}

std::string OpProfileToJson(const OpProfile& p) {
  JsonWriter json;
  json.BeginObject();
  json.Field("version", OpProfile::kVersion);
  json.Field("device", p.device);
  json.Field("graph_fingerprint", p.graph_fingerprint);
  json.Field("batch", p.batch);
  json.Field("threads", p.threads);
  json.Field("processes", p.processes);
  json.Field("steps", p.steps);
  json.Key("step_us").Double(p.step_us);
  json.Key("overhead_us").Double(p.overhead_us);
  json.Key("copy_bytes_per_s").Double(p.copy_bytes_per_s);
  json.Key("node_us").BeginObject();
  for (const auto& [name, us] : p.node_us) json.Key(name).Double(us);
  json.EndObject();
  json.EndObject();
  return json.str() + "\n";
}

namespace {

class ProfileReader {
 public:
  explicit ProfileReader(std::string_view source) : source_(source) {}

  StatusOr<double> Number(const JsonValue& root, std::string_view key, double min) const {
    const JsonValue* value = root.Find(key);
    if (value == nullptr || value->kind != JsonValue::Kind::kNumber) {
      return Error(key, "missing or not a number");
    }
    if (!(value->number >= min)) return Error(key, fmt::format("{} is below {}", value->number, min));
    return value->number;
  }
  StatusOr<std::string> String(const JsonValue& root, std::string_view key) const {
    const JsonValue* value = root.Find(key);
    if (value == nullptr || !value->is_string()) return Error(key, "missing or not a string");
    return value->string;
  }
  Status Error(std::string_view key, std::string_view what) const {
    return InvalidArgumentError("{}: {}: {}", source_, key, what);
  }

 private:
  std::string_view source_;
};

}  // namespace

StatusOr<OpProfile> ParseOpProfile(std::string_view text, std::string_view source) {
  StatusOr<JsonValue> parsed = ParseJson(text);
  if (!parsed.ok()) return InvalidArgumentError("{}: not a profile: {}", source, parsed.status().message());
  const JsonValue& root = *parsed;
  if (!root.is_object()) return InvalidArgumentError("{}: not a profile: expected a JSON object", source);
  const ProfileReader read(source);
  PX_ASSIGN_OR_RETURN(const double version, read.Number(root, "version", 0));
  if (version != OpProfile::kVersion) {
    return read.Error("version", fmt::format("profile version {} is not supported (this parallax "
                                             "reads version {})",
                                             version, OpProfile::kVersion));
  }
  OpProfile p;
  PX_ASSIGN_OR_RETURN(p.device, read.String(root, "device"));
  PX_ASSIGN_OR_RETURN(p.graph_fingerprint, read.String(root, "graph_fingerprint"));
  PX_ASSIGN_OR_RETURN(const double batch, read.Number(root, "batch", 1));
  PX_ASSIGN_OR_RETURN(const double threads, read.Number(root, "threads", 1));
  PX_ASSIGN_OR_RETURN(const double processes, read.Number(root, "processes", 1));
  PX_ASSIGN_OR_RETURN(const double steps, read.Number(root, "steps", 1));
  p.processes = static_cast<int>(processes);
  p.batch = static_cast<int64_t>(batch);
  p.threads = static_cast<int>(threads);
  p.steps = static_cast<int64_t>(steps);
  PX_ASSIGN_OR_RETURN(p.step_us, read.Number(root, "step_us", 0));
  PX_ASSIGN_OR_RETURN(p.overhead_us, read.Number(root, "overhead_us", 0));
  PX_ASSIGN_OR_RETURN(p.copy_bytes_per_s, read.Number(root, "copy_bytes_per_s", 0));
  const JsonValue* nodes = root.Find("node_us");
  if (nodes == nullptr || !nodes->is_object()) return read.Error("node_us", "missing or not an object");
  for (const JsonMember& member : nodes->object) {
    if (member.value.kind != JsonValue::Kind::kNumber || !(member.value.number >= 0)) {
      return read.Error(fmt::format("node_us[\"{}\"]", member.key), "not a time (a number >= 0)");
    }
    p.node_us[member.key] = member.value.number;
  }
  return p;
}

}  // namespace parallax
