#include "lib/cluster/cluster_spec.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/utf8.h"
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

std::optional<DenseMethod> ParseDenseMethod(std::string_view word) {
  for (DenseMethod method : {DenseMethod::kAllReduce, DenseMethod::kPs}) {
    if (word == DenseMethodName(method)) return method;
  }
  return std::nullopt;
}

std::optional<SparseMethod> ParseSparseMethod(std::string_view word) {
  for (SparseMethod method : {SparseMethod::kPs, SparseMethod::kAllGather, SparseMethod::kDense}) {
    if (word == SparseMethodName(method)) return method;
  }
  return std::nullopt;
}

std::string UnknownStrategyMessage(std::string_view word, std::string_view sparse_setting) {
  std::string message =
      fmt::format("unknown strategy {} (expected auto, allreduce, ps or hybrid)", Quoted(word));
  // The plan's name for densified gradients is "densify"; the setting's word is "dense".
  const std::string_view method = word == "densify" ? "dense" : word;
  if (method == "allgather" || method == "dense") {
    message += fmt::format("; {} is a method for sparse gradients, not a preset: use {} {}",
                           Quoted(word), sparse_setting, method);
  }
  return message;
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

std::string HostNameProblem(std::string_view name) {
  if (IsValidHostName(name)) return "";
  if (name.size() > kMaxHostNameLength) {
    return fmt::format("{} is {} characters long; a host name has at most {}", Quoted(name),
                       name.size(), kMaxHostNameLength);
  }
  if (name.find('@') != std::string_view::npos) {
    return fmt::format("{} is not a valid host name (user@host is not supported; set the "
                       "user in ~/.ssh/config)",
                       Quoted(name));
  }
  return fmt::format("{} is not a valid host name (letters, digits, '.', '-', '_')",
                     Quoted(name));
}

bool IsValidHostName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostNameLength) return false;
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

bool VariableOverride::Matches(std::string_view variable) const {
  return is_glob() ? GlobMatch(pattern, variable) : pattern == variable;
}

const VariableOverride* StrategySpec::FindOverride(std::string_view variable) const {
  for (const VariableOverride& entry : variables) {
    if (!entry.is_glob() && entry.Matches(variable)) return &entry;
  }
  for (const VariableOverride& entry : variables) {
    if (entry.is_glob() && entry.Matches(variable)) return &entry;
  }
  return nullptr;
}

namespace {

// The methods a preset fixes; auto fixes neither.
struct PresetMethods {
  std::optional<DenseMethod> dense;
  std::optional<SparseMethod> sparse;
};
PresetMethods MethodsOf(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kAuto: return {};
    case StrategyKind::kAllReduce: return {DenseMethod::kAllReduce, SparseMethod::kAllGather};
    case StrategyKind::kPs: return {DenseMethod::kPs, SparseMethod::kPs};
    case StrategyKind::kHybrid: return {DenseMethod::kAllReduce, SparseMethod::kPs};
  }
  return {};
}

std::string_view MethodName(DenseMethod method) { return DenseMethodName(method); }
std::string_view MethodName(SparseMethod method) { return SparseMethodName(method); }
template <typename Method>
std::string_view MethodWord(const std::optional<Method>& method) {
  return method ? MethodName(*method) : std::string_view("auto");
}

// One setting's answer for one method of a variable.
template <typename Method>
struct Said {
  bool speaks = false;           // the setting is there (a preset speaks even for auto)
  std::optional<Method> method;  // unset: auto
  std::string setting;           // for reasons: "--strategy ps", "strategy.sparse: ps in c.yaml"
  std::string name;              // for warnings: "--strategy allreduce (sparse: allgather)",
                                 // "c.yaml:5: strategy.sparse: ps"
};

