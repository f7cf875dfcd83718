#include "lib/runtime/comm/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "lib/ops/dtypes.h"

namespace parallax {

using comm_internal::RowBytes;
using comm_internal::WithRows;

namespace {

constexpr int kQueryTag = 1;  // "where are you?" to a watchdog, carrying the asker's #N
constexpr int kReplyTag = 2;  // its RankState
// Elements (AllReduce) or bytes (Broadcast) per MPI call; MPI counts are ints.
constexpr int64_t kMaxChunk = int64_t{1} << 30;
constexpr int kMaxBroadcastDims = 32;

// Process-wide MPI state: initialised once, finalised with the last communicator.
std::mutex& MpiStateMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
int g_communicators = 0;
bool g_initialised_here = false;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status MpiError(std::string_view call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status(StatusCode::kAborted,
                fmt::format("{} failed: {}", call, std::string_view(text, length)));
}

#define PX_MPI_RETURN_IF_ERROR(call)                                  \
  do {                                                                \
    const int px_mpi_rc_ = (call);                                    \
    if (px_mpi_rc_ != MPI_SUCCESS) return MpiError(#call, px_mpi_rc_); \
  } while (0)

// The element type for reductions (CheckReducible has accepted the dtype).
MPI_Datatype ReduceType(DataType dtype) {
  switch (dtype) {
    case tensorflow::DT_FLOAT: return MPI_FLOAT;
    case tensorflow::DT_DOUBLE: return MPI_DOUBLE;
    case tensorflow::DT_INT32: return MPI_INT32_T;
    case tensorflow::DT_INT64: return MPI_INT64_T;
    case tensorflow::DT_UINT8: return MPI_UINT8_T;
    case tensorflow::DT_INT8: return MPI_INT8_T;
    case tensorflow::DT_INT16: return MPI_INT16_T;
    case tensorflow::DT_UINT16: return MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op ReduceOperation(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProd: return MPI_PROD;
  }
  return MPI_SUM;
}

// Counts and displacements of a v-collective: in bytes when everything fits an int, else
// in rows (a contiguous datatype of one row; type signatures still match the peers').
class VLayout {
 public:
  ~VLayout() {
    if (row_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&row_type_);
  }
  Status Build(std::span<const int64_t> rows, int64_t row_bytes) {
    int64_t total_rows = 0;
    for (int64_t r : rows) total_rows += r;
    int64_t unit = 1;
    type_ = MPI_BYTE;
    if (total_rows * row_bytes > INT_MAX) {
      if (total_rows > INT_MAX || row_bytes > INT_MAX) {
        return ResourceExhaustedError("a collective of {} rows of {} bytes is too large for "
                                      "MPI's int counts",
                                      total_rows, row_bytes);
      }
      PX_MPI_RETURN_IF_ERROR(
          MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &row_type_));
      PX_MPI_RETURN_IF_ERROR(MPI_Type_commit(&row_type_));
      type_ = row_type_;
    } else {
      unit = row_bytes;
    }
    counts_.resize(rows.size());
    displacements_.resize(rows.size());
    int64_t offset = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      counts_[r] = static_cast<int>(rows[r] * unit);
      displacements_[r] = static_cast<int>(offset);
      offset += rows[r] * unit;
    }
    return Status::Ok();
  }
  const int* counts() const { return counts_.data(); }
  const int* displacements() const { return displacements_.data(); }
  MPI_Datatype type() const { return type_; }

 private:
  std::vector<int> counts_, displacements_;
  MPI_Datatype type_ = MPI_BYTE;
  MPI_Datatype row_type_ = MPI_DATATYPE_NULL;
};

// What a watchdog tells another rank's watchdog about its rank.
struct RankState {
  int64_t in_progress = 0;  // the collective it waits in (#N), 0 when none
  int64_t completed = 0;    // collectives it has finished
  char op[24] = {};
  char label[216] = {};
};

void CopyTruncated(char* to, size_t capacity, std::string_view from) {
  const size_t n = std::min(capacity - 1, from.size());
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

std::string Describe(std::string_view op, std::string_view label) {
  return label.empty() ? std::string(op) : fmt::format("{}; {}", op, label);
}

}  // namespace

// ---- Impl: MPI handles and the watchdog ----

struct MpiCommunicator::Impl {
  MpiOptions options;
  MPI_Comm comm = MPI_COMM_NULL;  // collectives
  MPI_Comm side = MPI_COMM_NULL;  // watchdog queries and replies
  bool thread_multiple = false;
  int rank = 0;
  int size = 1;

