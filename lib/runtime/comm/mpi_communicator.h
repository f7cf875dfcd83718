// MpiCommunicator: the Communicator over MPI on host memory (OpenMPI 4.1).
//
// Each call maps onto one MPI collective on a private duplicate of MPI_COMM_WORLD
// (AllReduce: MPI_Allreduce, then a division by size() for kMean; AllGatherV: an
// MPI_Allgather of the row counts, then MPI_Allgatherv; Broadcast: the root's dtype and
// shape, then MPI_Bcast; AllToAllV: MPI_Alltoall of the counts, then MPI_Alltoallv;
// ScatterV: MPI_Scatter of a header per rank (verdict, dtype, rows, row shape), then
// MPI_Scatterv;
// Barrier: MPI_Barrier). MPI_Allreduce's reduction order is fixed by its algorithm, which
// is the same on every rank, so every rank gets bit-identical sums. Messages above 2^31
// elements go in several calls (MPI counts are ints).
//
// MPI is initialised once per process (MPI_Init_thread, MPI_THREAD_MULTIPLE so that the
// watchdog below may use MPI too) by the first communicator, and finalised when the last
// one is destroyed; MPI cannot be initialised again after that.
//
// Collective timeout (the watchdog). Every call is numbered (collective #N: the N-th call
// on this communicator, the same N on every rank) and is watched by a helper thread that
// wakes every 20 ms. When one call has been waiting longer than the timeout
// (PARALLAX_COLLECTIVE_TIMEOUT_S, default 300 s; 0 turns the watchdog off), that rank's
// watchdog asks every other rank's watchdog, over a second private communicator, where
// its rank is: in collective #N too, in another collective, busy outside any collective,
// or silent (dead, or MPI unreachable). It waits up to 1 s for the answers, prints one
// line naming the missing ranks, e.g.
//   parallax: error: rank 0: collective #12 (all-reduce; node 'w/parallax/allreduce'
//   instance_key 7) timed out after 300 s: missing rank 2 (busy outside collectives, 11
//   finished); ranks 0, 1, 3 are waiting in it
// and ends the job with MPI_Abort (exit status 3). A rank that dies is caught sooner by
// mpirun itself, which ends the job and names the process. When MPI was initialised
// elsewhere without MPI_THREAD_MULTIPLE, the watchdog still ends a stuck job but cannot
// name the missing ranks.
#ifndef PARALLAX_LIB_RUNTIME_COMM_MPI_COMMUNICATOR_H_
#define PARALLAX_LIB_RUNTIME_COMM_MPI_COMMUNICATOR_H_

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/tensor.h"

namespace parallax {

struct MpiOptions {
  // Seconds one collective may wait before the job is ended; 0: wait forever.
  double collective_timeout_s = 300;
  // How often the watchdog looks at the collective in progress and answers other ranks.
  double watchdog_interval_s = 0.02;
  // How long a timed-out rank waits for the other ranks to say where they are.
  double diagnosis_grace_s = 1.0;

  // The defaults, with collective_timeout_s from PARALLAX_COLLECTIVE_TIMEOUT_S when set.
  static StatusOr<MpiOptions> FromEnvironment();
};

class MpiCommunicator : public Communicator {
 public:
  // Initialises MPI when this process has not yet; errors when it was finalised already.
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create(const MpiOptions& options);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int host_id() const override { return host_id_; }
  int num_hosts() const override { return num_hosts_; }
  int host_of(int rank) const override { return host_of_[static_cast<size_t>(rank)]; }
  std::string_view kind() const override { return "mpi"; }

  Status AllReduce(const Tensor& input, Tensor* output, ReduceOp op) override;
  using Communicator::AllReduce;
  Status AllGatherV(const Tensor& input, Tensor* output) override;
  Status Broadcast(Tensor& tensor, int root) override;
  Status AllToAllV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                   std::vector<int64_t>* received_counts) override;
  Status ScatterV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                  int root) override;
  Status Barrier() override;
  [[noreturn]] void Abort(const Status& error, int exit_code = 3) override;

  // Collectives this communicator has completed (the next one is #completed() + 1).
  int64_t completed() const;

 private:
  struct Impl;
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  void SetLabel(std::string label) override;

  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, host_id_ = 0, num_hosts_ = 1;
  std::vector<int> host_of_;  // per rank
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_COMM_MPI_COMMUNICATOR_H_