// The strongest of `entry` (the override), `flag` and `spec` (a key, else the preset of
// strategy.default) decides; `kind` is "dense" or "sparse". `same` says whether two
// answers come to the same method.
template <typename Method>
void Decide(std::string_view kind, const Said<Method>& entry, const Said<Method>& flag,
            const Said<Method>& spec, bool spec_is_key,
            bool (*same)(const std::optional<Method>&, const std::optional<Method>&),
            std::optional<Method>& method, std::string& setting, bool& from_override,
            std::string& conflict) {
  const Said<Method>& winner = entry.speaks ? entry : flag.speaks ? flag : spec;
  method = winner.method;
  setting = winner.method ? winner.setting : "auto";
  from_override = entry.speaks;
  if (entry.speaks && flag.speaks && !same(entry.method, flag.method)) {
    conflict = fmt::format("{} ({}: {}) wins over {}: a per-variable override is more specific "
                           "than the command line",
                           entry.name, kind, MethodWord(entry.method), flag.name);
  } else if (!entry.speaks && flag.speaks && spec_is_key && !same(spec.method, flag.method)) {
    conflict = fmt::format("{} is overruled by {}: the command line wins over the spec's "
                           "strategy section",
                           spec.name, flag.name);
  }
}

// Auto all-reduces dense gradients: unset and allreduce come to the same.
bool SameDense(const std::optional<DenseMethod>& a, const std::optional<DenseMethod>& b) {
  return a.value_or(DenseMethod::kAllReduce) == b.value_or(DenseMethod::kAllReduce);
}
bool SameSparse(const std::optional<SparseMethod>& a, const std::optional<SparseMethod>& b) {
  return a == b;
}

}  // namespace

VariableStrategy StrategySpec::Resolve(std::string_view variable, const StrategyFlags& flags) const {
  const std::string in_file = source.empty() ? "" : fmt::format(" in {}", source);
  auto at = [&](int line) {  // "c.yaml:5: "
    return source.empty() ? std::string() : line > 0 ? fmt::format("{}:{}: ", source, line)
                                                     : fmt::format("{}: ", source);
  };
  VariableStrategy result;
  const VariableOverride* entry = FindOverride(variable);
  result.override_used = entry;
  result.partitions = entry && entry->partitions ? *entry->partitions : partitions;

  const PresetMethods preset = MethodsOf(default_strategy);
  const std::string preset_key = fmt::format("strategy.default: {}", StrategyKindName(default_strategy));
  Said<DenseMethod> spec_dense{true, preset.dense, preset_key + in_file, at(default_line) + preset_key};
  if (dense) {
    const std::string key = fmt::format("strategy.dense: {}", DenseMethodName(*dense));
    spec_dense = {true, dense, key + in_file, at(dense_line) + key};
  }
  Said<SparseMethod> spec_sparse{true, preset.sparse, preset_key + in_file, at(default_line) + preset_key};
  if (sparse) {
    const std::string key = fmt::format("strategy.sparse: {}", SparseMethodName(*sparse));
    spec_sparse = {true, sparse, key + in_file, at(sparse_line) + key};
  }

  Said<DenseMethod> flag_dense;
  Said<SparseMethod> flag_sparse;
  if (flags.preset) {
    const PresetMethods given = MethodsOf(*flags.preset);
    const std::string flag = fmt::format("--strategy {}", StrategyKindName(*flags.preset));
    flag_dense = {true, given.dense, flag,
                  fmt::format("{} (dense: {})", flag, MethodWord(given.dense))};
    flag_sparse = {true, given.sparse, flag,
                   fmt::format("{} (sparse: {})", flag, MethodWord(given.sparse))};
  }
  if (flags.sparse) {
    const std::string flag = fmt::format("--sparse {}", SparseMethodName(*flags.sparse));
    flag_sparse = {true, flags.sparse, flag, flag};
  }

  Said<DenseMethod> entry_dense;
  Said<SparseMethod> entry_sparse;
  if (entry != nullptr) {
    const std::string key = fmt::format("strategy.variables[\"{}\"]", entry->pattern);
    if (entry->dense) entry_dense = {true, entry->dense, key + in_file, at(entry->line) + key};
    if (entry->sparse) entry_sparse = {true, entry->sparse, key + in_file, at(entry->line) + key};
  }

  Decide<DenseMethod>("dense", entry_dense, flag_dense, spec_dense, dense.has_value(), SameDense,
                      result.dense, result.dense_setting, result.dense_from_override,
                      result.dense_conflict);
  Decide<SparseMethod>("sparse", entry_sparse, flag_sparse, spec_sparse, sparse.has_value(),
                       SameSparse, result.sparse, result.sparse_setting,
                       result.sparse_from_override, result.sparse_conflict);
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

// Where the root node of each YAML document of a stream is, from yaml-cpp's events:
// what ParseClusterSpec needs of YAML::LoadAll, which it replaces because LoadAll never
// returns on a ',' outside brackets at the top of a document (yaml-cpp 0.7 reads an
// empty document there without consuming the ',', again and again). Here a document
// whose root is where the previous one's was shows that.
class DocumentRoots : public YAML::EventHandler {
 public:
  const std::vector<YAML::Mark>& marks() const { return marks_; }

  void OnDocumentStart(const YAML::Mark&) override { at_root_ = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (at_root_) marks_.push_back(mark);
    at_root_ = false;
  }
  std::vector<YAML::Mark> marks_;
  bool at_root_ = false;
};

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
  StatusOr<double> PositiveNumber(const Field& field, std::string_view unit) const;
  StatusOr<bool> Bool(const Field& field) const;
  StatusOr<int> Partitions(const Field& field) const;
  StatusOr<DenseMethod> Dense(const Field& field) const;
  StatusOr<SparseMethod> Sparse(const Field& field) const;

  std::string source_;
};

