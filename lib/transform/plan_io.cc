#include "lib/transform/plan_io.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "lib/base/file.h"
#include "lib/base/json_writer.h"
#include "lib/base/version.h"

namespace parallax {

namespace {

constexpr SyncMethod kAllMethods[] = {SyncMethod::kAllReduce, SyncMethod::kParameterServer,
                                      SyncMethod::kAllGather, SyncMethod::kDensify,
                                      SyncMethod::kLocal,     SyncMethod::kNone};

// Plans are small: a few KiB per variable at most.
constexpr uint64_t kMaxPlanBytes = uint64_t{256} << 20;

void Quoted(YAML::Emitter& out, std::string_view key, std::string_view value) {
  out << YAML::Key << std::string(key) << YAML::Value << YAML::DoubleQuoted << std::string(value);
}

void StringList(YAML::Emitter& out, std::string_view key, const std::vector<std::string>& values) {
  out << YAML::Key << std::string(key) << YAML::Value;
  if (values.empty()) {
    out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
    return;
  }
  out << YAML::BeginSeq;
  for (const std::string& v : values) out << YAML::DoubleQuoted << v;
  out << YAML::EndSeq;
}

// A measured search (plan.h) under `key`, its probes' values under `value_key`.
void WriteSearch(YAML::Emitter& out, std::string_view key, std::string_view value_key,
                 const std::optional<MeasuredSearch>& search) {
  if (!search) return;
  out << YAML::Key << std::string(key) << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "candidates" << YAML::Value << YAML::Flow << search->candidates;
  out << YAML::Key << "probes" << YAML::Value << YAML::BeginSeq;
  for (const SearchProbe& probe : search->probes) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << std::string(value_key) << YAML::Value << probe.value;
    out << YAML::Key << "step_seconds" << YAML::Value << probe.step_seconds;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "chosen" << YAML::Value << search->chosen;
  out << YAML::Key << "steps" << YAML::Value << search->steps;
  out << YAML::Key << "budget_seconds" << YAML::Value << search->budget_seconds;
  out << YAML::Key << "used_seconds" << YAML::Value << search->used_seconds;
  Quoted(out, "stopped", search->stopped);
  out << YAML::EndMap;
}


}  // namespace

std::optional<SyncMethod> ParseSyncMethod(std::string_view word) {
  for (SyncMethod m : kAllMethods) {
    if (SyncMethodName(m) == word) return m;
  }
  return std::nullopt;
}

std::string PlanToYaml(const Plan& plan) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << Plan::kVersion;
  Quoted(out, "parallax_version", kParallaxVersion);
  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  Quoted(out, "graph", plan.source_graph);
  Quoted(out, "fingerprint", plan.source_fingerprint);
  out << YAML::EndMap;
  Quoted(out, "strategy", plan.strategy);
  out << YAML::Key << "average" << YAML::Value << plan.average;

  out << YAML::Key << "ranks" << YAML::Value << YAML::BeginSeq;
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankPlacement& rank = plan.ranks[r];
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "rank" << YAML::Value << rank.rank;
    Quoted(out, "host", rank.host);
    out << YAML::Key << "local_rank" << YAML::Value << rank.local_rank;
    out << YAML::Key << "local_size" << YAML::Value << rank.local_size;
    out << YAML::Key << "kind" << YAML::Value << std::string(DeviceKindName(rank.device));
    out << YAML::Key << "index" << YAML::Value << rank.device_index;
    Quoted(out, "device", r < plan.rank_devices.size() ? plan.rank_devices[r] : "");
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;

