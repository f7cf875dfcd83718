// Hostfiles: the list of machines a job runs on, in OpenMPI's format, the one users
// already have for mpirun (docs/cluster.md):
//
//   # comments, and blank lines, are ignored
//   node1 slots=4            # 4 ranks on node1
//   node2 slots=4 max_slots=8
//   node3                    # slots default to 1
//
// and the command-line form `-H node1:4,node2:4,node3` (slots default to 1). A batch
// scheduler's allocation is read into the same type (scheduler_hosts.h).
//
// Terms: a *slot* is a place for one rank; `max_slots` is the most ranks mpirun may put
// on the host when oversubscribing. Parallax reads the keywords `slots` and `max_slots`
// (also spelled `max-slots`); others are errors, not silently dropped, as is a host
// listed twice (OpenMPI would add the slots up; Parallax asks for one line per host).
// Errors are one-line kInvalidArgument statuses naming the file and 1-based line:
// `hosts:3: node2: max_slots=2 is less than slots=4`.
#ifndef PARALLAX_LIB_CLUSTER_HOSTFILE_H_
#define PARALLAX_LIB_CLUSTER_HOSTFILE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"

namespace parallax {

struct HostfileEntry {
  std::string name;
  int slots = 1;
  std::optional<int> max_slots;  // unset when not given
  int line = 0;                  // 1-based line in the file; 0 for -H
  // The GPUs the host gives the job, where a scheduler says (SLURM_GPUS_PER_NODE); a
  // hostfile never does. Unset when not known.
  std::optional<int> gpus;
};

struct Hostfile {
  // The file name as given, "-H", or the scheduler's variable (scheduler_hosts.h).
  std::string source;
  std::vector<HostfileEntry> hosts;  // in file order

  int total_slots() const;
  const HostfileEntry* FindHost(std::string_view name) const;
};

// Parses hostfile text; `source` names it in messages.
StatusOr<Hostfile> ParseHostfile(std::string_view text, std::string_view source);

// Reads and parses a hostfile; errors name `path` as given.
StatusOr<Hostfile> LoadHostfile(const std::string& path);

// Parses the argument of mpirun's -H: "node1:4,node2:4,node3". Messages begin "-H: ".
StatusOr<Hostfile> ParseHostList(std::string_view list);

// The hostfile text for `hostfile` ("node1 slots=4\n..."), as handed to mpirun.
std::string FormatHostfile(const Hostfile& hostfile);

}  // namespace parallax

#endif  // PARALLAX_LIB_CLUSTER_HOSTFILE_H_
