// Starting a job's ranks with SLURM's srun inside an allocation, and the sbatch script
// that asks SLURM for one.
//
// `parallax launch DIR --launcher srun` (inside salloc or sbatch) runs, with the plan's
// hosts bound to the allocation's nodes (host_binding.h):
//
//   srun --mpi=pmix --nodes=H --ntasks=N --ntasks-per-node=L --distribution=block
//        --nodelist=node01,node02 --cpu-bind=none --kill-on-bad-exit=1 --label
//        --export=ALL [extra srun args] PARALLAX run DIR [run args]
//
// when every plan host has L ranks; when they differ, --distribution=arbitrary and a
// --nodelist naming each rank's host (node01,node01,node02: rank r on the r-th name)
// place every rank exactly, with no --ntasks-per-node.
//
// Terms and reasons:
//  - *direct launch*: srun starts every rank itself and the ranks wire up MPI through
//    SLURM's PMIx server (--mpi=pmix). Debian's OpenMPI 4.1 is built against the same
//    external PMIx 4 library as Debian's SLURM 22.05 (its mpi/pmix_v4 plugin), so this
//    works with the packages alone; --mpi=pmi2 does not (that OpenMPI has no PMI-2
//    client: its ranks refuse to start).
//  - block distribution fills a node with L ranks before the next, in the allocation's
//    node order, which is the order of SLURM_JOB_NODELIST the binding used.
//  - --kill-on-bad-exit=1 ends every rank when one exits non-zero or dies, as mpirun
//    does; --cpu-bind=none matches mpirun's --bind-to none (a rank runs many threads);
//    --label prefixes each line with its rank (mpirun's --tag-output).
//  - --export=ALL passes this environment on (PATH, NCCL_*, PARALLAX_*, ...). A rank
//    knows it is one of an MPI job by PMIX_RANK, which SLURM's PMIx plugin sets (mpirun
//    sets OMPI_COMM_WORLD_SIZE too): Communicator::FromMpi.
//
// The sbatch script asks for the plan's shape (--nodes, --ntasks-per-node = its largest
// host's ranks, --gpus-per-node for GPU plans) and runs `parallax launch DIR --launcher
// srun ...` in the allocation, from the directory it was written in, which binds the
// plan's hosts to the nodes SLURM gave.
#ifndef PARALLAX_LIB_LAUNCH_SRUN_H_
#define PARALLAX_LIB_LAUNCH_SRUN_H_

#include <string>
#include <string_view>
#include <vector>

#include "lib/launch/host_binding.h"
#include "lib/plan/plan.h"

namespace parallax {

struct SrunOptions {
  std::string srun = "srun";           // the launcher program (looked up in PATH)
  std::string parallax = "parallax";   // the parallax binary each rank runs
  std::vector<std::string> extra_srun_args;  // inserted before the program
  std::vector<std::string> run_args;         // appended to `parallax run DIR`
};

// The srun argv that starts the ranks on the bound hosts (see the file comment).
std::vector<std::string> SrunArgv(const HostBinding& binding, std::string_view job_dir,
                                  const SrunOptions& options);

// The sbatch script for `plan` whose last line runs `launch_argv` (`parallax launch DIR
// --launcher srun ...`, shell-quoted) in `working_dir` (--chdir: where relative paths
// among the run flags were written); `job_name` is sbatch's --job-name.
std::string SbatchScript(const Plan& plan, std::string_view job_name,
                         std::string_view working_dir,
                         const std::vector<std::string>& launch_argv);

}  // namespace parallax

#endif  // PARALLAX_LIB_LAUNCH_SRUN_H_
