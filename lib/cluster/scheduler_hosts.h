// The hosts a batch scheduler gave a job, read from the environment it runs the job in,
// as a Hostfile (docs/cluster.md, "Allocations"):
//
//   SLURM  SLURM_JOB_NODELIST   node[01-03,07],gpu5       (hostlist: bracket ranges)
//          SLURM_TASKS_PER_NODE 2(x3),1,4                 (slots per node, in list order)
//          SLURM_JOB_CPUS_PER_NODE  the same form, read when SLURM_TASKS_PER_NODE is unset
//          SLURM_GPUS_PER_NODE  [type:]N                  (GPUs per node, when asked for)
//   PBS    PBS_NODEFILE         a file with one line per slot: a host listed 4 times
//                               gives the job 4 slots there
//
// Terms: a *hostlist* is SLURM's compressed list of names: comma-separated names, each
// possibly holding bracketed ranges, "prefix[01-03,07]suffix" (a range keeps the width of
// its lower bound: 01-03 gives 01, 02, 03). A *count list* is SLURM's compressed list of
// per-node numbers, "2(x3),1" = 2, 2, 2, 1. The *allocation* is the hosts in the
// scheduler's order with their slots (and GPUs where the scheduler says), which
// `parallax launch` binds the plan's hosts to (lib/launch/host_binding.h). SLURM's slots
// are the tasks the allocation was asked for per node, as OpenMPI reads them.
//
// Errors are one-line kInvalidArgument statuses naming the variable (or file and line)
// and the bad text: `SLURM_JOB_NODELIST: 'node[3-1]': range 3-1 runs backwards`.
#ifndef PARALLAX_LIB_CLUSTER_SCHEDULER_HOSTS_H_
#define PARALLAX_LIB_CLUSTER_SCHEDULER_HOSTS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/hostfile.h"

namespace parallax {

// The most hosts a hostlist may expand to: a limit that turns a typo (node[1-9999999])
// into an error rather than a job.
inline constexpr int kMaxAllocationHosts = 1 << 16;

// The names of a SLURM hostlist, in order. `variable` names it in messages.
StatusOr<std::vector<std::string>> ExpandSlurmHostlist(std::string_view list,
                                                        std::string_view variable);

// The numbers of a SLURM count list ("2(x3),1" -> 2, 2, 2, 1).
StatusOr<std::vector<int>> ExpandSlurmCounts(std::string_view text, std::string_view variable);

// An environment variable's value, or nullopt when it is unset (tests pass a map).
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
// std::getenv.
std::optional<std::string> ProcessEnv(std::string_view name);

// The SLURM allocation described by SLURM_JOB_NODELIST (or the older SLURM_NODELIST) and
// the count variables above; source "SLURM_JOB_NODELIST". nullopt when neither list is set.
StatusOr<std::optional<Hostfile>> SlurmAllocation(const EnvLookup& env);

// The hosts of a PBS node file's text (one name per line and slot; blank lines
// ignored), in order of first appearance; `source` names it in messages.
StatusOr<Hostfile> ParsePbsNodefile(std::string_view text, std::string_view source);

// The PBS allocation of the file PBS_NODEFILE names; source "PBS_NODEFILE=<path>".
// nullopt when PBS_NODEFILE is unset.
StatusOr<std::optional<Hostfile>> PbsAllocation(const EnvLookup& env);

// The scheduler's allocation: SLURM's when its node list is set, else PBS's, else
// nullopt (not inside a scheduler's job).
StatusOr<std::optional<Hostfile>> SchedulerAllocation(const EnvLookup& env);

}  // namespace parallax

#endif  // PARALLAX_LIB_CLUSTER_SCHEDULER_HOSTS_H_
