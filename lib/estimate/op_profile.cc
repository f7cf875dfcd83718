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
  profile.node_work = steps.op_work;
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
  json.Key("node_work").BeginObject();
  for (const auto& [name, work] : p.node_work) {
    json.Key(name).BeginObject();
    json.Key("flops").Double(work.flops);
    json.Key("memory_bytes").Double(work.memory_bytes);
    json.Key("runs").Double(work.runs);
    json.EndObject();
  }
  json.EndObject();
  json.EndObject();
  return json.str() + "\n";
}

namespace {

class ProfileReader {
 public:
  explicit ProfileReader(std::string_view source) : source_(source) {}

  // `root`'s number `key`; `within` names root in errors ("node_work[\"x\"]"), empty for
  // the file's top level.
  StatusOr<double> Number(const JsonValue& root, std::string_view key, double min,
                          std::string_view within = {}) const {
    const std::string field = within.empty() ? std::string(key) : fmt::format("{}.{}", within, key);
    const JsonValue* value = root.Find(key);
    if (value == nullptr || value->kind != JsonValue::Kind::kNumber) {
      return Error(field, "missing or not a number");
    }
    if (!(value->number >= min)) {
      return Error(field, fmt::format("{} is below {}", value->number, min));
    }
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
  if (version != 1 && version != OpProfile::kVersion) {
    return read.Error("version", fmt::format("profile version {} is not supported (this parallax "
                                             "reads versions 1 and {})",
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
  if (version == 1) return p;
  const JsonValue* work = root.Find("node_work");
  if (work == nullptr || !work->is_object()) return read.Error("node_work", "missing or not an object");
  for (const JsonMember& member : work->object) {
    const std::string key = fmt::format("node_work[\"{}\"]", member.key);
    if (!member.value.is_object()) return read.Error(key, "not an object");
    OpWorkPerStep node;
    PX_ASSIGN_OR_RETURN(node.flops, read.Number(member.value, "flops", 0, key));
    PX_ASSIGN_OR_RETURN(node.memory_bytes, read.Number(member.value, "memory_bytes", 0, key));
    PX_ASSIGN_OR_RETURN(node.runs, read.Number(member.value, "runs", 0, key));
    p.node_work[member.key] = node;
  }
  return p;
}

}  // namespace parallax
