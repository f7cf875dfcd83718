#include "lib/runtime/comm/mpi_communicator.h"

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
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

#include "lib/base/test_hooks.h"
#include "lib/ops/dtypes.h"
#include "lib/runtime/comm/watchdog.h"

namespace parallax {

using comm_internal::RowBytes;
using comm_internal::WithRows;

namespace {

constexpr int kQueryTag = 1;  // "where are you?" to a watchdog, carrying the asker's #N
constexpr int kReplyTag = 2;  // its RankState
constexpr int kHeartbeatTag = 3;  // "this process is alive", to the next rank
constexpr int kLeavingTag = 4;    // "no more heartbeats: my communicator is closing"
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

// Large all-reduces and broadcasts go in parts of at most this many bytes, each watched
// as if it were a call of its own (Watch::Transfer): a call that waits 20 ms plus its
// bytes' time at 0.1 GB/s is parked (the header), so parking catches ranks that wait for
// another, not transfers under way.
constexpr int64_t kWatchedPartBytes = 4 << 20;

// Floating-point all-reduces of at most this many bytes times the ranks go as one
// all-gather (every rank combines every rank's tensor); larger ones as an all-to-all of
// parts and an all-gather of the combined parts (RankOrderedAllReduce).
constexpr int64_t kGatheredAllReduceBytes = 256 << 10;

// into[i] = parts[0][i] op parts[1][i] op ... op parts[size-1][i], from rank 0 up: the
// same order for every element, whatever the tensor's size or where the element lies in
// it. `parts` holds `size` runs of `count` elements, rank after rank; op is a sum, a mean
// (summed here, divided later) or a product.
template <typename T>
void CombineInRankOrder(const T* parts, int size, int64_t count, ReduceOp op, T* into) {
  std::copy(parts, parts + count, into);
  for (int r = 1; r < size; ++r) {
    const T* part = parts + static_cast<int64_t>(r) * count;
    if (op == ReduceOp::kProd) {
      for (int64_t i = 0; i < count; ++i) into[i] *= part[i];
    } else {
      for (int64_t i = 0; i < count; ++i) into[i] += part[i];
    }
  }
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

// A gap this long between two watchdog ticks means this process was stopped (or not
// scheduled): the silence of the others meanwhile was not witnessed (see TickStarted).
constexpr int64_t kStalledNs = 1'000'000'000;

// Parking (see the header). A call that has waited kParkAfterNs is parked: its thread
// gets kParkSignal, whose handler sleeps 1/8 of the time waited so far, between
// kMinParkNs and kMaxParkNs; after it the thread polls MPI for about kParkWindowNs
// before the next park.
constexpr int64_t kParkAfterNs = 20'000'000;
constexpr int64_t kMinParkNs = 1'000'000;
constexpr int64_t kMaxParkNs = 20'000'000;
constexpr int64_t kParkWindowNs = 200'000;
// A transfer of B bytes may take B * kParkNsPerByte ns (0.1 GB/s) more before it is
// parked (Watch::Transfer). 0.5 GB/s was too fast a floor: two ranks sharing two cores
// scattered the LM-1B's 1.6 GB table partitions over shared memory more slowly than
// that, and the scatter, parked mid-transfer, crawled.
constexpr int64_t kParkNsPerByte = 10;
int ParkSignal() { return SIGRTMAX - 3; }

// The handler's state, process-wide (a signal handler sees only globals); lock-free
// atomics, so async-signal-safe. (One communicator per process in practice; two parking
// at once would share them: a park may come out shorter or longer, never stuck.)
std::atomic<int64_t> g_park_ns{0};       // how long the next park sleeps
std::atomic<bool> g_park_wanted{false};  // set by a watchdog, cleared when its call returns
std::atomic<bool> g_parked{false};       // the handler is sleeping

extern "C" void ParkHandler(int) {
  const int saved_errno = errno;
  g_parked.store(true);
  if (g_park_wanted.load()) {
    const int64_t ns = g_park_ns.load();
    struct timespec sleep = {static_cast<time_t>(ns / 1'000'000'000),
                             static_cast<long>(ns % 1'000'000'000)};
    nanosleep(&sleep, nullptr);  // interrupted: a shorter park
  }
  g_parked.store(false);
  errno = saved_errno;
}

// Installs ParkHandler once per process; false when the signal has another handler.
bool InstallParkHandler() {
  struct sigaction old = {};
  if (sigaction(ParkSignal(), nullptr, &old) != 0) return false;
  if (old.sa_handler == ParkHandler) return true;
  if (old.sa_handler != SIG_DFL) return false;
  struct sigaction action = {};
  action.sa_handler = ParkHandler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // interrupted system calls resume where they can
  return sigaction(ParkSignal(), &action, nullptr) == 0;
}

}  // namespace

// ---- Impl: MPI handles and the watchdog ----

// The ranks of one MPI communicator, as a rank-ordered all-reduce runs over them.
struct MpiCommunicator::Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
};

struct MpiCommunicator::Impl {
  MpiOptions options;
  MPI_Comm comm = MPI_COMM_NULL;  // collectives
  MPI_Comm side = MPI_COMM_NULL;  // watchdog queries, replies and heartbeats
  // The hierarchical all-reduce's groups (mpi_communicator.h): this rank's host, and the
  // ranks of this local rank, one per host in host order (only while local rank < slices).
  Group host;
  Group cross;
  int slices = 1;  // S: the fewest ranks on one host
  bool thread_multiple = false;
  int rank = 0;
  int size = 1;

  // The collective in progress: written by the calling thread, read by the watchdog.
  std::atomic<int64_t> in_progress{0};
  std::atomic<int64_t> completed{0};
  std::atomic<int64_t> started_ns{0};
  std::atomic<int64_t> park_grace_ns{0};  // Watch::Transfer
  std::atomic<const char*> op{""};
  std::mutex label_mutex;
  std::string label;

  std::mutex wake_mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread watchdog;

  // The thread in the call in progress, for parking; whether parking is on.
  std::atomic<pthread_t> caller{};
  bool park = false;

  // Watchdog thread only: when it last ran, and when it found it had been stopped.
  int64_t last_tick_ns = 0;
  int64_t resumed_ns = 0;

  // The heartbeat (watchdog thread only): this rank tells the next rank, and hears the
  // previous one (ranks in a ring).
  bool heartbeat = false;
  int64_t last_sent_ns = 0;
  int64_t last_heard_ns = 0;
  bool previous_left = false;  // the previous rank said it is leaving: no more heartbeats
  const int64_t heartbeat_payload = 0;  // the bytes of every heartbeat (eager sends)
  int64_t asked_number = 0;             // the bytes of this rank's "where are you?"

  int next() const { return (rank + 1) % size; }
  int previous() const { return (rank + size - 1) % size; }

  // Marks one Communicator call as the collective in progress, for the watchdog.
  class Watch {
   public:
    Watch(Impl& impl, const char* op) : impl_(impl) {
      number_ = impl.completed.load(std::memory_order_relaxed) + 1;
      impl.op.store(op, std::memory_order_relaxed);
      impl.park_grace_ns.store(0, std::memory_order_relaxed);
      impl.started_ns.store(NowNs(), std::memory_order_relaxed);
      impl.caller.store(pthread_self(), std::memory_order_relaxed);
      impl.in_progress.store(number_, std::memory_order_release);
    }
    ~Watch() {
      impl_.completed.store(number_, std::memory_order_release);
      // Sequentially consistent with Park's: a park that arrives after this call
      // returned does not sleep.
      impl_.in_progress.store(0);
      g_park_wanted.store(false);
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    // The call starts moving `bytes` (a part of an all-reduce, the rows of an all-gather
    // once every rank's count is known): the wait that parks the thread, and the timeout,
    // count from now, and the thread is parked only after the time those bytes take at
    // kParkNsPerByte on top of kParkAfterNs.
    void Transfer(int64_t bytes) {
      impl_.park_grace_ns.store(bytes * kParkNsPerByte, std::memory_order_relaxed);
      impl_.started_ns.store(NowNs(), std::memory_order_relaxed);
    }

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

  // "is waiting in collective #12 (all-reduce; ...) for 19.6 s", or "is busy outside
  // collectives (11 finished)": where this rank is, for messages.
  std::string WhereThisRankIs() {
    const RankState mine = LocalState();
    if (mine.in_progress == 0) {
      return fmt::format("is busy outside collectives ({} finished)", mine.completed);
    }
    const double waited =
        static_cast<double>(NowNs() - started_ns.load(std::memory_order_relaxed)) * 1e-9;
    return fmt::format("is waiting in collective #{} ({}) for {:.1f} s", mine.in_progress,
                       DescribeCollective(mine.op, mine.label), waited);
  }

  // Prints `message` as this rank's error and ends the job (exit status 3).
  [[noreturn]] void EndJob(const std::string& message) {
    std::fprintf(stderr, "parallax: error: rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
    if (thread_multiple) MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);  // mpirun ends the other ranks when one exits with an error
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
      state.asked = asked;
      // Small enough to go eagerly: never waits for the asker.
      MPI_Send(&state, sizeof state, MPI_BYTE, status.MPI_SOURCE, kReplyTag, side);
    }
  }

  // Receives whatever the previous rank sent: heartbeats (it is alive) and its leaving.
  void HearPrevious(int64_t now) {
    for (const int tag : {kHeartbeatTag, kLeavingTag}) {
      for (;;) {
        int flag = 0;
        if (MPI_Iprobe(previous(), tag, side, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
            !flag) {
          break;
        }
        int64_t payload = 0;
        if (MPI_Recv(&payload, 1, MPI_INT64_T, previous(), tag, side, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS) {
          break;
        }
        last_heard_ns = now;
        if (tag == kLeavingTag) previous_left = true;
      }
    }
  }

  // Sends this rank's heartbeat when one is due, and ends the job when the previous rank
  // has been silent for longer than the heartbeat timeout.
  void Heartbeat() {
    const int64_t now = NowNs();
    if (static_cast<double>(now - last_sent_ns) * 1e-9 >= options.heartbeat_interval_s) {
      MPI_Request request = MPI_REQUEST_NULL;
      // Eager (8 bytes): completes without the receiver; the request is not kept.
      if (MPI_Isend(&heartbeat_payload, 1, MPI_INT64_T, next(), kHeartbeatTag, side,
                    &request) == MPI_SUCCESS) {
        MPI_Request_free(&request);
      }
      last_sent_ns = now;
    }
    HearPrevious(now);
    const double silent = static_cast<double>(now - last_heard_ns) * 1e-9;
    if (previous_left || silent <= options.heartbeat_timeout_s) return;
    EndJob(fmt::format("no heartbeat from rank {} for {:.1f} s (PARALLAX_HEARTBEAT_TIMEOUT_S="
                       "{:g}): it is stopped (SIGSTOP, a debugger) or frozen, or its host or "
                       "the network to it is down; this rank {}",
                       previous(), silent, options.heartbeat_timeout_s, WhereThisRankIs()));
  }

  // Called at every watchdog tick. After a gap longer than kStalledNs this process was
  // stopped (SIGSTOP, Ctrl-Z of the whole job) or not scheduled: the others' silence and
  // the waits meanwhile were not witnessed, so the heartbeat and the collective timeout
  // count from now; a rank that resumes never accuses the ranks it could not hear.
  void TickStarted(int64_t now) {
    if (last_tick_ns != 0 && now - last_tick_ns > kStalledNs) {
      last_heard_ns = now;
      resumed_ns = now;
    }
    last_tick_ns = now;
  }

  // Parks the thread of call #number, which has waited `waited_ns`: signals it, and its
  // handler sleeps (see the header). Returns when the watchdog should tick next: after
  // the park and a short window in which the thread polls MPI; 0 when the call returned.
  std::chrono::nanoseconds Park(int64_t number, int64_t waited_ns) {
    // Still sleeping (the tick came early): look again once it may have woken.
    if (g_parked.load()) return std::chrono::nanoseconds(kParkWindowNs);
    const int64_t park_ns = std::clamp(waited_ns / 8, kMinParkNs, kMaxParkNs);
    g_park_ns.store(park_ns);
    g_park_wanted.store(true);
    if (in_progress.load() != number) {  // returned meanwhile (Watch's destructor)
      g_park_wanted.store(false);
      return std::chrono::nanoseconds(0);
    }
    pthread_kill(caller.load(std::memory_order_relaxed), ParkSignal());
    return std::chrono::nanoseconds(park_ns + kParkWindowNs);
  }

  void WatchdogLoop() {
    const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(options.watchdog_interval_s));
    std::chrono::nanoseconds next = interval;
    std::unique_lock<std::mutex> lock(wake_mutex);
    while (!stop) {
      wake.wait_for(lock, next);
      if (stop) break;
      lock.unlock();
      const int64_t now = NowNs();
      TickStarted(now);
      if (thread_multiple) AnswerQueries();
      if (heartbeat) Heartbeat();
      next = interval;
      const int64_t number = in_progress.load(std::memory_order_acquire);
      if (number != 0) {
        // started_ns may already be a later collective's: that only shortens the waits.
        const int64_t started = started_ns.load(std::memory_order_relaxed);
        const double waited = static_cast<double>(now - std::max(started, resumed_ns)) * 1e-9;
        if (options.collective_timeout_s > 0 && waited > options.collective_timeout_s &&
            in_progress.load(std::memory_order_acquire) == number) {
          TimedOut(number);
        }
        if (park && now - started > kParkAfterNs + park_grace_ns.load(std::memory_order_relaxed)) {
          const std::chrono::nanoseconds parked = Park(number, now - started);
          if (parked.count() > 0) next = parked;
        }
      }
      lock.lock();
    }
  }

  // Waits up to the diagnosis grace for collective #number to complete on this rank,
  // answering other ranks' queries meanwhile. True when it did.
  bool CompletesWithinGrace(int64_t number) {
    const int64_t deadline = NowNs() + static_cast<int64_t>(options.diagnosis_grace_s * 1e9);
    while (completed.load(std::memory_order_acquire) < number && NowNs() < deadline) {
      TickStarted(NowNs());
      if (thread_multiple) AnswerQueries();
      if (heartbeat) Heartbeat();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return completed.load(std::memory_order_acquire) >= number;
  }

  // Finds where the other ranks are and ends the job with a line naming the missing ones
  // (watchdog.h). Returns, with a warning, when collective #number completed during the
  // diagnosis: the ranks it waited for arrived just at the deadline.
  void TimedOut(int64_t number) {
    const RankState before = LocalState();
    std::string message =
        fmt::format("collective #{} ({}) timed out after {:g} s", number,
                    DescribeCollective(before.op, before.label), options.collective_timeout_s);
    if (!thread_multiple) {
      EndJob(message + ": the missing ranks cannot be named (MPI was initialised without "
                       "MPI_THREAD_MULTIPLE)");
    }
    // Replies to an earlier diagnosis that came too late are dropped below by their #N.
    std::vector<std::optional<RankState>> answers(static_cast<size_t>(size));
    asked_number = number;
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      MPI_Request query = MPI_REQUEST_NULL;
      // Eager (8 bytes, asked_number outlives it): completes without the receiver.
      if (MPI_Isend(&asked_number, 1, MPI_INT64_T, r, kQueryTag, side, &query) ==
          MPI_SUCCESS) {
        MPI_Request_free(&query);
      }
    }
    const int64_t deadline = NowNs() + static_cast<int64_t>(options.diagnosis_grace_s * 1e9);
    int answered = 1;
    while (answered < size && NowNs() < deadline) {
      TickStarted(NowNs());
      AnswerQueries();  // ranks that timed out too are asking us
      if (heartbeat) Heartbeat();
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kReplyTag, side, &flag, &status) == MPI_SUCCESS && flag) {
        RankState state;
        if (MPI_Recv(&state, sizeof state, MPI_BYTE, status.MPI_SOURCE, kReplyTag, side,
                     MPI_STATUS_IGNORE) == MPI_SUCCESS &&
            state.asked == number) {
          auto& slot = answers[static_cast<size_t>(status.MPI_SOURCE)];
          if (!slot) ++answered;
          slot = state;
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    // Judged by where this rank is now, after the answers (watchdog.h).
    TimeoutVerdict verdict = DiagnoseTimeout(number, rank, LocalState(), answers);
    if (verdict.kind == TimeoutVerdict::kEveryoneArrived && CompletesWithinGrace(number)) {
      verdict.kind = TimeoutVerdict::kCompleted;
    }
    if (verdict.kind == TimeoutVerdict::kCompleted) {
      std::fprintf(stderr,
                   "parallax: warning: rank %d: collective #%lld (%s) completed only after the "
                   "collective timeout (%g s): the ranks it waited for arrived just at the "
                   "deadline; the job goes on\n",
                   rank, static_cast<long long>(number),
                   DescribeCollective(before.op, before.label).c_str(),
                   options.collective_timeout_s);
      std::fflush(stderr);
      return;
    }
    if (verdict.kind == TimeoutVerdict::kEveryoneArrived) {
      EndJob(fmt::format("{}: {}, but it does not complete (MPI made no progress)", message,
                         verdict.detail));
    }
    EndJob(fmt::format("{}: {}", message, verdict.detail));
  }
};

// ---- Options ----

namespace {

// The seconds in environment variable `name` (>= 0), or `fallback` when it is unset or
// empty.
StatusOr<double> SecondsFromEnvironment(const char* name, double fallback,
                                        std::string_view zero_means) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
    return InvalidArgumentError("{}='{}': expected a number of seconds >= 0 (0: {})", name, text,
                                zero_means);
  }
  return seconds;
}

}  // namespace

StatusOr<MpiOptions> MpiOptions::FromEnvironment() {
  MpiOptions options;
  PX_ASSIGN_OR_RETURN(options.collective_timeout_s,
                      SecondsFromEnvironment("PARALLAX_COLLECTIVE_TIMEOUT_S",
                                             options.collective_timeout_s, "no timeout"));
  PX_ASSIGN_OR_RETURN(options.heartbeat_timeout_s,
                      SecondsFromEnvironment("PARALLAX_HEARTBEAT_TIMEOUT_S",
                                             options.heartbeat_timeout_s, "no heartbeat"));
  PX_ASSIGN_OR_RETURN(options.heartbeat_interval_s,
                      SecondsFromEnvironment("PARALLAX_HEARTBEAT_INTERVAL_S",
                                             options.heartbeat_interval_s, "every watchdog tick"));
  if (options.heartbeat_timeout_s > 0 &&
      options.heartbeat_timeout_s < 2 * options.heartbeat_interval_s) {
    return InvalidArgumentError("PARALLAX_HEARTBEAT_TIMEOUT_S={:g} must be at least twice "
                                "PARALLAX_HEARTBEAT_INTERVAL_S={:g} (a heartbeat may come up to "
                                "one interval late)",
                                options.heartbeat_timeout_s, options.heartbeat_interval_s);
  }
  if (const char* wait = std::getenv("PARALLAX_COLLECTIVE_WAIT"); wait != nullptr && *wait) {
    const std::string_view mode = wait;
    if (mode != "sleep" && mode != "spin") {
      return InvalidArgumentError("PARALLAX_COLLECTIVE_WAIT='{}': expected sleep (the default) or "
                                  "spin",
                                  mode);
    }
    options.sleep_while_waiting = mode == "sleep";
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
  if (const std::optional<std::string> text = TestHook("PARALLAX_TEST_RANKS_PER_HOST")) {
    const int k = std::atoi(text->c_str());
    if (k < 1) {
      return InvalidArgumentError("PARALLAX_TEST_RANKS_PER_HOST is '{}', not a positive count",
                                  *text);
    }
    communicator->host_id_ = state.rank / k;
    communicator->local_rank_ = state.rank % k;
    communicator->local_size_ = std::min(k, state.size - communicator->host_id_ * k);
    communicator->num_hosts_ = (state.size + k - 1) / k;
    for (int r = 0; r < state.size; ++r) communicator->host_of_[static_cast<size_t>(r)] = r / k;
  }

  // The hierarchical all-reduce's groups, on the hosts just found.
  std::vector<int> host_sizes(static_cast<size_t>(communicator->num_hosts_), 0);
  for (int h : communicator->host_of_) ++host_sizes[static_cast<size_t>(h)];
  state.slices = *std::min_element(host_sizes.begin(), host_sizes.end());
  PX_MPI_RETURN_IF_ERROR(
      MPI_Comm_split(state.comm, communicator->host_id_, state.rank, &state.host.comm));
  const bool holds_slice = communicator->local_rank_ < state.slices;
  PX_MPI_RETURN_IF_ERROR(MPI_Comm_split(state.comm,
                                        holds_slice ? communicator->local_rank_ : MPI_UNDEFINED,
                                        communicator->host_id_, &state.cross.comm));
  for (Group* group : {&state.host, &state.cross}) {
    if (group->comm == MPI_COMM_NULL) continue;
    MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(group->comm, &group->rank);
    MPI_Comm_size(group->comm, &group->size);
  }

  // The heartbeat needs MPI on the watchdog's thread.
  state.heartbeat = options.heartbeat_timeout_s > 0 && state.thread_multiple && state.size > 1;
  state.last_heard_ns = state.last_sent_ns = NowNs();
  if (options.sleep_while_waiting && state.size > 1) {
    std::lock_guard<std::mutex> lock(MpiStateMutex());
    state.park = InstallParkHandler();
  }
  if (options.collective_timeout_s > 0 || state.heartbeat || state.park) {
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
  if (impl_->heartbeat) {
    // The next rank stops expecting heartbeats (it may still be busy, e.g. writing).
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(&impl_->heartbeat_payload, 1, MPI_INT64_T, impl_->next(), kLeavingTag,
                  impl_->side, &request) == MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
  for (Group* group : {&impl_->host, &impl_->cross}) {
    if (group->comm != MPI_COMM_NULL) MPI_Comm_free(&group->comm);
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

Status MpiCommunicator::AllReduce(const Tensor& input, Tensor* output, ReduceOp op,
                                  AllReduceAlgorithm algorithm) {
  PX_RETURN_IF_ERROR(comm_internal::CheckReducible(input, op));
  const bool in_place = output == &input || output->SharesBufferWith(input);
  if (!in_place && !(output->initialized() && output->dtype() == input.dtype() &&
                     output->shape() == input.shape())) {
    *output = Tensor(input.dtype(), input.shape());
  }
  const MPI_Datatype type = ReduceType(input.dtype());
  const int64_t element_bytes = DataTypeSize(input.dtype());
  const int64_t n = input.num_elements();
  const char* in = static_cast<const char*>(input.raw_data());
  char* out = static_cast<char*>(output->raw_data());
  const bool floating = input.dtype() == tensorflow::DT_FLOAT || input.dtype() == tensorflow::DT_DOUBLE;
  const bool rank_ordered =
      size_ > 1 && floating && op != ReduceOp::kMin && op != ReduceOp::kMax;
  // With one host or one rank per host, the hierarchical steps are the flat all-reduce.
  const bool hierarchical = rank_ordered && algorithm == AllReduceAlgorithm::kHierarchical &&
                            num_hosts_ > 1 && num_hosts_ < size_;
  const Group world{impl_->comm, rank_, size_};
  {
    Impl::Watch watch(*impl_, "all-reduce");
    const int64_t part = std::max<int64_t>(1, kWatchedPartBytes / element_bytes);
    for (int64_t begin = 0; begin < n; begin += part) {
      const int64_t count = std::min(part, n - begin);
      watch.Transfer(count * element_bytes);
      const char* part_in = in + begin * element_bytes;
      char* part_out = out + begin * element_bytes;
      if (hierarchical) {
        PX_RETURN_IF_ERROR(HierarchicalAllReduce(part_in, part_out, count, input.dtype(), op));
      } else if (rank_ordered) {
        PX_RETURN_IF_ERROR(
            RankOrderedAllReduce(world, part_in, part_out, count, input.dtype(), op));
      } else {
        PX_MPI_RETURN_IF_ERROR(MPI_Allreduce(in_place ? MPI_IN_PLACE : part_in, part_out,
                                             static_cast<int>(count), type,
                                             ReduceOperation(op), impl_->comm));
        CountSent(count * element_bytes);
      }
    }
  }
  if (op == ReduceOp::kMean) comm_internal::DivideInPlace(*output, size_);
  return Status::Ok();
}

namespace {

// into = parts[0] op parts[1] op ... op parts[ranks-1] (CombineInRankOrder) for float or
// double elements.
void Combine(tensorflow::DataType dtype, const char* parts, int ranks, int64_t count,
             ReduceOp op, char* into) {
  if (dtype == tensorflow::DT_FLOAT) {
    CombineInRankOrder(reinterpret_cast<const float*>(parts), ranks, count, op,
                       reinterpret_cast<float*>(into));
  } else {
    CombineInRankOrder(reinterpret_cast<const double*>(parts), ranks, count, op,
                       reinterpret_cast<double*>(into));
  }
}

// Element counts and offsets of `parts` near-equal parts of n elements, the first
// `holders` of them non-empty: part p is [n·p/holders, n·(p+1)/holders) for p < holders.
void EvenParts(int64_t n, int parts, int holders, std::vector<int>* counts,
               std::vector<int>* offsets) {
  counts->assign(static_cast<size_t>(parts), 0);
  offsets->assign(static_cast<size_t>(parts), static_cast<int>(n));
  for (int p = 0; p < holders; ++p) {
    const int64_t begin = n * p / holders;
    (*offsets)[static_cast<size_t>(p)] = static_cast<int>(begin);
    (*counts)[static_cast<size_t>(p)] = static_cast<int>(n * (p + 1) / holders - begin);
  }
}

}  // namespace

Status MpiCommunicator::RankOrderedAllReduce(const Group& group, const char* in, char* out,
                                             int64_t n, DataType dtype, ReduceOp op) {
  const MPI_Datatype type = ReduceType(dtype);
  const int64_t element_bytes = DataTypeSize(dtype);
  const size_t ranks = static_cast<size_t>(group.size);
  if (group.size == 1) {
    if (out != in) std::memcpy(out, in, static_cast<size_t>(n * element_bytes));
    return Status::Ok();
  }
  if (n * element_bytes * group.size <= kGatheredAllReduceBytes) {
    // Small: every rank gathers every rank's tensor and combines them itself.
    std::vector<char> all(ranks * static_cast<size_t>(n * element_bytes));
    const int count = static_cast<int>(n);
    PX_MPI_RETURN_IF_ERROR(MPI_Allgather(in, count, type, all.data(), count, type, group.comm));
    CountSent(n * element_bytes);
    Combine(dtype, all.data(), group.size, n, op, out);
    return Status::Ok();
  }
  // Large: rank r combines part r of every rank's tensor (an all-to-all), then every rank
  // gathers the combined parts. (n is at most kWatchedPartBytes: int counts.)
  std::vector<int> send_counts, send_offsets;
  EvenParts(n, group.size, group.size, &send_counts, &send_offsets);
  const int64_t mine = send_counts[static_cast<size_t>(group.rank)];
  std::vector<int> receive_counts(ranks, static_cast<int>(mine)), receive_offsets(ranks);
  for (size_t r = 0; r < ranks; ++r) receive_offsets[r] = static_cast<int>(mine * r);
  std::unique_ptr<char[]> received(new char[ranks * static_cast<size_t>(mine * element_bytes)]);
  PX_MPI_RETURN_IF_ERROR(MPI_Alltoallv(in, send_counts.data(), send_offsets.data(), type,
                                       received.get(), receive_counts.data(),
                                       receive_offsets.data(), type, group.comm));
  // `in` may be `out`: every rank's parts have been sent once the all-to-all returns.
  Combine(dtype, received.get(), group.size, mine,  op,
          out + send_offsets[static_cast<size_t>(group.rank)] * element_bytes);
  PX_MPI_RETURN_IF_ERROR(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out,
                                        send_counts.data(), send_offsets.data(), type,
                                        group.comm));
  // The parts for other ranks, then this rank's combined part for the others: n in all.
  CountSent((n - mine) * element_bytes + mine * element_bytes, 2);
  return Status::Ok();
}

Status MpiCommunicator::HierarchicalAllReduce(const char* in, char* out, int64_t n,
                                              DataType dtype, ReduceOp op) {
  const MPI_Datatype type = ReduceType(dtype);
  const int64_t element_bytes = DataTypeSize(dtype);
  const Group& host = impl_->host;
  const int slices = impl_->slices;
  std::vector<int> slice_counts, slice_offsets;
  EvenParts(n, host.size, slices, &slice_counts, &slice_offsets);
  const bool holds_slice = host.rank < slices;
  const int64_t mine = holds_slice ? slice_counts[static_cast<size_t>(host.rank)] : 0;
  char* my_slice = out + (holds_slice ? slice_offsets[static_cast<size_t>(host.rank)] : 0) *
                             element_bytes;

  // 1. Slice j of every rank of the host to local rank j, added in rank order.
  if (host.size > 1) {
    const size_t ranks = static_cast<size_t>(host.size);
    std::vector<int> receive_counts(ranks, static_cast<int>(mine)), receive_offsets(ranks);
    for (size_t r = 0; r < ranks; ++r) receive_offsets[r] = static_cast<int>(mine * r);
    std::unique_ptr<char[]> received(new char[ranks * static_cast<size_t>(mine * element_bytes)]);
    PX_MPI_RETURN_IF_ERROR(MPI_Alltoallv(in, slice_counts.data(), slice_offsets.data(), type,
                                         received.get(), receive_counts.data(),
                                         receive_offsets.data(), type, host.comm));
    CountSent((n - mine) * element_bytes);
    // `in` may be `out`: every rank's slices have been sent once the all-to-all returns.
    if (holds_slice) Combine(dtype, received.get(), host.size, mine, op, my_slice);
  } else if (out != in) {
    std::memcpy(out, in, static_cast<size_t>(n * element_bytes));
  }
  // 2. Slice j among the hosts, their sums added in host order.
  if (holds_slice && mine > 0) {
    PX_RETURN_IF_ERROR(RankOrderedAllReduce(impl_->cross, my_slice, my_slice, mine, dtype, op));
  }
  // 3. The host's slices to all its ranks.
  if (host.size > 1) {
    PX_MPI_RETURN_IF_ERROR(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out,
                                          slice_counts.data(), slice_offsets.data(), type,
                                          host.comm));
    CountSent(mine * element_bytes);
  }
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
  watch.Transfer(static_cast<int64_t>(result.bytes()));
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
  for (int64_t begin = 0; begin < bytes; begin += kWatchedPartBytes) {
    const int count = static_cast<int>(std::min(kWatchedPartBytes, bytes - begin));
    watch.Transfer(count);
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
  watch.Transfer((send.dim(0) + total) * row_bytes);
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
  watch.Transfer(rank_ == root ? send.dim(0) * row_bytes : my_rows * row_bytes);
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
  // mpirun sets both; a direct launch through PMIx (srun --mpi=pmix) sets PMIX_RANK.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) {
    return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
  }
  PX_ASSIGN_OR_RETURN(MpiOptions options, MpiOptions::FromEnvironment());
  PX_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> mpi, MpiCommunicator::Create(options));
  return std::unique_ptr<Communicator>(std::move(mpi));
}

}  // namespace parallax