  // The collective in progress: written by the calling thread, read by the watchdog.
  std::atomic<int64_t> in_progress{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> started_ns{0};
  std::atomic<const char*> op{""};
  std::mutex label_mutex;
  std::string label;

  std::mutex wake_mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread watchdog;

  // Marks one Communicator call as the collective in progress, for the watchdog.
  class Watch {
   public:
    Watch(Impl& impl, const char* op) : impl_(impl) {
      number_ = impl.completed.load(std::memory_order_relaxed) + 1;
      impl.op.store(op, std::memory_order_relaxed);
      impl.started_ns.store(NowNs(), std::memory_order_relaxed);
      impl.in_progress.store(number_, std::memory_order_release);
    }
    ~Watch() {
      impl_.completed.store(number_, std::memory_order_release);
      impl_.in_progress.store(0, std::memory_order_release);
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    Impl& impl_;
    int64_t number_ = 0;
  };

  RankState LocalState() {
    RankState state;
    state.in_progress = in_progress.load(std::memory_order_acquire);
    state.completed = completed.load(std::memory_order_acquire);
    CopyTruncated(state.op, sizeof state.op, op.load(std::memory_order_relaxed));
    std::lock_guard<std::mutex> lock(label_mutex);
    CopyTruncated(state.label, sizeof state.label, label);
    return state;
  }

  // Replies to every query waiting on the side communicator.
  void AnswerQueries() {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, side, &flag, &status) != MPI_SUCCESS || !flag) {
        return;
      }
      int64_t asked = 0;
      if (MPI_Recv(&asked, 1, MPI_INT64_T, status.MPI_SOURCE, kQueryTag, side,
                   MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        return;
      }
      RankState state = LocalState();
      // Small enough to go eagerly: never waits for the asker.
      MPI_Send(&state, sizeof state, MPI_BYTE, status.MPI_SOURCE, kReplyTag, side);
    }
  }

  void WatchdogLoop() {
    const auto interval = std::chrono::duration<double>(options.watchdog_interval_s);
    std::unique_lock<std::mutex> lock(wake_mutex);
    while (!stop) {
      wake.wait_for(lock, interval);
      if (stop) break;
      lock.unlock();
      if (thread_multiple) AnswerQueries();
      const int64_t number = in_progress.load(std::memory_order_acquire);
      if (number != 0) {
        // started_ns may already be a later collective's: that only shortens `waited`.
        const double waited =
            static_cast<double>(NowNs() - started_ns.load(std::memory_order_relaxed)) * 1e-9;
        if (waited > options.collective_timeout_s &&
            in_progress.load(std::memory_order_acquire) == number) {
          TimedOut(number);
        }
      }
      lock.lock();
    }
  }

