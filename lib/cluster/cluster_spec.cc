#include "lib/cluster/cluster_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "lib/base/file.h"
#include "lib/cluster/text_util.h"

namespace parallax {

using cluster_internal::ClosestWord;
using cluster_internal::ParseInteger;
using cluster_internal::ParseNumber;
using cluster_internal::Quoted;

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? "GPU" : "CPU";
}

std::string_view StrategyKindName(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kAuto: return "auto";
    case StrategyKind::kAllReduce: return "allreduce";
    case StrategyKind::kPs: return "ps";
    case StrategyKind::kHybrid: return "hybrid";
  }
  return "?";
}

std::string_view DenseMethodName(DenseMethod method) {
  return method == DenseMethod::kAllReduce ? "allreduce" : "ps";
}

std::string_view SparseMethodName(SparseMethod method) {
  switch (method) {
    case SparseMethod::kPs: return "ps";
    case SparseMethod::kAllGather: return "allgather";
    case SparseMethod::kDense: return "dense";
  }
  return "?";
}

std::optional<StrategyKind> ParseStrategyKind(std::string_view word) {
  for (StrategyKind kind : {StrategyKind::kAuto, StrategyKind::kAllReduce, StrategyKind::kPs,
                            StrategyKind::kHybrid}) {
    if (word == StrategyKindName(kind)) return kind;
  }
  return std::nullopt;
}

bool GlobMatch(std::string_view pattern, std::string_view name) {
  // Iterative matcher with one backtrack point (the last '*'): linear in practice, and
  // never exponential, whatever the pattern.
  size_t p = 0, n = 0;
  size_t star = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_n = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++star_n;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool IsValidHostName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) return false;
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '-' && c != '_') return false;
  }
  return true;
}

bool VariableOverride::is_glob() const {
  return pattern.find_first_of("*?") != std::string::npos;
}

const VariableOverride* StrategySpec::FindOverride(std::string_view variable) const {
  for (const VariableOverride& entry : variables) {
    if (!entry.is_glob() && entry.pattern == variable) return &entry;
  }
  for (const VariableOverride& entry : variables) {
    if (entry.is_glob() && GlobMatch(entry.pattern, variable)) return &entry;
  }
  return nullptr;
}

VariableStrategy StrategySpec::Resolve(std::string_view variable, StrategyKind kind) const {
  VariableStrategy result;
  switch (kind) {
    case StrategyKind::kAuto:
      break;
    case StrategyKind::kAllReduce:
      result.dense = DenseMethod::kAllReduce;
      result.sparse = SparseMethod::kAllGather;
      break;
    case StrategyKind::kPs:
      result.dense = DenseMethod::kPs;
      result.sparse = SparseMethod::kPs;
      break;
    case StrategyKind::kHybrid:
      result.dense = DenseMethod::kAllReduce;
      result.sparse = SparseMethod::kPs;
      break;
  }
  if (dense) result.dense = dense;
  if (sparse) result.sparse = sparse;
  result.partitions = partitions;
  if (const VariableOverride* entry = FindOverride(variable)) {
    if (entry->dense) result.dense = entry->dense;
    if (entry->sparse) result.sparse = entry->sparse;
    if (entry->partitions) result.partitions = *entry->partitions;
    result.override_used = entry;
  }
  return result;
}

int ClusterSpec::num_ranks() const {
  int total = 0;
  for (const HostSpec& host : hosts) total += host.num_ranks();
  return total;
}

const HostSpec* ClusterSpec::FindHost(std::string_view name) const {
  for (const HostSpec& host : hosts) {
    if (host.name == name) return &host;
  }
  return nullptr;
}

namespace {

// 1-based line of a node, 0 when yaml-cpp has no position for it.
int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

// "a list", "a mapping", "'fast'", "nothing": what was found where something else was due.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Scalar: return Quoted(node.Scalar());
    default: return "nothing";
  }
}

// A value in a mapping, with its key path and the line errors about it should name.
struct Field {
  std::string key;
  std::string path;
  YAML::Node value;
  int line = 0;  // the value's line, or the key's where the value is empty
};

class SpecParser {
 public:
  explicit SpecParser(std::string_view source) : source_(source) {}

  StatusOr<ClusterSpec> Parse(std::string_view text);

 private:
  // "cluster.yaml:7: hosts[1].gpus[2]: message" (the path and line are left out when
  // empty or unknown).
  Status Error(int line, std::string_view path, std::string_view message) const {
    std::string where(source_);
    if (line > 0) where += fmt::format(":{}", line);
    if (path.empty()) return InvalidArgumentError("{}: {}", where, message);
    return InvalidArgumentError("{}: {}: {}", where, path, message);
  }