  out << YAML::Key << "variables" << YAML::Value;
  if (plan.variables.empty()) out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
  else {
    out << YAML::BeginSeq;
    for (const VariablePlan& v : plan.variables) {
      out << YAML::BeginMap;
      Quoted(out, "name", v.name);
      out << YAML::Key << "method" << YAML::Value << std::string(SyncMethodName(v.method));
      out << YAML::Key << "sparse" << YAML::Value << v.sparse;
      out << YAML::Key << "shape" << YAML::Value << YAML::Flow << v.shape;
      Quoted(out, "dtype", v.dtype);
      out << YAML::Key << "bytes" << YAML::Value << v.bytes;
      StringList(out, "slots", v.slots);
      out << YAML::Key << "partitions" << YAML::Value;
      if (v.partitions.empty()) out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      else {
        out << YAML::BeginSeq;
        for (const Partition& p : v.partitions) {
          out << YAML::Flow << YAML::BeginMap;
          out << YAML::Key << "rows" << YAML::Value << YAML::Flow << YAML::BeginSeq << p.row_begin
              << p.row_end << YAML::EndSeq;
          out << YAML::Key << "owner" << YAML::Value << p.owner;
          out << YAML::EndMap;
        }
        out << YAML::EndSeq;
      }
      out << YAML::Key << "bytes_per_step" << YAML::Value << v.bytes_sent_per_rank_per_step;
      Quoted(out, "reason", v.reason);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  StringList(out, "feeds", plan.feeds);
  StringList(out, "fetches", plan.fetches);
  Quoted(out, "train_op", plan.train_op);
  Quoted(out, "init_op", plan.init_op);
  StringList(out, "warnings", plan.warnings);
  out << YAML::Key << "bucket_bytes" << YAML::Value << plan.bucket_bytes;
  out << YAML::Key << "buckets" << YAML::Value;
  if (plan.buckets.empty()) out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
  else {
    out << YAML::BeginSeq;
    for (const GradientBucket& b : plan.buckets) {
      out << YAML::BeginMap;
      Quoted(out, "dtype", b.dtype);
      out << YAML::Key << "bytes" << YAML::Value << b.bytes;
      StringList(out, "variables", b.variables);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "allreduce" << YAML::Value << YAML::BeginMap;
  Quoted(out, "algorithm", plan.allreduce.algorithm);
  out << YAML::Key << "off_host_bytes_per_step" << YAML::Value
      << plan.allreduce.off_host_bytes_per_step;
  Quoted(out, "reason", plan.allreduce.reason);
  out << YAML::EndMap;
  if (!plan.memory.empty()) {
    std::vector<int64_t> state, gradient;
    for (const RankMemory& m : plan.memory) {
      state.push_back(m.state_bytes);
      gradient.push_back(m.gradient_bytes);
    }
    out << YAML::Key << "memory" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "state_bytes" << YAML::Value << YAML::Flow << state;
    out << YAML::Key << "gradient_bytes" << YAML::Value << YAML::Flow << gradient;
    out << YAML::EndMap;
  }
  WriteSearch(out, "partition_search", "partitions", plan.partition_search);
  WriteSearch(out, "bucket_search", "bucket_bytes", plan.bucket_search);
  out << YAML::EndMap;
  std::string text = "# Written by parallax transform; the schema is docs/transform.md.\n";
  text += out.c_str();
  text += "\n";
  return text;
}

namespace {

// Reads a parsed plan.yaml, checking every key and type. yaml-cpp throws; this class
// catches at its entry point only.
class PlanReader {
 public:
  explicit PlanReader(std::string_view source) : source_(source) {}

  StatusOr<Plan> Read(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return InvalidArgumentError("{}:{}:{}: {}", source_, e.mark.line + 1, e.mark.column + 1,
                                  WithControlsShown(e.msg));
    }
    Plan plan;
    try {
      PX_RETURN_IF_ERROR(ReadRoot(root, plan));
    } catch (const YAML::Exception& e) {
      return InvalidArgumentError("{}:{}: {}", source_, e.mark.line + 1, WithControlsShown(e.msg));
    }
    return plan;
  }

 private:
  // Keys in `path` and values in `what` come from the file: WithControlsShown keeps them
  // on one line (as yaml-cpp's messages, which may hold the offending character itself).
  Status Error(const YAML::Node& node, std::string_view path, std::string_view what) const {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) {
      return InvalidArgumentError("{}: {}: {}", source_, WithControlsShown(std::string(path)),
                                  WithControlsShown(std::string(what)));
    }
    return InvalidArgumentError("{}:{}: {}: {}", source_, mark.line + 1,
                                WithControlsShown(std::string(path)), WithControlsShown(std::string(what)));
  }

  // The mapping's keys must all be in `known` or `optional`; every key of `known` must be
  // there.
  Status CheckKeys(const YAML::Node& map, std::string_view path,
                   const std::vector<std::string_view>& known,
                   const std::vector<std::string_view>& optional = {}) const {
    if (!map.IsMap()) return Error(map, path, "expected a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.Scalar();
      bool ok = false;
      for (std::string_view k : known) ok = ok || k == key;
      for (std::string_view k : optional) ok = ok || k == key;
      if (!ok) {
        return Error(entry.first, path.empty() ? key : fmt::format("{}.{}", path, key),
                     "unknown key");
      }
    }
    for (std::string_view k : known) {
      if (!map[std::string(k)]) {
        return Error(map, path.empty() ? std::string(k) : fmt::format("{}.{}", path, k),
                     "missing required key");
      }
    }
    return Status::Ok();
  }

  StatusOr<std::string> String(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) return Error(node, path, "expected a string");
    return node.Scalar();
  }

  StatusOr<int64_t> Int(const YAML::Node& node, std::string_view path, int64_t min) const {
    int64_t value = 0;
    if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) {
      return Error(node, path, fmt::format("expected an integer, got '{}'",
                                           node.IsScalar() ? node.Scalar() : "a collection"));
    }
    if (value < min) return Error(node, path, fmt::format("must be at least {}, got {}", min, value));
    return value;
  }

  StatusOr<bool> Bool(const YAML::Node& node, std::string_view path) const {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (s == "true") return true;
      if (s == "false") return false;
    }
    return Error(node, path, "expected true or false");
  }

