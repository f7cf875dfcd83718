// Test helper: a Plan with only its rank placements filled in, for the launch tests.
//
// PlanOnHosts({{"node1", 2}, {"node2", 2}}) places ranks 0-1 on node1 and 2-3 on node2 (in
// rank order, local ranks 0.. per host), on CPUs or, with kGpu, on GPU `local rank`.
#ifndef PARALLAX_LIB_LAUNCH_TESTING_PLAN_ON_HOSTS_H_
#define PARALLAX_LIB_LAUNCH_TESTING_PLAN_ON_HOSTS_H_

#include <string>
#include <utility>
#include <vector>

#include "lib/plan/plan.h"

namespace parallax::testing {

inline Plan PlanOnHosts(const std::vector<std::pair<std::string, int>>& hosts,
                        DeviceKind device = DeviceKind::kCpu) {
  Plan plan;
  int rank = 0;
  for (const auto& [host, count] : hosts) {
    for (int local = 0; local < count; ++local) {
      RankPlacement r;
      r.rank = rank++;
      r.host = host;
      r.local_rank = local;
      r.local_size = count;
      r.device = device;
      r.device_index = device == DeviceKind::kGpu ? local : 0;
      plan.ranks.push_back(r);
    }
  }
  return plan;
}

}  // namespace parallax::testing

#endif  // PARALLAX_LIB_LAUNCH_TESTING_PLAN_ON_HOSTS_H_
