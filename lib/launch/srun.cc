#include "lib/launch/srun.h"

#include <algorithm>

#include <fmt/format.h>

#include "lib/launch/mpirun.h"

namespace parallax {

std::vector<std::string> SrunArgv(const HostBinding& binding, std::string_view job_dir,
                                  const SrunOptions& options) {
  const int world_size = binding.world_size();
  const bool uniform = std::all_of(
      binding.hosts.begin(), binding.hosts.end(),
      [&](const BoundHost& b) { return b.role.ranks == binding.hosts.front().role.ranks; });
  std::vector<std::string> argv = {options.srun, "--mpi=pmix",
                                   fmt::format("--nodes={}", binding.hosts.size()),
                                   fmt::format("--ntasks={}", world_size)};
  std::string nodelist;
  for (const BoundHost& bound : binding.hosts) {
    // Block: each node once. Arbitrary: each rank's node, in rank order.
    for (int i = 0; i < (uniform ? 1 : bound.role.ranks); ++i) {
      if (!nodelist.empty()) nodelist += ',';
      nodelist += bound.host.name;
    }
  }
  if (uniform) {
    argv.push_back(fmt::format("--ntasks-per-node={}", binding.hosts.front().role.ranks));
    argv.push_back("--distribution=block");
  } else {
    argv.push_back("--distribution=arbitrary");
  }
  argv.push_back("--nodelist=" + nodelist);
  argv.push_back("--cpu-bind=none");
  argv.push_back("--kill-on-bad-exit=1");
  argv.push_back("--label");
  argv.push_back("--export=ALL");
  argv.insert(argv.end(), options.extra_srun_args.begin(), options.extra_srun_args.end());
  argv.push_back(options.parallax);
  argv.push_back("run");
  argv.push_back(std::string(job_dir));
  argv.insert(argv.end(), options.run_args.begin(), options.run_args.end());
  return argv;
}

std::string SbatchScript(const Plan& plan, std::string_view job_name,
                         std::string_view working_dir,
                         const std::vector<std::string>& launch_argv) {
  const std::vector<PlanHostRole> roles = PlanHostRoles(plan);
  int ranks_per_node = 0;
  int gpus_per_node = 0;
  for (const PlanHostRole& role : roles) {
    ranks_per_node = std::max(ranks_per_node, role.ranks);
    gpus_per_node = std::max(gpus_per_node, role.gpus);
  }
  std::string script = fmt::format(
      "#!/bin/sh\n"
      "# A Parallax job of {} rank{} on {} host{} as a SLURM batch job: `sbatch THIS_FILE`.\n"
      "# Written by `parallax launch --sbatch`. In the allocation, `parallax launch` binds the\n"
      "# plan's hosts, in order, to the nodes SLURM gave and starts the ranks with srun.\n"
      "#SBATCH --job-name={}\n"
      "#SBATCH --chdir={}\n"
      "#SBATCH --nodes={}\n"
      "#SBATCH --ntasks-per-node={}\n",
      plan.world_size(), plan.world_size() == 1 ? "" : "s", roles.size(),
      roles.size() == 1 ? "" : "s", job_name, ShellQuote(working_dir), roles.size(),
      ranks_per_node);
  if (gpus_per_node > 0) script += fmt::format("#SBATCH --gpus-per-node={}\n", gpus_per_node);
  script += "exec " + ShellLine(launch_argv) + "\n";
  return script;
}

}  // namespace parallax