  // Finds where the other ranks are, prints which are missing and ends the job.
  [[noreturn]] void TimedOut(int64_t number) {
    const RankState mine = LocalState();
    std::string message = fmt::format("collective #{} ({}) timed out after {:g} s", number,
                                      Describe(mine.op, mine.label), options.collective_timeout_s);
    if (!thread_multiple) {
      message += ": the missing ranks cannot be named (MPI was initialised without "
                 "MPI_THREAD_MULTIPLE)";
    } else {
      std::vector<std::optional<RankState>> states(static_cast<size_t>(size));
      states[static_cast<size_t>(rank)] = mine;
      std::vector<MPI_Request> queries(static_cast<size_t>(size), MPI_REQUEST_NULL);
      const int64_t asked = number;  // lives until MPI_Abort
      for (int r = 0; r < size; ++r) {
        if (r != rank) {
          MPI_Isend(&asked, 1, MPI_INT64_T, r, kQueryTag, side, &queries[static_cast<size_t>(r)]);
        }
      }
      const int64_t deadline =
          NowNs() + static_cast<int64_t>(options.diagnosis_grace_s * 1e9);
      int answered = 1;
      while (answered < size && NowNs() < deadline) {
        AnswerQueries();  // ranks that timed out too are asking us
        int flag = 0;
        MPI_Status status;
        if (MPI_Iprobe(MPI_ANY_SOURCE, kReplyTag, side, &flag, &status) == MPI_SUCCESS && flag) {
          RankState state;
          if (MPI_Recv(&state, sizeof state, MPI_BYTE, status.MPI_SOURCE, kReplyTag, side,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS) {
            auto& slot = states[static_cast<size_t>(status.MPI_SOURCE)];
            if (!slot) ++answered;
            slot = state;
          }
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      std::vector<std::string> missing;
      std::vector<int> waiting;
      for (int r = 0; r < size; ++r) {
        const auto& state = states[static_cast<size_t>(r)];
        if (state && state->in_progress == number) {
          waiting.push_back(r);
        } else if (!state) {
          missing.push_back(
              fmt::format("rank {} (no answer: it died, or is stuck outside MPI)", r));
        } else if (state->in_progress == 0) {
          missing.push_back(fmt::format("rank {} (busy outside collectives, {} finished)", r,
                                        state->completed));
        } else {
          missing.push_back(fmt::format("rank {} (waiting in collective #{} ({}) instead)", r,
                                        state->in_progress,
                                        Describe(state->op, state->label)));
        }
      }
      if (missing.empty()) {
        message += ": every rank is waiting in it (MPI made no progress)";
      } else {
        message += fmt::format(": missing {}; {} {} waiting in it", fmt::join(missing, ", "),
                               waiting.size() == 1 ? "rank" : "ranks", fmt::join(waiting, ", "));
      }
    }
    std::fprintf(stderr, "parallax: error: rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
    if (thread_multiple) MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);  // mpirun ends the other ranks when one exits with an error
  }
};

// ---- Options ----

StatusOr<MpiOptions> MpiOptions::FromEnvironment() {
  MpiOptions options;
  const char* text = std::getenv("PARALLAX_COLLECTIVE_TIMEOUT_S");
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
      return InvalidArgumentError("PARALLAX_COLLECTIVE_TIMEOUT_S='{}': expected a number of "
                                  "seconds >= 0 (0: no timeout)",
                                  text);
    }
    options.collective_timeout_s = seconds;
  }
  return options;
}

// ---- MpiCommunicator ----

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(const MpiOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  {
    std::lock_guard<std::mutex> lock(MpiStateMutex());
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (finalised) {
      return FailedPreconditionError("MPI was finalised already: it can be initialised once per "
                                     "process");
    }
    if (!initialised) {
      int provided = 0;
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (rc != MPI_SUCCESS) return MpiError("MPI_Init_thread", rc);
      g_initialised_here = true;
    }
    int provided = 0;
    MPI_Query_thread(&provided);
    impl->thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    ++g_communicators;
  }
  // From here on the destructor releases what was made.
  std::unique_ptr<MpiCommunicator> communicator(new MpiCommunicator(std::move(impl)));
  Impl& state = *communicator->impl_;
  PX_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &state.comm));
  PX_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &state.side));
  MPI_Comm_set_errhandler(state.comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(state.side, MPI_ERRORS_RETURN);
  MPI_Comm_rank(state.comm, &state.rank);
  MPI_Comm_size(state.comm, &state.size);
  communicator->rank_ = state.rank;
  communicator->size_ = state.size;

  // Hosts: the ranks that share memory; a host is named by its lowest rank (its leader).
  MPI_Comm local = MPI_COMM_NULL;
  PX_MPI_RETURN_IF_ERROR(
      MPI_Comm_split_type(state.comm, MPI_COMM_TYPE_SHARED, state.rank, MPI_INFO_NULL, &local));
  MPI_Comm_rank(local, &communicator->local_rank_);
  MPI_Comm_size(local, &communicator->local_size_);
  int leader = state.rank;
  const int rc = MPI_Bcast(&leader, 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Bcast", rc);
  std::vector<int> leaders(static_cast<size_t>(state.size));
  PX_MPI_RETURN_IF_ERROR(
      MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, state.comm));
  const std::set<int> distinct(leaders.begin(), leaders.end());
  communicator->num_hosts_ = static_cast<int>(distinct.size());
  communicator->host_id_ = static_cast<int>(std::distance(distinct.begin(), distinct.find(leader)));
  for (int l : leaders) {
    communicator->host_of_.push_back(
        static_cast<int>(std::distance(distinct.begin(), distinct.find(l))));
  }
  // Test hook (communicator.h): fake hosts of K consecutive ranks.
  if (const char* text = std::getenv("PARALLAX_TEST_RANKS_PER_HOST"); text != nullptr) {
    const int k = std::atoi(text);
    if (k < 1) {
      return InvalidArgumentError("PARALLAX_TEST_RANKS_PER_HOST is '{}', not a positive count",
                                  text);
    }
    communicator->host_id_ = state.rank / k;
    communicator->local_rank_ = state.rank % k;
    communicator->local_size_ = std::min(k, state.size - communicator->host_id_ * k);
    communicator->num_hosts_ = (state.size + k - 1) / k;
    for (int r = 0; r < state.size; ++r) communicator->host_of_[static_cast<size_t>(r)] = r / k;
  }

  if (options.collective_timeout_s > 0) {
    state.watchdog = std::thread([&state] { state.WatchdogLoop(); });
  }
  return communicator;
}

