// srun's argv for bound plans (block when every host has the same ranks, arbitrary when
// not) and the sbatch script.
#include "lib/launch/srun.h"

#include <catch2/catch.hpp>

#include "lib/launch/mpirun.h"
#include "lib/launch/testing/plan_on_hosts.h"

namespace parallax {
namespace {

using testing::PlanOnHosts;

SrunOptions Plain() {
  SrunOptions options;
  options.parallax = "/opt/parallax/bin/parallax";
  return options;
}

TEST_CASE("srun: hosts with equal ranks are a block distribution on the bound nodes") {
  StatusOr<HostBinding> binding =
      BindPlanHosts(PlanOnHosts({{"node1", 2}, {"node2", 2}}), *ParseHostList("n01:2,n02:2,n03:2"));
  REQUIRE(binding.ok());
  SrunOptions options = Plain();
  options.run_args = {"--steps", "20"};
  options.extra_srun_args = {"--partition", "gpu"};
  CHECK(ShellLine(SrunArgv(*binding, "/jobs/mlp", options)) ==
        "srun --mpi=pmix --nodes=2 --ntasks=4 --ntasks-per-node=2 --distribution=block "
        "--nodelist=n01,n02 --cpu-bind=none --kill-on-bad-exit=1 --label "
        "--export=ALL --partition gpu /opt/parallax/bin/parallax run "
        "/jobs/mlp --steps 20");
}

TEST_CASE("srun: hosts with other rank counts name each rank's node (arbitrary)") {
  StatusOr<HostBinding> binding =
      BindPlanHosts(PlanOnHosts({{"node1", 2}, {"node2", 1}}), *ParseHostList("n01:2,n02:2"));
  REQUIRE(binding.ok());
  CHECK(ShellLine(SrunArgv(*binding, "/jobs/mlp", Plain())) ==
        "srun --mpi=pmix --nodes=2 --ntasks=3 --distribution=arbitrary --nodelist=n01,n01,n02 "
        "--cpu-bind=none --kill-on-bad-exit=1 --label --export=ALL "
        "/opt/parallax/bin/parallax run /jobs/mlp");
}

TEST_CASE("sbatch: the plan's shape, then the launch line") {
  const std::vector<std::string> launch = {"/opt/parallax/bin/parallax", "launch", "/jobs/my job",
                                           "--launcher", "srun", "--steps", "20"};
  const std::string cpu =
      SbatchScript(PlanOnHosts({{"node1", 2}, {"node2", 1}}), "parallax-mlp", "/home/me", launch);
  CHECK(cpu ==
        "#!/bin/sh\n"
        "# A Parallax job of 3 ranks on 2 hosts as a SLURM batch job: `sbatch THIS_FILE`.\n"
        "# Written by `parallax launch --sbatch`. In the allocation, `parallax launch` binds the\n"
        "# plan's hosts, in order, to the nodes SLURM gave and starts the ranks with srun.\n"
        "#SBATCH --job-name=parallax-mlp\n"
        "#SBATCH --chdir=/home/me\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --ntasks-per-node=2\n"
        "exec /opt/parallax/bin/parallax launch '/jobs/my job' --launcher srun --steps 20\n");
  const std::string gpu =
      SbatchScript(PlanOnHosts({{"g1", 4}, {"g2", 4}}, DeviceKind::kGpu), "parallax-mlp", "/w",
                   launch);
  CHECK(gpu.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
                 "#SBATCH --gpus-per-node=4\nexec ") != std::string::npos);
}

}  // namespace
}  // namespace parallax
