// What this machine gives a process: its cores and the memory it may still take.
//
// Used to refuse settings that cannot work here before anything is allocated (a --batch
// whose input alone does not fit in memory, more kernel threads than make sense), with a
// one-line error rather than an abort.
//
// Terms: *available memory* is the kernel's estimate of what can be allocated without
// swapping (MemAvailable of /proc/meminfo), lowered to what the process's cgroup (v2)
// still allows (memory.max less memory.current), as in a container or a batch job.
#ifndef PARALLAX_LIB_BASE_MACHINE_H_
#define PARALLAX_LIB_BASE_MACHINE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

// The hardware threads of this machine, at least 1.
int MachineCores();
// The CPU's model name ("Intel(R) Xeon(R) ..." from /proc/cpuinfo), "unknown CPU" where
// it cannot be read.
std::string MachineCpuModel();

// Available memory in bytes (see the file comment); nullopt where /proc/meminfo cannot be
// read.
std::optional<int64_t> AvailableMemoryBytes();

// The parts, for tests: MemAvailable from /proc/meminfo's text; the cgroup v2 room from
// the process's cgroup line ("0::/user.slice/x") under `cgroup_root`, nullopt when it
// sets no limit ("max") or the files are not there.
std::optional<int64_t> MemAvailableOf(const std::string& meminfo_text);
std::optional<int64_t> CgroupRoomOf(const std::string& cgroup_root,
                                    const std::string& proc_self_cgroup_text);

}  // namespace parallax

#endif  // PARALLAX_LIB_BASE_MACHINE_H_