MpiCommunicator::~MpiCommunicator() {
  if (impl_->watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(impl_->wake_mutex);
      impl_->stop = true;
    }
    impl_->wake.notify_all();
    impl_->watchdog.join();
  }
  if (impl_->side != MPI_COMM_NULL) MPI_Comm_free(&impl_->side);
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  std::lock_guard<std::mutex> lock(MpiStateMutex());
  if (--g_communicators == 0 && g_initialised_here) MPI_Finalize();
}

void MpiCommunicator::SetLabel(std::string label) {
  std::lock_guard<std::mutex> lock(impl_->label_mutex);
  impl_->label = label;
  label_ = std::move(label);
}

int64_t MpiCommunicator::completed() const {
  return impl_->completed.load(std::memory_order_acquire);
}

Status MpiCommunicator::AllReduce(const Tensor& input, Tensor* output, ReduceOp op) {
  PX_RETURN_IF_ERROR(comm_internal::CheckReducible(input, op));
  const bool in_place = output == &input || output->SharesBufferWith(input);
  if (!in_place && !(output->initialized() && output->dtype() == input.dtype() &&
                     output->shape() == input.shape())) {
    *output = Tensor(input.dtype(), input.shape());
  }
  const MPI_Datatype type = ReduceType(input.dtype());
  const MPI_Op operation = ReduceOperation(op);
  const int64_t element_bytes = DataTypeSize(input.dtype());
  const int64_t n = input.num_elements();
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output->raw_data());
  {
    Impl::Watch watch(*impl_, "all-reduce");
    for (int64_t begin = 0; begin < n; begin += kMaxChunk) {
      const int count = static_cast<int>(std::min(kMaxChunk, n - begin));
      const void* send = in_place ? MPI_IN_PLACE : in + begin * element_bytes;
      PX_MPI_RETURN_IF_ERROR(
          MPI_Allreduce(send, out + begin * element_bytes, count, type, operation, impl_->comm));
      CountSent(count * element_bytes);
    }
  }
  if (op == ReduceOp::kMean) comm_internal::DivideInPlace(*output, size_);
  return Status::Ok();
}

Status MpiCommunicator::AllGatherV(const Tensor& input, Tensor* output) {
  PX_RETURN_IF_ERROR(comm_internal::CheckRows(input, "all-gather"));
  Impl::Watch watch(*impl_, "all-gather");
  // Every rank's (rows, row bytes, dtype): the rows must agree, which every rank checks
  // on the same data, so all return the same error.
  const int64_t mine[3] = {input.dim(0), RowBytes(input), static_cast<int64_t>(input.dtype())};
  std::vector<int64_t> all(3 * static_cast<size_t>(size_));
  PX_MPI_RETURN_IF_ERROR(
      MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, impl_->comm));
  CountSent(sizeof mine);
  std::vector<int64_t> rows(static_cast<size_t>(size_));
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    const int64_t* theirs = &all[3 * static_cast<size_t>(r)];
    if (theirs[1] != all[1] || theirs[2] != all[2]) {
      return InvalidArgumentError(
          "all-gather: rank {} sends {} rows of {} bytes, rank 0 {} rows of {} bytes (every "
          "rank must send rows of one dtype and shape)",
          r, DataTypeShortName(static_cast<DataType>(theirs[2])), theirs[1],
          DataTypeShortName(static_cast<DataType>(all[2])), all[1]);
    }
    rows[static_cast<size_t>(r)] = theirs[0];
    total += theirs[0];
  }
  Tensor result(input.dtype(), WithRows(input.shape(), total));
  VLayout layout;
  PX_RETURN_IF_ERROR(layout.Build(rows, RowBytes(input)));
  const int my_count = layout.counts()[rank_];
  PX_MPI_RETURN_IF_ERROR(MPI_Allgatherv(input.raw_data(), my_count, layout.type(),
                                        result.raw_data(), layout.counts(),
                                        layout.displacements(), layout.type(), impl_->comm));
  CountSent(static_cast<int64_t>(input.bytes()));
  *output = std::move(result);
  return Status::Ok();
}