  // The entries of the mapping at `path`, checked against `allowed` keys (unknown keys
  // get a spelling suggestion) and for keys given twice. `child_path` builds an entry's
  // path from its key.
  StatusOr<std::vector<Field>> Fields(const YAML::Node& map, int line, const std::string& path,
                                      const std::vector<std::string_view>& allowed,
                                      std::string (*child_path)(const std::string&,
                                                                const std::string&)) const;

  Status ParseHosts(const Field& field, ClusterSpec& spec) const;
  Status ParseHost(const YAML::Node& node, const std::string& path, HostSpec& host) const;
  Status ParseGpus(const Field& field, HostSpec& host) const;
  Status ParseNetwork(const Field& field, NetworkSpec& network) const;
  Status ParseStrategy(const Field& field, StrategySpec& strategy) const;
  Status ParseVariables(const Field& field, StrategySpec& strategy) const;

  StatusOr<std::string> Word(const Field& field, std::string_view what) const;
  StatusOr<int> PositiveInt(const Field& field, std::string_view what, int max) const;
  StatusOr<double> Bandwidth(const Field& field) const;
  StatusOr<bool> Bool(const Field& field) const;
  StatusOr<int> Partitions(const Field& field) const;
  StatusOr<DenseMethod> Dense(const Field& field) const;
  StatusOr<SparseMethod> Sparse(const Field& field) const;

  std::string source_;
};

// A key as it appears in a path: control characters shown as '?' (one-line messages).
std::string Printable(const std::string& key) {
  std::string text = key;
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

std::string DottedPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? Printable(key) : parent + "." + Printable(key);
}

// Variable names hold '/', so their keys are quoted: strategy.variables["embedding/*"].
std::string QuotedPath(const std::string& parent, const std::string& key) {
  return fmt::format("{}[\"{}\"]", parent, Printable(key));
}

// "a, b or c"
std::string Alternatives(const std::vector<std::string_view>& words) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += i + 1 == words.size() ? " or " : ", ";
    text += words[i];
  }
  return text;
}

StatusOr<std::vector<Field>> SpecParser::Fields(
    const YAML::Node& map, int line, const std::string& path,
    const std::vector<std::string_view>& allowed,
    std::string (*child_path)(const std::string&, const std::string&)) const {
  std::vector<Field> fields;
  std::map<std::string, int> first_line;
  for (const auto& pair : map) {
    const YAML::Node key = pair.first;  // copies: yaml-cpp's iterators hand out temporaries
    const int key_line = LineOf(key) > 0 ? LineOf(key) : line;
    if (!key.IsScalar()) {
      return Error(key_line, path, fmt::format("keys must be words, got {}", Describe(key)));
    }
    Field field;
    field.key = key.Scalar();
    field.path = child_path(path, field.key);
    field.value = pair.second;
    field.line = field.value.IsNull() || LineOf(field.value) == 0 ? key_line : LineOf(field.value);
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), field.key) == allowed.end()) {
      if (std::optional<std::string_view> guess = ClosestWord(field.key, allowed)) {
        return Error(key_line, field.path, fmt::format("unknown key (did you mean '{}'?)", *guess));
      }
      return Error(key_line, field.path,
                   fmt::format("unknown key (expected {})", Alternatives(allowed)));
    }
    auto [previous, inserted] = first_line.emplace(field.key, key_line);
    if (!inserted) {
      return Error(key_line, field.path,
                   fmt::format("key given twice (first on line {})", previous->second));
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

const Field* FindField(const std::vector<Field>& fields, std::string_view key) {
  for (const Field& field : fields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

StatusOr<std::string> SpecParser::Word(const Field& field, std::string_view what) const {
  if (!field.value.IsScalar()) {
    return Error(field.line, field.path, fmt::format("expected {}, got {}", what, Describe(field.value)));
  }
  return field.value.Scalar();
}

StatusOr<int> SpecParser::PositiveInt(const Field& field, std::string_view what, int max) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, what));
  std::optional<int64_t> value = ParseInteger(word);
  if (!value) return Error(field.line, field.path, fmt::format("expected {}, got {}", what, Quoted(word)));
  if (*value <= 0) {
    return Error(field.line, field.path, fmt::format("must be at least 1, got {}", *value));
  }
  if (*value > max) {
    return Error(field.line, field.path, fmt::format("{} is over the limit of {}", *value, max));
  }
  return static_cast<int>(*value);
}