// A key as it appears in a path: control characters shown as '?' (one-line messages).
std::string DottedPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? WithControlsShown(key) : parent + "." + WithControlsShown(key);
}

// Variable names hold '/', so their keys are quoted: strategy.variables["embedding/*"].
std::string QuotedPath(const std::string& parent, const std::string& key) {
  return fmt::format("{}[\"{}\"]", parent, WithControlsShown(key));
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

StatusOr<double> SpecParser::PositiveNumber(const Field& field, std::string_view unit) const {
  const std::string what = fmt::format("a number of {}", unit);
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, what));
  std::optional<double> value = ParseNumber(word);
  if (!value) {
    return Error(field.line, field.path, fmt::format("expected {}, got {}", what, Quoted(word)));
  }
  if (*value <= 0) {
    return Error(field.line, field.path, fmt::format("must be more than 0 {}, got {}", unit, word));
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
  if (std::optional<DenseMethod> method = ParseDenseMethod(word)) return *method;
  return Error(field.line, field.path,
               fmt::format("unknown method {} for dense gradients (expected allreduce or ps)", Quoted(word)));
}

StatusOr<SparseMethod> SpecParser::Sparse(const Field& field) const {
  PX_ASSIGN_OR_RETURN(std::string word, Word(field, "ps, allgather or dense"));
  if (std::optional<SparseMethod> method = ParseSparseMethod(word)) return *method;
  return Error(field.line, field.path,
               fmt::format("unknown method {} for sparse gradients (expected ps, allgather or dense)",
                           Quoted(word)));
}