Status MpiCommunicator::Broadcast(Tensor& tensor, int root) {
  if (root < 0 || root >= size_) {
    return InvalidArgumentError("broadcast from rank {}, but the job has {} rank{}", root, size_,
                                size_ == 1 ? "" : "s");
  }
  Impl::Watch watch(*impl_, "broadcast");
  // The root's verdict, dtype and shape first, so that the others can allocate.
  enum Verdict : int64_t { kOk = 0, kUninitialised, kUnsupportedType, kTooManyDims };
  std::vector<int64_t> header(3 + kMaxBroadcastDims, 0);
  if (rank_ == root) {
    if (!tensor.initialized()) {
      header[0] = kUninitialised;
    } else if (DataTypeSize(tensor.dtype()) <= 0) {
      header[0] = kUnsupportedType;
    } else if (tensor.rank() > kMaxBroadcastDims) {
      header[0] = kTooManyDims;
    }
    header[1] = tensor.dtype();
    header[2] = tensor.rank();
    for (int i = 0; i < tensor.rank() && i < kMaxBroadcastDims; ++i) header[3 + i] = tensor.dim(i);
  }
  PX_MPI_RETURN_IF_ERROR(MPI_Bcast(header.data(), static_cast<int>(header.size()), MPI_INT64_T,
                                   root, impl_->comm));
  CountSent(rank_ == root ? static_cast<int64_t>(header.size() * sizeof(int64_t)) : 0);
  const auto dtype = static_cast<DataType>(header[1]);
  switch (header[0]) {
    case kOk: break;
    case kUninitialised:
      return InvalidArgumentError("broadcast: rank {}'s tensor is uninitialised", root);
    case kUnsupportedType:
      return UnimplementedError("broadcast of {} tensors is not supported (fixed-size types are)",
                                DataTypeShortName(dtype));
    default:
      return UnimplementedError("broadcast of a tensor of rank {} (at most {})", header[2],
                                kMaxBroadcastDims);
  }
  TensorShape shape(std::vector<int64_t>(header.begin() + 3, header.begin() + 3 + header[2]));
  if (rank_ != root &&
      !(tensor.initialized() && tensor.dtype() == dtype && tensor.shape() == shape)) {
    tensor = Tensor(dtype, shape);
  }
  const int64_t bytes = static_cast<int64_t>(tensor.bytes());
  char* data = static_cast<char*>(tensor.raw_data());
  for (int64_t begin = 0; begin < bytes; begin += kMaxChunk) {
    const int count = static_cast<int>(std::min(kMaxChunk, bytes - begin));
    PX_MPI_RETURN_IF_ERROR(MPI_Bcast(data + begin, count, MPI_BYTE, root, impl_->comm));
    CountSent(rank_ == root ? count : 0);
  }
  return Status::Ok();
}

Status MpiCommunicator::AllToAllV(const Tensor& send, std::span<const int64_t> send_counts,
                                  Tensor* received, std::vector<int64_t>* received_counts) {
  PX_RETURN_IF_ERROR(comm_internal::CheckSendCounts(send, send_counts, size_));
  Impl::Watch watch(*impl_, "all-to-all");
  std::vector<int64_t> counts(static_cast<size_t>(size_));
  PX_MPI_RETURN_IF_ERROR(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, counts.data(), 1,
                                      MPI_INT64_T, impl_->comm));
  CountSent((size_ - 1) * static_cast<int64_t>(sizeof(int64_t)));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  Tensor result(send.dtype(), WithRows(send.shape(), total));
  const int64_t row_bytes = RowBytes(send);
  VLayout send_layout, receive_layout;
  PX_RETURN_IF_ERROR(send_layout.Build(send_counts, row_bytes));
  PX_RETURN_IF_ERROR(receive_layout.Build(counts, row_bytes));
  PX_MPI_RETURN_IF_ERROR(MPI_Alltoallv(send.raw_data(), send_layout.counts(),
                                       send_layout.displacements(), send_layout.type(),
                                       result.raw_data(), receive_layout.counts(),
                                       receive_layout.displacements(), receive_layout.type(),
                                       impl_->comm));
  CountSent((send.dim(0) - send_counts[static_cast<size_t>(rank_)]) * row_bytes);
  *received = std::move(result);
  *received_counts = std::move(counts);
  return Status::Ok();
}