StatusOr<double> SpecParser::Bandwidth(const Field& field) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, "a number of Gb/s"));
  std::optional<double> value = ParseNumber(word);
  if (!value) {
    return Error(field.line, field.path, fmt::format("expected a number of Gb/s, got {}", Quoted(word)));
  }
  if (*value <= 0) {
    return Error(field.line, field.path, fmt::format("must be more than 0 Gb/s, got {}", word));
  }
  return *value;
}

StatusOr<bool> SpecParser::Bool(const Field& field) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, "true or false"));
  if (word == "true" || word == "True" || word == "TRUE") return true;
  if (word == "false" || word == "False" || word == "FALSE") return false;
  return Error(field.line, field.path, fmt::format("expected true or false, got {}", Quoted(word)));
}

StatusOr<int> SpecParser::Partitions(const Field& field) const {
  static constexpr std::string_view kWhat = "'auto' or a positive number of partitions";
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, kWhat));
  if (word == "auto") return kAutoPartitions;
  std::optional<int64_t> value = ParseInteger(word);
  if (!value) return Error(field.line, field.path, fmt::format("expected {}, got {}", kWhat, Quoted(word)));
  if (*value <= 0) {
    return Error(field.line, field.path,
                 fmt::format("must be 'auto' or at least 1, got {}", *value));
  }
  if (*value > kMaxPartitions) {
    return Error(field.line, field.path,
                 fmt::format("{} is over the limit of {}", *value, kMaxPartitions));
  }
  return static_cast<int>(*value);
}

StatusOr<DenseMethod> SpecParser::Dense(const Field& field) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, "allreduce or ps"));
  for (DenseMethod method : {DenseMethod::kAllReduce, DenseMethod::kPs}) {
    if (word == DenseMethodName(method)) return method;
  }
  return Error(field.line, field.path,
               fmt::format("unknown method {} for dense gradients (expected allreduce or ps)", Quoted(word)));
}

StatusOr<SparseMethod> SpecParser::Sparse(const Field& field) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, "ps, allgather or dense"));
  for (SparseMethod method : {SparseMethod::kPs, SparseMethod::kAllGather, SparseMethod::kDense}) {
    if (word == SparseMethodName(method)) return method;
  }
  return Error(field.line, field.path,
               fmt::format("unknown method {} for sparse gradients (expected ps, allgather or dense)",
                           Quoted(word)));
}

StatusOr<ClusterSpec> SpecParser::Parse(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgumentError("{}: file is empty; expected a cluster spec with a 'hosts' list",
                                source_);
  }
  std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
  if (documents.size() > 1) {
    return Error(LineOf(documents[1]), "",
                 "a cluster spec is one YAML document; a second one starts here");
  }
  if (documents.empty() || documents[0].IsNull()) {
    return InvalidArgumentError(
        "{}: file holds only comments; expected a cluster spec with a 'hosts' list", source_);
  }
  const YAML::Node& root = documents[0];
  if (!root.IsMap()) {
    return Error(LineOf(root), "",
                 fmt::format("expected a mapping with 'hosts' (and optionally 'network' and "
                             "'strategy'), got {}",
                             Describe(root)));
  }
  PX_ASSIGN_OR_RETURN(std::vector<Field> fields,
                      Fields(root, LineOf(root), "", {"hosts", "network", "strategy"}, DottedPath));
  ClusterSpec spec;
  spec.source = source_;
  const Field* hosts = FindField(fields, "hosts");
  if (hosts == nullptr) return Error(LineOf(root), "", "missing required key 'hosts'");
  PX_RETURN_IF_ERROR(ParseHosts(*hosts, spec));
  if (const Field* network = FindField(fields, "network")) {
    PX_RETURN_IF_ERROR(ParseNetwork(*network, spec.network));
  }
  if (const Field* strategy = FindField(fields, "strategy")) {
    PX_RETURN_IF_ERROR(ParseStrategy(*strategy, spec.strategy));
  }
  return spec;
}

Status SpecParser::ParseHosts(const Field& field, ClusterSpec& spec) const {
  if (field.value.IsNull() || (field.value.IsSequence() && field.value.size() == 0)) {
    return Error(field.line, field.path, "no hosts; list at least one");
  }
  if (!field.value.IsSequence()) {
    return Error(field.line, field.path,
                 fmt::format("expected a list of hosts ('- name: node1'), got {}",
                             Describe(field.value)));
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < field.value.size(); ++i) {
    const std::string path = fmt::format("{}[{}]", field.path, i);
    HostSpec host;
    PX_RETURN_IF_ERROR(ParseHost(field.value[i], path, host));
    auto [previous, inserted] = seen.emplace(host.name, i);
    if (!inserted) {
      return Error(host.line, path + ".name",
                   fmt::format("host '{}' is listed twice (first as hosts[{}])", host.name,
                               previous->second));
    }
    spec.hosts.push_back(std::move(host));
  }
  return Status::Ok();
}

