#include "lib/cluster/scheduler_hosts.h"

#include <cstdlib>
#include <map>
#include <utility>

#include "lib/base/file.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/text_util.h"

namespace parallax {

using cluster_internal::ParseInteger;
using cluster_internal::Quoted;
using cluster_internal::SplitCommas;

namespace {

// A count above this is a typo or garbage, not a machine (slots bound ranks per host).
constexpr int64_t kMaxCount = 1 << 20;

// The items of `text` separated by commas outside brackets; errors for brackets that do
// not pair up.
StatusOr<std::vector<std::string_view>> SplitOutsideBrackets(std::string_view text,
                                                            std::string_view variable) {
  std::vector<std::string_view> items;
  size_t start = 0;
  bool inside = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[') {
      if (inside) return InvalidArgumentError("{}: {}: '[' inside '['", variable, Quoted(text));
      inside = true;
    } else if (c == ']') {
      if (!inside) return InvalidArgumentError("{}: {}: ']' without '['", variable, Quoted(text));
      inside = false;
    } else if (c == ',' && !inside) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (inside) return InvalidArgumentError("{}: {}: '[' is not closed", variable, Quoted(text));
  return items;
}

bool AllDigits(std::string_view word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string_view::npos;
}

// Appends the names of one hostlist item ("node[01-03]-ib[1,2]") to `names`.
Status ExpandItem(std::string_view item, std::string_view whole, std::string_view variable,
                  std::vector<std::string>& names) {
  const size_t open = item.find('[');
  if (open == std::string_view::npos) {
    if (!IsValidHostName(item)) {
      return InvalidArgumentError("{}: {}", variable, HostNameProblem(item));
    }
    if (names.size() >= static_cast<size_t>(kMaxAllocationHosts)) {
      return InvalidArgumentError("{}: {} names more than {} hosts", variable, Quoted(whole),
                                  kMaxAllocationHosts);
    }
    names.emplace_back(item);
    return Status::Ok();
  }
  const size_t close = item.find(']', open);  // SplitOutsideBrackets paired them
  const std::string_view prefix = item.substr(0, open);
  const std::string_view rest = item.substr(close + 1);
  const std::string_view ranges = item.substr(open + 1, close - open - 1);
  for (const std::string_view range : SplitCommas(ranges)) {
    const size_t dash = range.find('-');
    const std::string_view low = range.substr(0, dash);
    const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
    if (!AllDigits(low) || !AllDigits(high) || low.size() > 9 || high.size() > 9) {
      return InvalidArgumentError("{}: {}: {} is not a number or a range such as 01-03",
                                  variable, Quoted(item), Quoted(range));
    }
    const int64_t first = *ParseInteger(low);
    const int64_t last = *ParseInteger(high);
    if (first > last) {
      return InvalidArgumentError("{}: {}: range {} runs backwards", variable, Quoted(item),
                                  range);
    }
    if (last - first >= kMaxAllocationHosts) {
      return InvalidArgumentError("{}: {} names more than {} hosts", variable, Quoted(whole),
                                  kMaxAllocationHosts);
    }
    for (int64_t n = first; n <= last; ++n) {
      // The lower bound's width is the least width: 01-03 -> 01, 02, 03; 8-10 -> 8, 9, 10.
      const std::string number = fmt::format("{:0{}}", n, low.size());
      PX_RETURN_IF_ERROR(
          ExpandItem(fmt::format("{}{}{}", prefix, number, rest), whole, variable, names));
    }
  }
  return Status::Ok();
}

// A whole number 1 .. kMaxCount from a count list item, for messages `what` of `item`.
StatusOr<int> CountOf(std::string_view word, std::string_view item, std::string_view variable) {
  const std::optional<int64_t> n = ParseInteger(word);
  if (!n || *n < 1 || *n > kMaxCount) {
    return InvalidArgumentError("{}: {} is not a count such as 4 or 2(x3)", variable, Quoted(item));
  }
  return static_cast<int>(*n);
}

std::optional<std::string> NonEmpty(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// GPUs per node from SLURM_GPUS_PER_NODE: "4", "a100:4", "a100:2,v100:2" (summed).
StatusOr<int> GpusPerNode(std::string_view text) {
  int total = 0;
  for (const std::string_view item : SplitCommas(text)) {
    const size_t colon = item.rfind(':');
    const std::string_view count = colon == std::string_view::npos ? item : item.substr(colon + 1);
    const std::optional<int64_t> n = ParseInteger(count);
    if (!n || *n < 0 || *n > kMaxCount) {
      return InvalidArgumentError("SLURM_GPUS_PER_NODE: {} is not a GPU count such as 4 or "
                                  "a100:4",
                                  Quoted(text));
    }
    total += static_cast<int>(*n);
  }
  return total;
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandSlurmHostlist(std::string_view list,
                                                        std::string_view variable) {
  if (list.find_first_not_of(" \t") == std::string_view::npos) {
    return InvalidArgumentError("{}: no hosts (expected a list such as node[01-03],gpu5)",
                                variable);
  }
  PX_ASSIGN_OR_RETURN(std::vector<std::string_view> items, SplitOutsideBrackets(list, variable));
  std::vector<std::string> names;
  for (std::string_view item : items) {
    if (item.empty()) {
      return InvalidArgumentError("{}: {} has an empty entry", variable, Quoted(list));
    }
    PX_RETURN_IF_ERROR(ExpandItem(item, list, variable, names));
  }
  std::map<std::string_view, int> seen;
  for (const std::string& name : names) {
    if (++seen[name] == 2) {
      return InvalidArgumentError("{}: host '{}' is listed twice", variable, name);
    }
  }
  return names;
}

StatusOr<std::vector<int>> ExpandSlurmCounts(std::string_view text, std::string_view variable) {
  std::vector<int> counts;
  for (const std::string_view item : SplitCommas(text)) {
    // "N" or "N(xM)": N, M times.
    const size_t paren = item.find("(x");
    PX_ASSIGN_OR_RETURN(int count, CountOf(item.substr(0, paren), item, variable));
    int repeat = 1;
    if (paren != std::string_view::npos) {
      if (!item.ends_with(')')) {
        return InvalidArgumentError("{}: {} is not a count such as 4 or 2(x3)", variable,
                                    Quoted(item));
      }
      PX_ASSIGN_OR_RETURN(repeat,
                          CountOf(item.substr(paren + 2, item.size() - paren - 3), item, variable));
    }
    if (counts.size() + static_cast<size_t>(repeat) > static_cast<size_t>(kMaxAllocationHosts)) {
      return InvalidArgumentError("{}: {} gives more than {} counts", variable, Quoted(text),
                                  kMaxAllocationHosts);
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
  }
  return counts;
}

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<std::optional<Hostfile>> SlurmAllocation(const EnvLookup& env) {
  std::string list_variable = "SLURM_JOB_NODELIST";
  std::optional<std::string> list = NonEmpty(env, list_variable);
  if (!list) {
    list_variable = "SLURM_NODELIST";
    list = NonEmpty(env, list_variable);
  }
  if (!list) return std::optional<Hostfile>();
  PX_ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandSlurmHostlist(*list, list_variable));
  std::string counts_variable = "SLURM_TASKS_PER_NODE";
  std::optional<std::string> counts_text = NonEmpty(env, counts_variable);
  if (!counts_text) {
    counts_variable = "SLURM_JOB_CPUS_PER_NODE";
    counts_text = NonEmpty(env, counts_variable);
  }
  if (!counts_text) {
    return InvalidArgumentError("{} is set but neither SLURM_TASKS_PER_NODE nor "
                                "SLURM_JOB_CPUS_PER_NODE says how many ranks each node takes",
                                list_variable);
  }
  PX_ASSIGN_OR_RETURN(std::vector<int> slots, ExpandSlurmCounts(*counts_text, counts_variable));
  if (slots.size() != names.size()) {
    return InvalidArgumentError("{}={} gives {} count{} for the {} host{} of {}", counts_variable,
                                Quoted(*counts_text), slots.size(), slots.size() == 1 ? "" : "s",
                                names.size(), names.size() == 1 ? "" : "s", list_variable);
  }
  std::optional<int> gpus;
  if (std::optional<std::string> text = NonEmpty(env, "SLURM_GPUS_PER_NODE")) {
    PX_ASSIGN_OR_RETURN(gpus, GpusPerNode(*text));
  }
  Hostfile allocation;
  allocation.source = list_variable;
  for (size_t i = 0; i < names.size(); ++i) {
    HostfileEntry host;
    host.name = names[i];
    host.slots = slots[i];
    host.gpus = gpus;
    allocation.hosts.push_back(std::move(host));
  }
  return std::optional<Hostfile>(std::move(allocation));
}

StatusOr<Hostfile> ParsePbsNodefile(std::string_view text, std::string_view source) {
  Hostfile hostfile;
  hostfile.source = std::string(source);
  std::map<std::string, size_t, std::less<>> index;  // name -> position in hostfile.hosts
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    if (!IsValidHostName(line)) {
      if (line.find_first_of(" \t") == std::string_view::npos) {
        return InvalidArgumentError("{}:{}: {}", source, line_number, HostNameProblem(line));
      }
      return InvalidArgumentError("{}:{}: {} is not a valid host name (one host name per line)",
                                  source, line_number, Quoted(line));
    }
    auto found = index.find(line);
    if (found == index.end()) {
      HostfileEntry host;
      host.name = std::string(line);
      host.slots = 1;
      host.line = line_number;
      index.emplace(host.name, hostfile.hosts.size());
      hostfile.hosts.push_back(std::move(host));
    } else {
      ++hostfile.hosts[found->second].slots;
    }
  }
  if (hostfile.hosts.empty()) {
    return InvalidArgumentError("{}: no hosts (expected one host name per line and slot)",
                                source);
  }
  return hostfile;
}

StatusOr<std::optional<Hostfile>> PbsAllocation(const EnvLookup& env) {
  const std::optional<std::string> path = NonEmpty(env, "PBS_NODEFILE");
  if (!path) return std::optional<Hostfile>();
  constexpr uint64_t kMaxBytes = 16 << 20;  // a line per slot
  StatusOr<std::string> text = ReadFileToString(*path, kMaxBytes);
  if (!text.ok()) return text.status().WithPrefix("PBS_NODEFILE");
  PX_ASSIGN_OR_RETURN(Hostfile hostfile, ParsePbsNodefile(*text, *path));
  hostfile.source = "PBS_NODEFILE=" + *path;
  return std::optional<Hostfile>(std::move(hostfile));
}

StatusOr<std::optional<Hostfile>> SchedulerAllocation(const EnvLookup& env) {
  PX_ASSIGN_OR_RETURN(std::optional<Hostfile> slurm, SlurmAllocation(env));
  if (slurm) return slurm;
  return PbsAllocation(env);
}

}  // namespace parallax
