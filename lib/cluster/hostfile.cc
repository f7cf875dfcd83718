#include "lib/cluster/hostfile.h"

#include <map>
#include <utility>

#include "lib/base/file.h"
#include "lib/cluster/cluster_spec.h"
#include "lib/cluster/text_util.h"

namespace parallax {

using cluster_internal::ClosestWord;
using cluster_internal::ParseInteger;
using cluster_internal::Quoted;
using cluster_internal::SplitCommas;

int Hostfile::total_slots() const {
  int total = 0;
  for (const HostfileEntry& host : hosts) total += host.slots;
  return total;
}

const HostfileEntry* Hostfile::FindHost(std::string_view name) const {
  for (const HostfileEntry& host : hosts) {
    if (host.name == name) return &host;
  }
  return nullptr;
}

namespace {

constexpr int kMaxSlots = 1 << 20;  // max_slots only bounds oversubscription


// The words of a line with its comment removed; '=' is a word of its own, so that
// "slots=4" and "slots = 4" read alike (as OpenMPI reads them).
std::vector<std::string_view> Tokens(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      ++i;
    } else if (c == '=') {
      tokens.push_back(line.substr(i++, 1));
    } else {
      const size_t end = line.find_first_of(" \t\r\v\f=", i);
      const size_t stop = end == std::string_view::npos ? line.size() : end;
      tokens.push_back(line.substr(i, stop - i));
      i = stop;
    }
  }
  return tokens;
}

// Parses one non-blank line into `entry`; errors are returned without the file:line.
Status ParseLine(const std::vector<std::string_view>& tokens, HostfileEntry& entry) {
  if (tokens[0] == "=") {
    return InvalidArgumentError("expected a host name first, got '='");
  }
  entry.name = std::string(tokens[0]);
  if (!IsValidHostName(entry.name)) return InvalidArgumentError("{}", HostNameProblem(entry.name));
  bool slots_given = false;
  for (size_t i = 1; i < tokens.size(); i += 3) {
    const std::string_view key = tokens[i];
    if (key == "=" || i + 1 >= tokens.size() || tokens[i + 1] != "=") {
      return InvalidArgumentError("{}: expected keyword=value such as slots=4, got {}",
                                  entry.name, Quoted(key));
    }
    const bool is_slots = key == "slots";
    const bool is_max = key == "max_slots" || key == "max-slots";
    if (!is_slots && !is_max) {
      if (std::optional<std::string_view> guess = ClosestWord(key, {"slots", "max_slots"})) {
        return InvalidArgumentError("{}: unknown keyword {} (did you mean '{}'?)", entry.name,
                                    Quoted(key), *guess);
      }
      return InvalidArgumentError(
          "{}: unknown keyword {} (Parallax reads 'slots' and 'max_slots')", entry.name,
          Quoted(key));
    }
    if (i + 2 >= tokens.size() || tokens[i + 2] == "=") {
      return InvalidArgumentError("{}: '{}=' needs a value, as in slots=4", entry.name, key);
    }
    const std::string_view value = tokens[i + 2];
    if ((is_slots && slots_given) || (is_max && entry.max_slots)) {
      return InvalidArgumentError("{}: '{}' is given twice", entry.name,
                                  is_slots ? "slots" : "max_slots");
    }
    std::optional<int64_t> number = ParseInteger(value);
    if (!number) {
      return InvalidArgumentError("{}: {}={} is not a number", entry.name, key, Quoted(value));
    }
    if (is_slots) {
      if (*number < 1) {
        return InvalidArgumentError("{}: slots must be at least 1, got {}", entry.name, *number);
      }
      if (*number > kMaxRanksPerHost) {
        return InvalidArgumentError("{}: slots={} is over the limit of {}", entry.name, *number,
                                    kMaxRanksPerHost);
      }
      entry.slots = static_cast<int>(*number);
      slots_given = true;
    } else {
      if (*number < 1 || *number > kMaxSlots) {
        return InvalidArgumentError("{}: max_slots must be 1 to {}, got {}", entry.name,
                                    kMaxSlots, *number);
      }
      entry.max_slots = static_cast<int>(*number);
    }
  }
  if (entry.max_slots && *entry.max_slots < entry.slots) {
    return InvalidArgumentError("{}: max_slots={} is less than slots={}", entry.name,
                                *entry.max_slots, entry.slots);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Hostfile> ParseHostfile(std::string_view text, std::string_view source) {
  Hostfile hostfile;
  hostfile.source = std::string(source);
  std::map<std::string, int> first_line;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::vector<std::string_view> tokens = Tokens(line);
    if (tokens.empty()) continue;
    HostfileEntry entry;
    entry.line = line_number;
    Status status = ParseLine(tokens, entry);
    if (!status.ok()) return status.WithPrefix(fmt::format("{}:{}", source, line_number));
    auto [previous, inserted] = first_line.emplace(entry.name, line_number);
    if (!inserted) {
      return InvalidArgumentError("{}:{}: host '{}' is listed twice (first on line {})", source,
                                  line_number, entry.name, previous->second);
    }
    hostfile.hosts.push_back(std::move(entry));
  }
  if (hostfile.hosts.empty()) {
    return InvalidArgumentError("{}: no hosts (expected lines like 'node1 slots=4')", source);
  }
  return hostfile;
}

StatusOr<Hostfile> LoadHostfile(const std::string& path) {
  constexpr uint64_t kMaxBytes = 16 << 20;  // a hostfile is a line per machine
  PX_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxBytes));
  return ParseHostfile(text, path);
}

StatusOr<Hostfile> ParseHostList(std::string_view list) {
  Hostfile hostfile;
  hostfile.source = "-H";
  if (list.find_first_not_of(" \t") == std::string_view::npos) {
    return InvalidArgumentError("-H: no hosts (expected node1:4,node2:4)");
  }
  std::map<std::string, int> seen;
  int index = 0;
  for (const std::string_view item : SplitCommas(list)) {
    ++index;
    if (item.empty()) {
      return InvalidArgumentError("-H: entry {} of {} is empty", index, Quoted(list));
    }
    HostfileEntry entry;
    const size_t colon = item.find(':');
    entry.name = std::string(item.substr(0, colon));
    if (!IsValidHostName(entry.name)) {
      return InvalidArgumentError("-H: {}", HostNameProblem(entry.name));
    }
    if (colon != std::string_view::npos) {
      const std::string_view count = item.substr(colon + 1);
      std::optional<int64_t> number = ParseInteger(count);
      if (!number) {
        return InvalidArgumentError("-H: {}: slot count {} is not a number", Quoted(item),
                                    Quoted(count));
      }
      if (*number < 1 || *number > kMaxRanksPerHost) {
        return InvalidArgumentError("-H: {}: slot count must be 1 to {}, got {}", Quoted(item),
                                    kMaxRanksPerHost, *number);
      }
      entry.slots = static_cast<int>(*number);
    }
    if (!seen.emplace(entry.name, index).second) {
      return InvalidArgumentError("-H: host '{}' is listed twice", entry.name);
    }
    hostfile.hosts.push_back(std::move(entry));
  }
  return hostfile;
}

std::string FormatHostfile(const Hostfile& hostfile) {
  std::string text;
  for (const HostfileEntry& host : hostfile.hosts) {
    text += fmt::format("{} slots={}", host.name, host.slots);
    if (host.max_slots) text += fmt::format(" max_slots={}", *host.max_slots);
    text += '\n';
  }
  return text;
}

}  // namespace parallax
