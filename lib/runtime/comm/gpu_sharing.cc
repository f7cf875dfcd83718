// See gpu_sharing.h.
#include "lib/runtime/comm/gpu_sharing.h"

#include <fmt/format.h>

#include <map>

namespace parallax {

std::string DescribeSharedGpus(const std::vector<std::string>& gpu_by_rank) {
  std::map<std::string, std::vector<int>> ranks_by_gpu;
  for (size_t r = 0; r < gpu_by_rank.size(); ++r) {
    ranks_by_gpu[gpu_by_rank[r]].push_back(static_cast<int>(r));
  }
  // In the order of each shared GPU's lowest rank.
  std::map<int, std::string> clauses;
  for (const auto& [gpu, ranks] : ranks_by_gpu) {
    if (ranks.size() < 2) continue;
    std::string list;
    for (size_t i = 0; i < ranks.size(); ++i) {
      list += i == 0 ? "" : (i + 1 == ranks.size() ? " and " : ", ");
      list += std::to_string(ranks[i]);
    }
    clauses[ranks.front()] = fmt::format("ranks {} share GPU {}", list, gpu);
  }
  std::string out;
  for (const auto& [first, clause] : clauses) out += (out.empty() ? "" : "; ") + clause;
  return out;
}

}  // namespace parallax
