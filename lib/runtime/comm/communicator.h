// Communicator: the collectives that the ranks of one job use to talk to each other.
//
// One Communicator per process joins all ranks of the job (MPI_COMM_WORLD). Every call is
// *collective*: each rank makes the same calls in the same order (the rank graphs issue
// collectives by instance key, DESIGN §5), and a call returns on a rank once that rank's
// part is done. Implementations: MpiCommunicator (host memory, mpi_communicator.h),
// LocalCommunicator (one process, size 1, below); NCCL (device memory) will be another.
//
// Terms:
//  - *rank* / *size*: this process's index in the job and the number of processes.
//  - *host*: the ranks that share a machine (MPI_COMM_TYPE_SHARED); *local rank* / *local
//    size* index those ranks, *host id* numbers the hosts 0.. in order of their lowest rank.
//  - *rows*: tensors travel as rows of dimension 0 (AllGatherV, AllToAllV, ScatterV); a row is
//    everything after dimension 0. All ranks must agree on the dtype and the row shape.
//  - *label*: what a collective is for ("node 'w/parallax/allreduce' instance_key 7"), set
//    by the caller with ScopedLabel; it appears in timeout messages.
//
// Numerics: AllReduce sums in an order that the implementation fixes, identically on every
// rank, so every rank gets bit-identical results; kMean is the sum divided by size().
// The order depends on the algorithm (AllReduceAlgorithm) and on nothing else: kFlat
// adds from rank 0 up, kHierarchical adds each host's ranks in rank order and then the
// hosts' sums in host order, so the two differ in the last bits of floats.
// Integer means divide with truncation toward zero (TensorFlow's Div on integers).
//
// Traffic counters: bytes_sent() and messages_sent() total what this rank has handed to
// the transport since the communicator was made — per collective call, the bytes of its
// send buffer addressed to other ranks (an all-to-all's rows for itself are not counted;
// a broadcast or a scatter counts on the root only) and one message per transport call. They count
// what the caller hands over, not what the transport's algorithm puts on the wire
// (docs/comm.md has the table per call).
//
// Errors: bad arguments (a dtype that cannot be reduced, counts that do not match size())
// are returned before anything is sent, so they are the same on every rank when the
// inputs are. A collective that does not complete in time, or a rank that stops (its
// heartbeat goes silent), ends the job (see mpi_communicator.h); a rank that fails for
// any other reason calls Abort so that the others do not wait for it.
#ifndef PARALLAX_LIB_RUNTIME_COMM_COMMUNICATOR_H_
#define PARALLAX_LIB_RUNTIME_COMM_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/status.h"
#include "lib/runtime/tensor.h"

namespace parallax {

enum class ReduceOp {
  kSum,
  kMean,  // the sum divided by size()
  kMin,
  kMax,
  kProd,
};
std::string_view ReduceOpName(ReduceOp op);  // "sum", "mean", ...

// How an all-reduce moves its data.
enum class AllReduceAlgorithm {
  kFlat,  // one collective over all ranks
  // Three steps: each host reduces its ranks' tensors (slice j to its local rank j), the
  // ranks holding slice j on every host all-reduce it among the hosts, and each host
  // gathers the slices back to all its ranks. Off-host bytes per host: 2(H-1)/H of the
  // tensor, whatever the ranks per host (flat: each rank's share, times the host's ranks).
  kHierarchical,
};
std::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm);  // "flat", ...

class Communicator {
 public:
  virtual ~Communicator() = default;

  // MpiCommunicator when this process was started by mpirun or a PMIx launcher such as
  // srun --mpi=pmix (OMPI_COMM_WORLD_SIZE or PMIX_RANK is set), else a LocalCommunicator. Initialises MPI once per process. Defined in
  // mpi_communicator.cc: link //lib/runtime/comm:mpi_communicator to use it.
  static StatusOr<std::unique_ptr<Communicator>> FromMpi();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual int host_id() const = 0;
  virtual int num_hosts() const = 0;
  // "mpi" or "local", for logs.
  virtual std::string_view kind() const = 0;

  // output = the element-wise reduction of every rank's `input` (same dtype and number of
  // elements on every rank). `output` is allocated when it is not already a tensor of
  // input's dtype and shape; it may be `input` itself (in place). Types: float, double,
  // int32, int64 (and uint8, int8, int16, uint16 for everything but kMean). With one
  // host, or one rank per host, kHierarchical is kFlat.
  virtual Status AllReduce(const Tensor& input, Tensor* output, ReduceOp op,
                           AllReduceAlgorithm algorithm) = 0;
  Status AllReduce(const Tensor& input, Tensor* output, ReduceOp op) {
    return AllReduce(input, output, op, AllReduceAlgorithm::kFlat);
  }
  Status AllReduce(Tensor& tensor, ReduceOp op) { return AllReduce(tensor, &tensor, op); }

  // output = every rank's `input` concatenated along dimension 0 in rank order; dimension
  // 0 may differ between ranks (the counts are exchanged first), the rows may not.
  // `input` must have rank >= 1.
  virtual Status AllGatherV(const Tensor& input, Tensor* output) = 0;

  // Every rank's `tensor` becomes rank `root`'s (dtype and shape included: non-root ranks
  // need not know the shape; their tensor is replaced when it differs). The buffer of a
  // non-root `tensor` is written in place when the shape matches: pass a tensor you own.
  virtual Status Broadcast(Tensor& tensor, int root) = 0;