  StatusOr<std::vector<std::string>> Strings(const YAML::Node& node, std::string_view path) const {
    if (!node.IsSequence()) return Error(node, path, "expected a list");
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) {
      PX_ASSIGN_OR_RETURN(std::string s, String(node[i], fmt::format("{}[{}]", path, i)));
      out.push_back(std::move(s));
    }
    return out;
  }

  Status ReadRoot(const YAML::Node& root, Plan& plan) {
    if (!root.IsMap()) return Error(root, "plan", "expected a mapping (a plan.yaml file)");
    PX_RETURN_IF_ERROR(CheckKeys(root, "",
                                 {"version", "parallax_version", "source", "strategy", "average",
                                  "ranks", "variables", "feeds", "fetches", "train_op", "init_op",
                                  "warnings"},
                                 // Plans written before gradient buckets have neither,
                                 // before the all-reduce algorithms no allreduce (flat);
                                 // the searches: only after transform --search and
                                 // --bucket-mb auto.
                                 {"bucket_bytes", "buckets", "allreduce", "partition_search",
                                  "bucket_search", "memory"}));
    PX_ASSIGN_OR_RETURN(int64_t version, Int(root["version"], "version", 0));
    if (version != Plan::kVersion) {
      return Error(root["version"], "version",
                   fmt::format("plan version {} is not supported (this parallax reads version {})",
                               version, Plan::kVersion));
    }
    const YAML::Node source = root["source"];
    PX_RETURN_IF_ERROR(CheckKeys(source, "source", {"graph", "fingerprint"}));
    PX_ASSIGN_OR_RETURN(plan.source_graph, String(source["graph"], "source.graph"));
    PX_ASSIGN_OR_RETURN(plan.source_fingerprint, String(source["fingerprint"], "source.fingerprint"));
    PX_ASSIGN_OR_RETURN(plan.strategy, String(root["strategy"], "strategy"));
    PX_ASSIGN_OR_RETURN(plan.average, Bool(root["average"], "average"));

    const YAML::Node ranks = root["ranks"];
    if (!ranks.IsSequence() || ranks.size() == 0) return Error(ranks, "ranks", "expected a non-empty list");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string path = fmt::format("ranks[{}]", i);
      const YAML::Node r = ranks[i];
      PX_RETURN_IF_ERROR(CheckKeys(r, path, {"rank", "host", "local_rank", "local_size", "kind",
                                             "index", "device"}));
      RankPlacement placement;
      PX_ASSIGN_OR_RETURN(int64_t rank, Int(r["rank"], path + ".rank", 0));
      if (rank != static_cast<int64_t>(i)) {
        return Error(r["rank"], path + ".rank", fmt::format("expected rank {}, got {}", i, rank));
      }
      placement.rank = static_cast<int>(rank);
      PX_ASSIGN_OR_RETURN(placement.host, String(r["host"], path + ".host"));
      PX_ASSIGN_OR_RETURN(int64_t local_rank, Int(r["local_rank"], path + ".local_rank", 0));
      PX_ASSIGN_OR_RETURN(int64_t local_size, Int(r["local_size"], path + ".local_size", 1));
      if (local_rank >= local_size) {
        return Error(r["local_rank"], path + ".local_rank",
                     fmt::format("{} is not below local_size {}", local_rank, local_size));
      }
      placement.local_rank = static_cast<int>(local_rank);
      placement.local_size = static_cast<int>(local_size);
      PX_ASSIGN_OR_RETURN(std::string kind, String(r["kind"], path + ".kind"));
      if (kind == "GPU") placement.device = DeviceKind::kGpu;
      else if (kind == "CPU") placement.device = DeviceKind::kCpu;
      else return Error(r["kind"], path + ".kind", fmt::format("expected GPU or CPU, got '{}'", kind));
      PX_ASSIGN_OR_RETURN(int64_t index, Int(r["index"], path + ".index", 0));
      placement.device_index = static_cast<int>(index);
      PX_ASSIGN_OR_RETURN(std::string device, String(r["device"], path + ".device"));
      plan.ranks.push_back(std::move(placement));
      plan.rank_devices.push_back(std::move(device));
    }

    const YAML::Node variables = root["variables"];
    if (!variables.IsSequence()) return Error(variables, "variables", "expected a list");
    std::set<std::string> names;
    for (size_t i = 0; i < variables.size(); ++i) {
      PX_ASSIGN_OR_RETURN(VariablePlan v, ReadVariable(variables[i], fmt::format("variables[{}]", i),
                                                       plan.world_size()));
      if (!names.insert(v.name).second) {
        return Error(variables[i]["name"], fmt::format("variables[{}].name", i),
                     fmt::format("variable '{}' is listed twice", v.name));
      }
      plan.variables.push_back(std::move(v));
    }
    PX_ASSIGN_OR_RETURN(plan.feeds, Strings(root["feeds"], "feeds"));
    PX_ASSIGN_OR_RETURN(plan.fetches, Strings(root["fetches"], "fetches"));
    PX_ASSIGN_OR_RETURN(plan.train_op, String(root["train_op"], "train_op"));
    PX_ASSIGN_OR_RETURN(plan.init_op, String(root["init_op"], "init_op"));
    PX_ASSIGN_OR_RETURN(plan.warnings, Strings(root["warnings"], "warnings"));
    if (root["bucket_bytes"]) {
      PX_ASSIGN_OR_RETURN(plan.bucket_bytes, Int(root["bucket_bytes"], "bucket_bytes", 0));
    }
    if (root["buckets"]) PX_RETURN_IF_ERROR(ReadBuckets(root["buckets"], plan));
    if (const YAML::Node allreduce = root["allreduce"]) {
      PX_RETURN_IF_ERROR(
          CheckKeys(allreduce, "allreduce", {"algorithm", "off_host_bytes_per_step", "reason"}));
      PX_ASSIGN_OR_RETURN(plan.allreduce.algorithm,
                          String(allreduce["algorithm"], "allreduce.algorithm"));
      if (plan.allreduce.algorithm != "flat" && plan.allreduce.algorithm != "hierarchical") {
        return Error(allreduce["algorithm"], "allreduce.algorithm",
                     fmt::format("'{}' is not flat or hierarchical",
                                 WithControlsShown(plan.allreduce.algorithm)));
      }
      PX_ASSIGN_OR_RETURN(plan.allreduce.off_host_bytes_per_step,
                          Int(allreduce["off_host_bytes_per_step"],
                              "allreduce.off_host_bytes_per_step", 0));
      PX_ASSIGN_OR_RETURN(plan.allreduce.reason, String(allreduce["reason"], "allreduce.reason"));
    }
    if (const YAML::Node memory = root["memory"]) {
      PX_RETURN_IF_ERROR(CheckKeys(memory, "memory", {"state_bytes", "gradient_bytes"}));
      plan.memory.resize(plan.ranks.size());
      for (const char* key : {"state_bytes", "gradient_bytes"}) {
        const YAML::Node list = memory[key];
        const std::string path = fmt::format("memory.{}", key);
        if (!list.IsSequence() || list.size() != plan.ranks.size()) {
          return Error(list, path, fmt::format("expected a list of {} byte counts, one per rank",
                                               plan.ranks.size()));
        }
        for (size_t r = 0; r < list.size(); ++r) {
          PX_ASSIGN_OR_RETURN(int64_t bytes, Int(list[r], fmt::format("{}[{}]", path, r), 0));
          RankMemory& m = plan.memory[r];
          (std::string_view(key) == "state_bytes" ? m.state_bytes : m.gradient_bytes) = bytes;
        }
      }
    }
    if (root["partition_search"]) {
      PX_ASSIGN_OR_RETURN(plan.partition_search,
                          ReadSearch(root["partition_search"], "partition_search", "partitions", 1));
    }
    if (root["bucket_search"]) {
      PX_ASSIGN_OR_RETURN(plan.bucket_search,
                          ReadSearch(root["bucket_search"], "bucket_search", "bucket_bytes", 0));
      if (plan.bucket_search->chosen != plan.bucket_bytes) {
        return Error(root["bucket_search"]["chosen"], "bucket_search.chosen",
                     fmt::format("{} is not the plan's bucket_bytes ({})",
                                 plan.bucket_search->chosen, plan.bucket_bytes));
      }
    }
    return Status::Ok();
  }

  StatusOr<double> Seconds(const YAML::Node& node, std::string_view path) const {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !(value >= 0)) {
      return Error(node, path, "expected seconds (a number >= 0)");
    }
    return value;
  }

  // A measured search (plan.h); its probes' values under `value_key`, each at least
  // `min`; the chosen value is one of the probes'.
  StatusOr<MeasuredSearch> ReadSearch(const YAML::Node& node, const std::string& path,
                                      const std::string& value_key, int64_t min) const {
    PX_RETURN_IF_ERROR(CheckKeys(node, path, {"candidates", "probes", "chosen", "steps",
                                              "budget_seconds", "used_seconds", "stopped"}));
    MeasuredSearch search;
    const YAML::Node candidates = node["candidates"];
    if (!candidates.IsSequence()) return Error(candidates, path + ".candidates", "expected a list");
    for (size_t i = 0; i < candidates.size(); ++i) {
      PX_ASSIGN_OR_RETURN(int64_t value, Int(candidates[i], fmt::format("{}.candidates[{}]", path, i), min));
      search.candidates.push_back(value);
    }
    const YAML::Node probes = node["probes"];
    if (!probes.IsSequence()) return Error(probes, path + ".probes", "expected a list");
    for (size_t i = 0; i < probes.size(); ++i) {
      const std::string at = fmt::format("{}.probes[{}]", path, i);
      PX_RETURN_IF_ERROR(CheckKeys(probes[i], at, {value_key, "step_seconds"}));
      SearchProbe probe;
      PX_ASSIGN_OR_RETURN(probe.value, Int(probes[i][value_key], at + "." + value_key, min));
      PX_ASSIGN_OR_RETURN(probe.step_seconds, Seconds(probes[i]["step_seconds"], at + ".step_seconds"));
      search.probes.push_back(probe);
    }
    PX_ASSIGN_OR_RETURN(search.chosen, Int(node["chosen"], path + ".chosen", min));
    if (std::none_of(search.probes.begin(), search.probes.end(),
                     [&](const SearchProbe& p) { return p.value == search.chosen; })) {
      return Error(node["chosen"], path + ".chosen",
                   fmt::format("{} was not probed", search.chosen));
    }
    PX_ASSIGN_OR_RETURN(int64_t steps, Int(node["steps"], path + ".steps", 1));
    search.steps = static_cast<int>(std::min<int64_t>(steps, 1 << 30));
    PX_ASSIGN_OR_RETURN(search.budget_seconds, Seconds(node["budget_seconds"], path + ".budget_seconds"));
    PX_ASSIGN_OR_RETURN(search.used_seconds, Seconds(node["used_seconds"], path + ".used_seconds"));
    PX_ASSIGN_OR_RETURN(search.stopped, String(node["stopped"], path + ".stopped"));
    return search;
  }

  // Every bucket's variables are all-reduced variables of the plan, of the bucket's
  // dtype, two or more, each in one bucket only.
  Status ReadBuckets(const YAML::Node& buckets, Plan& plan) {
    if (!buckets.IsSequence()) return Error(buckets, "buckets", "expected a list");
    std::set<std::string> bucketed;
    for (size_t i = 0; i < buckets.size(); ++i) {
      const std::string path = fmt::format("buckets[{}]", i);
      const YAML::Node node = buckets[i];
      PX_RETURN_IF_ERROR(CheckKeys(node, path, {"dtype", "bytes", "variables"}));
      GradientBucket bucket;
      PX_ASSIGN_OR_RETURN(bucket.dtype, String(node["dtype"], path + ".dtype"));
      PX_ASSIGN_OR_RETURN(bucket.bytes, Int(node["bytes"], path + ".bytes", 0));
      PX_ASSIGN_OR_RETURN(bucket.variables, Strings(node["variables"], path + ".variables"));
      if (bucket.variables.size() < 2) {
        return Error(node["variables"], path + ".variables",
                     "a bucket holds two or more variables");
      }
      for (size_t k = 0; k < bucket.variables.size(); ++k) {
        const std::string& name = bucket.variables[k];
        const std::string vpath = fmt::format("{}.variables[{}]", path, k);
        const VariablePlan* v = plan.FindVariable(name);
        if (v == nullptr) {
          return Error(node["variables"][k], vpath, fmt::format("no variable '{}' in the plan", name));
        }
        if (v->method != SyncMethod::kAllReduce || v->sparse || v->dtype != bucket.dtype) {
          return Error(node["variables"][k], vpath,
                       fmt::format("variable '{}' is {} {}{}, not a dense {} all-reduce", name,
                                   v->dtype, SyncMethodName(v->method), v->sparse ? " (sparse)" : "",
                                   bucket.dtype));
        }
        if (!bucketed.insert(name).second) {
          return Error(node["variables"][k], vpath,
                       fmt::format("variable '{}' is in two buckets", name));
        }
      }
      plan.buckets.push_back(std::move(bucket));
    }
    return Status::Ok();
  }

  StatusOr<VariablePlan> ReadVariable(const YAML::Node& node, const std::string& path,
                                      int world_size) {
    PX_RETURN_IF_ERROR(CheckKeys(node, path, {"name", "method", "sparse", "shape", "dtype", "bytes",
                                              "slots", "partitions", "bytes_per_step", "reason"}));
    VariablePlan v;
    PX_ASSIGN_OR_RETURN(v.name, String(node["name"], path + ".name"));
    PX_ASSIGN_OR_RETURN(std::string method, String(node["method"], path + ".method"));
    std::optional<SyncMethod> m = ParseSyncMethod(method);
    if (!m) {
      return Error(node["method"], path + ".method",
                   fmt::format("unknown method '{}' (expected allreduce, ps, allgather, densify, "
                               "local or none)",
                               method));
    }
    v.method = *m;
    PX_ASSIGN_OR_RETURN(v.sparse, Bool(node["sparse"], path + ".sparse"));
    const YAML::Node shape = node["shape"];
    if (!shape.IsSequence()) return Error(shape, path + ".shape", "expected a list of dimensions");
    for (size_t d = 0; d < shape.size(); ++d) {
      PX_ASSIGN_OR_RETURN(int64_t dim, Int(shape[d], fmt::format("{}.shape[{}]", path, d), -1));
      v.shape.push_back(dim);
    }
    PX_ASSIGN_OR_RETURN(v.dtype, String(node["dtype"], path + ".dtype"));
    PX_ASSIGN_OR_RETURN(v.bytes, Int(node["bytes"], path + ".bytes", -1));
    PX_ASSIGN_OR_RETURN(v.slots, Strings(node["slots"], path + ".slots"));
    const YAML::Node partitions = node["partitions"];
    if (!partitions.IsSequence()) return Error(partitions, path + ".partitions", "expected a list");
    int64_t next_row = 0;
    for (size_t p = 0; p < partitions.size(); ++p) {
      const std::string ppath = fmt::format("{}.partitions[{}]", path, p);
      const YAML::Node entry = partitions[p];
      PX_RETURN_IF_ERROR(CheckKeys(entry, ppath, {"rows", "owner"}));
      const YAML::Node rows = entry["rows"];
      if (!rows.IsSequence() || rows.size() != 2) {
        return Error(rows, ppath + ".rows", "expected [first row, end row]");
      }
      Partition partition;
      PX_ASSIGN_OR_RETURN(partition.row_begin, Int(rows[0], ppath + ".rows[0]", 0));
      PX_ASSIGN_OR_RETURN(partition.row_end, Int(rows[1], ppath + ".rows[1]", 0));
      if (partition.row_begin != next_row || partition.row_end <= partition.row_begin) {
        return Error(rows, ppath + ".rows",
                     fmt::format("rows [{}, {}) do not continue the partitions before (next row {})",
                                 partition.row_begin, partition.row_end, next_row));
      }
      next_row = partition.row_end;
      PX_ASSIGN_OR_RETURN(int64_t owner, Int(entry["owner"], ppath + ".owner", 0));
      if (owner >= world_size) {
        return Error(entry["owner"], ppath + ".owner",
                     fmt::format("rank {} is not a rank of the job ({} ranks)", owner, world_size));
      }
      partition.owner = static_cast<int>(owner);
      v.partitions.push_back(partition);
    }
    if (v.method == SyncMethod::kParameterServer && v.partitions.empty()) {
      return Error(partitions, path + ".partitions", "a ps variable needs partitions");
    }
    PX_ASSIGN_OR_RETURN(v.bytes_sent_per_rank_per_step,
                        Int(node["bytes_per_step"], path + ".bytes_per_step", 0));
    PX_ASSIGN_OR_RETURN(v.reason, String(node["reason"], path + ".reason"));
    return v;
  }

  std::string source_;
};

}  // namespace