StatusOr<ClusterSpec> SpecParser::Parse(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgumentError("{}: file is empty; expected a cluster spec with a 'hosts' list",
                                source_);
  }
  // YAML is UTF-8 text; yaml-cpp takes some other bytes, but cannot read them back once
  // FormatClusterSpec has quoted them (found by fuzz/cluster_spec_fuzzer.cc).
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    const std::string_view before = text.substr(0, bad);
    const size_t last_newline = before.rfind('\n');
    const size_t line = static_cast<size_t>(std::count(before.begin(), before.end(), '\n')) + 1;
    const size_t column = bad - (last_newline == std::string_view::npos ? 0 : last_newline + 1) + 1;
    return InvalidArgumentError("{}:{}:{}: byte 0x{:02x} is not valid UTF-8 (a cluster spec is "
                                "UTF-8 text)",
                                source_, line, column, static_cast<unsigned char>(text[bad]));
  }
  // The documents' roots, as far as the second: one more is an error.
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  DocumentRoots roots;
  while (roots.marks().size() < 2 && parser.HandleNextDocument(roots)) {
  }
  const std::vector<YAML::Mark>& marks = roots.marks();
  if (marks.size() > 1 && marks[1].pos == marks[0].pos) {
    const std::string_view rest =
        text.substr(std::min(static_cast<size_t>(marks[0].pos), text.size()));
    return InvalidArgumentError("{}:{}:{}: unexpected {}{}", source_, marks[0].line + 1,
                                marks[0].column + 1, Quoted(rest.substr(0, 1)),
                                rest.starts_with(',')
                                    ? "; ',' separates items only inside [...] or {...}"
                                    : "");
  }
  if (marks.size() > 1) {
    return Error(marks[1].line + 1, "",
                 "a cluster spec is one YAML document; a second one starts here");
  }
  const YAML::Node root = YAML::Load(std::string(text));
  if (marks.empty() || root.IsNull()) {
    return InvalidArgumentError(
        "{}: file holds only comments; expected a cluster spec with a 'hosts' list", source_);
  }
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
  spec.strategy.source = source_;
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
                      Fields(node, line, path,
                             {"name", "gpus", "cpus", "memory_gb", "gpu_memory_gb", "ranks_per_gpu"},
                             DottedPath));
  host.line = line;
  const Field* name = FindField(fields, "name");
  if (name == nullptr) return Error(line, path, "missing required key 'name'");
  PX_ASSIGN_OR_RETURN(host.name, Word(*name, "a host name"));
  if (!IsValidHostName(host.name)) return Error(name->line, name->path, HostNameProblem(host.name));
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
  if (const Field* memory = FindField(fields, "memory_gb")) {
    PX_ASSIGN_OR_RETURN(host.memory_gb, PositiveNumber(*memory, "GB"));
  }
  if (const Field* gpu_memory = FindField(fields, "gpu_memory_gb")) {
    if (gpus == nullptr) {
      return Error(gpu_memory->line, gpu_memory->path, "a host of 'cpus' has no GPU memory; "
                                                       "give 'memory_gb'");
    }
    PX_ASSIGN_OR_RETURN(host.gpu_memory_gb, PositiveNumber(*gpu_memory, "GB"));
  }
  if (const Field* shared = FindField(fields, "ranks_per_gpu")) {
    if (gpus == nullptr) {
      return Error(shared->line, shared->path, "a host of 'cpus' has no GPUs to share");
    }
    PX_ASSIGN_OR_RETURN(host.ranks_per_gpu,
                        PositiveInt(*shared, "a number of ranks per GPU", kMaxRanksPerHost));
  }
  if (gpus != nullptr) {
    host.device = DeviceKind::kGpu;
    PX_RETURN_IF_ERROR(ParseGpus(*gpus, host));
    if (host.num_ranks() > kMaxRanksPerHost) {
      return Error(line, path,
                   fmt::format("{} GPUs x ranks_per_gpu {} is over the limit of {} ranks",
                               host.gpus.size(), host.ranks_per_gpu, kMaxRanksPerHost));
    }
    return Status::Ok();
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
                 fmt::format("expected a mapping (bandwidth_gbps, intra_host_bandwidth_gbps, "
                             "latency_us, intra_host_latency_us), got {}",
                             Describe(field.value)));
  }
  PX_ASSIGN_OR_RETURN(std::vector<Field> fields,
                      Fields(field.value, field.line, field.path,
                             {"bandwidth_gbps", "intra_host_bandwidth_gbps", "latency_us",
                              "intra_host_latency_us"},
                             DottedPath));
  for (const Field& entry : fields) {
    const bool latency = entry.key.ends_with("latency_us");
    PX_ASSIGN_OR_RETURN(double value, PositiveNumber(entry, latency ? "microseconds" : "Gb/s"));
    if (entry.key == "bandwidth_gbps") {
      network.bandwidth_gbps = value;
    } else if (entry.key == "intra_host_bandwidth_gbps") {
      network.intra_host_bandwidth_gbps = value;
    } else if (entry.key == "latency_us") {
      network.latency_us = value;
    } else {
      network.intra_host_latency_us = value;
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
        return Error(entry.line, entry.path, UnknownStrategyMessage(word, "strategy.sparse:"));
      }
      strategy.default_strategy = *kind;
      strategy.default_line = entry.line;
    } else if (entry.key == "dense") {
      PX_ASSIGN_OR_RETURN(strategy.dense, Dense(entry));
      strategy.dense_line = entry.line;
    } else if (entry.key == "sparse") {
      PX_ASSIGN_OR_RETURN(strategy.sparse, Sparse(entry));
      strategy.sparse_line = entry.line;
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
    // The text is UTF-8 (Parse checks), but yaml-cpp decodes the escapes \N and \_ to
    // the single bytes 0x85 and 0xa0, which FormatClusterSpec could not write back
    // (found by fuzz/cluster_spec_fuzzer.cc). No TF variable name holds them anyway.
    if (!IsValidUtf8(entry.key)) {
      return Error(entry.line, field.path,
                   "a variable name that is not valid UTF-8 (yaml-cpp reads the escapes \\N "
                   "and \\_ as the bytes 0x85 and 0xa0)");
    }
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
    // yaml-cpp's message may hold the offending character itself ("unknown escape
    // character: " and a newline); control characters are shown as '?', as Quoted does.
    const std::string message = WithControlsShown(e.msg);
    if (e.mark.is_null()) return InvalidArgumentError("{}: {}", source, message);
    return InvalidArgumentError("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1,
                                message);
  } catch (const std::exception& e) {
    return InternalError("{}: reading the cluster spec failed: {}", source, e.what());
  }
}

StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxClusterSpecBytes));
  return ParseClusterSpec(text, path);
}

namespace {

// `text` in YAML's double quotes.
std::string YamlQuoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      // A control character taken as it is would end the line or be dropped by the
      // reader (found by fuzz/cluster_spec_fuzzer.cc: a pattern holding a newline).
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out + '"';
}

std::string PartitionsWord(int partitions) {
  return partitions == kAutoPartitions ? std::string("auto") : std::to_string(partitions);
}

}  // namespace

std::string FormatClusterSpec(const ClusterSpec& spec) {
  std::string out = "hosts:\n";
  for (const HostSpec& host : spec.hosts) {
    out += fmt::format("  - name: {}\n", YamlQuoted(host.name));
    if (host.device == DeviceKind::kGpu) {
      out += fmt::format("    gpus: [{}]\n", fmt::join(host.gpus, ", "));
      if (host.ranks_per_gpu != 1) out += fmt::format("    ranks_per_gpu: {}\n", host.ranks_per_gpu);
    } else {
      out += fmt::format("    cpus: {}\n", host.cpus);
    }
    if (host.memory_gb > 0) out += fmt::format("    memory_gb: {}\n", host.memory_gb);
    if (host.gpu_memory_gb > 0) out += fmt::format("    gpu_memory_gb: {}\n", host.gpu_memory_gb);
  }
  out += fmt::format("network:\n  bandwidth_gbps: {}\n  intra_host_bandwidth_gbps: {}\n"
                     "  latency_us: {}\n  intra_host_latency_us: {}\n",
                     spec.network.bandwidth_gbps, spec.network.intra_host_bandwidth_gbps,
                     spec.network.latency_us, spec.network.intra_host_latency_us);
  const StrategySpec& strategy = spec.strategy;
  out += fmt::format("strategy:\n  default: {}\n", StrategyKindName(strategy.default_strategy));
  if (strategy.dense) out += fmt::format("  dense: {}\n", DenseMethodName(*strategy.dense));
  if (strategy.sparse) out += fmt::format("  sparse: {}\n", SparseMethodName(*strategy.sparse));
  out += fmt::format("  partitions: {}\n  average: {}\n", PartitionsWord(strategy.partitions),
                     strategy.average ? "true" : "false");
  if (!strategy.variables.empty()) out += "  variables:\n";
  for (const VariableOverride& entry : strategy.variables) {
    std::vector<std::string> settings;
    if (entry.dense) settings.push_back(fmt::format("dense: {}", DenseMethodName(*entry.dense)));
    if (entry.sparse) {
      settings.push_back(fmt::format("sparse: {}", SparseMethodName(*entry.sparse)));
    }
    if (entry.partitions) {
      settings.push_back(fmt::format("partitions: {}", PartitionsWord(*entry.partitions)));
    }
    // YAML allows an implicit key of at most 1024 characters (found by
    // fuzz/cluster_spec_fuzzer.cc): a longer pattern is written as an explicit key.
    const std::string key = YamlQuoted(entry.pattern);
    if (key.size() <= 1024) {
      out += fmt::format("    {}: {{{}}}\n", key, fmt::join(settings, ", "));
    } else {
      out += fmt::format("    ? {}\n    : {{{}}}\n", key, fmt::join(settings, ", "));
    }
  }
  return out;
}

}  // namespace parallax
