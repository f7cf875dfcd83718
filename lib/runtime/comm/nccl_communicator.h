// NcclCommunicator: the collectives of a GPU rank (--config=cuda build), over the rank's
// host communicator (the MpiCommunicator every rank has).
//
// Terms:
//  - *device tensors* (in this rank's GPU memory) move through NCCL on the GPU's stream,
//    so the collective is ordered with the kernels before and after it without events:
//    all-reduce (ncclAllReduce; a mean is ncclAvg for floats), all-gather with rows that
//    differ per rank (the counts through the host communicator, then one ncclBroadcast
//    per rank in a group). The call returns once the work is queued.
//  - *host tensors* (the ops that run on the host: parameter-server pulls and pushes,
//    their indices) go to the host communicator unchanged.
//  - *host-staged*: a device tensor copied to the host, through the host communicator,
//    and back. Every collective of a job whose ranks share a GPU is host-staged (NCCL
//    refuses two ranks on one device; the log says which ranks share which GPU), and so
//    are broadcasts (once, at start), all-to-alls and scatters of device tensors, and
//    integer means (NCCL's average of integers does not truncate as TensorFlow does).
//  - NCCL's reduction order is its own (ring or tree, chosen by size): every rank gets the
//    same bits, but not those of the MPI communicator's rank-order sums.
//  - bootstrap: rank 0 makes the ncclUniqueId and the host communicator broadcasts it;
//    every rank's GPU is named by host and PCI bus id to find shared GPUs first.
// Timeouts and a rank that stops are the host communicator's (its watchdog and
// heartbeat end the job).
#ifndef PARALLAX_LIB_RUNTIME_COMM_NCCL_COMMUNICATOR_H_
#define PARALLAX_LIB_RUNTIME_COMM_NCCL_COMMUNICATOR_H_

#include <nccl.h>

#include <memory>
#include <string>

#include "lib/runtime/comm/communicator.h"
#include "lib/runtime/cuda/cuda_device.h"

namespace parallax {

class NcclCommunicator : public Communicator {
 public:
  // Collective over `host`'s ranks: every rank calls it at the same point.
  static StatusOr<std::unique_ptr<NcclCommunicator>> Create(Communicator& host, CudaDevice& gpu);
  ~NcclCommunicator() override;

  // True when device tensors go through NCCL; false when host-staged for all (shared GPUs).
  bool uses_nccl() const { return nccl_ != nullptr; }

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  int local_rank() const override { return host_.local_rank(); }
  int local_size() const override { return host_.local_size(); }
  int host_id() const override { return host_.host_id(); }
  int num_hosts() const override { return host_.num_hosts(); }
  int host_of(int rank) const override { return host_.host_of(rank); }
  std::string_view kind() const override { return uses_nccl() ? "nccl" : "mpi (host-staged)"; }

  Status AllReduce(const Tensor& input, Tensor* output, ReduceOp op,
                   AllReduceAlgorithm algorithm) override;
  using Communicator::AllReduce;
  Status AllGatherV(const Tensor& input, Tensor* output) override;
  Status Broadcast(Tensor& tensor, int root) override;
  Status AllToAllV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                   std::vector<int64_t>* received_counts) override;
  Status ScatterV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                  int root) override;
  Status Barrier() override { return host_.Barrier(); }
  [[noreturn]] void Abort(const Status& error, int exit_code = 3) override {
    host_.Abort(error, exit_code);
  }

 private:
  NcclCommunicator(Communicator& host, CudaDevice& gpu) : host_(host), gpu_(gpu) {}
  bool OnGpu(const Tensor& t) const { return t.memory() == gpu_.memory().get(); }
  Status NcclStatus(ncclResult_t result, std::string_view call) const;
  // Host-staged: `device_tensor` copied to the host, `call(host copy)`'s result copied back.
  template <typename HostCall>
  StatusOr<Tensor> ThroughHost(const Tensor& device_tensor, HostCall&& call);

  Communicator& host_;
  CudaDevice& gpu_;
  ncclComm_t nccl_ = nullptr;
};

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_COMM_NCCL_COMMUNICATOR_H_