Status SpecParser::ParseHost(const YAML::Node& node, const std::string& path,
                             HostSpec& host) const {
  const int line = LineOf(node);
  if (!node.IsMap()) {
    return Error(line, path,
                 fmt::format("expected a mapping with 'name' and 'gpus' or 'cpus', got {}",
                             Describe(node)));
  }
  PX_ASSIGN_OR_RETURN(std::vector<Field> fields,
                      Fields(node, line, path, {"name", "gpus", "cpus"}, DottedPath));
  host.line = line;
  const Field* name = FindField(fields, "name");
  if (name == nullptr) return Error(line, path, "missing required key 'name'");
  PX_ASSIGN_OR_RETURN(host.name, Word(*name, "a host name"));
  if (!IsValidHostName(host.name)) {
    return Error(name->line, name->path,
                 fmt::format("{} is not a valid host name (letters, digits, '.', '-', '_')",
                             Quoted(host.name)));
  }
  host.line = name->line;
  const Field* gpus = FindField(fields, "gpus");
  const Field* cpus = FindField(fields, "cpus");
  if (gpus != nullptr && cpus != nullptr) {
    return Error(line, path, "give either 'gpus' or 'cpus', not both");
  }
  if (gpus == nullptr && cpus == nullptr) {
    return Error(line, path,
                 "give 'gpus' (a list of GPU ids) or 'cpus' (a number of CPU ranks)");
  }
  if (gpus != nullptr) {
    host.device = DeviceKind::kGpu;
    return ParseGpus(*gpus, host);
  }
  host.device = DeviceKind::kCpu;
  PX_ASSIGN_OR_RETURN(host.cpus, PositiveInt(*cpus, "a number of CPU ranks", kMaxRanksPerHost));
  return Status::Ok();
}

Status SpecParser::ParseGpus(const Field& field, HostSpec& host) const {
  if (!field.value.IsSequence()) {
    return Error(field.line, field.path,
                 fmt::format("expected a list of GPU ids such as [0, 1, 2, 3], got {}",
                             Describe(field.value)));
  }
  if (field.value.size() == 0) {
    return Error(field.line, field.path, "no GPUs; list at least one GPU id, or use 'cpus'");
  }
  if (field.value.size() > static_cast<size_t>(kMaxRanksPerHost)) {
    return Error(field.line, field.path,
                 fmt::format("{} GPUs is over the limit of {}", field.value.size(),
                             kMaxRanksPerHost));
  }
  for (size_t i = 0; i < field.value.size(); ++i) {
    Field id;
    id.path = fmt::format("{}[{}]", field.path, i);
    id.value = field.value[i];
    id.line = LineOf(id.value) > 0 ? LineOf(id.value) : field.line;
    PX_ASSIGN_OR_RETURN(std::string word, Word(id, "a GPU id"));
    std::optional<int64_t> value = ParseInteger(word);
    if (!value) return Error(id.line, id.path, fmt::format("expected a GPU id, got {}", Quoted(word)));
    if (*value < 0 || *value > kMaxGpuId) {
      return Error(id.line, id.path,
                   fmt::format("GPU id {} is out of range (0 to {})", *value, kMaxGpuId));
    }
    const int gpu = static_cast<int>(*value);
    if (std::find(host.gpus.begin(), host.gpus.end(), gpu) != host.gpus.end()) {
      return Error(id.line, id.path, fmt::format("GPU id {} is listed twice", gpu));
    }
    host.gpus.push_back(gpu);
  }
  return Status::Ok();
}

Status SpecParser::ParseNetwork(const Field& field, NetworkSpec& network) const {
  if (field.value.IsNull()) return Status::Ok();  // `network:` alone: the defaults
  if (!field.value.IsMap()) {
    return Error(field.line, field.path,
                 fmt::format("expected a mapping (bandwidth_gbps, intra_host_bandwidth_gbps), "
                             "got {}",
                             Describe(field.value)));
  }
  PX_ASSIGN_OR_RETURN(std::vector<Field> fields,
                      Fields(field.value, field.line, field.path,
                             {"bandwidth_gbps", "intra_host_bandwidth_gbps"}, DottedPath));
  for (const Field& entry : fields) {
    PX_ASSIGN_OR_RETURN(double gbps, Bandwidth(entry));
    if (entry.key == "bandwidth_gbps") {
      network.bandwidth_gbps = gbps;
    } else {
      network.intra_host_bandwidth_gbps = gbps;
    }
  }
  return Status::Ok();
}