Status MpiCommunicator::ScatterV(const Tensor& send, std::span<const int64_t> send_counts,
                                 Tensor* received, int root) {
  if (root < 0 || root >= size_) {
    return InvalidArgumentError("scatter from rank {}, but the job has {} rank{}", root, size_,
                                size_ == 1 ? "" : "s");
  }
  Impl::Watch watch(*impl_, "scatter");
  // Per rank: the root's verdict, the dtype, the tensor's rank, the rows for that rank and
  // the row shape, so that every rank can allocate (and fail) together with the root.
  enum Verdict : int64_t { kOk = 0, kBadSend, kTooManyDims };
  constexpr size_t kHeader = 4 + kMaxBroadcastDims;
  std::vector<int64_t> headers;
  Status root_error;
  if (rank_ == root) {
    headers.assign(kHeader * static_cast<size_t>(size_), 0);
    root_error = comm_internal::CheckSendCounts(send, send_counts, size_, "scatter");
    Verdict verdict = kOk;
    if (!root_error.ok()) {
      verdict = kBadSend;
    } else if (send.rank() > kMaxBroadcastDims) {
      verdict = kTooManyDims;
    }
    for (int r = 0; r < size_; ++r) {
      int64_t* h = &headers[kHeader * static_cast<size_t>(r)];
      h[0] = verdict;
      if (verdict != kOk) continue;
      h[1] = send.dtype();
      h[2] = send.rank();
      h[3] = send_counts[static_cast<size_t>(r)];
      for (int i = 1; i < send.rank(); ++i) h[3 + i] = send.dim(i);
    }
  }
  std::vector<int64_t> mine(kHeader, 0);
  PX_MPI_RETURN_IF_ERROR(MPI_Scatter(headers.data(), static_cast<int>(kHeader), MPI_INT64_T,
                                     mine.data(), static_cast<int>(kHeader), MPI_INT64_T, root,
                                     impl_->comm));
  CountSent(rank_ == root ? (size_ - 1) * static_cast<int64_t>(kHeader * sizeof(int64_t)) : 0);
  switch (mine[0]) {
    case kOk: break;
    case kBadSend:
      if (rank_ == root) return root_error;
      return InvalidArgumentError("scatter: rank {}'s send tensor or counts are invalid (rank {} "
                                  "says why)", root, root);
    default:
      return UnimplementedError("scatter of a tensor of rank > {}", kMaxBroadcastDims);
  }
  std::vector<int64_t> dims(mine.begin() + 3, mine.begin() + 3 + mine[2]);
  Tensor result(static_cast<DataType>(mine[1]), TensorShape(std::move(dims)));
  const int64_t row_bytes = RowBytes(result);
  VLayout send_layout, receive_layout;
  if (rank_ == root) PX_RETURN_IF_ERROR(send_layout.Build(send_counts, row_bytes));
  const int64_t my_rows = result.dim(0);
  PX_RETURN_IF_ERROR(receive_layout.Build(std::span<const int64_t>(&my_rows, 1), row_bytes));
  PX_MPI_RETURN_IF_ERROR(MPI_Scatterv(rank_ == root ? send.raw_data() : nullptr,
                                      rank_ == root ? send_layout.counts() : nullptr,
                                      rank_ == root ? send_layout.displacements() : nullptr,
                                      send_layout.type(), result.raw_data(),
                                      receive_layout.counts()[0], receive_layout.type(), root,
                                      impl_->comm));
  CountSent(rank_ == root ? (send.dim(0) - my_rows) * row_bytes : 0);
  *received = std::move(result);
  return Status::Ok();
}

Status MpiCommunicator::Barrier() {
  Impl::Watch watch(*impl_, "barrier");
  PX_MPI_RETURN_IF_ERROR(MPI_Barrier(impl_->comm));
  CountSent(0);
  return Status::Ok();
}

void MpiCommunicator::Abort(const Status& error, int exit_code) {
  std::fprintf(stderr, "parallax: error: rank %d: %s\n", rank_, error.message().c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

// ---- Communicator::FromMpi ----

StatusOr<std::unique_ptr<Communicator>> Communicator::FromMpi() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {
    return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
  }
  PX_ASSIGN_OR_RETURN(MpiOptions options, MpiOptions::FromEnvironment());
  PX_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> mpi, MpiCommunicator::Create(options));
  return std::unique_ptr<Communicator>(std::move(mpi));
}

}  // namespace parallax