  // Personalised exchange. `send` holds rows grouped by destination rank: the first
  // send_counts[0] rows go to rank 0, the next send_counts[1] to rank 1, ...
  // (send_counts.size() == size(), summing to send.dim(0)). On return `received` holds
  // the rows sent to this rank grouped by source rank in rank order, keeping each
  // sender's order, and received_counts[r] says how many came from rank r.
  virtual Status AllToAllV(const Tensor& send, std::span<const int64_t> send_counts,
                           Tensor* received, std::vector<int64_t>* received_counts) = 0;

  // Personalised distribution from `root` (MPI_Scatterv). On the root, `send` holds rows
  // grouped by destination rank as for AllToAllV (send_counts[r] rows for rank r, summing
  // to send.dim(0)); on the other ranks `send` and `send_counts` are ignored (pass empty
  // ones). On return every rank's `received` holds the rows the root addressed to it, with
  // the root's dtype and row shape (as for Broadcast, the others need not know them; the
  // root's own rows are copied). The root's errors (bad counts, an uninitialised tensor)
  // travel with the header, so every rank returns the same error.
  virtual Status ScatterV(const Tensor& send, std::span<const int64_t> send_counts,
                          Tensor* received, int root) = 0;

  // Returns once every rank has called it.
  virtual Status Barrier() = 0;

  // Ends the whole job because this rank failed with `error`: prints it as one line
  // ("parallax: error: rank R: ...") to stderr and stops every rank (MPI_Abort), with
  // exit status `exit_code` (3: a job or rank failed, DESIGN §2). Never returns. Call it
  // instead of returning from main when other ranks may be waiting in a collective.
  [[noreturn]] virtual void Abort(const Status& error, int exit_code = 3) = 0;

  // The host id of rank `rank` (host_of(rank()) == host_id()), for routing that keeps
  // traffic on a host (the parameter-server push's per-host aggregation). Test hook:
  // PARALLAX_TEST_RANKS_PER_HOST=K makes an MpiCommunicator report hosts of K consecutive
  // ranks (local rank, local size, host id, host_of) instead of the machines, so that
  // multi-host code paths run on one machine; for tests only, never set it otherwise. It
  // is needed only where network namespaces cannot be made: //cmd/parallax:multihost_test
  // runs real hosts as namespaces.
  virtual int host_of(int rank) const { return rank == this->rank() ? host_id() : 0; }

  // The label of the collectives issued while a ScopedLabel lives (see the file comment).
  const std::string& label() const { return label_; }

  // Totals since construction (see the file comment): payload bytes handed over for
  // other ranks, and transport calls. Readable from any thread.
  int64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
  int64_t messages_sent() const { return messages_sent_.load(std::memory_order_relaxed); }

  class ScopedLabel {
   public:
    ScopedLabel(Communicator* communicator, std::string label)
        : communicator_(communicator) {
      if (communicator_ != nullptr) {
        previous_ = communicator_->label_;  // only the calling thread writes it
        communicator_->SetLabel(std::move(label));
      }
    }
    ~ScopedLabel() {
      if (communicator_ != nullptr) communicator_->SetLabel(std::move(previous_));
    }
    ScopedLabel(const ScopedLabel&) = delete;
    ScopedLabel& operator=(const ScopedLabel&) = delete;

   private:
    Communicator* communicator_;
    std::string previous_;
  };

 protected:
  // Implementations that read the label from another thread override this to lock.
  virtual void SetLabel(std::string label) { label_ = std::move(label); }
  // Adds one transport call that hands over `bytes` for other ranks to the counters.
  void CountSent(int64_t bytes, int64_t messages = 1) {
    bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
    messages_sent_.fetch_add(messages, std::memory_order_relaxed);
  }
  std::string label_;

 private:
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> messages_sent_{0};
};

// A job of one process: every collective is local (AllReduce copies, AllGatherV,
// AllToAllV and ScatterV hand the input back, Broadcast from rank 0 leaves the tensor as
// it is);
// nothing is sent, so the traffic counters stay 0.
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  int host_id() const override { return 0; }
  int num_hosts() const override { return 1; }
  std::string_view kind() const override { return "local"; }

  Status AllReduce(const Tensor& input, Tensor* output, ReduceOp op,
                   AllReduceAlgorithm algorithm) override;
  using Communicator::AllReduce;
  Status AllGatherV(const Tensor& input, Tensor* output) override;
  Status Broadcast(Tensor& tensor, int root) override;
  Status AllToAllV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                   std::vector<int64_t>* received_counts) override;
  Status ScatterV(const Tensor& send, std::span<const int64_t> send_counts, Tensor* received,
                  int root) override;
  Status Barrier() override { return Status::Ok(); }
  [[noreturn]] void Abort(const Status& error, int exit_code = 3) override;
};

namespace comm_internal {

// Checks shared by the implementations; errors say which argument is wrong.
Status CheckReducible(const Tensor& input, ReduceOp op);
Status CheckRows(const Tensor& tensor, std::string_view what);  // rank >= 1, fixed-size type
// `what` names the collective in the messages ("all-to-all", "scatter").
Status CheckSendCounts(const Tensor& send, std::span<const int64_t> send_counts, int size,
                       std::string_view what = "all-to-all");
// The shape of a tensor of `rows` rows shaped like `like`'s rows.
TensorShape WithRows(const TensorShape& like, int64_t rows);
// Bytes of one row of `tensor` (rank >= 1).
int64_t RowBytes(const Tensor& tensor);
// tensor /= divisor element-wise (floats: IEEE division; integers: truncating).
void DivideInPlace(Tensor& tensor, int divisor);

}  // namespace comm_internal

}  // namespace parallax

#endif  // PARALLAX_LIB_RUNTIME_COMM_COMMUNICATOR_H_
