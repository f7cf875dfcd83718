#include "lib/launch/restarts.h"

#include <algorithm>

#include "lib/launch/host_binding.h"

namespace parallax {

std::optional<std::string> CheckpointDirOfRunArgs(const std::vector<std::string>& run_args) {
  constexpr std::string_view kFlag = "--checkpoint-dir";
  std::optional<std::string> dir;
  for (size_t i = 0; i < run_args.size(); ++i) {
    const std::string& arg = run_args[i];
    if (arg == kFlag && i + 1 < run_args.size()) {
      dir = run_args[++i];
    } else if (arg.starts_with(kFlag) && arg.size() > kFlag.size() && arg[kFlag.size()] == '=') {
      dir = arg.substr(kFlag.size() + 1);
    }
  }
  return dir;
}

std::vector<std::string> RelaunchRunArgs(const std::vector<std::string>& run_args) {
  std::vector<std::string> args = run_args;
  std::erase_if(args, [](const std::string& arg) {
    return arg == "--resume" || arg.starts_with("--resume=");
  });
  args.push_back("--resume=if-exists");
  return args;
}

StatusOr<RelaunchHosts> ChooseRelaunchHosts(const Plan& plan, const Hostfile& allocation,
                                            const std::vector<std::string>& lost, int min_ranks) {
  RelaunchHosts relaunch;
  relaunch.allocation.source = allocation.source;
  for (const HostfileEntry& host : allocation.hosts) {
    if (std::find(lost.begin(), lost.end(), host.name) == lost.end()) {
      relaunch.allocation.hosts.push_back(host);
    }
  }
  const std::vector<PlanHostRole> roles = PlanHostRoles(plan);
  const std::string lost_text = fmt::format("hosts lost: {}", fmt::join(lost, ", "));
  if (relaunch.allocation.hosts.empty()) {
    return FailedPreconditionError("{}; no host of {} is left", lost_text, allocation.source);
  }
  // Every role still fits (spare hosts take the lost ones' place): the same plan.
  if (BindPlanHosts(plan, relaunch.allocation).ok()) {
    relaunch.kept_roles = static_cast<int>(roles.size());
    relaunch.ranks = plan.world_size();
    return relaunch;
  }
  relaunch.kept_roles =
      std::min(static_cast<int>(roles.size()), static_cast<int>(relaunch.allocation.hosts.size()));
  relaunch.ranks = 0;
  for (int i = 0; i < relaunch.kept_roles; ++i) relaunch.ranks += roles[i].ranks;
  relaunch.replanned = true;
  if (relaunch.ranks < min_ranks) {
    return FailedPreconditionError("{}; the {} rank{} the hosts left can run {} fewer than "
                                   "--min-ranks {}",
                                   lost_text, relaunch.ranks, relaunch.ranks == 1 ? "" : "s",
                                   relaunch.ranks == 1 ? "is" : "are", min_ranks);
  }
  return relaunch;
}

std::vector<std::string> KeepGlobalBatch(const std::vector<std::string>& run_args, int64_t batch,
                                         bool batch_open, int old_ranks, int new_ranks,
                                         std::string* note) {
  const int64_t global = batch * old_ranks;
  if (batch <= 0) {
    *note = "the input pipeline sets the batch per rank: the global batch changes with the "
            "rank count";
    return run_args;
  }
  if (!batch_open || global % new_ranks != 0) {
    *note = fmt::format("the global batch changes from {} to {} ({})", global, batch * new_ranks,
                        batch_open ? fmt::format("{} examples do not split evenly over {} ranks",
                                                 global, new_ranks)
                                   : fmt::format("the graph fixes the batch at {} per rank", batch));
    return run_args;
  }
  std::vector<std::string> args;
  for (size_t i = 0; i < run_args.size(); ++i) {
    if (run_args[i] == "--batch") {
      ++i;  // and its value
    } else if (!run_args[i].starts_with("--batch=")) {
      args.push_back(run_args[i]);
    }
  }
  args.push_back(fmt::format("--batch={}", global / new_ranks));
  *note = fmt::format("the global batch stays {} ({} per rank on {} rank{})", global,
                      global / new_ranks, new_ranks, new_ranks == 1 ? "" : "s");
  return args;
}

}  // namespace parallax
