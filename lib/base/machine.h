// What this machine gives a process: its cores, its memory and what the process has
// taken of it.
//
// Used to refuse settings that cannot work here before anything is allocated (a --batch
// whose input alone does not fit in memory, more kernel threads than make sense), with a
// one-line error rather than an abort.
//
// Terms: *available memory* is the kernel's estimate of what can be allocated without
// swapping (MemAvailable of /proc/meminfo), lowered to what the process's cgroup (v2)
// still allows (memory.max less memory.current), as in a container or a batch job.
// *Total memory* is MemTotal, lowered to the cgroup's memory.max: all the processes of
// this machine (or container) could ever hold together. *Peak resident memory* is the
// most physical memory this process has held at once (getrusage's ru_maxrss).
#ifndef PARALLAX_LIB_BASE_MACHINE_H_
#define PARALLAX_LIB_BASE_MACHINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parallax {

// The hardware threads of this machine, at least 1.
int MachineCores();
// The CPU's model name ("Intel(R) Xeon(R) ..." from /proc/cpuinfo), "unknown CPU" where
// it cannot be read.
std::string MachineCpuModel();

// Available memory in bytes (see the file comment); nullopt where /proc/meminfo cannot be
// read.
std::optional<int64_t> AvailableMemoryBytes();

// Total memory in bytes (see the file comment); nullopt where /proc/meminfo cannot be
// read.
std::optional<int64_t> TotalMemoryBytes();

// Peak resident memory of this process in bytes, so far.
int64_t PeakResidentBytes();

// This machine's host name (gethostname), "" where it has none.
std::string MachineHostName();
// Whether `name` is this machine: localhost, 127.0.0.1, its host name, or the host name
// with or without a domain ("node1" for "node1.cluster.example").
bool NamesThisMachine(std::string_view name);

// The parts, for tests: a field ("MemAvailable", "MemTotal") from /proc/meminfo's text;
// the cgroup v2 room from the process's cgroup line ("0::/user.slice/x") under
// `cgroup_root`, nullopt when it sets no limit ("max") or the files are not there.
std::optional<int64_t> MeminfoBytesOf(const std::string& meminfo_text, std::string_view field);
std::optional<int64_t> CgroupRoomOf(const std::string& cgroup_root,
                                    const std::string& proc_self_cgroup_text);
// The cgroup v2 memory.max of that cgroup; nullopt as above.
std::optional<int64_t> CgroupLimitOf(const std::string& cgroup_root,
                                     const std::string& proc_self_cgroup_text);

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_MACHINE_H_