StatusOr<Plan> ParsePlanYaml(std::string_view text, std::string_view source) {
  return PlanReader(source).Read(text);
}

StatusOr<Plan> LoadPlan(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = (std::filesystem::path(path) / "plan.yaml").string();
  }
  PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(file, kMaxPlanBytes));
  return ParsePlanYaml(text, file);
}

PlanTotals ComputeTotals(const Plan& plan) {
  PlanTotals totals;
  std::set<std::string_view> slots;
  for (const VariablePlan& v : plan.variables) slots.insert(v.slots.begin(), v.slots.end());
  for (const VariablePlan& v : plan.variables) {
    ++totals.variables;
    ++totals.by_method[static_cast<int>(v.method)];
    if (slots.contains(v.name)) continue;  // a slot has no gradient: nothing synchronised
    if (v.method == SyncMethod::kNone) ++totals.unsynchronised;
    else if (v.method != SyncMethod::kLocal) ++totals.synchronised;
    if (v.method != SyncMethod::kLocal && v.bytes > 0) totals.parameter_bytes += v.bytes;
    totals.bytes_sent_per_rank_per_step += v.bytes_sent_per_rank_per_step;
  }
  return totals;
}

std::string PlanToJson(const Plan& plan, std::string_view output_dir) {
  JsonWriter json;
  json.BeginObject();
  json.Field("schema", 1);
  json.Field("parallax_version", kParallaxVersion);
  json.Key("output");
  if (output_dir.empty()) json.Null();
  else json.String(output_dir);
  json.Key("source").BeginObject();
  json.Field("graph", plan.source_graph);
  json.Field("fingerprint", plan.source_fingerprint);
  json.EndObject();
  json.Field("strategy", plan.strategy);
  json.Field("average", plan.average);
  json.Field("world_size", plan.world_size());
  json.Key("ranks").BeginArray();
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankPlacement& rank = plan.ranks[r];
    json.BeginObject();
    json.Field("rank", rank.rank);
    json.Field("host", rank.host);
    json.Field("local_rank", rank.local_rank);
    json.Field("local_size", rank.local_size);
    json.Field("kind", DeviceKindName(rank.device));
    json.Field("index", rank.device_index);
    json.Field("device", r < plan.rank_devices.size() ? plan.rank_devices[r] : "");
    json.EndObject();
  }
  json.EndArray();
  json.Key("variables").BeginArray();
  for (const VariablePlan& v : plan.variables) {
    json.BeginObject();
    json.Field("name", v.name);
    json.Field("method", SyncMethodName(v.method));
    json.Field("sparse", v.sparse);
    json.Key("shape").BeginArray();
    for (int64_t d : v.shape) json.Int(d);
    json.EndArray();
    json.Field("dtype", v.dtype);
    json.Key("bytes");
    if (v.bytes < 0) json.Null();
    else json.Int(v.bytes);
    json.Key("slots").BeginArray();
    for (const std::string& s : v.slots) json.String(s);
    json.EndArray();
    json.Key("partitions").BeginArray();
    for (const Partition& p : v.partitions) {
      json.BeginObject();
      json.Field("row_begin", p.row_begin);
      json.Field("row_end", p.row_end);
      json.Field("owner", p.owner);
      json.EndObject();
    }
    json.EndArray();
    json.Field("bytes_per_step", v.bytes_sent_per_rank_per_step);
    json.Field("reason", v.reason);
    json.EndObject();
  }
  json.EndArray();
  const PlanTotals totals = ComputeTotals(plan);
  json.Key("totals").BeginObject();
  json.Field("variables", totals.variables);
  json.Field("synchronised", totals.synchronised);
  json.Field("unsynchronised", totals.unsynchronised);
  json.Field("parameter_bytes", totals.parameter_bytes);
  json.Field("bytes_per_step", totals.bytes_sent_per_rank_per_step);
  json.Key("methods").BeginObject();
  for (SyncMethod m : kAllMethods) json.Field(SyncMethodName(m), totals.by_method[static_cast<int>(m)]);
  json.EndObject();
  json.EndObject();
  auto strings = [&](std::string_view key, const std::vector<std::string>& values) {
    json.Key(key).BeginArray();
    for (const std::string& s : values) json.String(s);
    json.EndArray();
  };
  strings("feeds", plan.feeds);
  strings("fetches", plan.fetches);
  json.Key("train_op");
  if (plan.train_op.empty()) json.Null();
  else json.String(plan.train_op);
  json.Key("init_op");
  if (plan.init_op.empty()) json.Null();
  else json.String(plan.init_op);
  strings("warnings", plan.warnings);
  json.Field("bucket_bytes", plan.bucket_bytes);
  json.Key("buckets").BeginArray();
  for (const GradientBucket& b : plan.buckets) {
    json.BeginObject().Field("dtype", b.dtype).Field("bytes", b.bytes);
    strings("variables", b.variables);
    json.EndObject();
  }
  json.EndArray();
  json.Key("allreduce")
      .BeginObject()
      .Field("algorithm", plan.allreduce.algorithm)
      .Field("off_host_bytes_per_step", plan.allreduce.off_host_bytes_per_step)
      .Field("reason", plan.allreduce.reason)
      .EndObject();
  json.Key("memory").BeginArray();
  for (const RankMemory& m : plan.memory) {
    json.BeginObject()
        .Field("state_bytes", m.state_bytes)
        .Field("gradient_bytes", m.gradient_bytes)
        .EndObject();
  }
  json.EndArray();
  auto search = [&](std::string_view key, std::string_view value_key,
                    const std::optional<MeasuredSearch>& found) {
    json.Key(key);
    if (!found) {
      json.Null();
      return;
    }
    json.BeginObject();
    json.Key("candidates").BeginArray();
    for (int64_t c : found->candidates) json.Int(c);
    json.EndArray();
    json.Key("probes").BeginArray();
    for (const SearchProbe& probe : found->probes) {
      json.BeginObject().Field(value_key, probe.value);
      json.Key("step_seconds").Double(probe.step_seconds);
      json.EndObject();
    }
    json.EndArray();
    json.Field("chosen", found->chosen).Field("steps", found->steps);
    json.Key("budget_seconds").Double(found->budget_seconds);
    json.Key("used_seconds").Double(found->used_seconds);
    json.Field("stopped", found->stopped);
    json.EndObject();
  };
  search("partition_search", "partitions", plan.partition_search);
  search("bucket_search", "bucket_bytes", plan.bucket_search);
  json.EndObject();
  return json.str() + "\n";
}

}  // namespace parallax
