#include "lib/base/machine.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

namespace parallax {
namespace {

std::optional<int64_t> ParseInt(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A small file of /proc or /sys (whose sizes read as 0, so streamed).
std::optional<std::string> Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace

int MachineCores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::string MachineCpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (!line.starts_with("model name")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    if (begin != std::string::npos) return line.substr(begin);
  }
  return "unknown CPU";
}

std::optional<int64_t> MeminfoBytesOf(const std::string& meminfo_text, std::string_view field) {
  std::istringstream lines(meminfo_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(field) || line.size() <= field.size() || line[field.size()] != ':') {
      continue;
    }
    std::string_view rest = std::string_view(line).substr(field.size() + 1);
    const size_t unit = rest.find("kB");
    if (unit == std::string_view::npos) return std::nullopt;
    std::optional<int64_t> kib = ParseInt(rest.substr(0, unit));
    if (!kib) return std::nullopt;
    return *kib * 1024;
  }
  return std::nullopt;
}

namespace {

// memory.max and memory.current of the process's cgroup (v2: one line "0::/path").
struct CgroupMemory {
  std::optional<int64_t> limit;  // nullopt: "max", no limit
  std::optional<int64_t> used;
};
std::optional<CgroupMemory> CgroupMemoryOf(const std::string& cgroup_root,
                                           const std::string& proc_self_cgroup_text) {
  std::istringstream lines(proc_self_cgroup_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("0::")) continue;
    const std::string dir = cgroup_root + line.substr(3);
    std::optional<std::string> max = Read(dir + "/memory.max");
    std::optional<std::string> current = Read(dir + "/memory.current");
    if (!max || !current) return std::nullopt;
    return CgroupMemory{.limit = ParseInt(*max), .used = ParseInt(*current)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> CgroupRoomOf(const std::string& cgroup_root,
                                    const std::string& proc_self_cgroup_text) {
  std::optional<CgroupMemory> memory = CgroupMemoryOf(cgroup_root, proc_self_cgroup_text);
  if (!memory || !memory->limit || !memory->used) return std::nullopt;
  return std::max<int64_t>(0, *memory->limit - *memory->used);
}

std::optional<int64_t> CgroupLimitOf(const std::string& cgroup_root,
                                     const std::string& proc_self_cgroup_text) {
  std::optional<CgroupMemory> memory = CgroupMemoryOf(cgroup_root, proc_self_cgroup_text);
  if (!memory) return std::nullopt;
  return memory->limit;
}

namespace {

// `field` of /proc/meminfo, lowered to what `cgroup_bound` says of the process's cgroup
// when it says something.
std::optional<int64_t> MeminfoWithinCgroup(
    std::string_view field,
    std::optional<int64_t> (*cgroup_bound)(const std::string&, const std::string&)) {
  std::optional<std::string> meminfo = Read("/proc/meminfo");
  if (!meminfo) return std::nullopt;
  std::optional<int64_t> bytes = MeminfoBytesOf(*meminfo, field);
  if (!bytes) return std::nullopt;
  if (std::optional<std::string> cgroup = Read("/proc/self/cgroup")) {
    if (std::optional<int64_t> bound = cgroup_bound("/sys/fs/cgroup", *cgroup)) {
      bytes = std::min(*bytes, *bound);
    }
  }
  return bytes;
}

}  // namespace

std::optional<int64_t> AvailableMemoryBytes() {
  return MeminfoWithinCgroup("MemAvailable", CgroupRoomOf);
}

std::optional<int64_t> TotalMemoryBytes() { return MeminfoWithinCgroup("MemTotal", CgroupLimitOf); }

std::string MachineHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

bool NamesThisMachine(std::string_view name) {
  if (name == "localhost" || name == "127.0.0.1") return true;
  const std::string mine = MachineHostName();
  if (mine.empty() || name.empty()) return false;
  // "node1" and "node1.cluster.example" name the same machine.
  auto short_name = [](std::string_view n) { return n.substr(0, n.find('.')); };
  return name == mine || short_name(name) == short_name(mine);
}

int64_t PeakResidentBytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

}  // namespace parallax
