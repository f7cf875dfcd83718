// Binding a plan's hosts to the hosts a job is given at launch.
//
// A plan is made for a cluster spec whose host names are often not the machines the job
// finally runs on: a scheduler hands out nodes when the job starts. So the plan's hosts
// are *roles* — "host 0 with 4 ranks (on 4 GPUs)", "host 1 with 4 ranks", in rank order —
// and `parallax launch` binds them, in order, to the hosts of the *allocation*: the user's
// --hostfile or -H, a scheduler's (SLURM_JOB_NODELIST, PBS_NODEFILE:
// lib/cluster/scheduler_hosts.h), or, when there is none, the plan's own hosts. Role i
// runs on the allocation's i-th host; hosts beyond the plan's are left unused.
//
// A binding is checked once, before anything starts: the allocation has at least as many
// hosts as the plan, each bound host has a slot (or max_slots) for every rank of its
// role, and GPUs for the role's GPU ranks where the allocation says how many it has.
// Errors are one line naming the allocation's source and the host:
// `SLURM_JOB_NODELIST: host 'node02' has 2 slots but plan host 1 (node2) has 4 ranks`.
//
// The bound hostfile (the allocation's names, slots = the role's ranks) is what mpirun
// is given, so that its by-slot mapping starts rank r on the host its role is bound to.
#ifndef PARALLAX_LIB_LAUNCH_HOST_BINDING_H_
#define PARALLAX_LIB_LAUNCH_HOST_BINDING_H_

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/cluster/hostfile.h"
#include "lib/plan/plan.h"

namespace parallax {

// One of a plan's hosts as a role: its ranks are first_rank .. first_rank + ranks - 1.
struct PlanHostRole {
  int index = 0;          // the role's place among the plan's hosts, in rank order
  std::string name;       // the name the plan was made with (the cluster spec's)
  int first_rank = 0;
  int ranks = 0;
  int gpu_ranks = 0;      // of its ranks, those the plan puts on GPUs
  int gpus = 0;           // the GPUs they use (fewer when ranks share one: ranks_per_gpu)
};

// The plan's hosts in rank order.
std::vector<PlanHostRole> PlanHostRoles(const Plan& plan);

struct BoundHost {
  PlanHostRole role;
  HostfileEntry host;  // the allocation's host the role runs on
};

struct HostBinding {
  std::string source;                // the allocation's: "-H", "hosts.txt", "SLURM_JOB_NODELIST"
  std::vector<BoundHost> hosts;      // in the plan's order
  std::vector<std::string> unused;   // the allocation's hosts beyond the plan's

  int world_size() const;
  // The bound hosts with slots = their role's ranks, in rank order (source: `source`).
  Hostfile BoundHostfile() const;
  // "host 0 (node1) -> node01: ranks 0-3 (4 of 4 slots)", one line per role, then
  // "unused: node03, node04" when the allocation has more hosts, for dry runs and logs.
  std::vector<std::string> Describe() const;
};

// Binds the plan's hosts, in order, to the allocation's (see the file comment).
StatusOr<HostBinding> BindPlanHosts(const Plan& plan, const Hostfile& allocation);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_HOST_BINDING_H_