Status SpecParser::ParseStrategy(const Field& field, StrategySpec& strategy) const {
  if (field.value.IsNull()) return Status::Ok();  // `strategy:` alone: auto
  if (!field.value.IsMap()) {
    return Error(field.line, field.path,
                 fmt::format("expected a mapping (default, dense, sparse, partitions, average, "
                             "variables), got {}",
                             Describe(field.value)));
  }
  PX_ASSIGN_OR_RETURN(
      std::vector<Field> fields,
      Fields(field.value, field.line, field.path,
             {"default", "dense", "sparse", "partitions", "average", "variables"}, DottedPath));
  for (const Field& entry : fields) {
    if (entry.key == "default") {
      PX_ASSIGN_OR_RETURN(std::string word, Word(entry, "auto, allreduce, ps or hybrid"));
      std::optional<StrategyKind> kind = ParseStrategyKind(word);
      if (!kind) {
        return Error(entry.line, entry.path,
                     fmt::format("unknown strategy {} (expected auto, allreduce, ps or hybrid)",
                                 Quoted(word)));
      }
      strategy.default_strategy = *kind;
    } else if (entry.key == "dense") {
      PX_ASSIGN_OR_RETURN(strategy.dense, Dense(entry));
    } else if (entry.key == "sparse") {
      PX_ASSIGN_OR_RETURN(strategy.sparse, Sparse(entry));
    } else if (entry.key == "partitions") {
      PX_ASSIGN_OR_RETURN(strategy.partitions, Partitions(entry));
    } else if (entry.key == "average") {
      PX_ASSIGN_OR_RETURN(strategy.average, Bool(entry));
    } else {
      PX_RETURN_IF_ERROR(ParseVariables(entry, strategy));
    }
  }
  return Status::Ok();
}

Status SpecParser::ParseVariables(const Field& field, StrategySpec& strategy) const {
  if (field.value.IsNull()) return Status::Ok();
  if (!field.value.IsMap()) {
    return Error(field.line, field.path,
                 fmt::format("expected a mapping from variable names or patterns to settings, "
                             "got {}",
                             Describe(field.value)));
  }
  PX_ASSIGN_OR_RETURN(std::vector<Field> entries,
                      Fields(field.value, field.line, field.path, {}, QuotedPath));
  for (const Field& entry : entries) {
    if (entry.key.empty()) return Error(entry.line, entry.path, "empty variable name");
    if (!entry.value.IsMap() || entry.value.size() == 0) {
      return Error(entry.line, entry.path,
                   fmt::format("expected settings such as {{sparse: ps, partitions: 4}} "
                               "(dense, sparse, partitions), got {}",
                               entry.value.IsMap() ? "an empty mapping" : Describe(entry.value)));
    }
    PX_ASSIGN_OR_RETURN(std::vector<Field> settings,
                        Fields(entry.value, entry.line, entry.path,
                               {"dense", "sparse", "partitions"}, DottedPath));
    VariableOverride override_entry;
    override_entry.pattern = entry.key;
    override_entry.line = entry.line;
    for (const Field& setting : settings) {
      if (setting.key == "dense") {
        PX_ASSIGN_OR_RETURN(override_entry.dense, Dense(setting));
      } else if (setting.key == "sparse") {
        PX_ASSIGN_OR_RETURN(override_entry.sparse, Sparse(setting));
      } else {
        PX_ASSIGN_OR_RETURN(override_entry.partitions, Partitions(setting));
      }
    }
    strategy.variables.push_back(std::move(override_entry));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ClusterSpec> ParseClusterSpec(std::string_view yaml_text, std::string_view source) {
  SpecParser parser(source);
  // yaml-cpp reports syntax errors (and misuse) by throwing; they stop here.
  try {
    return parser.Parse(yaml_text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgumentError("{}: {}", source, e.msg);
    return InvalidArgumentError("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  } catch (const std::exception& e) {
    return InternalError("{}: reading the cluster spec failed: {}", source, e.what());
  }
}

StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  // A cluster spec is a few lines; a large file is a mistake (a graph passed as --cluster).
  constexpr uint64_t kMaxBytes = 16 << 20;
  PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxBytes));
  return ParseClusterSpec(text, path);
}

}  // namespace parallax
